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

}  // namespace

DriveResult drive_threaded(DriveParts& parts, JobFeed& feed, int concurrency, const WarmUpPlan& warmup,
                           const Gate& gate) {
  FailureLatch failure;
  const std::size_t chunk_size = concurrency == 1 ? kChunk : 1;
  const std::size_t queued_chunks =
      concurrency == 1 ? kQueuedJobs / kChunk : 256 * static_cast<std::size_t>(concurrency);
  BoundedQueue<Chunk> jobs(queued_chunks);
  BoundedQueue<Chunk> free_chunks(queued_chunks + static_cast<std::size_t>(concurrency) + 1);
  BoundedQueue<Batch> to_collector(64, kWakeBatches);
  BoundedQueue<Batch> recycled(64);
  auto abort_all = [&] {
    jobs.abort();
    to_collector.abort();
  };
  // A first SIGINT/SIGTERM releases no more requests: the queued ones are
  // dropped, sleeping workers wake (wait_until), the ones in flight finish and
  // reach the collector, which is never aborted for it.
  std::atomic<bool> cut_short{false};
  std::optional<lifecycle::OnInterrupt> stop_hook;
  stop_hook.emplace([&] {
    cut_short = true;
    jobs.abort();
  });

  // Start gate: every worker warms up on its own thread (thread-local state in
  // libtorch is per thread), then waits; the replay starts for all at `epoch`.
  std::mutex gate_mutex;
  std::condition_variable gate_cv;
  int warmed = 0;
  bool gate_open = false;
  GateOpen opened;
  WarmUpFastest fastest_warmup;
  std::vector<std::thread> workers;
  std::thread producer, collector_thread;
  auto open_gate = [&] {
    {
      std::lock_guard<std::mutex> lock(gate_mutex);
      gate_open = true;
    }
    gate_cv.notify_all();
  };
  // A thread that cannot start (a limit on threads or memory under
  // --concurrency 5000) fails the run with one line, after the threads
  // already running have stopped: a joinable std::thread must never be destroyed.
  auto cannot_start = [&](const std::system_error& e, const std::string& what) {
    failure.set(std::current_exception());
    abort_all();
    open_gate();
    for (auto& t : workers)
      t.join();
    if (producer.joinable()) producer.join();
    if (collector_thread.joinable()) collector_thread.join();
    return runtime_failure(
        fmt::format("cannot start {}: {} (lower --concurrency, or raise the limit on threads "
                    "and memory)",
                    what, e.code().message()));
  };
  for (int w = 0; w < concurrency; ++w) {
    auto work = [&, w] {
      try {
        {
          warm_up(
              parts.server, *warmup.request, warmup.times, [&] { return failure.failed() || lifecycle::interrupted(); },
              w == 0 ? warmup.each : nullptr,
              w == 0 ? &fastest_warmup : nullptr);  // worker 0's calibrates CPU sampling
          std::unique_lock<std::mutex> lock(gate_mutex);
          ++warmed;
          gate_cv.notify_all();
          gate_cv.wait(lock, [&] { return gate_open; });
        }
        if (failure.failed() || !wait_until(opened.epoch)) return;
        const CpuSampling cpu = opened.cpu;
        Batch batch(kBatch);
        std::size_t used = 0;
        Chunk chunk;
        bool stop = false;
        while (!stop && jobs.pop(chunk)) {
          for (std::size_t i = 0; i < chunk->size; ++i) {
            // What abort() drops from the queue, the rest of a taken chunk is too.
            if (cut_short.load(std::memory_order_relaxed) || failure.failed()) {
              stop = true;
              break;
            }
            const Job& job = chunk->jobs[i];
            if (job.due != 0 && !wait_until(job.due)) {  // interrupted before it arrived: never released
              stop = true;
              break;
            }
            if (job.event) {
              parts.on_event(job.version);
              continue;
            }
            try {
              ServeJob step{&job.request, job.seq, job.line, job.due, static_cast<std::uint32_t>(w)};
              step.cpu = cpu.wants(job.seq);
              serve_step(parts.server, parts.caches, parts.updates, parts.verifier, step, batch[used]);
            } catch (const Error& e) {
              if (parts.skipped && parts.skipped->absorb(e)) continue;
              throw;
            }
            if (parts.done) parts.done->fetch_add(1, std::memory_order_relaxed);
            if (++used == kBatch) {
              if (!to_collector.push(std::move(batch))) return;
              if (!recycled.try_pop(batch)) batch = Batch(kBatch);
              used = 0;
            }
          }
          free_chunks.try_push(std::move(chunk));
        }
        batch.resize(used);
        if (used > 0) to_collector.push(std::move(batch));
      } catch (...) {
        failure.set(std::current_exception());
        abort_all();
        std::lock_guard<std::mutex> lock(gate_mutex);
        ++warmed;
        gate_cv.notify_all();
      }
    };
    try {
      workers.emplace_back(work);
    } catch (const std::system_error& e) {
      throw cannot_start(e, fmt::format("replay worker {} of {}", w + 1, concurrency));
    }
  }

  {
    std::unique_lock<std::mutex> lock(gate_mutex);
    gate_cv.wait(lock, [&] { return warmed == concurrency; });
  }
  if (!failure.failed()) {
    try {
      opened = gate(fastest_warmup);
      feed.set_epoch(opened.epoch);
    } catch (...) {
      failure.set(std::current_exception());
      abort_all();
    }
  }

  auto produce = [&] {
    try {
      for (bool more = true; more && !failure.failed();) {
        Chunk chunk;
        if (!free_chunks.try_pop(chunk)) {
          chunk = std::make_unique<JobChunk>();
          chunk->jobs.resize(chunk_size);
        }
        chunk->size = 0;
        while (chunk->size < chunk_size && (more = feed.next(chunk->jobs[chunk->size])))
          ++chunk->size;
        if (chunk->size > 0 && !jobs.push(std::move(chunk))) break;
      }
      jobs.close();
    } catch (...) {
      failure.set(std::current_exception());
      abort_all();
    }
  };
  auto collect = [&] {
    try {
      Batch batch;
      while (to_collector.pop(batch)) {
        for (const auto& r : batch)
          opened.collector->add(r);
        if (batch.size() == kBatch) recycled.try_push(std::move(batch));
      }
    } catch (...) {
      failure.set(std::current_exception());
      abort_all();
    }
  };
  try {
    producer = std::thread(produce);
    collector_thread = std::thread(collect);
  } catch (const std::system_error& e) {
    throw cannot_start(e, "the trace reader and the collector");
  }
  open_gate();

  producer.join();
  for (auto& t : workers)
    t.join();
  DriveResult result;
  result.end = now_ns();
  to_collector.close();
  collector_thread.join();
  stop_hook.reset();  // an interrupt from here on cuts nothing short
  failure.rethrow();
  result.cut_short = cut_short;
  return result;
}

}  // namespace inferprof::detail
