// drive_inline (driver.hpp): closed loop, one worker, no other thread. The
// worker reads a batch of jobs, serves them, then hands their records to the
// collector: what a request's measured interval contains is the same as with
// drive_threaded, and between requests nothing competes with it for a core.
#include <vector>

#include "inferprof/error.hpp"
#include "inferprof/lifecycle.hpp"
#include "replay/driver.hpp"

namespace inferprof::detail {

namespace {
// Small enough that a batch's jobs and records stay in cache, large enough
// that switching between reading, serving and aggregating is rare.
constexpr std::size_t kBatch = 64;
}  // namespace

DriveResult drive_inline(DriveParts& parts, JobFeed& feed, const WarmUpPlan& warmup, const Gate& gate) {
  WarmUpFastest fastest_warmup;
  warm_up(
      parts.server, *warmup.request, warmup.times, [] { return lifecycle::interrupted(); }, warmup.each,
      &fastest_warmup);
  const GateOpen opened = gate(fastest_warmup);
  feed.set_epoch(opened.epoch);
  while (now_ns() < opened.epoch) {
  }
  std::vector<Job> jobs(kBatch);
  std::vector<RequestRecord> records(kBatch);
  DriveResult result;
  for (bool more = true; more;) {
    std::size_t taken = 0;
    while (taken < kBatch && (more = feed.next(jobs[taken])))
      ++taken;
    std::size_t served = 0;
    for (std::size_t i = 0; i < taken; ++i) {
      // A first interrupt releases no more requests; the ones served are kept.
      if (lifecycle::interrupted()) {
        result.cut_short = true;
        more = false;
        break;
      }
      const Job& job = jobs[i];
      if (job.event) {
        parts.on_event(job.version);
        continue;
      }
      try {
        ServeJob step{&job.request, job.seq, job.line, 0, 0};
        step.cpu = opened.cpu.wants(job.seq);
        serve_step(parts.server, parts.caches, parts.updates, parts.verifier, step, records[served]);
      } catch (const Error& e) {
        if (parts.skipped && parts.skipped->absorb(e)) continue;
        throw;
      }
      ++served;
      if (parts.done) parts.done->fetch_add(1, std::memory_order_relaxed);
    }
    result.end = now_ns();
    for (std::size_t i = 0; i < served; ++i)
      opened.collector->add(records[i]);
  }
  return result;
}

}  // namespace inferprof::detail
