// The trace as jobs for the drivers (driver.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "inferprof/error.hpp"
#include "inferprof/replay.hpp"
#include "inferprof/store.hpp"
#include "replay/driver.hpp"

namespace inferprof::detail {

namespace {
// Open loop: how long after the start a record at `ts_ms` is due. A double past
// the int64 range would make the cast undefined (and the replay wait forever).
Nanos due_after(double ts_ms, double t0, double speed, const std::string& trace, std::uint64_t line) {
  const double ns = (ts_ms - t0) * 1e6 / speed;
  if (!(std::fabs(ns) < 9.2e18))
    throw bad_input(
        at_line(trace, line,
                fmt::format("'ts_ms' {} at --speed {} is more than 290 years from the first request", ts_ms, speed)));
  return static_cast<Nanos>(ns);
}
}  // namespace

JobFeed::JobFeed(Options options, TraceReader& reader, std::deque<TraceRecord> early, ReadAhead read_ahead,
                 std::string model_name, ReplayCounters* counters)
    : options_(std::move(options)),
      reader_(reader),
      early_(std::move(early)),
      read_ahead_(std::move(read_ahead)),
      model_name_(std::move(model_name)),
      counters_(counters) {}

bool JobFeed::next_record() {
  if (early_.empty()) return reader_.next(rec_);
  rec_ = std::move(early_.front());
  early_.pop_front();
  return true;
}

bool JobFeed::next(Job& job) {
  const Options& o = options_;
  while ((o.limit == 0 || seq_ < o.limit) && next_record()) {
    if (rec_.kind == TraceRecord::Kind::event) {
      const TraceEvent& e = rec_.event;
      if (!read_ahead_ || e.type != "model_update" || e.model != model_name_) {
        ++ignored_events_;
        continue;
      }
      job = Job{};
      job.event = true;
      job.version = e.version;
      job.line = rec_.line;
      // Open loop: it happens at its ts_ms (or, without one, right after the request before it).
      if (o.open_loop) {
        if (e.ts_ms && !t0_) t0_ = *e.ts_ms;
        job.due = e.ts_ms && o.poisson_rps <= 0 ? epoch_ + due_after(*e.ts_ms, *t0_, o.speed, o.trace_path, rec_.line)
                                                : last_due_;
      }
      // A version a store could hold ("v2"): an empty or path-like one is bad input here.
      parse_model_ref(e.model + "@" + e.version, fmt::format("{}:{}: model_update", o.trace_path, rec_.line));
      read_ahead_(e.version, job.due ? job.due - static_cast<Nanos>(o.preload_lead_ms * 1e6) : 0);
      return true;
    }
    // --rate: this request's arrival on the Poisson clock (the first at 0).
    Nanos poisson_due = 0;
    if (o.open_loop && o.poisson_rps > 0) {
      if (poisson_requests_++ > 0) poisson_ns_ += std::exponential_distribution<double>(o.poisson_rps)(arrivals_) * 1e9;
      poisson_due = static_cast<Nanos>(poisson_ns_);
    }
    if (o.replica_count > 1 &&
        shard_of(o.split == Split::hash, rec_.request.key, nth_++, o.replica_count) != o.replica_index)
      continue;
    job.event = false;
    job.version.clear();
    job.line = rec_.line;
    job.seq = seq_++;
    job.due = 0;
    if (o.open_loop && o.poisson_rps > 0) {
      job.due = epoch_ + poisson_due;
      last_due_ = job.due;
    } else if (o.open_loop) {
      if (!rec_.request.ts_ms)
        throw bad_input(
            at_line(o.trace_path, rec_.line, "open-loop replay needs 'ts_ms' on every request (this one has none)"));
      if (!t0_) t0_ = *rec_.request.ts_ms;
      job.due = epoch_ + due_after(*rec_.request.ts_ms, *t0_, o.speed, o.trace_path, rec_.line);
      last_due_ = job.due;
    }
    // Swapped, not moved: the reader refills the job's old strings in place,
    // so a job that is reused (the drivers' chunks and batches) costs no allocation.
    std::swap(job.request, rec_.request);
    // The total from how far into the file these requests reached (the
    // progress line's "of ~N"); exact once the reader reaches the end.
    if (counters_ && (seq_ & 1023) == 0 && reader_.bytes() > 0 && o.trace_bytes > 0) {
      auto estimate = static_cast<std::uint64_t>(static_cast<double>(seq_) * static_cast<double>(o.trace_bytes) /
                                                 static_cast<double>(reader_.bytes()));
      if (o.limit > 0) estimate = std::min<std::uint64_t>(estimate, o.limit);
      counters_->estimate = std::max(estimate, seq_);
    }
    return true;
  }
  exhausted_ = true;
  if (counters_) counters_->total = seq_;
  return false;
}

}  // namespace inferprof::detail
