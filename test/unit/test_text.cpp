// Text inputs and several inputs: the SentencePiece wrapper (ids equal to
// spm_encode's), fitting to max_length (truncate, pad, mask), the tokenize op
// of the preprocessor, the trace fields text / text_file / inputs / range,
// and the multi-tensor cache value (round trip, and corrupt values refused).
#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "inferprof/cache.hpp"
#include "inferprof/error.hpp"
#include "inferprof/profile.hpp"
#include "sanitized.hpp"
#include "spm_model.hpp"
#include "temp_dir.hpp"
#include "text/tokenizer.hpp"
#include "torch_doctest.hpp"  // libtorch, then doctest (the order is kept inside)

using namespace inferprof;
using inferprof::testing::TempDir;

namespace {

struct Model {
  TempDir dir;
  std::string path = inferprof::testing::train_spm_model(dir);
};
Model& spm() {
  static Model m;
  return m;
}

Profile text_profile(const std::string& model, std::int64_t max_length, const std::string& extra = "") {
  return parse_profile(
      fmt::format("[[preprocess]]\nop = \"tokenize\"\nmodel = \"{}\"\nmax_length = {}\n{}", model, max_length, extra),
      "/p/t.toml");
}

TraceRequest text_request(std::string text) {
  TraceRequest r;
  r.id = 7;
  r.line = 3;
  r.input.kind = InputSpec::Kind::text;
  r.input.text = std::move(text);
  return r;
}

std::vector<std::int64_t> values(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  return {c.data_ptr<std::int64_t>(), c.data_ptr<std::int64_t>() + c.numel()};
}

std::vector<TraceRecord> read_trace(const std::string& text) {
  TempDir dir;
  TraceReader reader(dir.write("t.jsonl", text));
  std::vector<TraceRecord> out;
  TraceRecord r;
  while (reader.next(r))
    out.push_back(r);
  return out;
}

std::string trace_error(const std::string& line) {
  try {
    read_trace(line + "\n");
  } catch (const Error& e) {
    const std::string what = e.what();
    return what.substr(what.find(":1: ") + 4);
  }
  return "(no error)";
}

}  // namespace

TEST_SUITE("text" * doctest::skip(kSanitized)) {
  TEST_CASE("fit pads with the pad id and masks the padding, or truncates and says so") {
    std::int64_t ids[5], mask[5];
    CHECK_FALSE(text::fit({4, 5}, 5, 3, ids, mask));
    CHECK(std::vector<std::int64_t>(ids, ids + 5) == std::vector<std::int64_t>{4, 5, 3, 3, 3});
    CHECK(std::vector<std::int64_t>(mask, mask + 5) == std::vector<std::int64_t>{1, 1, 0, 0, 0});
    CHECK(text::fit({1, 2, 3, 4, 5, 6, 7}, 5, 0, ids, mask));
    CHECK(std::vector<std::int64_t>(ids, ids + 5) == std::vector<std::int64_t>{1, 2, 3, 4, 5});
    CHECK(std::vector<std::int64_t>(mask, mask + 5) == std::vector<std::int64_t>{1, 1, 1, 1, 1});
    CHECK_FALSE(text::fit({1, 2, 3, 4, 5}, 5, 0, ids, nullptr));  // exactly max_length: not truncated
    CHECK_FALSE(text::fit({}, 5, 9, ids, mask));
    CHECK(std::vector<std::int64_t>(ids, ids + 5) == std::vector<std::int64_t>{9, 9, 9, 9, 9});
    CHECK(std::vector<std::int64_t>(mask, mask + 5) == std::vector<std::int64_t>{0, 0, 0, 0, 0});
  }

  TEST_CASE("the tokenizer's ids are spm_encode's on the same model and text") {
    if (spm().path.empty()) {
      MESSAGE("spm_train is not installed: skipped");
      return;
    }
    const std::vector<std::string> texts = {"the model serves a request", "cache miss. latency slow.",
                                            "naïve ünïcode words 東京 and digits 12345", "x",
                                            "  leading and   repeated   spaces"};
    std::string joined;
    for (const auto& t : texts)
      joined += t + "\n";
    const auto reference = inferprof::testing::spm_encode_ids(spm().dir, spm().path, joined);
    if (reference.empty()) {
      MESSAGE("spm_encode is not installed: skipped");
      return;
    }
    REQUIRE(reference.size() == texts.size());
    text::Tokenizer tok(spm().path);
    CHECK(tok.pad_id() == 3);
    std::vector<int> ids;
    for (std::size_t i = 0; i < texts.size(); ++i) {
      tok.encode(texts[i], ids);
      CHECK_MESSAGE(ids == reference[i], texts[i]);
      CHECK(!ids.empty());
    }
  }

  TEST_CASE("with max_ids, a long text's first ids are its whole tokenization's, from a prefix") {
    if (spm().path.empty()) {
      MESSAGE("spm_train is not installed: skipped");
      return;
    }
    text::Tokenizer tok(spm().path);
    // Prose, a text without whitespace, multi-byte characters, runs of spaces and newlines.
    std::string words = inferprof::testing::spm_corpus(60), solid, wide, spaced;
    for (int i = 0; i < 800; ++i) {
      solid += "modelcachelatency";
      wide += "東京ü ";
      spaced += "hit   miss\n\n  ";
    }
    std::vector<int> whole, first;
    for (const std::string& t : {words, solid, wide, spaced, std::string("short text")}) {
      tok.encode(t, whole);
      for (std::size_t max_ids : {std::size_t{1}, std::size_t{8}, std::size_t{128}, std::size_t{512}}) {
        tok.encode(t, first, max_ids);
        CAPTURE(max_ids);
        CAPTURE(t.substr(0, 20));
        const std::size_t n = std::min(max_ids, whole.size());
        REQUIRE(first.size() >= n);
        CHECK(std::equal(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(n), first.begin()));
        // Longer than max_ids: still seen as longer (the caller counts a truncation).
        CHECK((first.size() > max_ids) == (whole.size() > max_ids));
      }
    }
    // A 10 MB text for 128 slots tokenizes a prefix only.
    std::string big;
    while (big.size() < (10u << 20))
      big += words;
    tok.encode(big, first, 128);
    CHECK(first.size() > 128);
    CHECK(first.size() < 10000);
  }

  TEST_CASE("a tokenizer model that is a folder, a device or too large is refused before it is read") {
    TempDir dir;
    std::filesystem::create_directories(dir.file("folder.model"));
    const std::string huge = dir.write("huge.model", "");
    std::filesystem::resize_file(huge, text::Tokenizer::kMaxModelBytes + 1);  // sparse: nothing to read
    auto why = [](const std::string& path) {
      try {
        text::Tokenizer tok(path);
      } catch (const text::TokenizerError& e) {
        return e.what;
      }
      return std::string("no error");
    };
    CHECK(why(dir.file("folder.model")) == "not a regular file");
    CHECK(why("/dev/zero") == "not a regular file");
    CHECK(why(huge) == "67108865 bytes, more than the 67108864 expected");
    CHECK(why(dir.file("missing.model")) == "no such file");
  }

  TEST_CASE("a file that is not a SentencePiece model is refused, naming the profile line") {
    TempDir dir;
    const std::string junk = dir.write("junk.model", "this is not a model\n");
    CHECK_THROWS_AS(text::Tokenizer{junk}, text::TokenizerError);
    CHECK_THROWS_AS(text::Tokenizer{dir.file("missing.model")}, text::TokenizerError);
    const Profile p = text_profile(junk, 8);
    try {
      inferprof::detail::Preprocessor pre(p.preprocess, "t.jsonl", "/p/t.toml");
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::bad_input);
      const std::string what = e.what();
      CHECK_MESSAGE(what.rfind("/p/t.toml:1: tokenize: model '" + junk + "': not a SentencePiece model", 0) == 0, what);
      CHECK(what.find('\n') == std::string::npos);
    }
  }

  TEST_CASE("tokenize gives [1, max_length] int64 ids and mask, each op a span, truncations counted") {
    if (spm().path.empty()) return;
    const Profile p = text_profile(spm().path, 8);
    REQUIRE(p.preprocess.size() == 1);
    inferprof::detail::Preprocessor pre(p.preprocess, "t.jsonl");
    const TraceRequest shorter = text_request("the model");
    RequestRecord record;
    inferprof::detail::Inputs x;
    x.tensors.push_back(inferprof::detail::make_input(shorter, {}, DType::float32, ""));
    x.specs.push_back(&shorter.input);
    x = pre.run(std::move(x), shorter, record, -1);
    REQUIRE(x.tensors.size() == 2);
    CHECK(x.names.empty());
    std::vector<int> ids;
    text::Tokenizer(spm().path).encode("the model", ids);
    REQUIRE(ids.size() < 8);
    for (const at::Tensor& t : x.tensors) {
      CHECK((t.scalar_type() == at::kLong));
      CHECK(t.sizes().vec() == std::vector<std::int64_t>{1, 8});
    }
    const auto got = values(x.tensors[0]), mask = values(x.tensors[1]);
    for (std::size_t i = 0; i < 8; ++i) {
      CHECK(got[i] == (i < ids.size() ? ids[i] : 3));  // the model's pad id
      CHECK(mask[i] == (i < ids.size() ? 1 : 0));
    }
    const auto spans = [&](const RequestRecord& r, std::string_view name) {
      int n = 0;
      for (const Span& s : r.spans)
        n += NameTable::global().name(s.name) == name;
      return n;
    };
    CHECK(spans(record, "tokenize") == 1);
    CHECK(spans(record, "truncate") == 0);

    const TraceRequest longer = text_request(std::string(200, 'x') + " the model serves a request cache hit miss");
    RequestRecord r2;
    inferprof::detail::Inputs y;
    y.tensors.push_back(inferprof::detail::make_input(longer, {}, DType::float32, ""));
    y.specs.push_back(&longer.input);
    y = pre.run(std::move(y), longer, r2, -1);
    CHECK(values(y.tensors[1]) == std::vector<std::int64_t>(8, 1));
    CHECK(spans(r2, "truncate") == 1);
  }

  TEST_CASE("named inputs: the mask takes mask_input's name, other inputs pass through tokenize") {
    if (spm().path.empty()) return;
    const Profile p = text_profile(spm().path, 4, "mask_input = \"attention_mask\"\n");
    inferprof::detail::Preprocessor pre(p.preprocess);
    TraceRequest r;
    r.inputs.resize(2);
    r.inputs_named = true;
    r.inputs[0].kind = InputSpec::Kind::text;
    r.inputs[0].text = "hit";
    r.inputs[0].name = "input_ids";
    r.inputs[1].kind = InputSpec::Kind::seed;
    r.inputs[1].shape = {1, 4};
    r.inputs[1].dtype = DType::int64;
    r.inputs[1].range = std::array<std::int64_t, 2>{0, 2};
    r.inputs[1].name = "token_type_ids";
    RequestRecord record;
    inferprof::detail::Inputs x = pre.run(inferprof::detail::make_inputs(r, {}, DType::float32, ""), r, record, -1);
    CHECK(x.names == std::vector<std::string>{"input_ids", "attention_mask", "token_type_ids"});
    REQUIRE(x.tensors.size() == 3);
    const auto types = values(x.tensors[2]);
    for (auto v : types)
      CHECK((v == 0 || v == 1));
  }

  TEST_CASE("a text input without tokenize, and an image op on text, say what to use") {
    inferprof::detail::Preprocessor pre(parse_profile("[[preprocess]]\nop = \"to_float\"\n", "p.toml").preprocess);
    const TraceRequest r = text_request("hello");
    RequestRecord record;
    try {
      pre.run(inferprof::detail::make_input(r, {}, DType::float32, ""), r, record, -1);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("a text input needs 'tokenize' as the profile's first op") != std::string::npos);
    }
  }

  TEST_CASE("seed inputs with a range stay inside it, for integers and floats") {
    TraceRequest r;
    r.input.kind = InputSpec::Kind::seed;
    r.input.seed = 5;
    r.input.shape = {1, 1000};
    r.input.range = std::array<std::int64_t, 2>{100, 30522};
    at::Tensor ids = inferprof::detail::make_input(r, {}, DType::int64, "");
    CHECK((ids.scalar_type() == at::kLong));
    CHECK(ids.min().item<std::int64_t>() >= 100);
    CHECK(ids.max().item<std::int64_t>() < 30522);
    at::Tensor f = inferprof::detail::make_input(r, {}, DType::float32, "");
    CHECK(f.min().item<float>() >= 100.0f);
    CHECK(f.max().item<float>() <= 30522.0f);
  }

  TEST_CASE("trace: text, text_file, inputs as a list and a map, range") {
    TempDir dir;
    const auto records = read_trace(
        R"({"input": {"text": "hello there"}}
{"input": {"text_file": "texts/a.txt"}}
{"inputs": [{"seed": 1, "shape": [1, 8], "dtype": "int64", "range": [0, 30522]}, {"data": [1, 1], "dtype": "int64"}]}
{"inputs": {"mask": {"data": [1, 0]}, "ids": {"text": "hi"}}}
{"inputs": {"ids": {"text": "hi"}, "mask": {"data": [1, 0]}}}
)");
    REQUIRE(records.size() == 5);
    CHECK(records[0].request.input.kind == InputSpec::Kind::text);
    CHECK(records[0].request.input.text == "hello there");
    CHECK(records[1].request.input.kind == InputSpec::Kind::text_file);
    CHECK(records[1].request.input.file.size() > std::string("texts/a.txt").size());  // resolved against the trace
    const TraceRequest& list = records[2].request;
    CHECK(list.input.kind == InputSpec::Kind::none);
    REQUIRE(list.inputs.size() == 2);
    CHECK_FALSE(list.inputs_named);
    REQUIRE(list.inputs[0].range);
    CHECK((*list.inputs[0].range)[1] == 30522);
    const TraceRequest& map = records[3].request;
    CHECK(map.inputs_named);
    REQUIRE(map.inputs.size() == 2);
    CHECK(map.inputs[0].name == "mask");
    CHECK(map.inputs[1].name == "ids");
    // Keys: a map's key depends on its names and specs, not on the order the JSON gives them in? It does:
    // the forward's order comes from the model, so the trace's order is part of the request as written.
    CHECK(map.key != records[4].request.key);
    CHECK(map.key.rfind("h:", 0) == 0);
    CHECK(list.key != records[0].request.key);
    // Existing keys do not change with the new fields.
    TraceRequest plain;
    plain.input.kind = InputSpec::Kind::seed;
    plain.input.seed = 1;
    const std::string before = input_spec_key(plain.input);
    plain.input.range = std::array<std::int64_t, 2>{0, 10};
    CHECK(input_spec_key(plain.input) != before);
  }

  TEST_CASE("trace errors for the new fields: one line naming what was expected") {
    CHECK(trace_error(R"({"input": {"text": 5}})") == "field 'input.text' must be a string");
    CHECK(trace_error(R"({"input": {"text_file": ""}})") == "field 'input.text_file' must be a path to a text file");
    CHECK(trace_error(R"({"input": {"text": "a", "dtype": "int64"}})") ==
          "'input.shape' and 'input.dtype' do not apply to text (the profile's tokenize op makes int64 ids)");
    CHECK(
        trace_error(R"({"input": {"text": "a", "seed": 1}})") ==
        "'input' needs exactly one of seed, file, data, image, image_base64, text or text_file (found seed and text)");
    CHECK(trace_error(R"({"input": {"seed": 1, "range": [5, 5]}})") ==
          "field 'input.range' must be [low, high] with integers low < high");
    CHECK(trace_error(R"({"input": {"seed": 1, "range": [0, 1.5]}})") ==
          "field 'input.range' must be [low, high] with integers low < high");
    CHECK(trace_error(R"({"input": {"data": [1], "range": [0, 2]}})") == "'input.range' applies to a seed input only");
    CHECK(trace_error(R"({"inputs": []})") == "field 'inputs' must be a non-empty list or map of input objects");
    CHECK(trace_error(R"({"inputs": 3})") == "field 'inputs' must be a non-empty list or map of input objects");
    CHECK(trace_error(R"({"inputs": [{"seed": 1}, 3]})") == "field 'inputs[1]' must be an object");
    CHECK(trace_error(R"({"inputs": [{"seed": 1}, {}]})") ==
          "'inputs[1]' needs exactly one of seed, file, data, image, image_base64, text or text_file (found none)");
    CHECK(trace_error(R"({"inputs": {"ids": {"seed": "x"}}})") ==
          "field 'inputs.ids.seed' must be a non-negative integer");
    CHECK(trace_error(R"({"inputs": {"a": {"seed": 1}, "a": {"seed": 2}}})") == "'inputs' names 'a' twice");
    CHECK(trace_error(R"({"input": {"seed": 1}, "inputs": [{"seed": 1}]})") ==
          "a request gives 'input' or 'inputs', not both");
  }
}

TEST_SUITE("tensor sets") {
  std::vector<float> floats(std::size_t n) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i)
      v[i] = static_cast<float>(i) * 0.5f;
    return v;
  }

  TEST_CASE("a tuple, a list and a dict of tensors round-trip, one tensor stays a plain IPTB blob") {
    const auto a = floats(6);
    const std::vector<std::int64_t> b = {1, 2, 3};
    const std::vector<TensorPart> parts = {{"logits", DType::float32, {2, 3}, a.data(), a.size() * 4},
                                           {"ids", DType::int64, {3}, b.data(), b.size() * 8},
                                           {"", DType::float32, {0, 4}, nullptr, 0}};
    for (auto kind : {TensorSet::Kind::tuple, TensorSet::Kind::list, TensorSet::Kind::dict}) {
      const std::string blob = encode_tensors(kind, parts);
      std::string why;
      auto set = decode_tensors(blob, &why);
      REQUIRE_MESSAGE(set, why);
      CHECK(set->kind == kind);
      CHECK(set->names == std::vector<std::string>{"logits", "ids", ""});
      REQUIRE(set->tensors.size() == 3);
      CHECK(set->tensors[0].shape == std::vector<std::int64_t>{2, 3});
      CHECK(std::memcmp(set->tensors[0].bytes.data(), a.data(), 24) == 0);
      CHECK(set->tensors[1].dtype == DType::int64);
      CHECK(std::memcmp(set->tensors[1].bytes.data(), b.data(), 24) == 0);
      CHECK(set->tensors[2].bytes.empty());
      for (const TensorView& v : set->tensors)  // 8-aligned relative to the value
        CHECK((v.bytes.data() - blob.data()) % 8 == 0);
    }
    const std::string one = encode_tensors(TensorSet::Kind::single, {parts[0]});
    CHECK(one == encode_tensor(DType::float32, {2, 3}, a.data(), 24));
    auto set = decode_tensors(one);
    REQUIRE(set);
    CHECK(set->kind == TensorSet::Kind::single);
    CHECK_FALSE(decode_tensor(encode_tensors(TensorSet::Kind::tuple, parts)));  // old readers see a foreign value
    CHECK_THROWS_AS(encode_tensors(TensorSet::Kind::single, parts), Error);
    CHECK_THROWS_AS(encode_tensors(TensorSet::Kind::dict,
                                   {{std::string(kMaxTensorNameBytes + 1, 'n'), DType::int64, {3}, b.data(), 24}}),
                    Error);
  }

  TEST_CASE("corrupt tensor sets are refused, never misread: truncation, bit flips, forged headers") {
    const auto a = floats(4);
    const std::string blob = encode_tensors(
        TensorSet::Kind::dict, {{"x", DType::float32, {4}, a.data(), 16}, {"y", DType::float32, {2, 2}, a.data(), 16}});
    for (std::size_t n = 0; n < blob.size(); ++n)
      CHECK_FALSE(decode_tensors(std::string_view(blob).substr(0, n)));
    for (std::size_t i = 0; i < blob.size(); ++i) {
      std::string bad = blob;
      bad[i] = static_cast<char>(bad[i] ^ 0x10);
      CHECK_FALSE_MESSAGE(decode_tensors(bad), "flipped byte " << i);
    }
    CHECK_FALSE(decode_tensors(blob + std::string(8, '\0')));
    // Forged with a valid checksum: the structure is still checked.
    const auto reseal = [](std::string b) {
      const std::size_t body = b.size() - 8;
      const std::uint64_t h = XXH3_64bits(b.data(), body);
      for (int i = 0; i < 8; ++i)
        b[body + static_cast<std::size_t>(i)] = static_cast<char>(h >> (8 * i));
      return b;
    };
    std::string why;
    std::string many = blob;
    many[8] = '\x7f';  // count 127: overruns the value
    CHECK_FALSE(decode_tensors(reseal(many), &why));
    CHECK(why.find("overruns") != std::string::npos);
    std::string huge = blob;
    huge[11] = '\x7f';  // count > kMaxTensorSetSize
    CHECK_FALSE(decode_tensors(reseal(huge), &why));
    CHECK(why.find("exceed") != std::string::npos);
    std::string name = blob;
    name[16 + 7] = '\x7f';  // the first name's length, absurd
    CHECK_FALSE(decode_tensors(reseal(name), &why));
    std::string kind = blob;
    kind[5] = '\x09';
    CHECK_FALSE(decode_tensors(reseal(kind), &why));
    CHECK(why.find("kind") != std::string::npos);
    std::string version = blob;
    version[4] = '\x02';
    CHECK_FALSE(decode_tensors(reseal(version), &why));
    CHECK(why.find("version") != std::string::npos);
    std::string fewer = blob;
    fewer[8] = '\x01';  // one tensor declared, two present
    CHECK_FALSE(decode_tensors(reseal(fewer), &why));
    CHECK(why.find("trailing") != std::string::npos);
  }
}
