#include <algorithm>
#include <cassert>

#include "inferprof/timing.hpp"

namespace inferprof {

NameTable& NameTable::global() {
  static NameTable table;
  return table;
}

NameTable::NameTable() {
  for (auto name : kStageNames)
    intern(name);
  intern("request");
}

std::uint32_t NameTable::intern(std::string_view name) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = ids_.find(name); it != ids_.end()) return it->second;
  names_.emplace_back(name);
  auto id = static_cast<std::uint32_t>(names_.size() - 1);
  ids_.emplace(names_.back(), id);
  return id;
}

std::string_view NameTable::name(std::uint32_t id) const {
  // Ids are only handed out after their string is in the deque, and deque
  // elements never move; the lock guards against a concurrent push_back
  // reallocating the deque's block map while we index it.
  std::lock_guard<std::mutex> lock(mutex_);
  return names_.at(id);
}

std::size_t NameTable::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return names_.size();
}

void RequestRecord::reset() {
  seq = id = line = 0;
  key.clear();
  worker = 0;
  arrival = start = end = 0;
  stage.fill(0);
  cpu_start = cpu_end = 0;
  stage_cpu.fill(0);
  std::fill(preprocess_op.begin(), preprocess_op.end(), 0);
  std::fill(preprocess_op_cpu.begin(), preprocess_op_cpu.end(), 0);
  image_bytes = image_pixels = 0;
  batch = 0;
  spans.clear();
  cache_outcome = CacheOutcome::none;
  model_version.clear();
  update = -1;
  update_pending = false;
  ok = true;
  error.clear();
  gpu = GpuRequestStats{};
}

namespace {
// A CPU clock read costs a system call (~0.5 µs), and stages run back to back:
// the read at one stage's close serves as the next stage's start (and the
// request's end) when less than kReuseNs of wall time lies between them, so
// at most that much CPU time moves from overhead into the next stage.
constexpr Nanos kReuseNs = 1000;
// Each CPU read sits between two wall clock reads. Time the thread is charged
// for without running our code -- interrupts, a hypervisor pausing the vCPU
// (no steal accounting in the guest) -- lands on whichever side of the CPU read
// it happened, while the wall clock read beside it can only be on one side: on
// a loaded VM a 50-100 µs stall there moved that much CPU time from one stage
// into the next (CPU 83 µs in a 3 µs stage) in ~0.3% of requests. A read
// whose bracket is wider than kTightNs is taken again, so the boundary is
// known to within kTightNs and the stall stays inside one stage.
constexpr Nanos kTightNs = 5000;
constexpr int kTries = 3;
thread_local Nanos last_cpu = 0;       // the thread's last CPU clock read (a stage's close, a begin())
thread_local Nanos last_cpu_wall = 0;  // wall clock just after it

struct CpuRead {
  Nanos wall_before, cpu, wall_after;
};

CpuRead read_cpu(Nanos wall_before) noexcept {
  CpuRead r{wall_before, 0, 0};
  bool tight = false;
  for (int i = 0; i < kTries && !tight; ++i) {
    if (i > 0) r.wall_before = r.wall_after;
    r.cpu = thread_cpu_ns();
    r.wall_after = now_ns();
    tight = r.wall_after - r.wall_before <= kTightNs;
  }
  last_cpu = r.cpu;
  // Only a tight read may serve as the next stage's start: a read whose every
  // try stalled can lie anywhere in its bracket, and reusing it would give the
  // next stage CPU time from before that stage's wall clock start (one stage
  // in 66,000 requests, 14 µs past its wall, on a loaded CI runner).
  last_cpu_wall = tight ? r.wall_after : 0;
  return r;
}
}  // namespace

void RequestRecord::begin(bool cpu) noexcept {
  start = now_ns();
  if (!cpu) return;
  // The first stage usually opens right away: it starts from this read.
  cpu_start = read_cpu(start).cpu;
}

std::int32_t RequestRecord::open(std::uint32_t name, std::int32_t parent, bool cpu_too) {
  // The CPU clock is read inside the wall interval (or reused from just before it).
  Nanos start_ns = now_ns();
  Nanos cpu = -1;
  if ((parent < 0 || cpu_too) && cpu_start != 0) {
    if (last_cpu_wall != 0 && start_ns - last_cpu_wall < kReuseNs) {
      cpu = last_cpu;
    } else {
      const CpuRead r = read_cpu(start_ns);
      start_ns = r.wall_before;
      cpu = r.cpu;
    }
  }
  spans.push_back(Span{name, parent, start_ns, 0, cpu});
  return static_cast<std::int32_t>(spans.size() - 1);
}

void RequestRecord::close(std::int32_t index) noexcept {
  Span& s = spans[static_cast<std::size_t>(index)];
  // During open() the field holds the CPU clock at the start; it becomes the span's CPU time.
  if (s.cpu >= 0) {
    const CpuRead r = read_cpu(now_ns());
    s.cpu = r.cpu - s.cpu;
    s.dur = r.wall_after - s.start;
  } else {
    s.dur = now_ns() - s.start;
  }
  if (s.parent < 0 && s.name < kStageCount) {
    stage[s.name] += s.dur;
    if (s.cpu > 0) stage_cpu[s.name] += s.cpu;
  }
}

std::int32_t RequestRecord::add(std::uint32_t name, std::int32_t parent, Nanos start_ns, Nanos dur) {
  spans.push_back(Span{name, parent, start_ns, dur});
  if (parent < 0 && name < kStageCount) stage[name] += dur;
  return static_cast<std::int32_t>(spans.size() - 1);
}

void RequestRecord::finish() {
  if (cpu_start != 0 && cpu_end == 0) {
    // The CPU interval ends before `end`: the last stage's read if just now, else a read before the wall clock's.
    const Nanos wall = end == 0 ? now_ns() : end;
    if (end == 0 && last_cpu_wall != 0 && wall - last_cpu_wall < kReuseNs) {
      cpu_end = last_cpu;
      end = wall;
    } else {
      // A preset `end` lies before this read: bracket the read itself.
      const CpuRead r = read_cpu(end == 0 ? wall : now_ns());
      cpu_end = r.cpu;
      if (end == 0) end = r.wall_after;
    }
  }
  if (end == 0) end = now_ns();
  if (arrival == 0) arrival = start;
  const auto queue = static_cast<std::size_t>(Stage::queue);
  if (start > arrival && stage[queue] == 0) {
    // Parents must precede children; the queue span has none, so appending is fine.
    add(name_id(Stage::queue), -1, arrival, start - arrival);
  }
  Nanos explained = 0;
  for (std::size_t i = 0; i < kStageCount; ++i)
    if (i != static_cast<std::size_t>(Stage::overhead)) explained += stage[i];
  stage[static_cast<std::size_t>(Stage::overhead)] = total() - explained;
  if (cpu_start != 0) {
    Nanos cpu_explained = 0;
    for (std::size_t i = 0; i < kStageCount; ++i)
      if (i != static_cast<std::size_t>(Stage::overhead)) cpu_explained += stage_cpu[i];
    stage_cpu[static_cast<std::size_t>(Stage::overhead)] = std::max<Nanos>(0, cpu_total() - cpu_explained);
  }
}

}  // namespace inferprof
