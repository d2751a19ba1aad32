#pragma once
// A saved run read back: the summary.json a run wrote and the requests.csv
// beside it. The one reader of these files; diff, simulate --costs and the
// replica parent all read runs through it.
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inferprof/report.hpp"

namespace inferprof::report {

inline constexpr std::string_view kSummarySchema = "inferprof.summary/1";

// What a saved run may hold: it is read as input, never trusted
// (docs/reports.md, "Reading runs back"). Past a bound is bad input (exit 2).
inline constexpr std::uint64_t kMaxSummaryBytes = std::uint64_t{64} << 20;  // summary.json: 64 MiB
// A µs figure (a requests.csv cell, a summary's mean or percentile): 1e12 µs,
// about 11.6 days. Non-negative, but for overhead_us (the rest of a request
// after its stages: a few ns below 0 when they overlap) down to -1e12.
inline constexpr double kMaxSavedMicros = 1e12;
inline constexpr std::string_view kMaxSavedMicrosText = "1e12 (about 11.6 days)";
// Any other number of summary.json (a count, bytes, ms, a rate): 1e15.
inline constexpr double kMaxSummaryNumber = 1e15;
// A replica group's size, and a run's workers, threads and cores (a requests.csv
// row's worker is below it): 65,536.
inline constexpr int kMaxSavedReplicas = 65536;
inline constexpr int kMaxSavedWorkers = 65536;
// A batch: run --max-batch's own cap (kMaxBatch, inferprof/run_config.hpp).
inline constexpr int kMaxSavedBatch = 4096;
// The preprocess stage's ops ("stages"."preprocess"."ops"): each becomes a
// column pair and two histograms (~130 KB) of a merge, so their number is
// bounded too: 256, far past a profile's chain.
inline constexpr std::size_t kMaxSavedParts = 256;

struct SavedRun {
  std::string summary_path;
  std::string csv_path;  // empty: no requests.csv beside summary.json
  // "run": fields added after the first release of the schema read as "" or 0 when absent.
  std::string model_hash, trace_hash, model_path, trace_path, hostname, cpu_model, libtorch_version, device,
      profile_name, mode, started_at;
  int cpu_cores = 0, threads = 0, concurrency = 0;
  std::uint64_t limit = 0;
  SpeedProbe speed_before, speed_after;  // "run"."speed_probe"; not measured in older summaries
  // What merge carries into the merged report's "run" (as above: "" or 0 when absent).
  std::string tool_version, model_version, model_sha256, model_arch, profile_source, driver, interrupted_by;
  std::int64_t model_parameters = 0, model_bytes = 0;
  std::uint64_t trace_bytes = 0;
  double speed = 1, poisson_rps = 0, batch_delay_us = 0, load_ms = 0, wall_s = 0, epoch_unix_ms = 0;
  int max_batch = 1;
  bool copies_applicable = false;
  RunInfo::Replica replica;  // "run"."replica": index -1 when absent (not a replica)
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
  // The columns merge needs to rebuild the record (absent: 0 or "").
  std::uint64_t id = 0, trace_line = 0, worker = 0, batch = 0, image_bytes = 0, image_pixels = 0;
  double arrival_us = 0, start_us = 0;
  std::string key, error, model_version;
};
// Reads a requests.csv row by row, columns found by name, and returns how
// many rows it read. The header must name total_us, ok and every column in
// `required`; `parts` ("preprocess.resize") are read from PART_us and
// PART_cpu_us when present. The file must be a regular file, each record
// under kMaxCsvRecordBytes, each µs cell a number from 0 to kMaxSavedMicros
// (overhead_us from -kMaxSavedMicros), worker below kMaxSavedWorkers and batch
// at most kMaxSavedBatch. Throws Error(bad_input) naming FILE:LINE (and the
// column).
std::uint64_t read_requests_csv(const std::string& path, const std::vector<std::string>& required,
                                const std::function<void(const RequestRow&)>& row,
                                const std::vector<std::string>& parts = {});

// Throws Error(bad_input) naming both files and both numbers unless the
// requests.csv beside `run` held as many rows as its summary.json says
// requests (`rows`: what read_requests_csv returned).
void check_request_rows(const SavedRun& run, std::uint64_t rows);

}  // namespace inferprof::report
