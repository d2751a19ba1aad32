#include <doctest/doctest.h>
#include <fmt/format.h>
#include <simdjson.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "inferprof/error.hpp"
#include "inferprof/npy.hpp"
#include "inferprof/trace.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using namespace inferprof;

namespace {

using inferprof::testing::TempDir;

std::vector<TraceRecord> read_all(const std::string& path, TraceReader::Options options = {}) {
  TraceReader reader(path, options);
  std::vector<TraceRecord> records;
  TraceRecord record;
  while (reader.next(record))
    records.push_back(record);
  return records;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string json_error(simdjson::error_code code) {
  return fmt::format("malformed JSON ({})", simdjson::error_message(code));
}

// Reads a one-line trace "<line>" preceded by two blank lines and returns the
// error message, so every case also checks the line number counts blanks.
struct BadLine {
  const TempDir& dir;
  std::string path;
  explicit BadLine(const TempDir& d) : dir(d), path(d.file("bad.jsonl")) {}
  std::string expect(const std::string& what) const { return path + ":3: " + what; }
  void write(const std::string& line) const { dir.write("bad.jsonl", "\n   \n" + line + "\n"); }
};

}  // namespace

TEST_SUITE("trace") {
  TEST_CASE("dtype names, sizes and shapes") {
    const DType all[] = {DType::uint8,   DType::int8,    DType::int16,   DType::int32,  DType::int64,
                         DType::float16, DType::float32, DType::float64, DType::boolean};
    for (DType d : all)
      CHECK(parse_dtype(dtype_name(d)) == d);
    CHECK(dtype_name(DType::boolean) == "bool");
    CHECK(parse_dtype("bool") == DType::boolean);
    CHECK_FALSE(parse_dtype("boolean").has_value());
    CHECK_FALSE(parse_dtype("float").has_value());
    CHECK(dtype_size(DType::uint8) == 1);
    CHECK(dtype_size(DType::float16) == 2);
    CHECK(dtype_size(DType::int32) == 4);
    CHECK(dtype_size(DType::float64) == 8);
    CHECK(dtype_size(DType::boolean) == 1);
    CHECK(format_shape({1, 3, 224, 224}) == "[1, 3, 224, 224]");
    CHECK(format_shape({16}) == "[16]");
    CHECK(format_shape({}) == "[]");
  }

  TEST_CASE("a line over the cap is refused when the buffer reaches it, naming its line, with skip_invalid too") {
    CHECK(kMaxTraceLineBytes == std::size_t{64} << 20);
    TempDir dir;
    const std::string line = R"({"id": 1, "key": "k", "input": {"shape": [1, 4], "seed": 1}})";
    const std::string padded = R"({"id": 2, "key": ")" + std::string(4000, 'x') + R"(", "input": {"seed": 2}})";
    const std::string path = dir.file("t.jsonl");
    std::ofstream(path) << line << "\n"
                        << padded << "\n"
                        << R"({"id": 3, "key": ")" << std::string(100000, 'y');
    for (bool skip : {false, true}) {
      TraceReader::Options o;
      o.buffer_bytes = 1024;
      o.max_line_bytes = 4096;  // the second line fits, the third (no newline, 100 KB) does not
      o.skip_invalid = skip;
      TraceReader reader(path, o);
      TraceRecord r;
      REQUIRE(reader.next(r));
      REQUIRE(reader.next(r));
      CHECK(r.request.key.size() == 4000);
      CHECK_THROWS_WITH_AS(reader.next(r),
                           (path + ":3: a line longer than 4,096 bytes (expected a JSON object per line)").c_str(),
                           Error);
    }
  }

  TEST_CASE("generated trace reads back") {
    TempDir dir;
    GenTraceOptions options;
    options.requests = 2000;
    options.keys = 50;
    options.rate = 200;
    options.seed = 7;
    options.shape = {1, 3, 8, 8};
    options.dtype = DType::uint8;
    const std::string path = dir.file("gen.jsonl");
    generate_trace(options, path);

    TraceReader reader(path);
    TraceRecord record;
    std::uint64_t count = 0;
    double last_ts = 0;
    std::map<std::string, InputSpec> spec_of;
    while (reader.next(record)) {
      ++count;
      REQUIRE(record.kind == TraceRecord::Kind::request);
      const TraceRequest& r = record.request;
      CHECK(record.line == count);
      CHECK(r.id == count);
      CHECK(r.key_given);
      CHECK(r.key.rfind("k-", 0) == 0);
      REQUIRE(r.ts_ms.has_value());
      CHECK(*r.ts_ms >= last_ts);
      last_ts = *r.ts_ms;
      CHECK(r.input.kind == InputSpec::Kind::seed);
      CHECK(r.input.shape == std::vector<std::int64_t>{1, 3, 8, 8});
      CHECK(r.input.dtype == DType::uint8);
      auto [it, inserted] = spec_of.emplace(r.key, r.input);
      if (!inserted) CHECK(input_spec_key(it->second) == input_spec_key(r.input));
    }
    CHECK(count == 2000);
    CHECK(reader.lines() == 2000);
    CHECK(reader.bytes() == fs::file_size(path));
    CHECK(spec_of.size() <= 50);
    // 2000 arrivals at 200/s span about 10 s.
    CHECK(last_ts > 8000);
    CHECK(last_ts < 12000);

    SUBCASE("same options give the same bytes, another seed other bytes") {
      const std::string again = dir.file("again.jsonl");
      generate_trace(options, again);
      CHECK(slurp(again) == slurp(path));
      options.seed = 8;
      const std::string other = dir.file("other.jsonl");
      generate_trace(options, other);
      CHECK(slurp(other) != slurp(path));
    }
  }

  TEST_CASE("generator line format, closed loop and model updates") {
    TempDir dir;
    GenTraceOptions options;
    options.requests = 3;
    options.keys = 1;
    options.rate = 0;
    const std::string path = dir.file("closed.jsonl");
    generate_trace(options, path);
    CHECK(slurp(path) ==
          "{\"id\":1,\"key\":\"k-0\",\"input\":{\"shape\":[1,16],\"dtype\":\"float32\",\"seed\":0}}\n"
          "{\"id\":2,\"key\":\"k-0\",\"input\":{\"shape\":[1,16],\"dtype\":\"float32\",\"seed\":0}}\n"
          "{\"id\":3,\"key\":\"k-0\",\"input\":{\"shape\":[1,16],\"dtype\":\"float32\",\"seed\":0}}\n");
    for (const TraceRecord& r : read_all(path))
      CHECK_FALSE(r.request.ts_ms.has_value());

    options.requests = 1000;
    options.keys = 10;
    options.rate = 1000;  // about 1 s of traffic
    options.update_every_ms = 100;
    options.model = "res\"net";
    const std::string updates = dir.file("updates.jsonl");
    generate_trace(options, updates);
    std::uint64_t requests = 0;
    std::uint64_t events = 0;
    double last_ts = 0;
    for (const TraceRecord& r : read_all(updates)) {
      const std::optional<double> ts = r.kind == TraceRecord::Kind::event ? r.event.ts_ms : r.request.ts_ms;
      REQUIRE(ts.has_value());
      CHECK(*ts >= last_ts);
      last_ts = *ts;
      if (r.kind == TraceRecord::Kind::event) {
        ++events;
        CHECK(r.event.type == "model_update");
        CHECK(r.event.model == "res\"net");
        CHECK(r.event.version == fmt::format("v{}", events + 1));
        CHECK(*ts == doctest::Approx(100.0 * static_cast<double>(events)));
      } else {
        ++requests;
        CHECK(r.request.id == requests);
      }
    }
    CHECK(requests == 1000);
    CHECK(events == static_cast<std::uint64_t>(last_ts / 100));
    CHECK(events >= 7);
    CHECK(events <= 13);
  }

  TEST_CASE("zipf popularity") {
    TempDir dir;
    GenTraceOptions options;
    options.requests = 100000;
    options.keys = 100;
    options.rate = 0;
    options.seed = 3;
    auto counts = [&](double zipf) {
      options.zipf = zipf;
      const std::string path = dir.file(fmt::format("zipf-{}.jsonl", zipf));
      generate_trace(options, path);
      std::map<std::string, std::uint64_t> by_key;
      for (const TraceRecord& r : read_all(path))
        ++by_key[r.request.key];
      std::vector<std::uint64_t> sorted;
      for (const auto& [key, n] : by_key)
        sorted.push_back(n);
      std::sort(sorted.rbegin(), sorted.rend());
      return std::make_pair(by_key, sorted);
    };

    SUBCASE("a = 1 is skewed, rank 0 hottest") {
      const auto [by_key, sorted] = counts(1.0);
      // Expected: top ~19%, median rank ~1/50 of that.
      CHECK(by_key.at("k-0") == sorted.front());
      CHECK(sorted.front() > 15000);
      CHECK(sorted.front() > 20 * sorted[sorted.size() / 2]);
    }
    SUBCASE("a = 0 is uniform") {
      const auto [by_key, sorted] = counts(0.0);
      CHECK(by_key.size() == 100);
      CHECK(sorted.front() < 1200);  // mean 1000, sd ~31
      CHECK(sorted.back() > 800);
    }
  }

  TEST_CASE("zipf over ten million keys") {
    TempDir dir;
    GenTraceOptions options;
    options.requests = 1000;
    options.keys = 10'000'000;
    options.zipf = 0.8;
    const std::string path = dir.file("many.jsonl");
    generate_trace(options, path);
    std::uint64_t count = 0;
    for (const TraceRecord& r : read_all(path)) {
      ++count;
      CHECK(r.request.input.seed < options.keys);
      CHECK(r.request.key == fmt::format("k-{}", r.request.input.seed));
    }
    CHECK(count == 1000);
  }

  TEST_CASE("generator rejects bad options") {
    TempDir dir;
    const std::string path = dir.file("t.jsonl");
    auto gen = [&](auto&& edit) {
      GenTraceOptions options;
      edit(options);
      generate_trace(options, path);
    };
    CHECK_THROWS_WITH(gen([](GenTraceOptions& o) { o.requests = 0; }), "trace generator: requests must be > 0");
    CHECK_THROWS_WITH(gen([](GenTraceOptions& o) { o.keys = 0; }), "trace generator: keys must be > 0");
    CHECK_THROWS_WITH(gen([](GenTraceOptions& o) { o.zipf = -1; }),
                      "trace generator: zipf must be a finite number >= 0 (got -1)");
    CHECK_THROWS_WITH(gen([](GenTraceOptions& o) { o.rate = -5; }),
                      "trace generator: rate must be a finite number >= 0 (got -5)");
    CHECK_THROWS_WITH(gen([](GenTraceOptions& o) { o.shape = {}; }),
                      "trace generator: shape must be non-empty with positive extents (got [])");
    CHECK_THROWS_WITH(gen([](GenTraceOptions& o) {
                        o.shape = {1, 0};
                      }),
                      "trace generator: shape must be non-empty with positive extents (got [1, 0])");
    CHECK_THROWS_WITH(gen([](GenTraceOptions& o) {
                        o.rate = 0;
                        o.update_every_ms = 10;
                      }),
                      "trace generator: model updates need timestamps, so update_every_ms > 0 needs rate > 0");
    try {
      gen([](GenTraceOptions& o) { o.requests = 0; });
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::bad_input);
    }
    CHECK_FALSE(fs::exists(path));

    const std::string unwritable = dir.file("missing/t.jsonl");
    CHECK_THROWS_WITH(generate_trace(GenTraceOptions{}, unwritable),
                      ("cannot write '" + unwritable + "': No such file or directory").c_str());
    try {
      generate_trace(GenTraceOptions{}, unwritable);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::runtime);
    }
    // No temporary file left behind beside a successful one either.
    generate_trace(GenTraceOptions{}, path);
    CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 1);
  }

  TEST_CASE("reader: every field and defaults") {
    TempDir dir;
    const std::string path =
        dir.write("t.jsonl",
                  "{\"id\": 17, \"ts_ms\": 12.5, \"key\": \"img-42\", \"model\": \"resnet@v1\", "
                  "\"input\": {\"shape\": [1,3,224,224], \"dtype\": \"uint8\", \"seed\": 42}, \"extra\": {\"a\": [1, "
                  "null, true]}}\n"
                  "{\"input\": {\"shape\": [1,2], \"dtype\": \"float64\", \"data\": [0.5, -1e3]}}\n"
                  "{\"event\": \"model_update\", \"model\": \"resnet\", \"version\": \"v2\", \"ts_ms\": 900.0}\n"
                  "{\"input\": {\"data\": [1, 2, 3]}}\n");
    const auto records = read_all(path);
    REQUIRE(records.size() == 4);

    const TraceRequest& a = records[0].request;
    CHECK(records[0].kind == TraceRecord::Kind::request);
    CHECK(a.id == 17);
    CHECK(a.ts_ms == 12.5);
    CHECK(a.key == "img-42");
    CHECK(a.key_given);
    CHECK(a.model == "resnet@v1");
    CHECK(a.input.kind == InputSpec::Kind::seed);
    CHECK(a.input.shape == std::vector<std::int64_t>{1, 3, 224, 224});
    CHECK(a.input.dtype == DType::uint8);
    CHECK(a.input.seed == 42);

    const TraceRequest& b = records[1].request;
    CHECK(b.id == 2);  // the line number
    CHECK_FALSE(b.ts_ms.has_value());
    CHECK_FALSE(b.key_given);
    CHECK(b.key == input_spec_key(b.input));
    CHECK(b.key.size() == 18);
    CHECK(b.input.kind == InputSpec::Kind::data);
    CHECK(b.input.data == std::vector<double>{0.5, -1000.0});

    CHECK(records[2].kind == TraceRecord::Kind::event);
    CHECK(records[2].line == 3);
    CHECK(records[2].event.type == "model_update");
    CHECK(records[2].event.model == "resnet");
    CHECK(records[2].event.version == "v2");
    CHECK(records[2].event.ts_ms == 900.0);

    CHECK(records[3].request.input.shape.empty());  // data without shape: 1-D
    CHECK(records[3].request.input.data.size() == 3);
    CHECK_FALSE(records[3].request.input.dtype.has_value());
  }

  TEST_CASE("reader: bad lines name the file, the line and what was expected") {
    TempDir dir;
    BadLine bad(dir);
    auto check = [&](const std::string& line, const std::string& what) {
      CAPTURE(line);
      bad.write(line);
      CHECK_THROWS_WITH(read_all(bad.path), bad.expect(what).c_str());
      try {
        read_all(bad.path);
      } catch (const Error& e) {
        CHECK(e.code() == ExitCode::bad_input);
      }
    };
    const std::string in = R"("input":{"seed":1})";

    SUBCASE("malformed JSON") {
      check(R"({"id":1,)" + in + "} x", json_error(simdjson::INCOMPLETE_ARRAY_OR_OBJECT));
      check(R"({"id":1,)" + in + "}}", json_error(simdjson::TRAILING_CONTENT));
      check(R"({"id":1,)" + in + R"(} {"id":2})", json_error(simdjson::TRAILING_CONTENT));
      check(R"({"id":1,"input":{"seed":1})", json_error(simdjson::TAPE_ERROR));
      check(R"({"id":1,"input":{"seed":1)", json_error(simdjson::INCOMPLETE_ARRAY_OR_OBJECT));
      check(R"({"id":1,"input":{"seed":)", json_error(simdjson::INCOMPLETE_ARRAY_OR_OBJECT));
      check(R"({"id":1,"key":"abc})", json_error(simdjson::UNCLOSED_STRING));
      check(R"({"id":1,"key":"a\qb",)" + in + "}", json_error(simdjson::STRING_ERROR));
      check(R"({"id":1 "key":"a",)" + in + "}", json_error(simdjson::TAPE_ERROR));
      check(R"({"id":12x,)" + in + "}", json_error(simdjson::NUMBER_ERROR));
      check(R"({"id":tru,)" + in + "}", json_error(simdjson::T_ATOM_ERROR));
      check("{\"key\":\"a\xff\"," + in + "}", json_error(simdjson::UTF8_ERROR));
      check("nope", json_error(simdjson::N_ATOM_ERROR));
      check("[1, 2", json_error(simdjson::INCOMPLETE_ARRAY_OR_OBJECT));
      check(R"({"id":1,"input":{"seed":1}})"
            "\x01",
            json_error(simdjson::INCOMPLETE_ARRAY_OR_OBJECT));
      // Unknown fields are not interpreted, but their JSON is still checked.
      check(R"({"extra":[1,{"a":nul}],)" + in + "}", json_error(simdjson::N_ATOM_ERROR));
      check(R"({"extra":01,)" + in + "}", json_error(simdjson::NUMBER_ERROR));
      // A type error earlier on the line does not hide bad JSON later on it.
      check(R"({"id":"x","extra":[1,2,,3],)" + in + "}", json_error(simdjson::TAPE_ERROR));
    }
    SUBCASE("not an object") {
      check("[1, 2, 3]", "expected a JSON object");
      check("42", "expected a JSON object");
      check("\"text\"", "expected a JSON object");
      check("null", "expected a JSON object");
    }
    SUBCASE("field types") {
      check(R"({"ts_ms":"5",)" + in + "}", "field 'ts_ms' must be a number");
      check(R"({"ts_ms":-0.5,)" + in + "}", "'ts_ms' must be >= 0");
      check(R"({"id":-1,)" + in + "}", "field 'id' must be a non-negative integer");
      check(R"({"id":1.5,)" + in + "}", "field 'id' must be a non-negative integer");
      check(R"({"id":"1",)" + in + "}", "field 'id' must be a non-negative integer");
      check(R"({"key":7,)" + in + "}", "field 'key' must be a string");
      check(R"({"model":["m"],)" + in + "}", "field 'model' must be a string");
      check(R"({"input":[1]})", "field 'input' must be an object");
      check(R"({"input":{"shape":[1,0],"seed":1}})", "field 'input.shape' must be an array of positive integers");
      check(R"({"input":{"shape":[1,2.5],"seed":1}})", "field 'input.shape' must be an array of positive integers");
      check(R"({"input":{"shape":"1x2","seed":1}})", "field 'input.shape' must be an array of positive integers");
      check(R"({"input":{"shape":[],"seed":1}})", "field 'input.shape' must be an array of positive integers");
      check(R"({"input":{"dtype":"float","seed":1}})",
            "field 'input.dtype' must be one of uint8, int8, int16, int32, int64, float16, float32, float64, bool");
      check(R"({"input":{"dtype":4,"seed":1}})",
            "field 'input.dtype' must be one of uint8, int8, int16, int32, int64, float16, float32, float64, bool");
      check(R"({"input":{"seed":-3}})", "field 'input.seed' must be a non-negative integer");
      check(R"({"input":{"seed":"3"}})", "field 'input.seed' must be a non-negative integer");
      check(R"({"input":{"file":3}})", "field 'input.file' must be a string");
      check(R"({"input":{"data":[1,"2"]}})", "field 'input.data' must be an array of numbers");
      check(R"({"input":{"data":{"a":1}}})", "field 'input.data' must be an array of numbers");
    }
    SUBCASE("input spec") {
      check(R"({"id":1})", "request has no 'input'");
      check(R"({"input":{}})",
            "'input' needs exactly one of seed, file, data, image, image_base64, text or text_file (found none)");
      check(R"({"input":{"shape":[1,2]}})",
            "'input' needs exactly one of seed, file, data, image, image_base64, text or text_file (found none)");
      check(R"({"input":{"seed":1,"data":[1]}})",
            "'input' needs exactly one of seed, file, data, image, image_base64, text or text_file (found seed and "
            "data)");
      check(R"({"input":{"file":"a.npy","seed":1}})",
            "'input' needs exactly one of seed, file, data, image, image_base64, text or text_file (found seed and "
            "file)");
      check(R"({"input":{"data":[1],"file":"a.npy","seed":1}})",
            "'input' needs exactly one of seed, file, data, image, image_base64, text or text_file (found seed, file "
            "and data)");
      check(R"({"input":{"shape":[1,16],"data":[1,2,3,4,5]}})",
            "'input.data' has 5 numbers but shape [1, 16] needs 16");
    }
    SUBCASE("image inputs") {
      check(R"({"input":{"image":3}})", "field 'input.image' must be a path to a JPEG, PNG or WebP file");
      check(R"({"input":{"image":""}})", "field 'input.image' must be a path to a JPEG, PNG or WebP file");
      check(R"({"input":{"image_base64":[1]}})",
            "field 'input.image_base64' must be a string of base64 (a JPEG, PNG or WebP file's bytes)");
      check(R"({"input":{"image":"a.jpg","seed":1}})",
            "'input' needs exactly one of seed, file, data, image, image_base64, text or text_file (found seed and "
            "image)");
      check(R"({"input":{"image":"a.jpg","image_base64":"AAAA"}})",
            "'input' needs exactly one of seed, file, data, image, image_base64, text or text_file (found image and "
            "image_base64)");
      check(R"({"input":{"image":"a.jpg","shape":[1,3,4,4]}})",
            "'input.shape' and 'input.dtype' do not apply to an image (its size and uint8 pixels are its own)");
      check(R"({"input":{"image_base64":"AAAA","dtype":"uint8"}})",
            "'input.shape' and 'input.dtype' do not apply to an image (its size and uint8 pixels are its own)");
    }
    SUBCASE("events") {
      check(R"({"event":"model_update","version":"v2"})", "model_update needs a string 'model'");
      check(R"({"event":"model_update","model":3,"version":"v2"})", "model_update needs a string 'model'");
      check(R"({"event":"model_update","model":"m"})", "model_update needs a string 'version'");
      check(R"({"event":"foo","model":"m","version":"v2"})", "unknown event 'foo' (expected model_update)");
      check(R"({"event":1})", "field 'event' must be a string");
    }
  }

  TEST_CASE("reader: skip_invalid counts and keeps the first messages") {
    TempDir dir;
    std::string content;
    for (int i = 1; i <= 20; ++i) {
      content += i % 3 == 0 ? "{\"id\":-1}\n" : fmt::format("{{\"id\":{},\"input\":{{\"seed\":{}}}}}\n", i, i);
    }
    content += "{\"id\": oops\n";  // malformed, last line, no newline
    const std::string path = dir.write("t.jsonl", content);
    TraceReader::Options options;
    options.skip_invalid = true;
    TraceReader reader(path, options);
    TraceRecord record;
    std::vector<std::uint64_t> ids;
    while (reader.next(record))
      ids.push_back(record.request.id);
    CHECK(ids.size() == 14);
    CHECK(ids.front() == 1);
    CHECK(ids.back() == 20);
    CHECK(reader.skipped() == 7);
    CHECK(reader.lines() == 21);
    REQUIRE(reader.skipped_examples().size() == 5);
    CHECK(reader.skipped_examples()[0] == path + ":3: field 'id' must be a non-negative integer");
    CHECK(reader.skipped_examples()[4] == path + ":15: field 'id' must be a non-negative integer");
  }

  TEST_CASE("reader: lines longer than the buffer, CRLF, no final newline, blank lines") {
    TempDir dir;
    std::string data;
    for (int i = 0; i < 2000; ++i)
      data += fmt::format("{}{}.25", i ? "," : "", i);
    REQUIRE(data.size() > 10000);
    const std::string long_line = R"({"id":5,"input":{"shape":[2000],"data":[)" + data + "]}}";
    const std::string small = R"({"input":{"seed":9}})";
    const std::string path =
        dir.write("t.jsonl", small + "\r\n \t\r\n" + long_line + "\r\n\r\n" + small + "\n" + long_line + "\n" + small);
    for (std::size_t buffer : {std::size_t{1}, std::size_t{64}, std::size_t{4096}, std::size_t{1} << 20}) {
      CAPTURE(buffer);
      TraceReader::Options options;
      options.buffer_bytes = buffer;
      TraceReader reader(path, options);
      std::vector<TraceRecord> records;
      TraceRecord record;
      while (reader.next(record))
        records.push_back(record);
      REQUIRE(records.size() == 5);
      CHECK(records[0].line == 1);
      CHECK(records[0].request.input.seed == 9);
      CHECK(records[1].line == 3);
      CHECK(records[1].request.input.data.size() == 2000);
      CHECK(records[1].request.input.data[1999] == 1999.25);
      CHECK(records[2].line == 5);
      CHECK(records[3].line == 6);
      CHECK(records[3].request.input.data == records[1].request.input.data);
      CHECK(records[4].line == 7);
      CHECK(records[4].request.id == 7);
      CHECK(reader.lines() == 7);
      CHECK(reader.bytes() == fs::file_size(path));
    }
  }

  TEST_CASE("reader: a byte-order mark and an empty file") {
    TempDir dir;
    const auto records = read_all(dir.write("bom.jsonl", "\xEF\xBB\xBF{\"input\":{\"seed\":1}}\n"));
    REQUIRE(records.size() == 1);
    CHECK(records[0].request.input.seed == 1);
    CHECK(read_all(dir.write("empty.jsonl", "")).empty());
    CHECK(read_all(dir.write("blank.jsonl", "\n\n  \n")).empty());
  }

  TEST_CASE("reader: input files resolve against the trace's folder") {
    TempDir dir;
    const std::string path = dir.write("sub/t.jsonl",
                                       "{\"input\":{\"file\":\"inputs/a.npy\"}}\n"
                                       "{\"input\":{\"file\":\"/abs/b.npy\"}}\n");
    const auto records = read_all(path);
    REQUIRE(records.size() == 2);
    CHECK(records[0].request.input.kind == InputSpec::Kind::file);
    CHECK(records[0].request.input.file == (dir.path() / "sub" / "inputs" / "a.npy").string());
    CHECK(records[0].request.input.shape.empty());
    CHECK(records[1].request.input.file == "/abs/b.npy");
    // Keys hash the resolved path, so they differ for different files.
    CHECK(records[0].request.key != records[1].request.key);

    // A trace named without a folder resolves against the working directory.
    const fs::path cwd = fs::current_path();
    fs::current_path(dir.path() / "sub");
    std::vector<TraceRecord> here;
    CHECK_NOTHROW(here = read_all("t.jsonl"));
    fs::current_path(cwd);
    REQUIRE(here.size() == 2);
    CHECK(here[0].request.input.file == "inputs/a.npy");
  }

  TEST_CASE("reader: image inputs resolve like files, carry their line, and key apart from .npy files") {
    TempDir dir;
    const std::string path = dir.write("sub/t.jsonl",
                                       "{\"input\":{\"image\":\"imgs/a.jpg\"}}\n"
                                       "\n"
                                       "{\"input\":{\"image_base64\":\"QUJD\"}}\n"
                                       "{\"input\":{\"file\":\"imgs/a.jpg\"}}\n");
    const auto records = read_all(path);
    REQUIRE(records.size() == 3);
    CHECK(records[0].request.input.kind == InputSpec::Kind::image);
    CHECK(records[0].request.input.file == (dir.path() / "sub" / "imgs" / "a.jpg").string());
    CHECK(records[0].request.line == 1);
    CHECK(records[1].request.input.kind == InputSpec::Kind::image_base64);
    CHECK(records[1].request.input.base64 == "QUJD");
    CHECK(records[1].request.line == 3);
    // The same path as an image and as a .npy file are different inputs.
    CHECK(records[0].request.key != records[2].request.key);
    InputSpec a = records[1].request.input, b = a;
    b.base64 = "QUJE";
    CHECK(input_spec_key(a) != input_spec_key(b));
  }

  TEST_CASE("reader: unreadable traces") {
    TempDir dir;
    const std::string missing = dir.file("missing.jsonl");
    CHECK_THROWS_WITH(TraceReader{missing}, ("cannot read trace '" + missing + "': No such file or directory").c_str());
    const std::string folder = dir.path().string();
    CHECK_THROWS_WITH(TraceReader{folder}, ("cannot read trace '" + folder + "': Is a directory").c_str());
  }

  TEST_CASE("reader: a moved reader carries on where it was") {
    TempDir dir;
    const std::string path = dir.write("t.jsonl", "{\"input\":{\"seed\":1}}\n{\"input\":{\"seed\":2}}\n");
    TraceReader first(path);
    TraceRecord record;
    REQUIRE(first.next(record));
    TraceReader second = std::move(first);
    REQUIRE(second.next(record));
    CHECK(record.request.input.seed == 2);
    CHECK_FALSE(second.next(record));
    CHECK(second.path() == path);
    CHECK(second.lines() == 2);
  }

  TEST_CASE("input spec keys") {
    InputSpec a;
    a.kind = InputSpec::Kind::seed;
    a.shape = {1, 16};
    a.dtype = DType::float32;
    a.seed = 42;
    InputSpec b = a;
    const std::string key = input_spec_key(a);
    CHECK(key.size() == 18);
    CHECK(key.rfind("h:", 0) == 0);
    CHECK(key.find_first_not_of("0123456789abcdef", 2) == std::string::npos);
    CHECK(input_spec_key(b) == key);

    b.data = {1.0};  // not part of a seed spec
    CHECK(input_spec_key(b) == key);
    b = a;
    b.seed = 43;
    CHECK(input_spec_key(b) != key);
    b = a;
    b.shape = {16, 1};
    CHECK(input_spec_key(b) != key);
    b = a;
    b.dtype.reset();
    CHECK(input_spec_key(b) != key);
    b = a;
    b.dtype = DType::float64;
    CHECK(input_spec_key(b) != key);

    InputSpec f;
    f.kind = InputSpec::Kind::file;
    f.file = "a.npy";
    InputSpec g = f;
    g.file = "b.npy";
    CHECK(input_spec_key(f) != input_spec_key(g));

    InputSpec d;
    d.kind = InputSpec::Kind::data;
    d.data = {1.0, 2.0};
    InputSpec e = d;
    CHECK(input_spec_key(d) == input_spec_key(e));
    e.data = {2.0, 1.0};
    CHECK(input_spec_key(d) != input_spec_key(e));
    e.data = {1.0, 2.0};
    e.shape = {2};
    CHECK(input_spec_key(d) != input_spec_key(e));

    // Same numbers, different kinds.
    InputSpec s;
    s.kind = InputSpec::Kind::seed;
    s.seed = 1;
    InputSpec t;
    t.kind = InputSpec::Kind::data;
    t.data = {1.0};
    CHECK(input_spec_key(s) != input_spec_key(t));
  }
}

TEST_SUITE("npy writer") {
  TEST_CASE("npy_header writes what numpy.save writes, and the reader reads it back") {
    // numpy.save(f, numpy.zeros((1, 3, 224, 224), numpy.float32)) writes exactly this header.
    const std::string h = inferprof::npy_header(inferprof::DType::float32, {1, 3, 224, 224});
    CHECK(h.size() == 128);
    CHECK(h == std::string("\x93NUMPY\x01\x00\x76\x00", 10) +
                   "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 224, 224), }" + std::string(48, ' ') +
                   "\n");
    const std::vector<std::vector<std::int64_t>> shapes = {{}, {5}, {2, 0}, {1, 3, 224, 224}};
    for (auto dtype : {inferprof::DType::uint8, inferprof::DType::int8, inferprof::DType::int16,
                       inferprof::DType::int32, inferprof::DType::int64, inferprof::DType::float16,
                       inferprof::DType::float32, inferprof::DType::float64, inferprof::DType::boolean})
      for (const auto& shape : shapes) {
        const std::string header = inferprof::npy_header(dtype, shape);
        CHECK(header.size() % 64 == 0);
        std::uint64_t n = 1;
        for (auto d : shape)
          n *= static_cast<std::uint64_t>(d);
        const std::string file = header + std::string(n * inferprof::dtype_size(dtype), '\0');
        const inferprof::NpyHeader back = inferprof::parse_npy_header(file, file.size());
        CHECK(back.dtype == dtype);
        CHECK(back.shape == shape);
        CHECK(back.data_offset == header.size());
      }
    CHECK(inferprof::npy_header(inferprof::DType::int64, {5}).find("'shape': (5,), }") != std::string::npos);
  }
}
