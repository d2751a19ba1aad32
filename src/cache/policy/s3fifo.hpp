#pragma once
// s3fifo(small=S,ghost=G,threshold=T): S3-FIFO (Yang et al., SOSP '23), as
// libCacheSim's S3FIFO. Three FIFO queues: small (S of the capacity, default
// 0.10), main (the rest) and a ghost of evicted keys (G of the capacity,
// default 0.90). A new key goes to small, or to main if the ghost held it
// (the ghost forgets it). Each hit adds one use. To make room: when main holds
// more than its share, or small is empty, main's oldest entry goes if it has
// no use left, else it moves to main's back with min(uses, 3) - 1; otherwise
// small's oldest moves to main (uses reset) if it had T uses (default 2), else
// it is evicted into the ghost. Replacing puts count as hits.
//
// Where libCacheSim differs: below 10 entries (S x capacity < 1) it admits
// nothing; here small still holds the newest entries.
#include <algorithm>
#include <cstdint>

#include "cache/policy/common.hpp"
#include "cache/policy/ghost.hpp"

namespace inferprof::policy {

template <class Node, class GhostCache>
class S3Fifo {
  enum : std::uint32_t { kSmall = 0, kMain = 1 };

 public:
  S3Fifo() = default;
  S3Fifo(const PolicyParams& p, Units units, std::uint64_t capacity) : threshold_(p.threshold) {
    q_.unit = units;
    main_cap_ = capacity - static_cast<std::uint64_t>(static_cast<double>(capacity) * p.small);
    const auto ghost_cap = static_cast<std::uint64_t>(static_cast<double>(capacity) * p.ghost);
    if (ghost_cap > 0) ghost_.open(units, ghost_cap);
  }
  void admit(const CacheKey& key, std::uint64_t) { from_ghost_ = ghost_.enabled() && ghost_.take(key); }
  void insert(Node* n, std::uint32_t i) noexcept {
    q_.place(n, i, from_ghost_ ? kMain : kSmall);
    from_ghost_ = false;
  }
  void hit(Node* n, std::uint32_t i) noexcept {
    if (bits_of(n[i].meta) < 255) ++n[i].meta;
  }
  void replace(Node* n, std::uint32_t i, std::uint64_t old_bytes) noexcept {
    q_.resized(n, i, old_bytes);
    hit(n, i);
  }
  std::uint32_t victim(Node* n, std::uint32_t skip) noexcept {
    List& small = q_.list[kSmall];
    List& main = q_.list[kMain];
    const bool main_only_skip = main.head == skip && main.tail == skip;
    if ((q_.units[kMain] <= main_cap_ || main_only_skip) && !small.empty()) {
      while (!small.empty()) {
        const std::uint32_t v = small.head;
        if (v != skip && bits_of(n[v].meta) < threshold_) return v;
        q_.take(n, v);
        q_.place(n, v, kMain);
      }
    }
    while (true) {
      const std::uint32_t v = main.head;
      const std::uint32_t uses = bits_of(n[v].meta);
      if (v != skip && uses == 0) return v;
      if (v != skip) n[v].meta = make_meta(kMain, std::min(uses, 3u) - 1);
      move_to_back(n, main, v);
    }
  }
  void remove(Node* n, std::uint32_t i, bool evicted) {
    const bool small = queue_of(n[i].meta) == kSmall;
    q_.take(n, i);
    if (evicted && small && ghost_.enabled()) ghost_.add(n[i].key, n[i].bytes);
  }
  bool more() const noexcept { return false; }
  void clear() {
    q_.clear();
    from_ghost_ = false;
    ghost_.clear();
  }

 private:
  std::uint32_t threshold_ = 2;
  std::uint64_t main_cap_ = 0;
  Queues<2> q_;              // small, main
  bool from_ghost_ = false;  // the key being put was in the ghost
  Ghost<GhostCache> ghost_;
};

}  // namespace inferprof::policy
