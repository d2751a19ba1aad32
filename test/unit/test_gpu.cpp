// The gpu module's pure half: CUPTI activity records (constructed here) to
// per-request stage times. The CUPTI tracer itself needs a GPU: see
// scripts/gpu-check.sh.
#include <doctest/doctest.h>

#include <map>

#include "inferprof/gpu.hpp"
#include "inferprof/report.hpp"

using namespace inferprof;
using gpu::Activity;
using Kind = gpu::Activity::Kind;

namespace {

constexpr auto kH2d = static_cast<std::uint32_t>(Stage::h2d);
constexpr auto kCompute = static_cast<std::uint32_t>(Stage::compute);
constexpr auto kD2h = static_cast<std::uint32_t>(Stage::d2h);

std::uint32_t kernel(const char* name) {
  return NameTable::global().intern(name);
}

Activity act(Kind kind, Nanos start, Nanos end, std::uint64_t external, std::uint32_t name = 0,
             std::uint64_t bytes = 0) {
  Activity a;
  a.kind = kind;
  a.start = start;
  a.end = end;
  a.external = external;
  a.name = name;
  a.bytes = bytes;
  return a;
}

std::map<std::string, Nanos> children_by_name(const gpu::RequestGpu& g) {
  std::map<std::string, Nanos> out;
  for (const auto& [id, ns] : g.compute_children)
    out[std::string(NameTable::global().name(id))] += ns;
  return out;
}

Nanos stage(const RequestRecord& r, Stage s) {
  return r.stage[static_cast<std::size_t>(s)];
}

// The collector's folded stacks by path, and their sum (µs).
std::pair<std::map<std::string, std::uint64_t>, std::uint64_t> folded_of(const Collector& c) {
  std::map<std::string, std::uint64_t> folded;
  std::uint64_t sum = 0;
  for (const auto& [path, us] : c.folded()) {
    folded[path] = us;
    sum += us;
  }
  return {folded, sum};
}

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("external ids carry the request token and the stage") {
    const std::uint64_t id = gpu::external_id(12345, kCompute);
    CHECK(gpu::token_of(id) == 12345);
    CHECK(gpu::stage_of(id) == kCompute);
    CHECK(gpu::stage_of(gpu::external_id(7, gpu::kNoStage)) == gpu::kNoStage);
    CHECK(gpu::external_id(1, kH2d) != 0);  // 0 means "no correlation"
  }

  TEST_CASE("union_length counts overlaps once and ignores empty intervals") {
    CHECK(gpu::union_length({}) == 0);
    CHECK(gpu::union_length({{0, 10}}) == 10);
    CHECK(gpu::union_length({{0, 10}, {5, 15}}) == 15);
    CHECK(gpu::union_length({{0, 10}, {20, 30}}) == 20);
    CHECK(gpu::union_length({{20, 30}, {0, 100}, {40, 50}}) == 100);  // nested, unsorted
    CHECK(gpu::union_length({{0, 10}, {10, 20}}) == 20);              // touching
    CHECK(gpu::union_length({{5, 5}, {9, 3}}) == 0);                  // empty and reversed
  }

  TEST_CASE("a request's copies and kernels become h2d, compute and d2h") {
    const std::uint64_t t = 3;
    const std::vector<Activity> records = {
        act(Kind::memcpy_h2d, 1000, 1400, gpu::external_id(t, kH2d), 0, 4000),
        act(Kind::kernel, 1500, 1700, gpu::external_id(t, kCompute), kernel("conv_kernel")),
        act(Kind::kernel, 1700, 1800, gpu::external_id(t, kCompute), kernel("relu_kernel")),
        act(Kind::kernel, 1850, 1900, gpu::external_id(t, kCompute), kernel("conv_kernel")),
        act(Kind::memcpy_d2h, 2000, 2100, gpu::external_id(t, kD2h), 0, 500),
    };
    const gpu::RequestGpu g = gpu::attribute(records);
    CHECK(g.h2d == 400);
    CHECK(g.compute == 350);
    CHECK(g.d2h == 100);
    CHECK(g.kernels == 3);
    CHECK(g.h2d_bytes == 4000);
    CHECK(g.d2h_bytes == 500);
    CHECK(g.h2d_copy_ns == 400);
    // Gaps between activities: 1400..1500, 1800..1850, 1900..2000.
    CHECK(g.idle == 250);
    CHECK(g.first_start == 1000);
    const auto kids = children_by_name(g);
    CHECK(kids.at("conv_kernel") == 250);
    CHECK(kids.at("relu_kernel") == 100);
    // Largest first.
    CHECK(NameTable::global().name(g.compute_children.front().first) == "conv_kernel");
  }

  TEST_CASE("overlapping kernels: compute is the union and the children share the overlap") {
    const std::uint64_t e = gpu::external_id(1, kCompute);
    const gpu::RequestGpu g = gpu::attribute({
        act(Kind::kernel, 0, 100, e, kernel("a_kernel")),
        act(Kind::kernel, 50, 150, e, kernel("b_kernel")),  // overlaps a by 50
        act(Kind::kernel, 60, 80, e, kernel("c_kernel")),   // inside both
    });
    CHECK(g.compute == 150);
    CHECK(g.kernels == 3);
    CHECK(g.idle == 0);
    const auto kids = children_by_name(g);
    Nanos sum = 0;
    for (const auto& [name, ns] : kids)
      sum += ns;
    CHECK(sum == g.compute);
    // 0..50 a alone; 50..60 a,b; 60..80 a,b,c (20 / 3 = 6 r 2); 80..100 a,b; 100..150 b alone.
    CHECK(kids.at("a_kernel") == 50 + 5 + 8 + 10);
    CHECK(kids.at("b_kernel") == 5 + 6 + 10 + 50);
    CHECK(kids.at("c_kernel") == 6);
  }

  TEST_CASE("records tagged with the request alone go by kind, sync records are not GPU work") {
    const std::uint64_t req = gpu::external_id(9, gpu::kNoStage);
    const gpu::RequestGpu g = gpu::attribute({
        act(Kind::memcpy_h2d, 0, 10, req, 0, 100),
        act(Kind::kernel, 10, 30, req, kernel("k_kernel")),
        act(Kind::memset, 30, 35, req, 0, 64),
        act(Kind::memcpy_d2h, 35, 40, req, 0, 10),
        act(Kind::sync, 0, 1000, req),
    });
    CHECK(g.h2d == 10);
    CHECK(g.compute == 25);
    CHECK(g.d2h == 5);
    CHECK(g.idle == 0);  // the 1000 ns host wait is no GPU activity
    CHECK(children_by_name(g).at("[memset]") == 5);
  }

  TEST_CASE("a kernel launched inside the h2d stage (a dtype cast) counts in h2d") {
    const gpu::RequestGpu g = gpu::attribute({
        act(Kind::memcpy_h2d, 0, 10, gpu::external_id(2, kH2d), 0, 100),
        act(Kind::kernel, 10, 14, gpu::external_id(2, kH2d), kernel("cast_kernel")),
    });
    CHECK(g.h2d == 14);
    CHECK(g.compute == 0);
    CHECK(g.kernels == 1);
    CHECK(g.h2d_copy_ns == 10);  // GB/s uses the copy alone
  }

  TEST_CASE("copies the model makes inside compute count in compute, not in the h2d/d2h bytes") {
    const gpu::RequestGpu g = gpu::attribute({
        act(Kind::memcpy_h2d, 0, 10, gpu::external_id(4, kH2d), 0, 100),
        act(Kind::memcpy_h2d, 10, 30, gpu::external_id(4, kCompute), 0, 7000),  // e.g. .to(device) in forward
        act(Kind::memcpy_d2h, 30, 35, gpu::external_id(4, kCompute), 0, 8),     // e.g. .item()
        act(Kind::memcpy_d2h, 35, 40, gpu::external_id(4, kD2h), 0, 10),
    });
    CHECK(g.h2d_bytes == 100);
    CHECK(g.h2d_copy_ns == 10);
    CHECK(g.d2h_bytes == 10);
    CHECK(g.d2h_copy_ns == 5);
    CHECK(g.compute == 25);
    CHECK(children_by_name(g).at("[memcpy HtoD]") == 20);
  }

  TEST_CASE("an empty request attributes nothing") {
    const gpu::RequestGpu g = gpu::attribute({});
    CHECK(g.h2d == 0);
    CHECK(g.compute == 0);
    CHECK(g.idle == 0);
    CHECK(g.kernels == 0);
    CHECK(g.compute_children.empty());
    RequestRecord r;
    r.start = 100;
    gpu::apply(g, r);
    CHECK(r.spans.empty());  // a cache hit on a GPU run gains no spans
  }

  TEST_CASE("the router keeps interleaved requests apart and counts what lands nowhere") {
    gpu::Router router;
    // Two workers' requests (tokens 1 and 2) arrive interleaved in one buffer.
    router.add(act(Kind::kernel, 0, 10, gpu::external_id(1, kCompute), kernel("k1")));
    router.add(act(Kind::kernel, 5, 15, gpu::external_id(2, kCompute), kernel("k2")));
    router.add(act(Kind::memcpy_h2d, 1, 2, gpu::external_id(2, kH2d), 0, 8));
    router.add(act(Kind::kernel, 20, 30, gpu::external_id(1, kCompute), kernel("k1")));
    router.add(act(Kind::kernel, 0, 1, 0, kernel("model_load_kernel")));  // outside any request
    CHECK(router.pending() == 4);
    CHECK(router.unattributed() == 1);

    const auto one = router.take(1);
    REQUIRE(one.size() == 2);
    CHECK(gpu::attribute(one).compute == 20);
    const auto two = router.take(2);
    REQUIRE(two.size() == 2);
    CHECK(gpu::attribute(two).h2d == 1);
    CHECK(router.take(3).empty());
    CHECK(router.pending() == 0);

    // A straggler for a request already attributed is counted, not lost silently.
    router.add(act(Kind::kernel, 40, 50, gpu::external_id(1, kCompute), kernel("k1")));
    CHECK(router.unattributed() == 2);
    router.add(act(Kind::kernel, 40, 50, gpu::external_id(4, kCompute), kernel("k4")));
    router.drop_all();
    CHECK(router.unattributed() == 3);
    CHECK(router.pending() == 0);
  }

  TEST_CASE("apply rewrites the stages with GPU times and folds idle under overhead") {
    RequestRecord r;
    r.start = 0;
    r.add(name_id(Stage::input), -1, 0, 100);
    r.add(name_id(Stage::h2d), -1, 100, 900);  // host waited 900 for a 400 ns copy
    r.add(name_id(Stage::compute), -1, 1000, 1500);
    r.add(name_id(Stage::d2h), -1, 2500, 300);
    const std::uint64_t t = 5;
    gpu::apply(gpu::attribute({
                   act(Kind::memcpy_h2d, 200, 600, gpu::external_id(t, kH2d), 0, 4'000'000),
                   act(Kind::kernel, 1100, 1900, gpu::external_id(t, kCompute), kernel("gemm_kernel")),
                   act(Kind::kernel, 2000, 2200, gpu::external_id(t, kCompute), kernel("relu_kernel")),
                   act(Kind::memcpy_d2h, 2600, 2700, gpu::external_id(t, kD2h), 0, 1000),
               }),
               r);
    r.end = 3000;
    r.finish();
    CHECK(stage(r, Stage::h2d) == 400);
    CHECK(stage(r, Stage::compute) == 1000);
    CHECK(stage(r, Stage::d2h) == 100);
    CHECK(stage(r, Stage::input) == 100);
    CHECK(stage(r, Stage::overhead) == 3000 - 100 - 400 - 1000 - 100);
    CHECK(r.gpu.kernels == 2);
    CHECK(r.gpu.h2d_bytes == 4'000'000);
    // Idle: 600..1100, 1900..2000, 2200..2600.
    CHECK(r.gpu.gpu_idle == 1000);

    // The folded stacks sum to the request's total (3000 ns = 3 µs).
    Collector c(CollectorOptions{});
    c.add(r);
    CHECK(folded_of(c).second == 3);
    RunSummary s = c.summarize(RunInfo{});
    CHECK(s.gpu_kernels == 2);
    CHECK(s.h2d_bytes == 4'000'000);
    CHECK(s.gpu_idle_us == doctest::Approx(1.0));
  }

  TEST_CASE("folded stacks name the kernels and gpu_idle at microsecond scale") {
    RequestRecord r;
    r.start = 0;
    r.add(name_id(Stage::h2d), -1, 0, 50'000);
    r.add(name_id(Stage::compute), -1, 50'000, 200'000);
    r.add(name_id(Stage::d2h), -1, 250'000, 20'000);
    const std::uint64_t t = 6;
    gpu::apply(gpu::attribute({
                   act(Kind::memcpy_h2d, 0, 30'000, gpu::external_id(t, kH2d), 0, 1 << 20),
                   act(Kind::kernel, 60'000, 160'000, gpu::external_id(t, kCompute), kernel("gemm_kernel")),
                   act(Kind::kernel, 170'000, 200'000, gpu::external_id(t, kCompute), kernel("relu_kernel")),
                   act(Kind::memcpy_d2h, 250'000, 260'000, gpu::external_id(t, kD2h), 0, 4096),
               }),
               r);
    r.end = 300'000;
    r.finish();
    Collector c(CollectorOptions{});
    c.add(r);
    auto [folded, sum] = folded_of(c);
    CHECK(sum == 300);
    CHECK(folded["request;h2d"] == 30);
    CHECK(folded["request;compute;gemm_kernel"] == 100);
    CHECK(folded["request;compute;relu_kernel"] == 30);
    CHECK(folded.count("request;compute") == 0);  // compute is all kernels: no self time
    CHECK(folded["request;d2h"] == 10);
    // Idle: 30k..60k, 160k..170k, 200k..250k = 90 µs, inside overhead (300 - 30 - 130 - 10 = 130).
    CHECK(folded["request;overhead;gpu_idle"] == 90);
    CHECK(folded["request;overhead"] == 40);
  }
}

TEST_SUITE("gpu") {
  TEST_CASE("the table and summary.json show the GPU block only for a GPU run") {
    RunSummary s;
    s.requests = 10;
    CHECK(render_table(s).find("CUPTI") == std::string::npos);
    CHECK(render_summary_json(s).find("\"gpu\"") == std::string::npos);

    s.info.gpu.enabled = true;
    s.info.gpu.name = "NVIDIA Test";
    s.info.gpu.records = 1234;
    s.info.gpu.dropped = 0;
    s.info.gpu.peak_h2d_pageable_gbps = 10;
    s.info.gpu.peak_h2d_pinned_gbps = 25;
    s.stages[static_cast<std::size_t>(Stage::h2d)].total_us = 1000;  // 10 requests x 100 µs
    s.h2d_bytes = 10'000'000;                                        // 1 MB each: 10 GB/s
    s.gpu_kernels = 520;
    s.gpu_idle_us = 50;
    const std::string table = render_table(s);
    CHECK(table.find("NVIDIA Test · CUPTI: 1,234 activity records, 0 dropped") != std::string::npos);
    CHECK(table.find("h2d 10.0 GB/s achieved (pageable) vs peak 25.0 pinned / 10.0 pageable") != std::string::npos);
    CHECK(table.find("52.0 per request") != std::string::npos);
    CHECK(table.find("warning: CUPTI dropped") == std::string::npos);
    s.info.gpu.dropped = 7;
    CHECK(render_table(s).find("warning: CUPTI dropped 7 activity records") != std::string::npos);
    const std::string json = render_summary_json(s);
    CHECK(json.find("\"dropped_records\": 7") != std::string::npos);
    CHECK(json.find("\"kernels_per_request\": 52") != std::string::npos);
    CHECK(json.find("\"h2d_gbps\": 10") != std::string::npos);
  }
}
