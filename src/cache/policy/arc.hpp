#pragma once
// arc: ARC (Megiddo and Modha, FAST '03), as libCacheSim's ARC. T1 holds
// keys seen once recently, T2 keys seen at least twice, both LRU; ghosts B1
// and B2 remember keys evicted from each. A hit in T1 or T2 moves the entry to
// T2's most recent end. A new key found in B1 raises the target size p of T1
// by max(|B2| / |B1|, 1) (up to the capacity), one found in B2 lowers it by
// max(|B1| / |B2|, 1); either way it enters T2, else T1. To make room
// (REPLACE): T1's LRU goes to B1 if T1 is larger than p (or equal to p and the
// key came from B2) or T2 is empty, else T2's LRU goes to B2. On a key in no
// list, first: if T1 + B1 would pass the capacity, B1's oldest is dropped (or,
// with B1 empty, T1's LRU is evicted with no ghost); else if all four lists
// hold twice the capacity, B2's oldest is dropped. No parameters. Sizes count
// entries, or bytes under a byte limit. Replacing puts count as hits.
#include <algorithm>
#include <cstdint>

#include "cache/policy/common.hpp"
#include "cache/policy/ghost.hpp"

namespace inferprof::policy {

template <class Node, class GhostCache>
class Arc {
  enum : std::uint32_t { kT1 = 0, kT2 = 1 };

 public:
  Arc() = default;
  Arc(Units units, std::uint64_t capacity) : cap_(capacity) {
    q_.unit = units;
    b1_.open(units, 0);
    b2_.open(units, 0);
  }
  void admit(const CacheKey& key, std::uint64_t units) {
    incoming_ = units;
    in_b1_ = in_b2_ = false;
    const double b1 = static_cast<double>(b1_.units()), b2 = static_cast<double>(b2_.units());
    // The ghosts' sizes before the key leaves one (one probe per ghost).
    if (b1_.take(key)) {
      p_ = std::min(p_ + std::max(b2 / b1, 1.0), static_cast<double>(cap_));
      in_b1_ = true;
    } else if (b2_.take(key)) {
      p_ = std::max(p_ - std::max(b1 / b2, 1.0), 0.0);
      in_b2_ = true;
    }
  }
  void insert(Node* n, std::uint32_t i) noexcept {
    q_.place(n, i, in_b1_ || in_b2_ ? kT2 : kT1);
    in_b1_ = in_b2_ = false;
  }
  void hit(Node* n, std::uint32_t i) noexcept {
    q_.take(n, i);
    q_.place(n, i, kT2);
  }
  void replace(Node* n, std::uint32_t i, std::uint64_t old_bytes) noexcept {
    q_.resized(n, i, old_bytes);
    hit(n, i);
  }
  std::uint32_t victim(Node* n, std::uint32_t skip) {
    no_ghost_ = false;
    const List &t1 = q_.list[kT1], &t2 = q_.list[kT2];
    const std::uint64_t t1_units = q_.units[kT1], t2_units = q_.units[kT2];
    if (!in_b1_ && !in_b2_) {
      const std::uint64_t b1 = b1_.units();
      if (t1_units + b1 + incoming_ > cap_) {
        if (b1 == 0) {
          no_ghost_ = true;
          return either(n, t1, t2, skip);
        }
        b1_.drop_oldest();
      } else if (t1_units + b1 + t2_units + b2_.units() >= 2 * cap_ && b2_.units() > 0) {
        b2_.drop_oldest();
      }
    }
    const double t1d = static_cast<double>(t1_units);
    const bool from_t1 = (t1_units > 0 && (t1d > p_ || (t1d == p_ && in_b2_))) || t2_units == 0;
    return from_t1 ? either(n, t1, t2, skip) : either(n, t2, t1, skip);
  }
  void remove(Node* n, std::uint32_t i, bool evicted) {
    const bool t1 = queue_of(n[i].meta) == kT1;
    q_.take(n, i);
    if (evicted && !no_ghost_) (t1 ? b1_ : b2_).add(n[i].key, n[i].bytes);
    no_ghost_ = false;
  }
  bool more() const noexcept { return false; }
  void clear() {
    q_.clear();
    p_ = 0;
    in_b1_ = in_b2_ = no_ghost_ = false;
    b1_.clear();
    b2_.clear();
  }

 private:
  // The LRU of `first`, else (only `skip` there) of `second`.
  static std::uint32_t either(const Node* n, const List& first, const List& second, std::uint32_t skip) noexcept {
    const std::uint32_t v = first_but(n, first, skip);
    return v != kNil ? v : first_but(n, second, skip);
  }
  std::uint64_t cap_ = 0;
  Queues<2> q_;                         // T1, T2: least recently used first
  double p_ = 0;                        // T1's target size
  std::uint64_t incoming_ = 1;          // the size of the key being put
  bool in_b1_ = false, in_b2_ = false;  // where the key being put was found
  bool no_ghost_ = false;               // the victim leaves no ghost
  Ghost<GhostCache> b1_, b2_;
};

}  // namespace inferprof::policy
