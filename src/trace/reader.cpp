#include <fmt/format.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <type_traits>
#include <utility>

#include "base/text.hpp"
#include "inferprof/error.hpp"
#include "inferprof/npy.hpp"
#include "inferprof/printable.hpp"
#include "inferprof/trace.hpp"
#include "trace/csv_rows.hpp"

namespace inferprof {

namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

constexpr std::size_t kMaxSkippedExamples = 5;
// validate() recurses once per level of nesting; a line of 100,000 '[' would
// overflow the stack. A request line nests 3 deep; this is far more than any
// trace needs and far less than any thread's stack can hold.
constexpr int kMaxDepth = 64;
constexpr double kMaxTsMs = 9.2e12;
constexpr std::string_view kBom = "\xEF\xBB\xBF";

constexpr std::string_view kDTypeNames = "uint8, int8, int16, int32, int64, float16, float32, float64, bool";
// Most inputs one request may carry (a forward with more arguments is unheard of).
constexpr std::size_t kMaxInputs = 64;

bool is_json_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

// A misspelt true/false/null reads as a type error in on-demand; as a line
// of JSON it is malformed.
error_code atom_error(std::string_view token) {
  return !token.empty() && token.front() == 'f' ? simdjson::F_ATOM_ERROR : simdjson::T_ATOM_ERROR;
}

// A field's name. Names almost never hold escapes; reading them in place
// saves a copy through simdjson's string buffer on every field of every line.
error_code field_name(od::field& field, std::string_view& name) {
  const char* raw = field.key().raw();
  const char* end = raw;
  while (*end != '"' && *end != '\\')
    ++end;  // the string is closed: stage 1 checked
  if (*end == '"') {
    name = std::string_view(raw, static_cast<std::size_t>(end - raw));
    return simdjson::SUCCESS;
  }
  return field.unescaped_key().get(name);
}

// On-demand parsing only checks what is read: a value nobody asks for is
// skipped by its brackets, not validated. Unknown fields and values of the
// wrong type go through here so that bad JSON anywhere on a line is reported
// as bad JSON.
// `depth`: how many arrays and objects hold `v` (1 for a field of the line's object).
error_code validate(od::value& v, int depth) {
  if (depth > kMaxDepth) return simdjson::DEPTH_ERROR;
  od::json_type type{};
  SIMDJSON_TRY(v.type().get(type));
  switch (type) {
    case od::json_type::array: {
      od::array array;
      SIMDJSON_TRY(v.get_array().get(array));
      for (auto element : array) {
        od::value item;
        SIMDJSON_TRY(element.get(item));
        SIMDJSON_TRY(validate(item, depth + 1));
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::object: {
      od::object object;
      SIMDJSON_TRY(v.get_object().get(object));
      for (auto field_result : object) {
        SIMDJSON_TRY(field_result.error());
        od::field&& field = std::move(field_result).value_unsafe();
        std::string_view key;
        SIMDJSON_TRY(field_name(field, key));
        SIMDJSON_TRY(validate(field.value(), depth + 1));
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::number: {
      double number = 0;
      return v.get_double().get(number);
    }
    case od::json_type::string: {
      std::string_view text;
      return v.get_string().get(text);
    }
    case od::json_type::boolean: {
      bool flag = false;
      return v.get_bool().get(flag) == simdjson::SUCCESS ? simdjson::SUCCESS : atom_error(v.raw_json_token());
    }
    case od::json_type::null: {
      bool null = false;
      return v.is_null().get(null) == simdjson::SUCCESS && null ? simdjson::SUCCESS : simdjson::N_ATOM_ERROR;
    }
  }
  return simdjson::TAPE_ERROR;
}

// The same for a document whose root is not an object: root scalars have
// their own accessors, which also reject trailing content.
error_code validate_root(od::document& doc) {
  od::json_type type{};
  SIMDJSON_TRY(doc.type().get(type));
  switch (type) {
    case od::json_type::array: {
      od::array array;
      SIMDJSON_TRY(doc.get_array().get(array));
      for (auto element : array) {
        od::value item;
        SIMDJSON_TRY(element.get(item));
        SIMDJSON_TRY(validate(item, 1));
      }
      break;
    }
    case od::json_type::object:
      return simdjson::TAPE_ERROR;  // callers only get here after get_object() failed
    case od::json_type::number: {
      double number = 0;
      return doc.get_double().get(number);
    }
    case od::json_type::string: {
      std::string_view text;
      return doc.get_string().get(text);
    }
    case od::json_type::boolean: {
      bool flag = false;
      if (doc.get_bool().get(flag) == simdjson::SUCCESS) return simdjson::SUCCESS;
      std::string_view token;
      return doc.raw_json_token().get(token) == simdjson::SUCCESS ? atom_error(token) : simdjson::T_ATOM_ERROR;
    }
    case od::json_type::null: {
      bool null = false;
      return doc.is_null().get(null) == simdjson::SUCCESS && null ? simdjson::SUCCESS : simdjson::N_ATOM_ERROR;
    }
  }
  const char* rest = nullptr;
  return doc.current_location().get(rest) == simdjson::OUT_OF_BOUNDS ? simdjson::SUCCESS : simdjson::TRAILING_CONTENT;
}

std::uint64_t element_count(const std::vector<std::int64_t>& shape) {
  std::uint64_t count = 1;
  for (std::int64_t d : shape) {
    const auto extent = static_cast<std::uint64_t>(d);
    // Saturate: an absurd shape must still produce a mismatch message, not wrap.
    if (extent != 0 && count > std::numeric_limits<std::uint64_t>::max() / extent) {
      return std::numeric_limits<std::uint64_t>::max();
    }
    count *= extent;
  }
  return count;
}

void reset(TraceRecord& out) {
  out.kind = TraceRecord::Kind::request;
  TraceRequest& r = out.request;
  r.id = 0;
  r.ts_ms.reset();
  r.key.clear();
  r.key_given = false;
  r.model.clear();
  r.line = 0;
  InputSpec& in = r.input;
  in.kind = InputSpec::Kind::none;
  in.shape.clear();
  in.dtype.reset();
  in.seed = 0;
  in.file.clear();
  in.base64.clear();
  in.data.clear();
  in.text.clear();
  in.range.reset();
  in.name.clear();
  r.inputs.clear();
  r.inputs_named = false;
  TraceEvent& e = out.event;
  e.type.clear();
  e.model.clear();
  e.version.clear();
  e.ts_ms.reset();
}

// Parses and validates one line. Keeps the first schema error but goes on
// reading the line, so that a line which is also malformed JSON further on is
// reported as malformed JSON.
class LineParser {
 public:
  explicit LineParser(std::filesystem::path folder) : folder_(std::move(folder)) {}

  // Returns false with `error` set (without the "FILE:LINE: " prefix).
  bool parse(const char* text, std::size_t length, std::size_t capacity, std::uint64_t line, TraceRecord& out,
             std::string& error) {
    reset(out);
    out.line = line;
    failed_ = false;
    seen_ = Seen{};
    pending_.clear();
    request_ = &out.request;
    const error_code json = parse_json(simdjson::padded_string_view(text, length, capacity), out);
    if (json == simdjson::DEPTH_ERROR) {
      error = fmt::format("nesting deeper than {} arrays and objects", kMaxDepth);
      return false;
    }
    if (json != simdjson::SUCCESS) {
      error = fmt::format("malformed JSON ({})", simdjson::error_message(json));
      return false;
    }
    if (!failed_) finish(out);
    if (failed_) {
      error = std::move(message_);
      return false;
    }
    return true;
  }

 private:
  enum class Str : std::uint8_t { absent, string, other };
  struct Seen {
    bool id = false;
    bool input = false;
    bool inputs = false;
    bool event = false;
    Str model = Str::absent;
    Str version = Str::absent;
  };
  // The source fields one input object gave.
  struct Sources {
    bool seed = false;
    bool file = false;
    bool data = false;
    bool image = false;
    bool image_base64 = false;
    bool text = false;
    bool text_file = false;
    bool range = false;
  };

  void fail(std::string_view what) {
    if (failed_) return;
    failed_ = true;
    message_.assign(what);
  }

  error_code parse_json(simdjson::padded_string_view json, TraceRecord& out) {
    od::document doc;
    SIMDJSON_TRY(parser_.iterate(json).get(doc));
    od::object object;
    const error_code as_object = doc.get_object().get(object);
    if (as_object == simdjson::INCORRECT_TYPE) {
      SIMDJSON_TRY(validate_root(doc));
      fail("expected a JSON object");
      return simdjson::SUCCESS;
    }
    SIMDJSON_TRY(as_object);
    for (auto field_result : object) {
      SIMDJSON_TRY(field_result.error());
      od::field&& field = std::move(field_result).value_unsafe();
      std::string_view key;
      SIMDJSON_TRY(field_name(field, key));
      SIMDJSON_TRY(parse_field(key, field.value(), out));
    }
    // The object closed; anything after it (`{...} {...}`, `{...}}`) is not
    // seen by the loop above.
    const char* rest = nullptr;
    if (doc.current_location().get(rest) != simdjson::OUT_OF_BOUNDS) return simdjson::TRAILING_CONTENT;
    return simdjson::SUCCESS;
  }

  // Reads a string field into `dst`; false (after validating it) if it is not one.
  static error_code read_string(od::value& v, std::string& dst, bool& ok, int depth) {
    std::string_view text;
    if (v.get_string().get(text) == simdjson::SUCCESS) {
      dst.assign(text);
      ok = true;
      return simdjson::SUCCESS;
    }
    ok = false;
    return validate(v, depth);
  }

  error_code parse_field(std::string_view key, od::value& v, TraceRecord& out) {
    TraceRequest& r = out.request;
    bool ok = false;
    if (key == "id") {
      seen_.id = true;
      if (v.get_uint64().get(r.id) != simdjson::SUCCESS) {
        SIMDJSON_TRY(validate(v, 1));
        fail("field 'id' must be a non-negative integer");
      }
    } else if (key == "ts_ms") {
      double ts = 0;
      if (v.get_double().get(ts) != simdjson::SUCCESS) {
        SIMDJSON_TRY(validate(v, 1));
        fail("field 'ts_ms' must be a number");
      } else if (ts < 0) {
        fail("'ts_ms' must be >= 0");
      } else if (ts > kMaxTsMs) {
        // Beyond it the time in nanoseconds does not fit in 64 bits.
        fail(fmt::format("'ts_ms' {} is out of range (at most {:.0f}, about 290 years)", ts, kMaxTsMs));
      } else {
        r.ts_ms = ts;
      }
    } else if (key == "key") {
      SIMDJSON_TRY(read_string(v, r.key, ok, 1));
      r.key_given = ok;
      if (!ok) fail("field 'key' must be a string");
    } else if (key == "input") {
      seen_.input = true;
      SIMDJSON_TRY(parse_input(v, r.input, "input", 1));
    } else if (key == "inputs") {
      seen_.inputs = true;
      SIMDJSON_TRY(parse_inputs(v, r));
    } else if (key == "model") {
      // Whether a non-string model is an error depends on the line being a
      // request or an event, and "event" may come later on the line.
      SIMDJSON_TRY(read_string(v, r.model, ok, 1));
      seen_.model = ok ? Str::string : Str::other;
    } else if (key == "version") {
      SIMDJSON_TRY(read_string(v, out.event.version, ok, 1));
      seen_.version = ok ? Str::string : Str::other;
    } else if (key == "event") {
      seen_.event = true;
      SIMDJSON_TRY(read_string(v, out.event.type, ok, 1));
      if (!ok) fail("field 'event' must be a string");
    } else {
      SIMDJSON_TRY(validate(v, 1));
    }
    return simdjson::SUCCESS;
  }

  // One input object ("input", an element of a "inputs" list or a value of
  // a "inputs" map), labelled as errors name it; `depth` is the object's.
  error_code parse_input(od::value& v, InputSpec& in, std::string_view label, int depth) {
    od::object input;
    if (v.get_object().get(input) != simdjson::SUCCESS) {
      SIMDJSON_TRY(validate(v, depth));
      fail(fmt::format("field '{}' must be an object", label));
      return simdjson::SUCCESS;
    }
    Sources sources;
    for (auto field_result : input) {
      SIMDJSON_TRY(field_result.error());
      od::field&& field = std::move(field_result).value_unsafe();
      std::string_view name;
      SIMDJSON_TRY(field_name(field, name));
      SIMDJSON_TRY(parse_input_field(name, field.value(), in, sources, label, depth + 1));
    }
    // Checked in finish(): an event line ignores its inputs, and a type error
    // elsewhere on the line comes first.
    pending_.push_back(Pending{&in == &request_->input ? -1 : static_cast<int>(request_->inputs.size()) - 1, sources,
                               std::string(label)});
    return simdjson::SUCCESS;
  }

  // "inputs": a list of input objects (positional) or a map of them by the
  // forward's argument names.
  error_code parse_inputs(od::value& v, TraceRequest& r) {
    constexpr std::string_view kType = "field 'inputs' must be a non-empty list or map of input objects";
    od::json_type type{};
    SIMDJSON_TRY(v.type().get(type));
    if (type == od::json_type::array) {
      od::array array;
      SIMDJSON_TRY(v.get_array().get(array));
      for (auto element : array) {
        od::value item;
        SIMDJSON_TRY(element.get(item));
        if (r.inputs.size() == kMaxInputs) {
          fail(fmt::format("'inputs' has more than {} inputs", kMaxInputs));
          SIMDJSON_TRY(validate(item, 2));
          continue;
        }
        r.inputs.emplace_back();
        SIMDJSON_TRY(parse_input(item, r.inputs.back(), fmt::format("inputs[{}]", r.inputs.size() - 1), 2));
      }
    } else if (type == od::json_type::object) {
      r.inputs_named = true;
      od::object object;
      SIMDJSON_TRY(v.get_object().get(object));
      for (auto field_result : object) {
        SIMDJSON_TRY(field_result.error());
        od::field&& field = std::move(field_result).value_unsafe();
        std::string_view name;
        SIMDJSON_TRY(field.unescaped_key().get(name));
        const std::string label = fmt::format("inputs.{}", printable(name));
        if (r.inputs.size() == kMaxInputs) {
          fail(fmt::format("'inputs' has more than {} inputs", kMaxInputs));
          SIMDJSON_TRY(validate(field.value(), 2));
          continue;
        }
        for (const InputSpec& other : r.inputs)
          if (other.name == name) fail(fmt::format("'inputs' names '{}' twice", printable(name)));
        r.inputs.emplace_back();
        r.inputs.back().name.assign(name);
        SIMDJSON_TRY(parse_input(field.value(), r.inputs.back(), label, 2));
      }
    } else {
      SIMDJSON_TRY(validate(v, 1));
      fail(kType);
      return simdjson::SUCCESS;
    }
    if (r.inputs.empty()) fail(kType);
    return simdjson::SUCCESS;
  }

  // An array of numbers of one type (int64 or double) into `out`; `ok` is
  // false when `v` is not an array or an element is not such a number (every
  // element is still validated, so the line is checked to its end).
  template <class T>
  error_code read_numbers(od::value& v, std::vector<T>& out, bool& ok, int depth) {
    out.clear();
    od::array array;
    if (v.get_array().get(array) != simdjson::SUCCESS) {
      ok = false;
      return validate(v, depth);
    }
    ok = true;
    for (auto element : array) {
      od::value item;
      SIMDJSON_TRY(element.get(item));
      T number{};
      error_code got = simdjson::SUCCESS;
      if constexpr (std::is_same_v<T, double>)
        got = item.get_double().get(number);
      else
        got = item.get_int64().get(number);
      if (got == simdjson::SUCCESS) {
        out.push_back(number);
      } else {
        SIMDJSON_TRY(validate(item, depth + 1));
        ok = false;
      }
    }
    return simdjson::SUCCESS;
  }

  error_code parse_input_field(std::string_view name, od::value& v, InputSpec& in, Sources& seen,
                               std::string_view label, int depth) {
    const auto shape_type = [&] { fail(fmt::format("field '{}.shape' must be an array of positive integers", label)); };
    if (name == "shape") {
      bool ok = false;
      SIMDJSON_TRY(read_numbers(v, in.shape, ok, depth));
      // An empty shape would read as "not given" (InputSpec's default), so a
      // literal [] is refused rather than silently meaning something else.
      if (!ok || in.shape.empty() || std::any_of(in.shape.begin(), in.shape.end(), [](auto e) { return e <= 0; }))
        shape_type();
    } else if (name == "dtype") {
      std::string_view text;
      if (v.get_string().get(text) != simdjson::SUCCESS) {
        SIMDJSON_TRY(validate(v, depth));
        fail(fmt::format("field '{}.dtype' must be one of {}", label, kDTypeNames));
      } else if (auto dtype = parse_dtype(text)) {
        in.dtype = dtype;
      } else {
        fail(fmt::format("field '{}.dtype' must be one of {}", label, kDTypeNames));
      }
    } else if (name == "seed") {
      seen.seed = true;
      in.kind = InputSpec::Kind::seed;
      if (v.get_uint64().get(in.seed) != simdjson::SUCCESS) {
        SIMDJSON_TRY(validate(v, depth));
        fail(fmt::format("field '{}.seed' must be a non-negative integer", label));
      }
    } else if (name == "file") {
      seen.file = true;
      in.kind = InputSpec::Kind::file;
      bool ok = false;
      SIMDJSON_TRY(read_string(v, in.file, ok, depth));
      if (!ok) fail(fmt::format("field '{}.file' must be a string", label));
    } else if (name == "image") {
      seen.image = true;
      in.kind = InputSpec::Kind::image;
      bool ok = false;
      SIMDJSON_TRY(read_string(v, in.file, ok, depth));
      if (!ok || in.file.empty())
        fail(fmt::format("field '{}.image' must be a path to a JPEG, PNG or WebP file", label));
    } else if (name == "image_base64") {
      seen.image_base64 = true;
      in.kind = InputSpec::Kind::image_base64;
      bool ok = false;
      // Decoded in the request's `input` stage (receiving the payload is part of serving it).
      SIMDJSON_TRY(read_string(v, in.base64, ok, depth));
      if (!ok || in.base64.empty())
        fail(fmt::format("field '{}.image_base64' must be a string of base64 (a JPEG, PNG or WebP file's bytes)",
                         label));
    } else if (name == "data") {
      seen.data = true;
      in.kind = InputSpec::Kind::data;
      bool ok = false;
      SIMDJSON_TRY(read_numbers(v, in.data, ok, depth));
      if (!ok) fail(fmt::format("field '{}.data' must be an array of numbers", label));
    } else if (name == "text") {
      seen.text = true;
      in.kind = InputSpec::Kind::text;
      bool ok = false;
      SIMDJSON_TRY(read_string(v, in.text, ok, depth));
      if (!ok) fail(fmt::format("field '{}.text' must be a string", label));
    } else if (name == "text_file") {
      seen.text_file = true;
      in.kind = InputSpec::Kind::text_file;
      bool ok = false;
      SIMDJSON_TRY(read_string(v, in.file, ok, depth));
      if (!ok || in.file.empty()) fail(fmt::format("field '{}.text_file' must be a path to a text file", label));
    } else if (name == "range") {
      seen.range = true;
      std::vector<std::int64_t> bounds;
      bool ok = false;
      SIMDJSON_TRY(read_numbers(v, bounds, ok, depth));
      if (!ok || bounds.size() != 2 || bounds[0] >= bounds[1])
        fail(fmt::format("field '{}.range' must be [low, high] with integers low < high", label));
      else
        in.range = std::array<std::int64_t, 2>{bounds[0], bounds[1]};
    } else {
      SIMDJSON_TRY(validate(v, depth));
    }
    return simdjson::SUCCESS;
  }

  // What one input object must hold, given everything it gave.
  void check_input(InputSpec& in, const Sources& seen, std::string_view label) {
    if (!in.shape.empty() && !checked_element_count(in.shape))
      return fail(fmt::format("'{}.shape' {} has more elements than fit in 64 bits", label, format_shape(in.shape)));
    const std::pair<bool, std::string_view> parts[] = {{seen.seed, "seed"},
                                                       {seen.file, "file"},
                                                       {seen.data, "data"},
                                                       {seen.image, "image"},
                                                       {seen.image_base64, "image_base64"},
                                                       {seen.text, "text"},
                                                       {seen.text_file, "text_file"}};
    int kinds = 0;
    for (const auto& part : parts)
      kinds += int{part.first};
    if (kinds != 1) {
      std::string found;
      int listed = 0;
      for (const auto& [present, part] : parts) {
        if (!present) continue;
        ++listed;
        if (listed > 1) found += listed == kinds ? " and " : ", ";
        found += part;
      }
      return fail(
          fmt::format("'{}' needs exactly one of seed, file, data, image, image_base64, text or text_file (found {})",
                      label, kinds == 0 ? std::string("none") : found));
    }
    const bool is_image = in.kind == InputSpec::Kind::image || in.kind == InputSpec::Kind::image_base64;
    // An image's shape and element type are its own (H x W x channels, uint8).
    if (is_image && (!in.shape.empty() || in.dtype))
      return fail(fmt::format(
          "'{0}.shape' and '{0}.dtype' do not apply to an image (its size and uint8 pixels are its own)", label));
    const bool is_text = in.kind == InputSpec::Kind::text || in.kind == InputSpec::Kind::text_file;
    if (is_text && (!in.shape.empty() || in.dtype))
      return fail(fmt::format(
          "'{0}.shape' and '{0}.dtype' do not apply to text (the profile's tokenize op makes int64 ids)", label));
    if (seen.range && in.kind != InputSpec::Kind::seed)
      return fail(fmt::format("'{}.range' applies to a seed input only", label));
    if (in.kind == InputSpec::Kind::data && !in.shape.empty()) {
      const std::uint64_t needed = element_count(in.shape);
      if (needed != in.data.size()) {
        return fail(fmt::format("'{}.data' has {} numbers but shape {} needs {}", label, in.data.size(),
                                format_shape(in.shape), needed));
      }
    }
    const bool has_path =
        in.kind == InputSpec::Kind::file || in.kind == InputSpec::Kind::image || in.kind == InputSpec::Kind::text_file;
    if (has_path && !folder_.empty()) {
      const std::filesystem::path file(in.file);
      if (file.is_relative()) in.file = (folder_ / file).string();
    }
  }

  // Checks that need the whole line: which kind of record it is and whether
  // the input spec is complete.
  void finish(TraceRecord& out) {
    TraceRequest& r = out.request;
    if (seen_.event) {
      TraceEvent& e = out.event;
      if (e.type != "model_update") {
        fail(fmt::format("unknown event '{}' (expected model_update)", printable(e.type)));
      } else if (seen_.model != Str::string) {
        fail("model_update needs a string 'model'");
      } else if (seen_.version != Str::string) {
        fail("model_update needs a string 'version'");
      }
      out.kind = TraceRecord::Kind::event;
      e.model.swap(r.model);
      e.ts_ms = r.ts_ms;
      return;
    }
    if (seen_.model == Str::other) return fail("field 'model' must be a string");
    if (seen_.input && seen_.inputs) return fail("a request gives 'input' or 'inputs', not both");
    if (!seen_.input && !seen_.inputs) return fail("request has no 'input'");
    for (const Pending& p : pending_) {
      check_input(p.index < 0 ? r.input : r.inputs[static_cast<std::size_t>(p.index)], p.sources, p.label);
      if (failed_) return;
    }
    r.line = out.line;
    if (!seen_.id) r.id = out.line;
    if (!r.key_given) r.key = r.inputs.empty() ? input_spec_key(r.input) : input_specs_key(r.inputs, r.inputs_named);
  }

  struct Pending {
    int index;  // into inputs; -1: input
    Sources sources;
    std::string label;
  };
  od::parser parser_;
  std::filesystem::path folder_;
  Seen seen_;
  std::vector<Pending> pending_;
  TraceRequest* request_ = nullptr;
  bool failed_ = false;
  std::string message_;
};

}  // namespace

struct TraceReader::Impl {
  std::string path;
  Options options;
  std::FILE* file = nullptr;
  // [begin, end) holds read but unconsumed bytes; `scan` is where the search
  // for the next newline resumes, so a long line is not rescanned per read.
  std::unique_ptr<char[]> buffer;
  std::size_t capacity = 0;  // usable bytes; SIMDJSON_PADDING more are allocated
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t scan = 0;
  bool eof = false;
  std::uint64_t lines = 0;
  std::uint64_t bytes = 0;
  std::uint64_t skipped = 0;
  std::vector<std::string> skipped_examples;
  LineParser parser;
  std::string error;
  std::unique_ptr<CsvRows> csv;  // a .csv trace: read through it instead of lines of JSON

  Impl(std::string p, Options o) : path(std::move(p)), options(o), parser(std::filesystem::path(path).parent_path()) {}
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    if (file != nullptr) std::fclose(file);
  }

  [[noreturn]] void throw_unreadable(int err) const {
    throw bad_input(fmt::format("cannot read trace '{}': {}", path, std::strerror(err)));
  }

  void open() {
    TraceReader::check_regular(path);
    if (is_csv(path)) {
      csv = std::make_unique<CsvRows>(path, options.csv);
      return;
    }
    file = std::fopen(path.c_str(), "rb");
    if (file == nullptr) throw_unreadable(errno);
    // fopen succeeds on a directory; the error would only show at the first read.
    struct stat st {};
    if (::fstat(::fileno(file), &st) == 0 && S_ISDIR(st.st_mode)) throw_unreadable(EISDIR);
    // We read in large blocks ourselves; stdio's own buffer would be a second copy.
    std::setvbuf(file, nullptr, _IONBF, 0);
    capacity = std::max<std::size_t>(options.buffer_bytes, 1);
    allocate(capacity);
  }

  void allocate(std::size_t new_capacity) {
    // Zeroed so that the padding simdjson may read past a line is never
    // uninitialised memory.
    std::unique_ptr<char[]> grown(new char[new_capacity + simdjson::SIMDJSON_PADDING]());
    if (end > begin) std::memcpy(grown.get(), buffer.get() + begin, end - begin);
    end -= begin;
    scan -= begin;
    begin = 0;
    buffer = std::move(grown);
    capacity = new_capacity;
  }

  // Next physical line, without its '\n'; false at end of file.
  bool next_line(const char*& text, std::size_t& length) {
    for (;;) {
      if (scan < end) {
        const void* nl = std::memchr(buffer.get() + scan, '\n', end - scan);
        if (nl != nullptr) {
          const std::size_t stop = static_cast<std::size_t>(static_cast<const char*>(nl) - buffer.get());
          text = buffer.get() + begin;
          length = stop - begin;
          bytes += length + 1;
          begin = scan = stop + 1;
          ++lines;
          return true;
        }
        scan = end;
      }
      if (eof) {
        if (begin == end) return false;
        text = buffer.get() + begin;
        length = end - begin;
        bytes += length;
        begin = scan = end;
        ++lines;
        return true;
      }
      refill();
    }
  }

  void refill() {
    if (begin > 0) {
      std::memmove(buffer.get(), buffer.get() + begin, end - begin);
      end -= begin;
      scan -= begin;
      begin = 0;
    }
    if (end == capacity) {  // one line fills the buffer
      // Grown up to the cap (a line of max_line_bytes and its newline), never past it.
      if (capacity > options.max_line_bytes)
        throw bad_input(at_line(path, lines + 1,
                                fmt::format("a line longer than {} bytes (expected a JSON object per line)",
                                            report::group_thousands(options.max_line_bytes))));
      allocate(std::min(capacity * 2, options.max_line_bytes + 1));
    }
    const std::size_t want = capacity - end;
    const std::size_t got = std::fread(buffer.get() + end, 1, want, file);
    end += got;
    if (got < want) {
      if (std::ferror(file)) throw_unreadable(errno);
      eof = true;
      // The byte after the last line is one simdjson peeks at; make it a
      // newline, as after every other line, instead of stale buffer content.
      buffer[end] = '\n';
    }
  }
};

TraceReader::TraceReader(std::string path) : TraceReader(std::move(path), Options{}) {}

TraceReader::TraceReader(std::string path, Options options) : impl_(std::make_unique<Impl>(std::move(path), options)) {
  impl_->open();
}

TraceReader::~TraceReader() = default;

TraceReader::TraceReader(TraceReader&&) noexcept = default;
TraceReader& TraceReader::operator=(TraceReader&&) noexcept = default;

bool TraceReader::is_csv(const std::string& path) {
  constexpr std::string_view ext = ".csv";
  if (path.size() < ext.size()) return false;
  return std::equal(ext.begin(), ext.end(), path.end() - static_cast<std::ptrdiff_t>(ext.size()),
                    [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); });
}

void TraceReader::check_regular(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
    throw bad_input(
        fmt::format("cannot read trace '{}': not a regular file (a pipe or device is read only once, and "
                    "a trace is read several times: save it to a file first)",
                    path));
}

namespace {
// A CSV row as the request a JSON line would give: key and ts as they are, the
// input from the row's image or seed column, else a synthetic input seeded by
// the key (equal keys, equal inputs; shape and dtype the profile's or model's).
void csv_request(const CsvRows::Row& row, const std::string& trace_path, TraceRecord& out) {
  reset(out);
  out.line = row.line;
  TraceRequest& r = out.request;
  r.id = row.line;
  r.line = row.line;
  r.ts_ms = row.ts_ms;
  r.key.assign(row.key);
  r.key_given = true;
  InputSpec& in = r.input;
  if (!row.image.empty()) {
    in.kind = InputSpec::Kind::image;
    const std::filesystem::path file(row.image);
    in.file = file.is_relative() ? (std::filesystem::path(trace_path).parent_path() / file).string() : file.string();
  } else {
    in.kind = InputSpec::Kind::seed;
    in.seed = row.seed ? *row.seed : XXH3_64bits(row.key.data(), row.key.size());
  }
}
}  // namespace

bool TraceReader::next(TraceRecord& out) {
  Impl& s = *impl_;
  if (s.csv) {
    CsvRows::Row row;
    for (;;) {
      try {
        if (!s.csv->next(row)) return false;
      } catch (const Error& e) {
        if (!s.options.skip_invalid || e.code() != ExitCode::bad_input) throw;
        ++s.skipped;
        if (s.skipped_examples.size() < kMaxSkippedExamples) s.skipped_examples.emplace_back(e.what());
        continue;
      }
      s.lines = row.line;
      csv_request(row, s.path, out);
      return true;
    }
  }
  const char* text = nullptr;
  std::size_t length = 0;
  while (s.next_line(text, length)) {
    if (s.lines == 1 && std::string_view(text, length).substr(0, kBom.size()) == kBom) {
      text += kBom.size();
      length -= kBom.size();
    }
    if (length > 0 && text[length - 1] == '\r') --length;
    std::size_t first = 0;
    while (first < length && is_json_space(text[first]))
      ++first;
    if (first == length) continue;
    // The line ends inside the buffer, which has SIMDJSON_PADDING bytes past
    // its usable capacity, so the padding simdjson needs is always there.
    const std::size_t room = s.capacity + simdjson::SIMDJSON_PADDING - static_cast<std::size_t>(text - s.buffer.get());
    if (s.parser.parse(text, length, room, s.lines, out, s.error)) return true;
    std::string message = at_line(s.path, s.lines, s.error);
    if (!s.options.skip_invalid) throw bad_input(message);
    ++s.skipped;
    if (s.skipped_examples.size() < kMaxSkippedExamples) s.skipped_examples.push_back(std::move(message));
  }
  return false;
}

const std::string& TraceReader::path() const noexcept {
  return impl_->path;
}
std::uint64_t TraceReader::lines() const noexcept {
  return impl_->lines;
}
std::uint64_t TraceReader::bytes() const noexcept {
  return impl_->csv ? impl_->csv->bytes() : impl_->bytes;
}
std::uint64_t TraceReader::skipped() const noexcept {
  return impl_->skipped;
}
const std::vector<std::string>& TraceReader::skipped_examples() const noexcept {
  return impl_->skipped_examples;
}

}  // namespace inferprof
