#pragma once
// The drivers of run_replay (the lockstep one is in engine.hpp): what feeds a
// replay's requests to the serve step, on which threads, and how a start gate,
// an interrupt and a failure end it. No libtorch here: unit tests drive them
// through a stand-in RequestServer.
//
//   drive_threaded  N workers, closed or open loop; a reader thread parses the
//                   trace into a queue, a collector thread aggregates batches
//   drive_inline    closed loop, one worker, no other thread: the worker reads
//                   a batch of requests, serves them, then aggregates them
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <random>
#include <string>

#include "inferprof/report.hpp"
#include "inferprof/run_config.hpp"
#include "inferprof/timing.hpp"
#include "inferprof/trace.hpp"
#include "replay/engine.hpp"

namespace inferprof::detail {

// One item of the trace as a driver takes it: a request to serve, or a model
// update to announce when the replay reaches it.
struct Job {
  bool event = false;   // a model update
  std::string version;  // (event) the version it publishes
  TraceRequest request;
  std::uint64_t line = 0;
  std::uint64_t seq = 0;
  Nanos due = 0;  // open loop: when it arrives; closed loop: 0 (arrives when taken)
};

// The trace as jobs: the records read before the replay first, then the
// reader's; this replica's share of the requests (every event); open-loop due
// times from ts_ms; model_update events of the served model checked and handed
// to `read_ahead` (the version, and when to start fetching it: 0 now), other
// events, or all without `read_ahead` (one model version), counted as
// ignored. Throws Error(bad_input) naming the line.
class JobFeed {
 public:
  struct Options {
    std::string trace_path;
    bool open_loop = false;
    double speed = 1.0;
    double poisson_rps = 0;   // > 0: Poisson arrivals at this rate instead of ts_ms
    std::uint64_t limit = 0;  // requests; 0: all
    int replica_index = -1, replica_count = 0;
    Split split = Split::round_robin;
    double preload_lead_ms = 1000;
    std::uint64_t trace_bytes = 0;  // the file's size, for the estimate of the total
  };
  using ReadAhead = std::function<void(const std::string& version, Nanos not_before)>;
  JobFeed(Options options, TraceReader& reader, std::deque<TraceRecord> early, ReadAhead read_ahead,
          std::string model_name, ReplayCounters* counters = nullptr);
  // Open loop: due times count from here (set before the first next()).
  void set_epoch(Nanos epoch) { epoch_ = epoch; }
  // The next job; false at the end of the trace or the limit.
  bool next(Job& job);
  // next() returned false: every request of the trace (to the limit) was handed out.
  bool exhausted() const { return exhausted_; }
  std::uint64_t requests() const { return seq_; }
  std::uint64_t ignored_events() const { return ignored_events_; }

 private:
  bool next_record();
  Options options_;
  TraceReader& reader_;
  std::deque<TraceRecord> early_;
  ReadAhead read_ahead_;
  std::string model_name_;
  ReplayCounters* counters_;
  TraceRecord rec_;
  Nanos epoch_ = 0;
  std::uint64_t seq_ = 0, nth_ = 0, ignored_events_ = 0;
  std::optional<double> t0_;
  Nanos last_due_ = 0;
  // --rate: the Poisson clock, advanced once per request of the trace (every
  // replica's share included, so that the replicas together offer the rate).
  std::mt19937_64 arrivals_{kArrivalSeed};
  double poisson_ns_ = 0;
  std::uint64_t poisson_requests_ = 0;
  static constexpr std::uint64_t kArrivalSeed = 0x1f2e3d4c5b6a7988;
  bool exhausted_ = false;
};

// What every driver serves requests through, and where records go.
struct DriveParts {
  RequestServer& server;
  const CacheSet* caches = nullptr;
  ModelUpdates* updates = nullptr;  // null: one model version
  Verifier* verifier = nullptr;
  SkippedRequests* skipped = nullptr;          // --skip-invalid at serve time; null: a bad input fails the replay
  std::atomic<std::uint64_t>* done = nullptr;  // requests served so far (the progress line)
  // A model update event reached its turn (announce it, or publish it to the replicas).
  std::function<void(const std::string& version)> on_event;
};

// Before the replay: every worker serves `request` `times` on its own thread
// (libtorch keeps per-thread state), never measured; `each` hears worker 0's.
struct WarmUpPlan {
  const TraceRequest* request = nullptr;
  int times = 0;
  std::function<void(int, double)> each;
};
// After the warm-up, before the first request: what the gate says.
struct GateOpen {
  Nanos epoch = 0;       // the replay starts for every worker at this instant
  CpuSampling cpu;       // which requests read the CPU clock
  Collector* collector;  // where the records go
};
// Called once every worker is warm, with worker 0's fastest warm-up requests
// (what CPU sampling is calibrated from).
using Gate = std::function<GateOpen(const WarmUpFastest& warmup)>;

struct DriveResult {
  Nanos end = 0;           // when the last request finished
  bool cut_short = false;  // an interrupt (lifecycle) stopped releasing requests
};

// N workers (closed loop: each takes the next job when done; open loop: each
// waits for the job's due time). A first interrupt releases no more requests;
// those in flight finish and are aggregated. Throws the first failure, after
// every thread has stopped.
DriveResult drive_threaded(DriveParts& parts, JobFeed& feed, int workers, const WarmUpPlan& warmup, const Gate& gate);

// Closed loop, one worker, on the calling thread: a batch of jobs read, then
// served, then aggregated, so the worker pays no queue or thread hand-off and
// nothing else runs beside it. An interrupt stops it between requests.
DriveResult drive_inline(DriveParts& parts, JobFeed& feed, const WarmUpPlan& warmup, const Gate& gate);

}  // namespace inferprof::detail
