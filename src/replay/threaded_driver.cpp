// drive_threaded (driver.hpp): N workers behind a start gate, a reader thread
// feeding them through a bounded queue, a collector thread aggregating their
// records in batches.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "inferprof/error.hpp"
#include "inferprof/lifecycle.hpp"
#include "replay/bounded_queue.hpp"
#include "replay/driver.hpp"

namespace inferprof::detail {

namespace {

// Records travel to the collector thread in batches, so a worker pays one
// queue operation per kBatch requests and none of the aggregation work. The
// collector is woken only once kWakeBatches batches wait: one wake per 512
// requests, not 64 (bounded_queue.hpp says what a wake costs the worker).
constexpr std::size_t kBatch = 64;
constexpr std::size_t kWakeBatches = 8;
using Batch = std::vector<RequestRecord>;

// Jobs travel to the workers in chunks that go back to the reader once
// served: a job's strings are then reused, not allocated on the reader's
// thread and freed on the worker's, and one worker pays one queue operation
// per kChunk requests. Several workers take chunks of one job, so that a
// request goes to whichever worker is free (open loop: when it is due).
// A single worker has kQueuedJobs queued ahead: the reader refills once half
// have been served, so it too is woken once per 512 requests.
constexpr std::size_t kChunk = 16;
constexpr std::size_t kQueuedJobs = 1024;
struct JobChunk {
  std::vector<Job> jobs;
  std::size_t size = 0;  // the jobs in use
};
using Chunk = std::unique_ptr<JobChunk>;

// Sleeps most of the way, then spins: nanosleep alone overshoots by tens of
// µs, which would show up as phantom queueing in open-loop replays. False
// when an interrupt came first: what it waited for is not released.
bool wait_until(Nanos due) {
  constexpr Nanos kSpin = 200'000;
  constexpr Nanos kSlice = 50'000'000;  // how soon a sleeping worker sees an interrupt
  for (Nanos now = now_ns(); due - now > kSpin; now = now_ns()) {
    if (lifecycle::interrupted()) return false;
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min(kSlice, due - now - kSpin)));
  }
  while (now_ns() < due) {
  }
  return true;
}

// First error wins; everything else stops.
class FailureLatch {
 public:
  void set(std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error_) error_ = e;
    failed_ = true;
  }
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  void rethrow() {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};
};

// One threaded drive: the workers, the producer (the trace reader) and the
// collector thread around the queues between them, behind the warm-up gate.
class ThreadedDrive {
 public:
  ThreadedDrive(DriveParts& parts, JobFeed& feed, int concurrency, const WarmUpPlan& warmup)
      : parts_(parts),
        feed_(feed),
        concurrency_(concurrency),
        warmup_(warmup),
        chunk_size_(concurrency == 1 ? kChunk : 1),
        queued_chunks_(concurrency == 1 ? kQueuedJobs / kChunk : 256 * static_cast<std::size_t>(concurrency)),
        jobs_(queued_chunks_),
        free_chunks_(queued_chunks_ + static_cast<std::size_t>(concurrency) + 1),
        to_collector_(64, kWakeBatches),
        recycled_(64) {}
  DriveResult run(const Gate& gate);

 private:
  void abort_all() {
    jobs_.abort();
    to_collector_.abort();
  }
  void open_gate();
  Error cannot_start(const std::system_error& e, const std::string& what);
  void start_workers();
  void work(int w);
  void warm_up_and_wait(int w);
  void serve_jobs(int w);
  bool serve_one(const Job& job, int w, const CpuSampling& cpu, RequestRecord& record);
  void pass_gate(const Gate& gate);
  void produce();
  void collect();

  DriveParts& parts_;
  JobFeed& feed_;
  const int concurrency_;
  const WarmUpPlan& warmup_;
  FailureLatch failure_;
  const std::size_t chunk_size_, queued_chunks_;
  BoundedQueue<Chunk> jobs_, free_chunks_;
  BoundedQueue<Batch> to_collector_, recycled_;
  // A first SIGINT/SIGTERM releases no more requests: the queued ones are
  // dropped, sleeping workers wake (wait_until), the ones in flight finish and
  // reach the collector, which is never aborted for it.
  std::atomic<bool> cut_short_{false};
  std::optional<lifecycle::OnInterrupt> stop_hook_;
  // Start gate: every worker warms up on its own thread (thread-local state in
  // libtorch is per thread), then waits; the replay starts for all at `epoch`.
  std::mutex gate_mutex_;
  std::condition_variable gate_cv_;
  int warmed_ = 0;
  bool gate_open_ = false;
  GateOpen opened_;
  WarmUpFastest fastest_warmup_;
  std::vector<std::thread> workers_;
  std::thread producer_, collector_thread_;
};

void ThreadedDrive::open_gate() {
  {
    std::lock_guard<std::mutex> lock(gate_mutex_);
    gate_open_ = true;
  }
  gate_cv_.notify_all();
}

// A thread that cannot start (a limit on threads or memory under
// --concurrency 5000) fails the run with one line, after the threads
// already running have stopped: a joinable std::thread must never be destroyed.
Error ThreadedDrive::cannot_start(const std::system_error& e, const std::string& what) {
  failure_.set(std::current_exception());
  abort_all();
  open_gate();
  for (auto& t : workers_)
    t.join();
  if (producer_.joinable()) producer_.join();
  if (collector_thread_.joinable()) collector_thread_.join();
  return runtime_failure(
      fmt::format("cannot start {}: {} (lower --concurrency, or raise the limit on threads "
                  "and memory)",
                  what, e.code().message()));
}

void ThreadedDrive::start_workers() {
  for (int w = 0; w < concurrency_; ++w) {
    try {
      workers_.emplace_back([this, w] { work(w); });
    } catch (const std::system_error& e) {
      throw cannot_start(e, fmt::format("replay worker {} of {}", w + 1, concurrency_));
    }
  }
}

void ThreadedDrive::work(int w) {
  try {
    warm_up_and_wait(w);
    if (failure_.failed() || !wait_until(opened_.epoch)) return;
    serve_jobs(w);
  } catch (...) {
    failure_.set(std::current_exception());
    abort_all();
    std::lock_guard<std::mutex> lock(gate_mutex_);
    ++warmed_;
    gate_cv_.notify_all();
  }
}

void ThreadedDrive::warm_up_and_wait(int w) {
  warm_up(
      parts_.server, *warmup_.request, warmup_.times, [&] { return failure_.failed() || lifecycle::interrupted(); },
      w == 0 ? warmup_.each : nullptr,
      w == 0 ? &fastest_warmup_ : nullptr);  // worker 0's calibrates CPU sampling
  std::unique_lock<std::mutex> lock(gate_mutex_);
  ++warmed_;
  gate_cv_.notify_all();
  gate_cv_.wait(lock, [&] { return gate_open_; });
}

void ThreadedDrive::serve_jobs(int w) {
  const CpuSampling cpu = opened_.cpu;
  Batch batch(kBatch);
  std::size_t used = 0;
  Chunk chunk;
  bool stop = false;
  while (!stop && jobs_.pop(chunk)) {
    for (std::size_t i = 0; i < chunk->size; ++i) {
      // What abort() drops from the queue, the rest of a taken chunk is too.
      if (cut_short_.load(std::memory_order_relaxed) || failure_.failed()) {
        stop = true;
        break;
      }
      const Job& job = chunk->jobs[i];
      if (job.due != 0 && !wait_until(job.due)) {  // interrupted before it arrived: never released
        stop = true;
        break;
      }
      if (!serve_one(job, w, cpu, batch[used])) continue;
      if (++used == kBatch) {
        if (!to_collector_.push(std::move(batch))) return;
        if (!recycled_.try_pop(batch)) batch = Batch(kBatch);
        used = 0;
      }
    }
    free_chunks_.try_push(std::move(chunk));
  }
  batch.resize(used);
  if (used > 0) to_collector_.push(std::move(batch));
}

// False when the job left no record: a model update's event, or a request skipped as invalid.
bool ThreadedDrive::serve_one(const Job& job, int w, const CpuSampling& cpu, RequestRecord& record) {
  if (job.event) {
    parts_.on_event(job.version);
    return false;
  }
  try {
    ServeJob step{&job.request, job.seq, job.line, job.due, static_cast<std::uint32_t>(w)};
    step.cpu = cpu.wants(job.seq);
    serve_step(parts_.server, parts_.caches, parts_.updates, parts_.verifier, step, record);
  } catch (const Error& e) {
    if (parts_.skipped && parts_.skipped->absorb(e)) return false;
    throw;
  }
  if (parts_.done) parts_.done->fetch_add(1, std::memory_order_relaxed);
  return true;
}

// Every worker warm (or failed): the gate's owner starts the clock.
void ThreadedDrive::pass_gate(const Gate& gate) {
  {
    std::unique_lock<std::mutex> lock(gate_mutex_);
    gate_cv_.wait(lock, [&] { return warmed_ == concurrency_; });
  }
  if (failure_.failed()) return;
  try {
    opened_ = gate(fastest_warmup_);
    feed_.set_epoch(opened_.epoch);
  } catch (...) {
    failure_.set(std::current_exception());
    abort_all();
  }
}

void ThreadedDrive::produce() {
  try {
    for (bool more = true; more && !failure_.failed();) {
      Chunk chunk;
      if (!free_chunks_.try_pop(chunk)) {
        chunk = std::make_unique<JobChunk>();
        chunk->jobs.resize(chunk_size_);
      }
      chunk->size = 0;
      while (chunk->size < chunk_size_ && (more = feed_.next(chunk->jobs[chunk->size])))
        ++chunk->size;
      if (chunk->size > 0 && !jobs_.push(std::move(chunk))) break;
    }
    jobs_.close();
  } catch (...) {
    failure_.set(std::current_exception());
    abort_all();
  }
}

void ThreadedDrive::collect() {
  try {
    Batch batch;
    while (to_collector_.pop(batch)) {
      for (const auto& r : batch)
        opened_.collector->add(r);
      if (batch.size() == kBatch) recycled_.try_push(std::move(batch));
    }
  } catch (...) {
    failure_.set(std::current_exception());
    abort_all();
  }
}

DriveResult ThreadedDrive::run(const Gate& gate) {
  stop_hook_.emplace([this] {
    cut_short_ = true;
    jobs_.abort();
  });
  start_workers();
  pass_gate(gate);
  try {
    producer_ = std::thread([this] { produce(); });
    collector_thread_ = std::thread([this] { collect(); });
  } catch (const std::system_error& e) {
    throw cannot_start(e, "the trace reader and the collector");
  }
  open_gate();

  producer_.join();
  for (auto& t : workers_)
    t.join();
  DriveResult result;
  result.end = now_ns();
  to_collector_.close();
  collector_thread_.join();
  stop_hook_.reset();  // an interrupt from here on cuts nothing short
  failure_.rethrow();
  result.cut_short = cut_short_;
  return result;
}

}  // namespace

DriveResult drive_threaded(DriveParts& parts, JobFeed& feed, int concurrency, const WarmUpPlan& warmup,
                           const Gate& gate) {
  return ThreadedDrive(parts, feed, concurrency, warmup).run(gate);
}

}  // namespace inferprof::detail
