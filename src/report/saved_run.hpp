#pragma once
// A saved run read back: the summary.json a run wrote and the requests.csv
// beside it. The one reader of these files; diff, simulate --costs and the
// replica parent all read runs through it.
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inferprof/report.hpp"

namespace inferprof::report {

inline constexpr std::string_view kSummarySchema = "inferprof.summary/1";

struct SavedRun {
  std::string summary_path;
  std::string csv_path;  // empty: no requests.csv beside summary.json
  // "run": fields added after the first release of the schema read as "" or 0 when absent.
  std::string model_hash, trace_hash, model_path, trace_path, hostname, cpu_model, libtorch_version, device,
      profile_name, mode, started_at;
  int cpu_cores = 0, threads = 0, concurrency = 0;
  std::uint64_t limit = 0;
  SpeedProbe speed_before, speed_after;  // "run"."speed_probe"; not measured in older summaries
  std::uint64_t requests = 0;
  double throughput_rps = 0;
  // kStageCount stages, then the request total (index kStageCount). With
  // SummaryCheck::partial, has_stage says which had a mean_us.
  std::array<StageStats, kStageCount + 1> stages{};
  std::array<bool, kStageCount + 1> has_stage{};
  std::vector<StagePart> preprocess_ops;  // "stages"."preprocess"."ops"; empty in older summaries
  struct Tier {
    CacheLevel tier = CacheLevel::l1;
    std::optional<double> hit_ratio;
    double entries = 0, bytes = 0;
  };
  std::vector<Tier> caches;
  struct Outcome {
    CacheOutcome outcome = CacheOutcome::miss;
    double requests = 0;
    double mean_us = -1;  // -1: absent
  };
  std::vector<Outcome> served_by;
  struct Update {
    std::string to_version;
    double live_unix_ms = -1;  // -1: never live (null)
    std::uint64_t stale_served = 0, stalled = 0;
    double stall_ms = 0;
  };
  std::vector<Update> updates;
};

enum class SummaryCheck {
  complete,  // requests, throughput and every statistic of every stage and the total (diff)
  partial,   // what is there (simulate --costs, the replica table)
};

// `path`: a summary.json, or the --out folder holding one. Throws
// Error(bad_input) naming the file and what was expected.
SavedRun read_saved_run(const std::string& path, SummaryCheck check = SummaryCheck::complete);

// One row of a requests.csv.
struct RequestRow {
  std::uint64_t line = 0;
  bool ok = false;
  // The "cache" column: none without one, nullopt for text that names no outcome.
  std::optional<CacheOutcome> cache = CacheOutcome::none;
  std::array<double, kStageCount + 1> us{};  // stage µs, then total_us; an empty cell (n/a) or no column: 0
  // Thread CPU µs (<stage>_cpu_us, then cpu_us), the same way; has_cpu: cpu_us has a value.
  std::array<double, kStageCount + 1> cpu_us{};
  bool has_cpu = false;
  // The parts asked for (read_requests_csv's `parts`), wall then CPU µs, the same way.
  std::vector<double> part_us, part_cpu_us;
};
// Reads a requests.csv row by row, columns found by name. The header must
// name total_us, ok and every column in `required`; `parts` ("preprocess.resize")
// are read from PART_us and PART_cpu_us when present. Throws Error(bad_input)
// naming FILE:LINE.
void read_requests_csv(const std::string& path, const std::vector<std::string>& required,
                       const std::function<void(const RequestRow&)>& row, const std::vector<std::string>& parts = {});

}  // namespace inferprof::report
