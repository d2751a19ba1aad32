// From CUPTI activity records to per-request stage times. Pure code: no CUDA
// types, compiled in every build and unit-tested with constructed records.
#include <algorithm>
#include <map>

#include "inferprof/gpu.hpp"

namespace inferprof::gpu {
namespace {

using Interval = std::pair<Nanos, Nanos>;
using Kind = Activity::Kind;

constexpr std::uint32_t stage_id(Stage s) {
  return static_cast<std::uint32_t>(s);
}

// Which stage a record counts in: the one its external id names, or for a
// record tagged with the request alone, the stage its kind belongs to.
std::uint32_t stage_for(const Activity& a) {
  const std::uint32_t s = stage_of(a.external);
  if (s == stage_id(Stage::h2d) || s == stage_id(Stage::compute) || s == stage_id(Stage::d2h)) return s;
  switch (a.kind) {
    case Kind::memcpy_h2d:
      return stage_id(Stage::h2d);
    case Kind::memcpy_d2h:
      return stage_id(Stage::d2h);
    default:
      return stage_id(Stage::compute);
  }
}

std::uint32_t memset_name() {
  static const std::uint32_t id = NameTable::global().intern("[memset]");
  return id;
}
std::uint32_t memcpy_name(Kind k) {
  static const std::uint32_t h2d = NameTable::global().intern("[memcpy HtoD]");
  static const std::uint32_t d2h = NameTable::global().intern("[memcpy DtoH]");
  static const std::uint32_t other = NameTable::global().intern("[memcpy DtoD]");
  return k == Kind::memcpy_h2d ? h2d : k == Kind::memcpy_d2h ? d2h : other;
}
std::uint32_t gpu_idle_name() {
  static const std::uint32_t id = NameTable::global().intern("gpu_idle");
  return id;
}

// Busy time of `items` split by name: each elementary interval of the union
// is shared equally by the activities running in it, so the parts sum to the
// union's length exactly (up to integer division, whose remainder goes to the
// first active name).
std::vector<std::pair<std::uint32_t, Nanos>> split_by_name(
    const std::vector<std::pair<Interval, std::uint32_t>>& items) {
  struct Edge {
    Nanos t;
    int delta;
    std::size_t item;
  };
  std::vector<Edge> edges;
  edges.reserve(items.size() * 2);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].first.second <= items[i].first.first) continue;
    edges.push_back({items[i].first.first, +1, i});
    edges.push_back({items[i].first.second, -1, i});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    return a.t != b.t ? a.t < b.t : a.delta < b.delta;  // ends before starts at the same instant
  });
  std::map<std::uint32_t, Nanos> by_name;
  std::vector<std::size_t> active;
  Nanos prev = 0;
  for (const Edge& e : edges) {
    if (!active.empty() && e.t > prev) {
      const Nanos len = e.t - prev;
      const auto n = static_cast<Nanos>(active.size());
      for (std::size_t k = 0; k < active.size(); ++k)
        by_name[items[active[k]].second] += len / n + (k == 0 ? len % n : 0);
    }
    prev = e.t;
    if (e.delta > 0) {
      active.push_back(e.item);
    } else {
      active.erase(std::find(active.begin(), active.end(), e.item));
    }
  }
  std::vector<std::pair<std::uint32_t, Nanos>> out(by_name.begin(), by_name.end());
  // Largest first: the flame graph and trace.json read better that way.
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

std::int32_t find_stage_span(const RequestRecord& r, Stage s) {
  for (std::size_t i = 0; i < r.spans.size(); ++i)
    if (r.spans[i].parent < 0 && r.spans[i].name == name_id(s)) return static_cast<std::int32_t>(i);
  return -1;
}

}  // namespace

Nanos union_length(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end());
  Nanos total = 0, cur_start = 0, cur_end = 0;
  bool open = false;
  for (const auto& [s, e] : intervals) {
    if (e <= s) continue;
    if (!open || s > cur_end) {
      if (open) total += cur_end - cur_start;
      cur_start = s;
      cur_end = e;
      open = true;
    } else {
      cur_end = std::max(cur_end, e);
    }
  }
  if (open) total += cur_end - cur_start;
  return total;
}

RequestGpu attribute(const std::vector<Activity>& records) {
  RequestGpu g;
  std::vector<Interval> h2d, d2h, all;
  std::vector<std::pair<Interval, std::uint32_t>> compute;
  bool any = false;
  Nanos first = 0, last = 0;
  for (const Activity& a : records) {
    if (a.kind == Kind::sync || a.end <= a.start) continue;
    const Interval iv{a.start, a.end};
    all.push_back(iv);
    first = any ? std::min(first, a.start) : a.start;
    last = any ? std::max(last, a.end) : a.end;
    any = true;
    if (a.kind == Kind::kernel) ++g.kernels;
    // The bytes and copy time feed the h2d/d2h GB/s, which divide by the
    // stage's time: a copy the model makes inside compute is neither.
    const std::uint32_t s = stage_for(a);
    if (s == stage_id(Stage::h2d)) {
      h2d.push_back(iv);
      if (a.kind == Kind::memcpy_h2d) {
        g.h2d_bytes += a.bytes;
        g.h2d_copy_ns += a.end - a.start;
      }
    } else if (s == stage_id(Stage::d2h)) {
      d2h.push_back(iv);
      if (a.kind == Kind::memcpy_d2h) {
        g.d2h_bytes += a.bytes;
        g.d2h_copy_ns += a.end - a.start;
      }
    } else {
      const std::uint32_t name = a.kind == Kind::kernel   ? a.name
                                 : a.kind == Kind::memset ? memset_name()
                                                          : memcpy_name(a.kind);
      compute.emplace_back(iv, name);
    }
  }
  if (!any) return g;
  g.first_start = first;
  g.h2d = union_length(std::move(h2d));
  g.d2h = union_length(std::move(d2h));
  g.compute_children = split_by_name(compute);
  for (const auto& [name, ns] : g.compute_children)
    g.compute += ns;
  g.idle = (last - first) - union_length(std::move(all));
  return g;
}

void apply(const RequestGpu& gpu, RequestRecord& r) {
  r.gpu.kernels = gpu.kernels;
  r.gpu.h2d_bytes = gpu.h2d_bytes;
  r.gpu.d2h_bytes = gpu.d2h_bytes;
  r.gpu.gpu_idle = gpu.idle;
  // The host spans measured how long the host waited; the stage is what the
  // GPU did. The difference lands in overhead when the record is finished.
  const auto set_stage = [&](Stage s, Nanos value) -> std::int32_t {
    std::int32_t i = find_stage_span(r, s);
    if (i < 0) {
      if (value == 0) return -1;
      return r.add(name_id(s), -1, gpu.first_start, value);
    }
    r.stage[static_cast<std::size_t>(s)] += value - r.spans[static_cast<std::size_t>(i)].dur;
    r.spans[static_cast<std::size_t>(i)].dur = value;
    return i;
  };
  set_stage(Stage::h2d, gpu.h2d);
  set_stage(Stage::d2h, gpu.d2h);
  const std::int32_t compute = set_stage(Stage::compute, gpu.compute);
  if (compute >= 0) {
    // Laid end to end from the stage's start, so trace viewers nest them.
    Nanos at = r.spans[static_cast<std::size_t>(compute)].start;
    for (const auto& [name, ns] : gpu.compute_children) {
      r.add(name, compute, at, ns);
      at += ns;
    }
  }
  if (gpu.idle > 0) {
    // An explicit overhead span holding gpu_idle; the collector counts the
    // rest of overhead beside it, so the folded stacks still sum to the total.
    const std::int32_t overhead = r.add(name_id(Stage::overhead), -1, gpu.first_start, gpu.idle);
    r.add(gpu_idle_name(), overhead, gpu.first_start, gpu.idle);
  }
}

void Router::add(const Activity& a) {
  const std::uint64_t token = token_of(a.external);
  if (a.external == 0 || taken_.count(token) != 0) {
    ++unattributed_;
    return;
  }
  by_token_[token].push_back(a);
  ++pending_;
}

std::vector<Activity> Router::take(std::uint64_t token) {
  std::vector<Activity> out;
  if (auto it = by_token_.find(token); it != by_token_.end()) {
    out = std::move(it->second);
    by_token_.erase(it);
    pending_ -= out.size();
  }
  taken_.insert(token);
  max_taken_ = std::max(max_taken_, token);
  // A record arrives within a flush of its request's end; tokens far behind
  // the newest need no remembering.
  constexpr std::uint64_t kRemember = 4096;
  if (taken_.size() > 2 * kRemember) {
    for (auto it = taken_.begin(); it != taken_.end();) {
      it = (*it + kRemember < max_taken_) ? taken_.erase(it) : std::next(it);
    }
  }
  return out;
}

void Router::drop_all() {
  unattributed_ += pending_;
  pending_ = 0;
  by_token_.clear();
}

}  // namespace inferprof::gpu
