#include <doctest/doctest.h>
#include <fmt/format.h>
#include <simdjson.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/atomic_file.hpp"
#include "base/csv_io.hpp"
#include "base/histogram.hpp"
#include "base/output_owner.hpp"
#include "base/text.hpp"
#include "inferprof/cache.hpp"
#include "inferprof/diff.hpp"
#include "inferprof/error.hpp"
#include "inferprof/replicas.hpp"
#include "inferprof/report.hpp"
#include "inferprof/timing.hpp"
#include "report/format.hpp"
#include "report/render/cache_section.hpp"
#include "report/saved_run.hpp"
#include "report/streams.hpp"
#include "temp_dir.hpp"
#include "text_util.hpp"

namespace fs = std::filesystem;
using namespace inferprof;

namespace {

using inferprof::testing::count_of;
using inferprof::testing::lines_of;

using inferprof::testing::TempDir;

// A report file's bytes; the file must exist.
std::string report_file(const std::string& path) {
  REQUIRE(std::filesystem::exists(path));
  return inferprof::testing::slurp(path);
}

std::uint32_t op(std::string_view name) {
  return NameTable::global().intern(name);
}

// Builds a finished record: arrival/start/end in ns, spans added by hand.
struct Rec {
  RequestRecord r;
  Rec(std::uint64_t seq, Nanos arrival, Nanos start, Nanos end, std::uint32_t worker = 0) {
    r.seq = seq;
    r.id = seq + 1;
    r.line = seq + 1;
    r.key = fmt::format("k{}", seq);
    r.worker = worker;
    r.arrival = arrival;
    r.start = start;
    r.end = end;
  }
  std::int32_t span(Stage s, Nanos at, Nanos dur) { return r.add(name_id(s), -1, r.start + at, dur); }
  std::int32_t child(std::string_view name, std::int32_t parent, Nanos at, Nanos dur) {
    return r.add(op(name), parent, r.start + at, dur);
  }
  RequestRecord done() {
    r.finish();
    return r;
  }
};

constexpr Nanos kBase = 1'000'000'000;

// 100 µs request: input 10, compute 80 (linear 60 = addmm 50 + t 2 + 8 self; relu 5), overhead 10.
RequestRecord nested_record(std::uint64_t seq = 0) {
  Rec b(seq, kBase, kBase, kBase + 100'000);
  b.span(Stage::input, 0, 10'000);
  const auto compute = b.span(Stage::compute, 10'000, 80'000);
  const auto linear = b.child("aten::linear", compute, 15'000, 60'000);
  b.child("aten::t", linear, 16'000, 2'000);
  b.child("aten::addmm", linear, 20'000, 50'000);
  b.child("aten::relu", compute, 80'000, 5'000);
  return b.done();
}

RunInfo sample_info() {
  RunInfo info;
  info.tool_version = "0.1.0";
  info.model_path = "/models/model.pt";
  info.model_arch = "mlp";
  info.model_parameters = 5450;
  info.model_bytes = 24678;
  info.profile_name = "default";
  info.load_ms = 12.31;
  info.warmup = 3;
  info.warmup_us = {1234.0, 200.0, 224.6};
  info.wall_s = 0.52;
  return info;
}

// Just enough XML checking for our own output: tags balance and every '&'
// starts an entity.
bool well_formed(const std::string& xml, std::string* why) {
  std::vector<std::string> open;
  for (std::size_t i = 0; i < xml.size(); ++i) {
    if (xml[i] == '&') {
      const auto semi = xml.find(';', i);
      const std::string ent = xml.substr(i, semi == std::string::npos ? 0 : semi - i + 1);
      if (ent != "&amp;" && ent != "&lt;" && ent != "&gt;" && ent != "&quot;" && ent != "&apos;") {
        *why = "bad entity at " + std::to_string(i);
        return false;
      }
      continue;
    }
    if (xml[i] != '<') continue;
    if (xml.compare(i, 9, "<![CDATA[") == 0) {
      const auto end = xml.find("]]>", i);
      if (end == std::string::npos) {
        *why = "unclosed CDATA";
        return false;
      }
      i = end + 2;
      continue;
    }
    const auto close = xml.find('>', i);
    if (close == std::string::npos) {
      *why = "unclosed tag";
      return false;
    }
    std::string tag = xml.substr(i + 1, close - i - 1);
    i = close;
    if (tag.empty() || tag[0] == '?' || tag[0] == '!') continue;
    if (tag.back() == '/') continue;
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) {
        *why = "mismatched </" + name + ">";
        return false;
      }
      open.pop_back();
      continue;
    }
    if (tag.find('<') != std::string::npos) {
      *why = "'<' inside a tag";
      return false;
    }
    open.push_back(tag.substr(0, tag.find_first_of(" \t\n")));
  }
  if (!open.empty()) *why = "unclosed <" + open.back() + ">";
  return open.empty();
}

}  // namespace

TEST_SUITE("report") {
  TEST_CASE("split keeps empty parts: a trailing or doubled separator is a part a caller can refuse") {
    CHECK(report::split("a,b", ',') == std::vector<std::string>{"a", "b"});
    CHECK(report::split("a,,b,", ',') == std::vector<std::string>{"a", "", "b", ""});
    CHECK(report::split("", ',') == std::vector<std::string>{""});
    CHECK(report::split("0.5:4:0.5", ':') == std::vector<std::string>{"0.5", "4", "0.5"});
  }

  TEST_CASE("join_abbreviated lists the first items and counts the rest, so a message stays one short line") {
    CHECK(report::join_abbreviated({}) == "");
    CHECK(report::join_abbreviated({"1", "3"}) == "1, 3");
    std::vector<std::string> many;
    for (int i = 1; i < 4096; ++i)
      many.push_back(std::to_string(i));
    CHECK(report::join_abbreviated(many) == "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ... and 4085 more");
    CHECK(report::join_abbreviated({"a", "b", "c"}, 2) == "a, b, ... and 1 more");
    CHECK(report::join_abbreviated({"a", "b"}, 2) == "a, b");
  }

  TEST_CASE("one table, two renderings: the terminal grid and the markdown table align the same columns") {
    const std::vector<std::vector<std::string>> cells = {
        {"config", "mean", "speedup"}, {"none", "4.3 ms", "1.00×"}, {"l1|l2", "12.1 µs", "~3.2× [2.9, 3.5]"}};
    CHECK(report::render_grid(cells, {0, 2}) ==
          "config     mean  speedup\n"
          "none     4.3 ms  1.00×\n"
          "l1|l2   12.1 µs  ~3.2× [2.9, 3.5]\n");
    CHECK(report::markdown_table(cells, {0, 2}) ==
          "| config | mean | speedup |\n"
          "|:--|--:|:--|\n"
          "| none | 4.3 ms | 1.00× |\n"
          "| l1\\|l2 | 12.1 µs | \\~3.2× \\[2.9, 3.5\\] |\n");
  }

  TEST_CASE("histogram quantiles are within 1% of the exact ones") {
    std::mt19937_64 rng(42);
    std::lognormal_distribution<double> dist(std::log(50'000.0), 2.0);  // ~50 µs, spanning ns to seconds
    std::vector<std::int64_t> values;
    report::Histogram h;
    for (int i = 0; i < 200'000; ++i) {
      const auto v = static_cast<std::int64_t>(dist(rng));
      values.push_back(v);
      h.record(v);
    }
    std::sort(values.begin(), values.end());
    for (double q : {0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1.0}) {
      CAPTURE(q);
      const double exact = static_cast<double>(values[report::nearest_rank(q, values.size()) - 1]);
      CHECK(std::abs(h.quantile(q) - exact) <= 0.01 * exact);
    }
    CHECK(h.min() == values.front());
    CHECK(h.max() == values.back());
    CHECK(h.count() == values.size());
  }

  TEST_CASE("histogram is exact for small values and empty when unused") {
    report::Histogram h;
    CHECK(h.quantile(0.5) == 0);
    for (std::int64_t v = 1; v <= 100; ++v)
      h.record(v);
    CHECK(h.quantile(0.5) == 50);
    CHECK(h.quantile(0.9) == 90);
    CHECK(h.quantile(0.99) == 99);
    CHECK(h.quantile(1.0) == 100);
    CHECK(static_cast<std::int64_t>(h.sum()) == 5050);
    h.record(-3);  // overhead can come out a few ns negative
    CHECK(h.min() == -3);
    CHECK(h.quantile(0.0) == -3);
    CHECK(report::Histogram::index_of(std::numeric_limits<std::int64_t>::max()) == report::Histogram::kBuckets - 1);
  }

  TEST_CASE("histogram sums are 128-bit: values at a saved run's bound, as many as a run holds, cannot overflow") {
    report::Histogram h;
    constexpr std::int64_t kBound = 1'000'000'000'000'000;  // 1e12 µs in ns (report::kMaxSavedMicros)
    for (int i = 0; i < 100'000; ++i)
      h.record(kBound);
    // 1e20 ns: past a 64-bit sum's 9.2e18 (it came out negative: a mean of -4.6e13 µs).
    CHECK((h.sum() == static_cast<report::NanoSum>(kBound) * 100'000));
    CHECK(static_cast<double>(h.sum()) == doctest::Approx(1e20));
    report::Histogram other;
    other.record(kBound);
    h.merge(other);
    CHECK(static_cast<double>(h.sum()) == doctest::Approx(1e20 + 1e15));
    Collector c(CollectorOptions{});
    for (std::uint64_t i = 0; i < 10'000; ++i) {
      Rec b(i, kBase, kBase, kBase + kBound);
      b.span(Stage::compute, 0, kBound);
      c.add(b.done());
    }
    const RunSummary s = c.summarize(RunInfo{});
    CHECK(s.total.mean_us == doctest::Approx(1e12));
    CHECK(s.total.total_us == doctest::Approx(1e16));
    CHECK(s.stages[static_cast<std::size_t>(Stage::compute)].share == doctest::Approx(1.0));
  }

  TEST_CASE("stage means add up to the total mean") {
    Collector c(CollectorOptions{});
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<Nanos> d(0, 50'000);
    for (std::uint64_t i = 0; i < 500; ++i) {
      const Nanos arrival = kBase + static_cast<Nanos>(i) * 1'000'000;
      const Nanos queue = i % 3 == 0 ? d(rng) : 0;
      const Nanos input = d(rng), pre = d(rng), compute = d(rng), slack = d(rng);
      Rec b(i, arrival, arrival + queue, arrival + queue + input + pre + compute + slack);
      b.span(Stage::input, 0, input);
      b.span(Stage::preprocess, input, pre);
      b.span(Stage::compute, input + pre, compute);
      c.add(b.done());
    }
    const RunSummary s = c.summarize(RunInfo{});
    double sum_means = 0, sum_shares = 0;
    for (const auto& st : s.stages) {
      sum_means += st.mean_us;
      sum_shares += st.share;
    }
    CHECK(sum_means == doctest::Approx(s.total.mean_us).epsilon(1e-12));
    CHECK(sum_shares == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(s.requests == 500);
    CHECK(s.total.count == 500);
    CHECK(s.stages[static_cast<std::size_t>(Stage::queue)].count > 0);
    CHECK(s.stages[static_cast<std::size_t>(Stage::queue)].count < 500);
    CHECK(s.stages[static_cast<std::size_t>(Stage::overhead)].count == 500);
    CHECK(s.stages[static_cast<std::size_t>(Stage::cache)].count == 0);
    CHECK_FALSE(s.stages[static_cast<std::size_t>(Stage::h2d)].applicable);
    CHECK(s.stages[static_cast<std::size_t>(Stage::compute)].applicable);
  }

  TEST_CASE("folded stacks carry self times of nested spans") {
    Collector c(CollectorOptions{});
    c.add(nested_record());
    const auto folded = c.folded();
    CHECK(render_folded(folded) ==
          "request;compute 15\n"
          "request;compute;aten::linear 8\n"
          "request;compute;aten::linear;aten::addmm 50\n"
          "request;compute;aten::linear;aten::t 2\n"
          "request;compute;aten::relu 5\n"
          "request;input 10\n"
          "request;overhead 10\n");

    const RunSummary s = c.summarize(RunInfo{});
    REQUIRE(s.top_ops.size() == 4);
    CHECK(s.top_ops[0].name == "aten::addmm");
    CHECK(s.top_ops[0].self_us == 50);
    CHECK(s.top_ops[0].share_of_compute == doctest::Approx(50.0 / 80.0));
    CHECK(s.top_ops[1].name == "aten::linear");
    CHECK(s.top_ops[1].self_us == 8);
    CHECK(s.top_ops[1].total_us == 60);
    CHECK(s.top_ops[1].calls == 1);
    CHECK(s.top_ops[2].name == "aten::relu");
    CHECK(s.top_ops[3].name == "aten::t");
    CHECK(s.spans == 7);
  }

  TEST_CASE("folded values sum exactly to the rounded total") {
    SUBCASE("largest remainder") {
      // 1.4 + 1.4 + 1.2 = 4.0 µs: truncation gives 3, the first 0.4 remainder gets the 4th.
      const auto out = report::round_folded({{"a", 1'400}, {"b", 1'400}, {"c", 1'200}, {"d", 300}, {"e", -5}}, 4'300);
      REQUIRE(out.size() == 3);
      CHECK(out[0] == std::pair<std::string, std::uint64_t>{"a", 2});
      CHECK(out[1] == std::pair<std::string, std::uint64_t>{"b", 1});
      CHECK(out[2] == std::pair<std::string, std::uint64_t>{"c", 1});
    }
    SUBCASE("values that do not add up to the total: handed out or taken back at once, not a µs a turn") {
      // Rows of a merged requests.csv whose stages do not add up to their total: a deficit of 1e12 µs took
      // 1e12 turns of the loop.
      const auto up = report::round_folded({{"a", 1'000}, {"b", 2'000}}, 1'000'000'000'000'000);
      REQUIRE(up.size() == 2);
      CHECK(up[0] == std::pair<std::string, std::uint64_t>{"a", 500'000'000'000});
      CHECK(up[1] == std::pair<std::string, std::uint64_t>{"b", 500'000'000'000});
      // Taken back from the smallest remainders first, one from each value a turn, as before.
      const auto down = report::round_folded({{"a", 5'000'000'000'000}, {"b", 3'000'000'000'000}, {"c", -1}}, 1'000);
      REQUIRE(down.size() == 1);
      CHECK(down[0] == std::pair<std::string, std::uint64_t>{"a", 1});
    }
    SUBCASE("many requests with sub-microsecond parts") {
      Collector c(CollectorOptions{});
      std::mt19937_64 rng(3);
      std::uniform_int_distribution<Nanos> d(1, 3'000);
      Nanos total = 0;
      for (std::uint64_t i = 0; i < 2'000; ++i) {
        const Nanos in = d(rng), comp = d(rng), inner = comp / 2, end = in + comp + d(rng);
        Rec b(i, kBase, kBase, kBase + end);
        b.span(Stage::input, 0, in);
        const auto cs = b.span(Stage::compute, in, comp);
        b.child(i % 2 ? "aten::mm" : "aten::add", cs, in, inner);
        total += end;
        c.add(b.done());
      }
      std::uint64_t sum = 0;
      for (const auto& [path, v] : c.folded()) {
        CHECK(v > 0);
        sum += v;
      }
      CHECK(sum == static_cast<std::uint64_t>((total + 500) / 1000));
    }
  }

  TEST_CASE("trace.json holds one X event per request and span - queue lanes never overlap") {
    TempDir dir;
    CollectorOptions o;
    o.out_dir = dir.str();
    o.epoch = kBase;
    Collector c(o);
    // Open loop, two workers, arrivals faster than service: queue waits pile up.
    std::vector<Nanos> free_at(2, kBase);
    for (std::uint64_t i = 0; i < 40; ++i) {
      const Nanos arrival = kBase + static_cast<Nanos>(i) * 10'000;
      const auto w = static_cast<std::uint32_t>(free_at[0] <= free_at[1] ? 0 : 1);
      const Nanos start = std::max(arrival, free_at[w]);
      const Nanos end = start + 25'000;
      free_at[w] = end;
      Rec b(i, arrival, start, end, w);
      b.span(Stage::input, 1'000, 4'000);
      b.span(Stage::compute, 5'000, 18'000);
      c.add(b.done());
    }
    RunInfo info = sample_info();
    info.mode = "open-loop";
    const RunSummary s = c.summarize(info);
    c.commit(s);
    CHECK(dir.list() == std::vector<std::string>{"flamegraph.svg", "report.html", "requests.csv", "stacks.folded",
                                                 "stages.csv", "summary.json", "trace.json"});

    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE(parser.load(dir.file("trace.json")).get(doc) == simdjson::SUCCESS);
    CHECK(std::string_view(doc["displayTimeUnit"]) == "ms");
    CHECK(std::uint64_t(doc["otherData"]["trace_json_requests"]) == 40);
    std::uint64_t x_events = 0;
    std::map<std::int64_t, std::vector<std::pair<double, double>>> lanes;
    std::vector<std::string> thread_names;
    for (simdjson::dom::element e : doc["traceEvents"].get_array()) {
      const std::string_view ph = e["ph"];
      if (ph == "M") {
        if (std::string_view(e["name"]) == "thread_name")
          thread_names.emplace_back(std::string_view(e["args"]["name"]));
        continue;
      }
      REQUIRE(ph == "X");
      ++x_events;
      const std::int64_t tid = e["tid"];
      if (tid >= 1000) {
        CHECK(std::string_view(e["name"]) == "queue");
        lanes[tid].emplace_back(double(e["ts"]), double(e["dur"]));
      }
    }
    CHECK(x_events == s.spans);
    CHECK(s.spans == 40 * 3 + (s.stages[0].count));  // root + input + compute, plus queue spans
    CHECK(lanes.size() > 1);
    std::size_t queue_spans = 0;
    for (auto& [tid, spans] : lanes) {
      std::sort(spans.begin(), spans.end());
      for (std::size_t k = 1; k < spans.size(); ++k)
        CHECK(spans[k - 1].first + spans[k - 1].second <= spans[k].first + 1e-9);
      queue_spans += spans.size();
    }
    CHECK(queue_spans == s.stages[0].count);
    CHECK(std::count(thread_names.begin(), thread_names.end(), "worker 0") == 1);
    CHECK(std::count(thread_names.begin(), thread_names.end(), "worker 1") == 1);
    CHECK(std::count(thread_names.begin(), thread_names.end(), "queue 0") == 1);
  }

  TEST_CASE("trace.json keeps only the first requests whose events fit in its size cap") {
    // The events of the first two requests, as the collector writes them.
    report::ChromeTraceWriter w(kBase);
    fmt::memory_buffer two;
    w.append(nested_record(0), two);
    w.append(nested_record(1), two);
    SUBCASE("one byte short of two requests keeps one") {
      TempDir dir;
      CollectorOptions o;
      o.out_dir = dir.str();
      o.epoch = kBase;
      o.trace_json_max_bytes = two.size() - 1;
      Collector c(o);
      for (std::uint64_t i = 0; i < 5; ++i)
        c.add(nested_record(i));
      const RunSummary s = c.summarize(RunInfo{});
      CHECK(s.trace_json_requests == 1);
      CHECK(s.trace_json_max_bytes == two.size() - 1);
      CHECK(s.csv_rows == 5);
    }
    TempDir dir;
    CollectorOptions o;
    o.out_dir = dir.str();
    o.epoch = kBase;
    o.trace_json_max_bytes = two.size();
    Collector c(o);
    for (std::uint64_t i = 0; i < 5; ++i)
      c.add(nested_record(i));
    const RunSummary s = c.summarize(RunInfo{});
    CHECK(s.trace_json_requests == 2);
    CHECK(s.spans == 14);
    CHECK(s.csv_rows == 5);
    c.commit(s);
    const std::string trace = report_file(dir.file("trace.json"));
    CHECK(count_of(trace, "\"ph\":\"X\"") == 14);
    CHECK(trace.find(R"({"name":"request","cat":"request","ph":"X","ts":0.000,"dur":100.000,"pid":1,"tid":1,)"
                     R"("args":{"id":1,"key":"k0","seq":0,"queue_us":0.000,"total_us":100.000,"cache":"none"}})") !=
          std::string::npos);
    CHECK(trace.find(R"({"name":"aten::addmm","cat":"op","ph":"X","ts":20.000,"dur":50.000,"pid":1,"tid":1})") !=
          std::string::npos);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE(parser.parse(trace).get(doc) == simdjson::SUCCESS);
    CHECK(bool(doc["otherData"]["truncated"]));
  }

  TEST_CASE("requests.csv has one row per request, quoted where needed") {
    TempDir dir;
    CollectorOptions o;
    o.out_dir = dir.str();
    o.epoch = kBase - 2'500;
    Collector c(o);
    Rec b(0, kBase, kBase + 1'500, kBase + 101'500, 1);
    b.r.key = "img,\"7\"";
    b.span(Stage::compute, 0, 90'000);
    b.r.ok = false;
    b.r.error = "shape mismatch, expected [1, 16]";
    b.r.model_version = "v2";
    c.add(b.done());
    c.add(nested_record(1));
    c.add(nested_record(2));
    c.commit(c.summarize(RunInfo{}));
    const auto lines = lines_of(report_file(dir.file("requests.csv")));
    REQUIRE(lines.size() == 4);
    CHECK(lines[0] ==
          "seq,id,line,key,worker,arrival_us,start_us,total_us,queue_us,cache_us,load_us,input_us,preprocess_us,"
          "h2d_us,compute_us,d2h_us,overhead_us,cache,ok,error,model_version,cpu_us,cache_cpu_us,load_cpu_us,"
          "input_cpu_us,preprocess_cpu_us,h2d_cpu_us,compute_cpu_us,d2h_cpu_us,overhead_cpu_us,image_bytes,image_"
          "pixels,batch,"
          "batch_wait_us");
    // Records without begin() measured no CPU time: empty CPU cells, not zeros.
    CHECK(lines[1] ==
          "0,1,1,\"img,\"\"7\"\"\",1,2.500,4.000,101.500,1.500,0.000,0.000,0.000,0.000,,90.000,,10.000,none,false,"
          "\"shape mismatch, expected [1, 16]\",v2,,,,,,,,,,,,0,0.000");
    CHECK(
        lines[2] ==
        "1,2,2,k1,0,2.500,2.500,100.000,0.000,0.000,0.000,10.000,0.000,,80.000,,10.000,none,true,,,,,,,,,,,,,,0,0.000");
  }

  TEST_CASE("h2d and d2h print n/a on CPU, numbers on GPU") {
    Collector cpu(CollectorOptions{});
    cpu.add(nested_record());
    const RunSummary s = cpu.summarize(sample_info());
    const std::string table = render_table(s);
    CHECK(table.find("\nh2d              n/a\n") != std::string::npos);
    CHECK(table.find("\nd2h              n/a\n") != std::string::npos);
    CHECK(render_markdown(s).find("| h2d | n/a | | | | | | |\n") != std::string::npos);
    CHECK(render_stages_csv(s).find("\nh2d,,,,,,,,,,,\n") != std::string::npos);

    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    const std::string json = render_summary_json(s);
    REQUIRE(parser.parse(json).get(doc) == simdjson::SUCCESS);
    CHECK_FALSE(bool(doc["stages"]["h2d"]["applicable"]));
    CHECK(doc["stages"]["h2d"]["mean_us"].error() == simdjson::NO_SUCH_FIELD);
    CHECK(double(doc["stages"]["compute"]["mean_us"]) == 80.0);

    CollectorOptions gpu_options;
    gpu_options.copies_applicable = true;
    Collector gpu(gpu_options);
    gpu.add(nested_record());
    const std::string gpu_table = render_table(gpu.summarize(sample_info()));
    CHECK(gpu_table.find("\nh2d                0       0 µs       0 µs       0 µs       0 µs       0 µs    0.0%\n") !=
          std::string::npos);
  }

  TEST_CASE("text cells that would start a spreadsheet formula are guarded, and read back as they were") {
    const auto field = [](std::string_view text) {
      fmt::memory_buffer out;
      report::append_csv_field(out, text);
      return fmt::to_string(out);
    };
    CHECK(field("=1+2") == "'=1+2");
    CHECK(field("+1") == "'+1");
    CHECK(field("-x") == "'-x");
    CHECK(field("@SUM(A1)") == "'@SUM(A1)");
    CHECK(field("\tx") == "'\tx");
    CHECK(field("=a,b") == "\"'=a,b\"");
    CHECK(field("'=x") == "''=x");  // a quote before a formula: one more, so that reading back is exact
    CHECK(field("'plain") == "'plain");
    CHECK(field("a=b") == "a=b");
    CHECK(field("") == "");
    const std::vector<std::string> keys = {"=1+2", "-x", "+3", "@a", "'=x", "''-y", "'plain", "'", "a-b", "", "=a,b"};
    for (const std::string& k : keys) {
      std::string cell = field(k);
      if (cell.size() > 1 && cell.front() == '"') cell = cell.substr(1, cell.size() - 2);
      CHECK(report::csv_text(cell) == k);
    }
    // Through the collector's requests.csv and the saved-run reader: the keys, errors and versions as they were.
    TempDir dir;
    CollectorOptions o;
    o.out_dir = dir.str();
    o.epoch = kBase;
    Collector c(o);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      Rec b(i, kBase, kBase, kBase + 1'000);
      b.r.key = keys[i];
      b.r.error = "=cmd|' /C calc'!A0";
      b.r.ok = false;
      b.r.model_version = "-v" + std::to_string(i);
      c.add(b.done());
    }
    c.commit(c.summarize(RunInfo{}));
    const std::string csv = report_file(dir.file("requests.csv"));
    CHECK(csv.find(",'=1+2,") != std::string::npos);
    CHECK(csv.find("\"'=cmd|' /C calc'!A0\"") == std::string::npos);  // no comma: not quoted
    CHECK(csv.find(",'=cmd|' /C calc'!A0,'-v0") != std::string::npos);
    std::vector<std::string> read;
    report::read_requests_csv(dir.file("requests.csv"), {}, [&](const report::RequestRow& r) {
      read.push_back(r.key);
      CHECK(r.error == "=cmd|' /C calc'!A0");
      CHECK(r.model_version.front() == '-');
    });
    CHECK(read == keys);
  }

  TEST_CASE("markdown: one escaper for every text of a run, cells and lines alike") {
    CHECK(report::markdown_cell("<img src=x onerror=alert(1)> | *a* _b_ `c` [d](e) \\ & ~f\nnew\r") ==
          "&lt;img src=x onerror=alert(1)&gt; \\| \\*a\\* \\_b\\_ \\`c\\` \\[d\\](e) \\\\ &amp; \\~f new ");
    CHECK(report::markdown_table({{"a", "b"}, {"x|y", "REGRESSION"}}, {0}, {{1, 1}}) ==
          "| a | b |\n|:--|--:|\n| x\\|y | **REGRESSION** |\n");
    Collector c(CollectorOptions{});
    Rec b(0, kBase, kBase, kBase + 1'000);
    b.r.ok = false;
    b.r.error = "<script>|x";
    c.add(b.done());
    RunInfo info = sample_info();
    info.model_path = "/m/<img src=x>.pt";
    info.model_arch = "**bold** | `code`";
    info.profile_name = "[link](http://x)";
    info.model_sha256 = "<b>";
    info.warnings = {"a\n# heading"};
    RunSummary s = c.summarize(info);
    s.top_ops.push_back(OpStats{"aten::x|<y>", 1, 1, 1, 0.5});
    const std::string md = render_markdown(s);
    CHECK(md.find('<') == std::string::npos);
    CHECK(md.find("&lt;img src=x&gt;.pt") != std::string::npos);
    CHECK(md.find("\\*\\*bold\\*\\* \\| \\`code\\`") != std::string::npos);
    CHECK(md.find("\\[link\\](http://x)") != std::string::npos);
    CHECK(md.find("- model sha256: &lt;b&gt;\n") != std::string::npos);
    CHECK(md.find("| aten::x\\|&lt;y&gt; |") != std::string::npos);
    CHECK(md.find("> **failed:** id 1: &lt;script&gt;\\|x") != std::string::npos);
    CHECK(md.find("\n# heading") == std::string::npos);
  }

  TEST_CASE("the table for people") {
    Collector c(CollectorOptions{});
    c.add(nested_record());
    RunInfo info = sample_info();
    info.warnings = {"no warm-up"};
    const RunSummary s = c.summarize(info);
    CHECK(render_table(s) ==
          "inferprof run · model.pt (mlp, 5,450 params, 24.1 KB) · profile default · cpu · 1 thread · closed loop, "
          "1 worker\n"
          "model load      12.31 ms\n"
          "warm-up         3 iterations: first 1.234 ms (cold), then mean 212.3 µs\n"
          "requests        1 in 0.52 s · 1.9 req/s\n"
          "\n"
          "stage          count       mean        p50        p90        p99        max   share\n"
          "queue              0       0 µs       0 µs       0 µs       0 µs       0 µs    0.0%\n"
          "input              1    10.0 µs    10.0 µs    10.0 µs    10.0 µs    10.0 µs   10.0%\n"
          "preprocess         0       0 µs       0 µs       0 µs       0 µs       0 µs    0.0%\n"
          "h2d              n/a\n"
          "compute            1    80.0 µs    80.0 µs    80.0 µs    80.0 µs    80.0 µs   80.0%\n"
          "d2h              n/a\n"
          "overhead           1    10.0 µs    10.0 µs    10.0 µs    10.0 µs    10.0 µs   10.0%\n"
          "total              1   100.0 µs   100.0 µs   100.0 µs   100.0 µs   100.0 µs  100.0%\n"
          "\n"
          "top ops          calls       self  self/call      total  compute\n"
          "aten::addmm          1    50.0 µs    50.0 µs    50.0 µs    62.5%\n"
          "aten::linear         1     8.0 µs     8.0 µs    60.0 µs    10.0%\n"
          "aten::relu           1     5.0 µs     5.0 µs     5.0 µs     6.2%\n"
          "aten::t              1     2.0 µs     2.0 µs     2.0 µs     2.5%\n"
          "\n"
          "warning: no warm-up\n");
  }

  TEST_CASE("the cache table: a degraded tier's errors cell keeps the 'where' column in line") {
    Collector c(CollectorOptions{});
    c.add(nested_record());
    RunSummary s = c.summarize(sample_info());
    CacheTierReport l1, l2;
    l1.spec.tier = CacheLevel::l1;
    l1.where = "in-process";
    l2.spec.tier = CacheLevel::l2;
    l2.where = "redis://127.0.0.1:6379/0";
    l2.stats.errors = 603;
    l2.stats.degraded = true;
    s.caches = {l1, l2};
    const std::string table = render_table(s);
    std::vector<std::size_t> where_at;
    for (const std::string& line : {std::string("  where"), std::string("  in-process"), std::string("  redis://")}) {
      const auto at = table.find(line);
      REQUIRE_MESSAGE(at != std::string::npos, table);
      where_at.push_back(at - table.rfind('\n', at));  // its column
    }
    CHECK_MESSAGE(where_at[0] == where_at[1], table);
    CHECK_MESSAGE(where_at[0] == where_at[2], table);
    CHECK(table.find(" 603 (degraded)  redis://") != std::string::npos);
  }

  TEST_CASE("byte sizes: every uint64 prints as a size, never negative, and a tier spec shows its policy parameters") {
    CHECK(report::human_bytes(0) == "0 B");
    CHECK(report::human_bytes(1023) == "1023 B");
    CHECK(report::human_bytes(64ull << 20) == "64.0 MB");
    CHECK(report::human_bytes(1ull << 50) == "1.0 PB");
    CHECK(report::human_bytes(1ull << 63) == "8.0 EB");  // was "-9223372036854775808 B"
    CHECK(report::human_bytes(UINT64_MAX) == "16.0 EB");
    TierSpec spec = parse_tier_spec("l1", "lru:8388608TB", "x");
    CHECK(report::tier_spec_text(spec) == "lru:8.0 EB");
    spec = parse_tier_spec("l1", "wtinylfu(window=0.2,protected=0.5):1000,64MB:30s", "x");
    CHECK(report::tier_spec_text(spec) == "wtinylfu(window=0.2,protected=0.5):1,000,64.0 MB:30s");
    CHECK(report::tier_spec_text(parse_tier_spec("l1", "wtinylfu:10", "x")) == "wtinylfu:10");
  }

  TEST_CASE("durations pick their unit") {
    using report::human_duration_us;
    CHECK(human_duration_us(0) == "0 µs");
    CHECK(human_duration_us(0.04) == "0 µs");
    CHECK(human_duration_us(212.34) == "212.3 µs");
    CHECK(human_duration_us(999.96) == "1.000 ms");
    CHECK(human_duration_us(1234) == "1.234 ms");
    CHECK(human_duration_us(12'310) == "12.31 ms");
    CHECK(human_duration_us(123'400) == "123.4 ms");
    CHECK(human_duration_us(1'520'000) == "1.52 s");
    CHECK(human_duration_us(-0.4) == "-0.4 µs");
    CHECK(report::group_thousands(1'234'567) == "1,234,567");
    CHECK(report::grouped_fixed(1923.06, 1) == "1,923.1");
    CHECK(report::us3(-1'500) == "-1.500");
    // Every µs value in requests.csv and trace.json: three decimals, whatever the magnitude.
    CHECK(report::us3(0) == "0.000");
    CHECK(report::us3(7) == "0.007");
    CHECK(report::us3(12'345'678) == "12345.678");
    CHECK(report::us3(-999) == "-0.999");
    CHECK(report::us3(1'000'000) == "1000.000");
    CHECK(report::us3(INT64_MIN) == "-9223372036854775.808");
    CHECK(report::us3(INT64_MAX) == "9223372036854775.807");
  }

  TEST_CASE("summary.json is valid JSON with the documented fields") {
    Collector c(CollectorOptions{});
    Rec b(0, kBase, kBase, kBase + 50'000);
    b.r.ok = false;
    b.r.error = "bad \"input\"\n\x01";
    c.add(b.done());
    c.add(nested_record(1));
    RunInfo info = sample_info();
    info.warnings = {"tab\there"};
    info.skipped_invalid = 2;
    info.skipped_examples = {"t.jsonl:3: expected an object"};
    info.wall_s = 0;  // no throughput: must still be a finite number
    const RunSummary s = c.summarize(info);
    const std::string json = render_summary_json(s);
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    REQUIRE(parser.parse(json).get(doc) == simdjson::SUCCESS);
    CHECK(std::string_view(doc["schema"]) == "inferprof.summary/1");
    CHECK(std::string_view(doc["tool"]["version"]) == "0.1.0");
    CHECK(std::string_view(doc["run"]["model_arch"]) == "mlp");
    CHECK(std::int64_t(doc["run"]["warmup"]["iterations"]) == 3);
    CHECK(double(doc["run"]["warmup"]["cold_first_us"]) == 1234);
    CHECK(double(doc["run"]["warmup"]["mean_us"]) == doctest::Approx(212.3));
    CHECK(doc["run"]["warmup"]["latencies_us"].get_array().size() == 3);
    CHECK(std::uint64_t(doc["run"]["skipped"]["invalid"]) == 2);
    CHECK(std::string_view(doc["run"]["warnings"].at(0)) == "tab\there");
    CHECK(std::uint64_t(doc["requests"]) == 2);
    CHECK(std::uint64_t(doc["failed"]) == 1);
    // One line, inert on a terminal: the error as printable() shows it.
    CHECK(std::string_view(doc["failed_examples"].at(0)) == "id 1: bad \"input\"\\n\\x01");
    CHECK(double(doc["throughput_rps"]) == 0);
    CHECK(double(doc["total"]["mean_us"]) == 75);
    CHECK(double(doc["total"]["p50_us"]) == 50);
    CHECK(double(doc["total"]["max_us"]) == 100);
    CHECK(double(doc["stages"]["overhead"]["share"]) == doctest::Approx(60.0 / 150.0));
    CHECK(std::uint64_t(doc["stages"]["compute"]["count"]) == 1);
    CHECK(std::string_view(doc["top_ops"].at(0)["name"]) == "aten::addmm");
    CHECK(std::uint64_t(doc["reports"]["spans"]) == 2 + 6);
    CHECK(std::uint64_t(doc["reports"]["csv_rows"]) == 2);
  }

  TEST_CASE("measure_from: the requests before it are not measured, and the wall time starts at the first that is") {
    CollectorOptions options;
    options.measure_from = 2;
    Collector c(options);
    CHECK(c.first_measured_arrival() == 0);
    for (std::uint64_t seq = 0; seq < 5; ++seq) {
      Rec b(seq, kBase + static_cast<Nanos>(seq) * 1'000'000, kBase + static_cast<Nanos>(seq) * 1'000'000,
            kBase + static_cast<Nanos>(seq) * 1'000'000 + (seq < 2 ? 900'000 : 100'000));
      b.span(Stage::compute, 0, seq < 2 ? 900'000 : 100'000);
      c.add(b.done());
    }
    const RunSummary s = c.summarize(RunInfo{});
    CHECK(s.requests == 3);
    // The slow settling requests (900 µs) are in no figure: every measured one took 100 µs.
    CHECK(s.total.max_us == doctest::Approx(100.0).epsilon(0.01));
    CHECK(c.first_measured_arrival() == kBase + 2'000'000);
  }

  TEST_CASE("stages.csv has a row per stage and the total") {
    Collector c(CollectorOptions{});
    c.add(nested_record());
    CHECK(render_stages_csv(c.summarize(RunInfo{})) ==
          "stage,count,mean_us,p50_us,p90_us,p99_us,max_us,share,cpu_mean_us,cpu_p50_us,cpu_p99_us,off_cpu\n"
          "queue,0,0.000,0.000,0.000,0.000,0.000,0.000000,,,,\n"
          "cache,0,0.000,0.000,0.000,0.000,0.000,0.000000,,,,\n"
          "load,0,0.000,0.000,0.000,0.000,0.000,0.000000,,,,\n"
          "input,1,10.000,10.000,10.000,10.000,10.000,0.100000,,,,\n"
          "preprocess,0,0.000,0.000,0.000,0.000,0.000,0.000000,,,,\n"
          "batch_wait,,,,,,,,,,,\n"
          "h2d,,,,,,,,,,,\n"
          "compute,1,80.000,80.000,80.000,80.000,80.000,0.800000,,,,\n"
          "d2h,,,,,,,,,,,\n"
          "overhead,1,10.000,10.000,10.000,10.000,10.000,0.100000,,,,\n"
          "total,1,100.000,100.000,100.000,100.000,100.000,1.000000,,,,\n");
  }

  // nested_record() with thread CPU time: input 10 µs on CPU, compute 80 µs wall
  // of which `compute_cpu` on CPU, 5 µs of overhead on CPU.
  RequestRecord cpu_record(std::uint64_t seq, Nanos compute_cpu) {
    RequestRecord r = nested_record(seq);
    r.cpu_start = 7'000'000;
    r.cpu_end = r.cpu_start + 10'000 + compute_cpu + 5'000;
    r.stage_cpu[static_cast<std::size_t>(Stage::input)] = 10'000;
    r.stage_cpu[static_cast<std::size_t>(Stage::compute)] = compute_cpu;
    r.finish();  // sets the overhead's CPU time: what no stage explains
    return r;
  }

  TEST_CASE("thread CPU time: overhead is the rest, off-CPU shares, all four outputs carry it") {
    const RequestRecord r = cpu_record(0, 40'000);
    CHECK(r.cpu_total() == 55'000);
    CHECK(r.stage_cpu[static_cast<std::size_t>(Stage::overhead)] == 5'000);

    Collector c(CollectorOptions{});
    c.add(r);
    c.add(cpu_record(1, 40'000));
    const RunSummary s = c.summarize(sample_info());
    const StageStats& compute = s.stages[static_cast<std::size_t>(Stage::compute)];
    REQUIRE(compute.cpu);
    CHECK(compute.cpu_mean_us == doctest::Approx(40.0));
    CHECK(compute.off_cpu == doctest::Approx(0.5));
    CHECK(s.stages[static_cast<std::size_t>(Stage::input)].off_cpu == doctest::Approx(0.0));
    // The overhead's CPU time is a residual of reads taken where stages close: no CPU figures in the summary
    // (in real runs it is ~0 and its off-CPU share read ~100%); requests.csv keeps the per-request residual.
    CHECK_FALSE(s.stages[static_cast<std::size_t>(Stage::overhead)].cpu);
    CHECK_FALSE(s.stages[static_cast<std::size_t>(Stage::queue)].cpu);  // waiting: not measured
    CHECK(s.total.cpu_mean_us == doctest::Approx(55.0));
    CHECK(s.total.off_cpu == doctest::Approx(0.45));

    // Half of compute off the CPU with one intra-op thread: flagged as noisy.
    REQUIRE(s.info.warnings.size() == 1);
    CHECK(s.info.warnings[0].find("descheduled for 50% of compute: noisy run") == 0);
    CHECK(render_table(s).find("warning: descheduled for 50% of compute") != std::string::npos);
    CHECK(render_table(s).find("cpu mean") != std::string::npos);
    CHECK(render_markdown(s).find("| cpu mean | off-cpu |") != std::string::npos);

    const std::string csv = render_stages_csv(s);
    CHECK(csv.find("\ncompute,2,80.000,80.000,80.000,80.000,80.000,0.800000,40.000,40.000,40.000,0.500000\n") !=
          std::string::npos);
    CHECK(csv.find("\nqueue,0,0.000,0.000,0.000,0.000,0.000,0.000000,,,,\n") != std::string::npos);

    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    const std::string json = render_summary_json(s);
    REQUIRE(parser.parse(json).get(doc) == simdjson::SUCCESS);
    double v = 0;
    CHECK(doc["stages"]["compute"]["cpu_mean_us"].get(v) == simdjson::SUCCESS);
    CHECK(v == doctest::Approx(40.0));
    CHECK(doc["stages"]["compute"]["off_cpu"].get(v) == simdjson::SUCCESS);
    CHECK(v == doctest::Approx(0.5));
    CHECK(doc["total"]["cpu_mean_us"].get(v) == simdjson::SUCCESS);
    CHECK(doc["stages"]["queue"]["cpu_mean_us"].error() == simdjson::NO_SUCH_FIELD);

    fmt::memory_buffer row;
    report::append_request_row(row, r, kBase, false);
    // No decode in this request: the image columns are empty.
    CHECK(fmt::to_string(row).find(",55.000,0.000,0.000,10.000,0.000,,40.000,,5.000,,,0,0.000\n") != std::string::npos);
    CHECK(report::requests_csv_header(false).find(
              ",cpu_us,cache_cpu_us,load_cpu_us,input_cpu_us,preprocess_cpu_us,h2d_cpu_us,compute_cpu_us,"
              "d2h_cpu_us,overhead_cpu_us,image_bytes,image_pixels,batch,batch_wait_us\n") != std::string::npos);
  }

  // A request that preprocessed in two ops (decode 30 µs wall / 20 µs CPU, resize 50 / 40) of a 60 µs
  // preprocess stage, or (second) was served from a cache and ran none.
  RequestRecord preprocess_record(std::uint64_t seq, bool ran) {
    Rec rec(seq, 1'000'000 * seq, 1'000'000 * seq, 1'000'000 * seq + 200'000);
    RequestRecord& r = rec.r;
    r.cpu_start = 7'000'000;
    r.cpu_end = r.cpu_start + 150'000;
    if (ran) {
      const auto pre = rec.span(Stage::preprocess, 0, 90'000);
      rec.child("decode", pre, 0, 30'000);
      rec.child("resize", pre, 30'000, 50'000);
      r.stage_cpu[static_cast<std::size_t>(Stage::preprocess)] = 70'000;
      r.preprocess_op = {30'000, 50'000};
      r.preprocess_op_cpu = {20'000, 40'000};
      r.image_bytes = 4321;
      r.image_pixels = 640 * 480;
    }
    r.finish();
    return r;
  }

  TEST_CASE(
      "preprocessing ops are parts of the preprocess stage in the table, summary.json, stages.csv, requests.csv") {
    CollectorOptions o;
    o.preprocess_ops = {"decode", "resize"};
    Collector c(o);
    c.add(preprocess_record(0, true));
    c.add(preprocess_record(1, false));
    const RunSummary s = c.summarize(sample_info());
    REQUIRE(s.preprocess_ops.size() == 2);
    const StagePart& resize = s.preprocess_ops[1];
    CHECK(resize.name == "preprocess.resize");
    // As stages are counted: the mean over every request (a hit ran none), the count where it ran.
    CHECK(resize.stats.count == 1);
    CHECK(resize.stats.mean_us == doctest::Approx(25.0));
    CHECK(resize.stats.max_us == doctest::Approx(50.0).epsilon(0.01));
    REQUIRE(resize.stats.cpu);
    CHECK(resize.stats.cpu_mean_us == doctest::Approx(20.0));
    CHECK(resize.stats.off_cpu == doctest::Approx(0.2));
    CHECK(s.preprocess_ops[0].stats.cpu_mean_us == doctest::Approx(10.0));

    const std::string table = render_table(s);
    const auto pre = table.find("\npreprocess ");
    REQUIRE(pre != std::string::npos);
    CHECK(table.find("\n  decode ", pre) != std::string::npos);
    CHECK(table.find("\n  resize ", pre) != std::string::npos);
    CHECK(render_markdown(s).find("| preprocess.resize | 1 |") != std::string::npos);

    const std::string csv = render_stages_csv(s);
    CHECK(csv.find("\npreprocess,1,") != std::string::npos);
    CHECK(csv.find("\npreprocess.decode,1,") > csv.find("\npreprocess,1,"));
    CHECK(csv.find("\npreprocess.resize,1,25.000,") < csv.find("\nh2d,"));

    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    const std::string json = render_summary_json(s);
    REQUIRE(parser.parse(json).get(doc) == simdjson::SUCCESS);
    double v = 0;
    CHECK(doc["stages"]["preprocess"]["ops"]["resize"]["cpu_mean_us"].get(v) == simdjson::SUCCESS);
    CHECK(v == doctest::Approx(20.0));
    CHECK(doc["stages"]["compute"]["ops"].error() == simdjson::NO_SUCH_FIELD);

    CHECK(report::requests_csv_header(false, o.preprocess_ops)
              .find(",overhead_cpu_us,preprocess.decode_us,preprocess.resize_us,preprocess.decode_cpu_us,"
                    "preprocess.resize_cpu_us,image_bytes,image_pixels,batch,batch_wait_us\n") != std::string::npos);
    fmt::memory_buffer ran, hit;
    report::append_request_row(ran, preprocess_record(0, true), 0, false, 2);
    report::append_request_row(hit, preprocess_record(1, false), 0, false, 2);
    CHECK(fmt::to_string(ran).find(",30.000,50.000,20.000,40.000,4321,307200,") != std::string::npos);
    CHECK(fmt::to_string(hit).find(",0.000,0.000,0.000,0.000,,,") != std::string::npos);
  }

  TEST_CASE("thread CPU time: no noisy-run warning below the threshold or with several intra-op threads") {
    Collector quiet(CollectorOptions{});
    quiet.add(cpu_record(0, 76'000));  // 5% off the CPU
    CHECK(quiet.summarize(sample_info()).info.warnings.empty());
    // With intra-op threads the worker waits for the others: off-CPU time is not contention.
    Collector threaded(CollectorOptions{});
    threaded.add(cpu_record(0, 20'000));
    RunInfo info = sample_info();
    info.threads = 4;
    const RunSummary s = threaded.summarize(info);
    CHECK(s.info.warnings.empty());
    CHECK(s.stages[static_cast<std::size_t>(Stage::compute)].off_cpu == doctest::Approx(0.75));
  }

  TEST_CASE("flamegraph.svg: a titled frame per node, escaped names, well-formed") {
    const std::vector<std::pair<std::string, std::uint64_t>> folded = {
        {"request;compute", 15},
        {"request;compute;aten::foo<bar>&baz", 1234},
        {"request;compute;aten::linear;aten::addmm", 50},
        {"request;input", 10},
        {"request;overhead", 10},
    };
    const std::string svg = render_flamegraph_svg(folded, "inferprof run · <model> & co");
    std::string why;
    CHECK_MESSAGE(well_formed(svg, &why), why);
    // request, compute, foo, linear, addmm, input, overhead
    CHECK(count_of(svg, "<title>") == 7);
    CHECK(count_of(svg, "<g class=\"frame\">") == 7);
    CHECK(svg.find("<title>aten::foo&lt;bar&gt;&amp;baz (1,234 µs, 93.56%)</title>") != std::string::npos);
    CHECK(svg.find("<title>request (1,319 µs, 100.00%)</title>") != std::string::npos);
    CHECK(svg.find("inferprof run · &lt;model&gt; &amp; co") != std::string::npos);
    CHECK(svg.find("<bar>") == std::string::npos);
    // Narrow frames get a ".."-truncated label or none at all.
    CHECK(svg.find(">aten::linear<") == std::string::npos);

    const std::string empty = render_flamegraph_svg({}, "nothing");
    CHECK(well_formed(empty, &why));
    CHECK(empty.find("no samples") != std::string::npos);
  }

  TEST_CASE("flamegraph.svg from a collector's folded stacks is well-formed") {
    Collector c(CollectorOptions{});
    for (std::uint64_t i = 0; i < 3; ++i)
      c.add(nested_record(i));
    const std::string svg = render_flamegraph_svg(c.folded(), "t");
    std::string why;
    CHECK_MESSAGE(well_formed(svg, &why), why);
    CHECK(count_of(svg, "<title>") == 8);
  }

  TEST_CASE("write_file_atomic writes the file and leaves no temporary") {
    TempDir dir;
    write_file_atomic(dir.str(), "summary.json", "{}\n");
    write_file_atomic(dir.str(), "summary.json", "{\"a\":1}\n");
    CHECK(report_file(dir.file("summary.json")) == "{\"a\":1}\n");
    CHECK(dir.list() == std::vector<std::string>{"summary.json"});
    CHECK_THROWS_WITH_AS(write_file_atomic(dir.file("missing"), "x.csv", "1"),
                         fmt::format("cannot write '{}/missing/x.csv': No such file or directory", dir.str()).c_str(),
                         Error);
    try {
      write_file_atomic(dir.file("missing"), "x.csv", "1");
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::runtime);
    }
  }

  TEST_CASE("ensure_output_dir creates folders and rejects files") {
    TempDir dir;
    output::claim_dir(dir.file("a/b/c"));
    CHECK(fs::is_directory(dir.file("a/b/c")));
    CHECK(fs::is_empty(dir.file("a/b/c")));
    output::claim_dir(dir.file("a/b/c"));  // existing is fine
    std::ofstream(dir.file("plain")) << "x";
    CHECK_THROWS_WITH_AS(output::claim_dir(dir.file("plain")),
                         fmt::format("cannot write reports to '{}/plain': Not a directory", dir.str()).c_str(), Error);
    CHECK_THROWS_WITH_AS(output::claim_dir(dir.file("plain/sub")),
                         fmt::format("cannot write reports to '{}/plain/sub': Not a directory", dir.str()).c_str(),
                         Error);
    try {
      output::claim_dir(dir.file("plain/sub"));
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::bad_input);
    }
  }

  TEST_CASE("discard and an uncommitted collector leave the folder empty") {
    TempDir dir;
    CollectorOptions o;
    o.out_dir = dir.str();
    {
      Collector c(o);
      c.add(nested_record());
      CHECK(dir.list().size() == 2);  // the streamed temporaries
      c.discard();
      CHECK(dir.list().empty());
      c.add(nested_record(1));  // still aggregates, writes nothing
      CHECK(c.summarize(RunInfo{}).requests == 2);
      CHECK(dir.list().empty());
    }
    {
      Collector c(o);
      c.add(nested_record());
    }
    CHECK(dir.list().empty());
  }

  TEST_CASE("commit writes all six files atomically and a failed commit leaves none") {
    TempDir dir;
    const std::string out = dir.file("out");
    output::claim_dir(out);
    CollectorOptions o;
    o.out_dir = out;
    Collector c(o);
    c.add(nested_record());
    const RunSummary s = c.summarize(sample_info());
    // A folder where a file should go makes its rename fail.
    fs::create_directories(out + "/stacks.folded/x");
    CHECK_THROWS_WITH_AS(c.commit(s), fmt::format("cannot write '{}/stacks.folded': Is a directory", out).c_str(),
                         Error);
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(out))
      left.push_back(e.path().filename().string());
    CHECK(left == std::vector<std::string>{"stacks.folded"});
  }

  TEST_CASE("add is thread-safe") {
    Collector c(CollectorOptions{});
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&c, t] {
        for (std::uint64_t i = 0; i < 500; ++i) {
          RequestRecord r = nested_record(i);
          r.worker = static_cast<std::uint32_t>(t);
          c.add(r);
        }
      });
    for (auto& th : threads)
      th.join();
    const RunSummary s = c.summarize(RunInfo{});
    CHECK(s.requests == 2000);
    CHECK(s.total.mean_us == 100);
    CHECK(s.top_ops[0].calls == 2000);
    std::uint64_t sum = 0;
    for (const auto& [path, v] : c.folded())
      sum += v;
    CHECK(sum == 200'000);
  }

  TEST_CASE("the replica table as CSV: one row per replica") {
    // Every result type and format through the factory: test_report_formats.cpp.
    using report::Format;
    ReplicaSummary s;
    s.split = "rr";
    ReplicaResult a;
    a.index = 0;
    a.requests = 10;
    a.mean_us = 1.5;
    ReplicaResult b;
    b.index = 1;
    b.status = "exit 3";
    s.replicas = {a, b};
    const std::string csv = report::render(Format::csv, s, "the replica table");
    CHECK(csv ==
          "replica,status,requests,throughput_rps,mean_us,p50_us,p99_us,stale_served,stalled,stall_ms,host,share\n"
          "0,ok,10,0.000,1.500,0.000,0.000,0,0,0.000,,\n"
          "1,exit 3,0,0.000,0.000,0.000,0.000,0,0,0.000,,\n");
    CHECK(report::render(Format::table, s, "the replica table") == render_replicas_table(s));
  }

}  // TEST_SUITE
