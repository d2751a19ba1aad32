// Regression tests for what an adversarial pass found (issue 13): deep JSON,
// .npy headers that ask for gigabytes, shapes that overflow, control
// characters echoed in errors, values out of range, a degraded cache row.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "inferprof/error.hpp"
#include "inferprof/npy.hpp"
#include "inferprof/printable.hpp"
#include "inferprof/profile.hpp"
#include "inferprof/report.hpp"
#include "inferprof/simulate.hpp"
#include "inferprof/store.hpp"
#include "inferprof/trace.hpp"
#include "report/render/cache_section.hpp"
#include "store/store_detail.hpp"
#include "temp_dir.hpp"

using namespace inferprof;
using inferprof::testing::TempDir;

namespace {

std::string read_error(const std::string& path) {
  try {
    TraceReader reader(path);
    TraceRecord record;
    while (reader.next(record)) {
    }
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::bad_input);
    return e.what();
  }
  return "";
}

// A .npy file: magic, version, little-endian header length, header, data.
std::string npy(const std::string& header, int major = 1, std::string data = "",
                std::uint32_t length = std::numeric_limits<std::uint32_t>::max()) {
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const std::uint32_t n = length != std::numeric_limits<std::uint32_t>::max() ? length : header.size();
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i)
    out += static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string npy_error(const std::string& bytes) {
  try {
    parse_npy_header(bytes, bytes.size());
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::bad_input);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_SUITE("hardening") {
  TEST_CASE("deeply nested JSON on a trace line is an error, not a stack overflow") {
    TempDir dir;
    const std::string deep = std::string(200000, '[') + std::string(200000, ']');
    const std::string in = R"("input":{"seed":1})";
    const std::string expected = ": nesting deeper than 64 arrays and objects";
    for (const std::string& line : {"{\"extra\":" + deep + "," + in + "}",          // an unknown field
                                    "{" + in + ",\"id\":" + deep + "}",             // a known field of the wrong type
                                    "{\"input\":{\"seed\":1,\"x\":" + deep + "}}",  // inside input
                                    "{\"input\":{\"data\":" + deep + "}}",          // an input's array
                                    deep}) {                                        // the root
      const std::string path = dir.write("deep.jsonl", "{\"input\":{\"seed\":1}}\n" + line + "\n");
      CHECK(read_error(path) == path + ":2" + expected);
    }
    // Nesting a trace could plausibly hold still reads.
    const std::string ok = std::string(60, '[') + std::string(60, ']');
    const std::string path = dir.write("ok.jsonl", "{\"extra\":" + ok + "," + in + "}\n");
    CHECK(read_error(path).empty());
  }

  TEST_CASE("trace values out of range are refused where the line is read") {
    TempDir dir;
    auto check = [&](const std::string& line, const std::string& what) {
      CAPTURE(line);
      const std::string path = dir.write("t.jsonl", line + "\n");
      CHECK(read_error(path) == path + ":1: " + what);
    };
    check(R"({"ts_ms":1e308,"input":{"seed":1}})",
          "'ts_ms' 1e+308 is out of range (at most 9200000000000, about 290 years)");
    check(R"({"input":{"shape":[4294967296,4294967296,4],"file":"a.npy"}})",
          "'input.shape' [4294967296, 4294967296, 4] has more elements than fit in 64 bits");
    check(R"({"input":{"shape":[9223372036854775807,2],"seed":1}})",
          "'input.shape' [9223372036854775807, 2] has more elements than fit in 64 bits");
    const std::string path = dir.write("t.jsonl", R"({"ts_ms":9199999999999,"input":{"seed":1}})"
                                                  "\n");
    CHECK(read_error(path).empty());
  }

  TEST_CASE("trace strings echoed in errors stay on one line") {
    TempDir dir;
    const std::string path = dir.write("t.jsonl", R"({"event":"x\ny\u001b[31mred\r","model":"m","version":"v"})"
                                                  "\n");
    const std::string e = read_error(path);
    CHECK(e == path + ":1: unknown event 'x\\ny\\x1b[31mred\\r' (expected model_update)");
    CHECK(e.find('\n') == std::string::npos);
    CHECK(e.find('\x1b') == std::string::npos);
  }

  TEST_CASE("printable escapes control characters and bytes that are not UTF-8") {
    CHECK(printable("plain text, µs and 日本") == "plain text, µs and 日本");
    CHECK(printable("a\nb\tc\rd") == "a\\nb\\tc\\rd");
    CHECK(printable("\x1b[2J") == "\\x1b[2J");
    CHECK(printable(std::string("nul\0x", 5)) == "nul\\x00x");
    CHECK(printable("\x7f") == "\\x7f");
    CHECK(printable("\xc2\x9b"
                    "31m") == "\\u009b31m");  // C1 CSI
    CHECK(printable("\xff\xfe") == "\\xff\\xfe");
    CHECK(printable("\xe6\x97") == "\\xe6\\x97");           // a truncated sequence
    CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a UTF-16 surrogate
    // Bidirectional controls reorder the text after them on screen: "a\u202etxt.exe" shows as "aexe.txt".
    CHECK(printable("a\xe2\x80\xaetxt.exe") == "a\\u202etxt.exe");
    CHECK(printable("\xe2\x81\xa6x\xe2\x81\xa9") == "\\u2066x\\u2069");            // an isolate (LRI .. PDI)
    CHECK(printable("\xe2\x80\x8f") == "\\u200f");                                 // RLM
    CHECK(printable("\xe2\x80\x94 \xe2\x80\xa6") == "\xe2\x80\x94 \xe2\x80\xa6");  // an em dash and an ellipsis stay
  }

  TEST_CASE("npy headers: a repeated key and a fortran_order that is not a bool are refused, as numpy does") {
    auto error_of = [](const std::string& dict) {
      const std::string file = npy(dict, 1, std::string(24, 'x'));
      try {
        (void)parse_npy_header(file, file.size());
      } catch (const Error& e) {
        return std::string(e.what());
      }
      return std::string("accepted");
    };
    // numpy would read shape (3, 2): the last of two.
    CHECK(error_of("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'shape': (3, 2), }") ==
          "header has the key 'shape' twice (expected one of each: descr, fortran_order, shape)");
    CHECK(error_of("{'descr': '<f4', 'fortran_order': 1, 'shape': (2, 3), }") ==
          "fortran_order is 1 (expected True or False, as numpy writes)");
    CHECK(error_of("{'descr': '<f4', 'shape': (2, 3), }") ==
          "fortran_order is missing (expected True or False, as numpy writes)");
    CHECK(error_of("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }") ==
          "Fortran-order arrays are not supported (save with np.ascontiguousarray)");
    CHECK(error_of("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }") == "accepted");
  }

  TEST_CASE("npy headers: sizes are checked before anything is allocated") {
    const std::string f4 = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    const NpyHeader h = parse_npy_header(npy(f4, 1, std::string(24, 'x')), 10 + f4.size() + 24);
    CHECK(h.dtype == DType::float32);
    CHECK(h.shape == std::vector<std::int64_t>{2, 3});
    CHECK(h.data_offset == 10 + f4.size());
    CHECK(h.data_bytes == 24);
    // Versions 2 and 3 carry a 4-byte length; a 0-d array and a trailing comma.
    const std::string scalar = "{'descr': '<i8', 'fortran_order': False, 'shape': (), }";
    CHECK(parse_npy_header(npy(scalar, 2, std::string(8, 'x')), 12 + scalar.size() + 8).shape.empty());
    const std::string one = "{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }";
    CHECK(parse_npy_header(npy(one, 3, "abcde"), 12 + one.size() + 5).data_bytes == 5);

    // The 192-byte file whose header claims 4 GB.
    CHECK(npy_error(npy(f4, 2, std::string(192 - 12 - f4.size(), ' '), 0xFFFFFFF0u)) ==
          "header of 4294967280 bytes (at most 65536 supported)");
    CHECK(npy_error("\x93NUMPX\x01\x00") == "not a .npy file (bad magic)");
    CHECK(npy_error(npy(f4, 9)) == "unsupported .npy format version 9.0 (expected 1.0, 2.0 or 3.0)");
    CHECK(npy_error(npy(f4, 1, "", 400)) == "truncated header");
    CHECK(npy_error(npy(f4)) == "truncated data (expected 24 bytes for shape [2, 3], the file has 0)");
    CHECK(npy_error(npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }")) ==
          "unsupported dtype '>f4' (expected little-endian u1, i1, i2, i4, i8, f2, f4, f8 or b1)");
    CHECK(npy_error(npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }")) ==
          "Fortran-order arrays are not supported (save with np.ascontiguousarray)");
    CHECK(npy_error(npy("{'descr': '<f4', 'fortran_order': False, }")) == "header has no shape");
    // Signed overflow used to wrap these into a negative or small shape.
    CHECK(npy_error(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 1), }")) ==
          "shape (99999999999999999999, 1): a dimension exceeds 9223372036854775807");
    CHECK(npy_error(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }")) ==
          "shape [4294967296, 4294967296]: more bytes than fit in 64 bits");
    CHECK(npy_error(npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,), }")) ==
          "shape [2305843009213693952]: more bytes than fit in 64 bits");
    CHECK(npy_error(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 2), }")) ==
          "shape (-1, 2): expected non-negative integers");
    CHECK(npy_error(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,,2), }")) ==
          "shape (1,,2): expected non-negative integers");
  }

  TEST_CASE("checked_element_count") {
    CHECK(checked_element_count({}) == 1);
    CHECK(checked_element_count({2, 3, 4}) == 24);
    CHECK(checked_element_count({0, 5}) == 0);
    CHECK_FALSE(checked_element_count({-1, 2}));
    CHECK_FALSE(checked_element_count({std::int64_t{1} << 32, std::int64_t{1} << 32}));
    CHECK_FALSE(checked_element_count({0, std::int64_t{1} << 32, std::int64_t{1} << 32}));  // libtorch's strides
  }

  TEST_CASE("profile numbers: no inf or nan, no silent truncation") {
    auto error = [](const std::string& toml) {
      TempDir dir;
      const std::string path = dir.write("p.toml", toml);
      try {
        load_profile(path);
      } catch (const Error& e) {
        CHECK(e.code() == ExitCode::bad_input);
        return std::string(e.what()).substr(path.size());
      }
      return std::string();
    };
    CHECK(error("[model]\nthreads = 99999999999\n") ==
          ":2: 'threads' in [model] must be between 0 and 1024 (got 99999999999)");
    CHECK(error("[model]\nwarmup = 99999999999\n") ==
          ":2: 'warmup' in [model] must be between 0 and 2147483647 (got 99999999999)");
    CHECK(error("[[preprocess]]\nop = \"scale\"\nfactor = nan\n") == ":3: 'factor' must be a finite number");
    CHECK(error("[[preprocess]]\nop = \"scale\"\nfactor = inf\n") == ":3: 'factor' must be a finite number");
    CHECK(error("[[preprocess]]\nop = \"normalize\"\nmean = [0.5]\nstd = [-inf]\n") ==
          ":4: 'std' of normalize must be a finite number");
    CHECK(error("[model]\nthreads = 1024\n").empty());
  }

  TEST_CASE("a degraded tier's errors stay apart from its bytes") {
    RunSummary s;
    CacheTierReport t;
    t.spec.tier = CacheLevel::l2;
    t.where = "redis://127.0.0.1:6379/0";
    t.stats.lookups = 1000;
    t.stats.errors = 603;
    t.stats.degraded = true;
    t.stats.entries = 12;
    t.stats.bytes = 17715;  // 17.3 KB
    s.caches.push_back(t);
    const std::string table = report::cache_table_lines(s, false);
    CAPTURE(table);
    CHECK(table.find("17.3 KB 603 (degraded)  redis://") != std::string::npos);
  }

  TEST_CASE("file store: concurrent puts all reach index.json") {
    // Threads, not processes: no start-up time spreads them out, so without
    // the index lock entries are lost (or a put fails) within a few rounds.
    for (int round = 0; round < 5; ++round) {
      CAPTURE(round);
      TempDir dir;
      std::atomic<int> failed{0};
      std::vector<std::thread> threads;
      for (int i = 0; i < 10; ++i)
        threads.emplace_back([&, i] {
          try {
            open_remote_store(dir.str())->put(ModelRef{"m", fmt::format("v{}", i)}, fmt::format("bytes {}", i));
          } catch (const std::exception&) {
            ++failed;
          }
        });
      for (auto& t : threads)
        t.join();
      CHECK(failed.load() == 0);
      CHECK(open_remote_store(dir.str())->list().size() == 10);
      std::ifstream in(dir.file("index.json"));
      const std::string index((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      CHECK(store_detail::parse_index_json(index, "index.json").size() == 10);
    }
  }

  TEST_CASE("file store: concurrent puts of one version keep one whole version, the others are refused") {
    // Without the lock held across check and write, two puts both see no
    // version, and one's model.pt can end up beside the other's meta.json.
    for (int round = 0; round < 5; ++round) {
      CAPTURE(round);
      TempDir dir;
      std::atomic<int> stored{0}, refused{0};
      std::vector<std::thread> threads;
      for (int i = 0; i < 8; ++i)
        threads.emplace_back([&, i] {
          try {
            open_remote_store(dir.str())->put(ModelRef{"m", "v1"}, fmt::format("bytes of writer {}", i));
            ++stored;
          } catch (const Error& e) {
            if (std::string(e.what()).find("exists already") != std::string::npos) ++refused;
          }
        });
      for (auto& t : threads)
        t.join();
      CHECK(stored.load() == 1);
      CHECK(refused.load() == 7);
      auto store = open_remote_store(dir.str());
      const ModelMeta meta = store->meta(ModelRef{"m", "v1"});
      CHECK(meta.sha256 == sha256_hex(store->fetch(ModelRef{"m", "v1"}, meta.size)));
    }
  }

  TEST_CASE("simulate sources refuse negative timestamps, as JSON lines do") {
    TempDir dir;
    const std::string path = dir.file("neg.iptrace");
    {
      IptraceWriter w(path);
      SimRecord r;
      r.key = 1;
      r.ts_ms = 5;
      w.add(r);
      r.ts_ms = -2;  // the writer stores what it is given; the reader is the boundary
      w.add(r);
      w.commit();
    }
    auto source = open_sim_source(path);
    SimRecord r;
    REQUIRE(source->next(r));
    CHECK_THROWS_WITH(source->next(r), (path + ":2: negative timestamp -2000000 ns").c_str());
    const std::string csv = dir.write("neg.csv", "timestamp,key\n-0.5,a\n");
    CHECK_THROWS_WITH(open_sim_source(csv)->next(r), (csv + ":2: timestamp '-0.5': must be >= 0").c_str());
  }

  TEST_CASE("file store: an empty model, and metadata that is not a bounded regular file") {
    TempDir dir;
    auto store = open_remote_store(dir.str());
    CHECK_THROWS_WITH(store->put(ModelRef{"m", "v1"}, ""),
                      (dir.str() + ": m@v1: the model is empty (0 bytes)").c_str());
    // A FIFO where meta.json belongs would block a reader forever; a huge file would be read whole.
    std::filesystem::create_directories(dir.file("m/v1"));
    REQUIRE(::mkfifo(dir.file("m/v1/meta.json").c_str(), 0600) == 0);
    CHECK_THROWS_WITH(store->meta(ModelRef{"m", "v1"}), (dir.file("m/v1/meta.json") + ": not a regular file").c_str());
    std::filesystem::create_directories(dir.file("n/v1"));
    std::filesystem::resize_file(dir.write("n/v1/meta.json", ""), 2 << 20);
    CHECK_THROWS_WITH(store->meta(ModelRef{"n", "v1"}),
                      (dir.file("n/v1/meta.json") + ": 2097152 bytes, more than the 1048576 expected").c_str());
  }
}
