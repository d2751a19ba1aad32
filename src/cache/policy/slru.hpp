#pragma once
// slru(segments=N): segmented LRU, as libCacheSim's SLRU. N LRU segments
// (default 4), each 1/N of the capacity. A new key enters the lowest segment
// with room for it; when none has (the cache is full), segment 0 after the
// eviction. A hit in segment i < N - 1 moves the entry to the most recent end
// of segment i + 1; while that segment is over its share, its least recently
// used entry moves down to the most recent end of segment i (which, over its
// own share, passes its LRU down the same way, to segment 1). A hit in the
// top segment refreshes it there. The victim is the least recently used entry
// of the lowest non-empty segment. Replacing puts count as hits.
//
// Where libCacheSim differs: its segments are capacity / N each, rounded
// down, and the cache fills past them into segment 0; then a hit whose
// demotions reach segment 0 evicts there. Here segment 0 also takes the
// remainder, and a get never evicts: under a byte limit, a demotion that
// overfills segment 0 leaves it over its share until the next put makes
// room. Equal where N divides an entry capacity (as in the bench). It admits
// no value bigger than a segment; here one is admitted.
#include <cstdint>

#include "cache/policy/common.hpp"

namespace inferprof::policy {

template <class Node>
class Slru : public NoGhosts {
 public:
  static constexpr std::uint32_t kMaxSegments = 16;
  Slru() = default;
  Slru(unsigned segments, Units units, std::uint64_t capacity) : n_(segments < 1 ? 1 : segments) {
    q_.unit = units;
    for (std::uint32_t s = 0; s < n_; ++s)
      cap_[s] = capacity / n_;
    cap_[0] += capacity % n_;
  }
  void admit(const CacheKey&, std::uint64_t units) noexcept {
    target_ = 0;
    for (std::uint32_t s = 0; s < n_; ++s)
      if (q_.units[s] + units <= cap_[s]) {
        target_ = s;
        break;
      }
  }
  void insert(Node* n, std::uint32_t i) noexcept {
    q_.place(n, i, target_);
    target_ = 0;
  }
  void hit(Node* n, std::uint32_t i) noexcept {
    const std::uint32_t s = queue_of(n[i].meta);
    if (s + 1 >= n_) {
      move_to_back(n, q_.list[s], i);
      return;
    }
    q_.take(n, i);
    q_.place(n, i, s + 1);
    while (q_.units[s + 1] > cap_[s + 1])
      cool(n, s + 1);
  }
  void replace(Node* n, std::uint32_t i, std::uint64_t old_bytes) noexcept {
    q_.resized(n, i, old_bytes);
    hit(n, i);
  }
  std::uint32_t victim(Node* n, std::uint32_t skip) const noexcept {
    for (std::uint32_t s = 0; s < n_; ++s) {
      const std::uint32_t v = first_but(n, q_.list[s], skip);
      if (v != kNil) return v;
    }
    return kNil;
  }
  void remove(Node* n, std::uint32_t i, bool) noexcept { q_.take(n, i); }
  bool more() const noexcept { return false; }
  void clear() noexcept { q_.clear(); }

 private:
  // Segment s (>= 1) passes its least recently used entry down.
  void cool(Node* n, std::uint32_t s) noexcept {
    const std::uint32_t v = q_.list[s].head;
    q_.take(n, v);
    q_.place(n, v, s - 1);
    if (s - 1 == 0) return;
    while (q_.units[s - 1] > cap_[s - 1])
      cool(n, s - 1);
  }
  std::uint32_t n_ = 4;
  std::uint64_t cap_[kMaxSegments] = {};
  Queues<kMaxSegments> q_;  // per segment, least recently used first
  std::uint32_t target_ = 0;
};

}  // namespace inferprof::policy
