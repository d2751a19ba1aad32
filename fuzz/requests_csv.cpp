// A saved run's requests.csv, read beside a valid summary.json by `diff`
// (load_run) and `simulate --costs` (load_sim_costs).
#include "fuzz_support.hpp"
#include "inferprof/diff.hpp"
#include "inferprof/simulate.hpp"

namespace {
// A minimal summary both readers accept, with caches so the CSV decides the costs.
constexpr std::string_view kSummary = R"({"schema": "inferprof.summary/1", "run": {"mode": "closed"},
 "requests": 4, "throughput_rps": 100.0,
 "stages": {
  "queue": {"count": 4, "mean_us": 1, "p50_us": 1, "p90_us": 1, "p99_us": 1, "max_us": 1},
  "cache": {"count": 4, "mean_us": 1, "p50_us": 1, "p90_us": 1, "p99_us": 1, "max_us": 1},
  "load": {"count": 4, "mean_us": 0, "p50_us": 0, "p90_us": 0, "p99_us": 0, "max_us": 0},
  "input": {"count": 4, "mean_us": 1, "p50_us": 1, "p90_us": 1, "p99_us": 1, "max_us": 1},
  "preprocess": {"count": 4, "mean_us": 2, "p50_us": 2, "p90_us": 2, "p99_us": 2, "max_us": 2},
  "h2d": {"applicable": false},
  "compute": {"count": 4, "mean_us": 50, "p50_us": 50, "p90_us": 50, "p99_us": 50, "max_us": 50},
  "d2h": {"applicable": false},
  "overhead": {"count": 4, "mean_us": 1, "p50_us": 1, "p90_us": 1, "p99_us": 1, "max_us": 1}},
 "total": {"count": 4, "mean_us": 60, "p50_us": 60, "p90_us": 60, "p99_us": 60, "max_us": 60},
 "served_by": [{"outcome": "miss", "requests": 2, "mean_us": 60}],
 "caches": [{"tier": "l1", "entries": 2, "bytes": 128, "hit_ratio": 0.5}]}
)";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace inferprof;
  static const std::string summary =
      fuzz::write_input("summary.json", reinterpret_cast<const std::uint8_t*>(kSummary.data()), kSummary.size());
  fuzz::write_input("requests.csv", data, size);
  bool ok = fuzz::expect_error_or_success([&] { (void)load_run(summary); });
  ok |= fuzz::expect_error_or_success([&] { (void)load_sim_costs(summary); });
  return fuzz::verdict(ok);
}
