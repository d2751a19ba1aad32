#pragma once
// 2q(in=I,out=O): 2Q (Johnson and Shasha, VLDB '94; the full version), as
// libCacheSim's TwoQ. A1in is a FIFO of new keys (I of the capacity, default
// 0.25), Am an LRU (the rest), A1out a ghost FIFO of the keys evicted from
// A1in (O of the capacity, default 0.50). A new key enters A1in, or Am if
// A1out held it (A1out forgets it). A hit in Am makes the entry its most
// recently used; a hit in A1in changes nothing. To make room: A1in's oldest
// goes into A1out when A1in holds more than its share, else Am's least
// recently used is evicted (no ghost). A key from A1out that finds Am at its
// share also evicts Am's least recently used, even when the cache had room
// (libCacheSim puts it into Am as into an LRU cache of Am's size). Replacing
// puts count as hits.
//
// Where libCacheSim differs: it admits nothing while A1in's share is under
// one entry (capacities under 4 at the default), nor, under a byte limit, a
// value bigger than A1in's share; here such an entry enters A1in and is the
// next to leave.
#include <cstdint>

#include "cache/policy/common.hpp"
#include "cache/policy/ghost.hpp"

namespace inferprof::policy {

template <class Node, class GhostCache>
class TwoQ {
  enum : std::uint32_t { kIn = 0, kMain = 1 };

 public:
  TwoQ() = default;
  TwoQ(const PolicyParams& p, Units units, std::uint64_t capacity)
      : cap_(capacity), in_cap_(static_cast<std::uint64_t>(static_cast<double>(capacity) * p.in_share)) {
    q_.unit = units;
    main_cap_ = capacity - in_cap_;
    const auto out_cap = static_cast<std::uint64_t>(static_cast<double>(capacity) * p.out_share);
    if (out_cap > 0) out_.open(units, out_cap);
  }
  void admit(const CacheKey& key, std::uint64_t units) {
    incoming_ = units;
    to_main_ = out_.enabled() && out_.take(key);
  }
  void insert(Node* n, std::uint32_t i) noexcept {
    q_.place(n, i, to_main_ ? kMain : kIn);
    to_main_ = false;
    incoming_ = 0;
  }
  void hit(Node* n, std::uint32_t i) noexcept {
    if (queue_of(n[i].meta) == kMain) move_to_back(n, q_.list[kMain], i);
  }
  void replace(Node* n, std::uint32_t i, std::uint64_t old_bytes) noexcept {
    to_main_ = false;
    incoming_ = 0;
    q_.resized(n, i, old_bytes);
    hit(n, i);
  }
  // Am is full for a key coming from A1out: one more victim (Am's LRU).
  bool more() const noexcept { return to_main_ && !q_.list[kMain].empty() && q_.units[kMain] + incoming_ > main_cap_; }
  std::uint32_t victim(Node* n, std::uint32_t skip) noexcept {
    const List &in = q_.list[kIn], &main = q_.list[kMain];
    const bool full = q_.units[kIn] + q_.units[kMain] + incoming_ > cap_;
    // The cache's own limit first, then (more()) Am's.
    const bool from_in = full && q_.units[kIn] > in_cap_;
    std::uint32_t v = first_but(n, from_in ? in : main, skip);
    return v != kNil ? v : first_but(n, from_in ? main : in, skip);
  }
  void remove(Node* n, std::uint32_t i, bool evicted) {
    const bool in = queue_of(n[i].meta) == kIn;
    q_.take(n, i);
    if (evicted && in && out_.enabled()) out_.add(n[i].key, n[i].bytes);
  }
  void clear() {
    q_.clear();
    to_main_ = false;
    incoming_ = 0;
    out_.clear();
  }

 private:
  std::uint64_t cap_ = 0, in_cap_ = 0, main_cap_ = 0;
  Queues<2> q_;                 // A1in (oldest first), Am (least recently used first)
  bool to_main_ = false;        // the key being put was in A1out
  std::uint64_t incoming_ = 0;  // its units
  Ghost<GhostCache> out_;       // A1out
};

}  // namespace inferprof::policy
