#pragma once
// wtinylfu(window=W,protected=P): W-TinyLFU (Einziger et al., TOS '17; the
// policy of Caffeine), as libCacheSim's WTinyLFU with its default SLRU main.
// A window LRU (W of the capacity, default 0.01) takes every new key; the
// main cache (the rest) is an SLRU: probation, and protected (P of main,
// default 0.80). A hit in the window refreshes it there; a hit in probation
// moves the entry to protected (whose LRU, when protected is over its share,
// goes back to probation's most recent end); a hit in protected refreshes it.
// A frequency sketch counts each new key, each hit in main and each window
// entry weighed for main; it halves every 32 x main-capacity hits in main. To
// make room: while the window is not empty, its LRU moves to main if main has
// room; else it goes to main only if the sketch counts it more often than
// main's victim (probation's LRU, else protected's), which is evicted, and the
// next window LRU is weighed the same way; else it is evicted. With an empty
// window, main's victim goes. Replacing puts count as hits.
//
// Where libCacheSim differs: its sketch hashes the trace's object id with
// XXH64, this one the cache key, so estimates (and a few admissions) differ by
// hash collisions; under 100 entries (an empty window) it admits nothing.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "cache/policy/common.hpp"

namespace inferprof::policy {

// A counting Bloom filter as libCacheSim sizes and updates it: for a 0.1%
// false-positive rate at `keys` keys, 14.4 counters per key (at most 2^32 - 1:
// the hash indexes 32 bits) and 10 hashes; an add increments all of a key's
// counters, the estimate is their minimum.
//
// Its memory follows what it holds, not the capacity it is sized for: the
// counters start sparse (a hash table of those not zero, about 16 bytes
// each, 10 per key added) and become one array (4 bytes per counter) once a
// quarter of them are in use, when the array is no larger. A cache of 10^8
// entries that sees 50 keys holds 500 counters, not 5.7 GB; the estimates,
// and so every admission, are those of the whole array.
class FrequencySketch {
 public:
  FrequencySketch() = default;
  explicit FrequencySketch(std::uint64_t keys)
      : n_(static_cast<std::uint32_t>(std::min<double>(
            UINT32_MAX, std::max<double>(2 * kHashes, std::ceil(kPerKey * static_cast<double>(keys)))))) {}
  void add(const CacheKey& key) {
    if (dense_.empty()) {
      for_each(key, [this](std::uint32_t i) {
        std::uint32_t& c = sparse_slot(i);
        c += c != UINT32_MAX;
      });
      if (std::uint64_t{used_} * 4 >= n_) densify();
      return;
    }
    for_each(key, [this](std::uint32_t i) {
      std::uint32_t& c = dense_[i];
      c += c != UINT32_MAX;
    });
  }
  std::uint32_t estimate(const CacheKey& key) const noexcept {
    std::uint32_t m = UINT32_MAX;
    if (dense_.empty())
      for_each(key, [&m, this](std::uint32_t i) { m = std::min(m, sparse_count(i)); });
    else
      for_each(key, [&m, this](std::uint32_t i) { m = std::min(m, dense_[i]); });
    return m;
  }
  void halve() {
    if (!dense_.empty()) {
      for (auto& c : dense_)
        c >>= 1;
      return;
    }
    // Counters that reach zero leave the table: rebuilt with the others.
    std::vector<Slot> old;
    old.swap(slots_);
    used_ = 0;
    for (const Slot& s : old)
      if (s.index != kEmpty && s.count > 1) sparse_slot(s.index) = s.count >> 1;
  }
  void clear() noexcept {
    std::vector<std::uint32_t>().swap(dense_);
    std::vector<Slot>().swap(slots_);
    used_ = 0;
  }
  // Bytes its counters take now (tests, and the memory it is documented to use).
  std::size_t bytes() const noexcept { return dense_.size() * sizeof(std::uint32_t) + slots_.size() * sizeof(Slot); }

 private:
  static constexpr int kHashes = 10;
  static constexpr double kPerKey = 14.37758;          // -ln(0.001) / ln(2)^2
  static constexpr std::uint32_t kEmpty = UINT32_MAX;  // no counter index is n_ >= this
  struct Slot {
    std::uint32_t index = kEmpty, count = 0;
  };
  template <class F>
  void for_each(const CacheKey& key, F&& f) const noexcept {
    std::uint64_t h = key.lo ^ (key.hi * 0x9E3779B97F4A7C15ull);
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    const auto a = static_cast<std::uint32_t>(h), b = static_cast<std::uint32_t>(h >> 32);
    for (std::uint32_t j = 0; j < kHashes; ++j)
      f((a + j * b) % n_);
  }
  static std::size_t spot(std::uint32_t index, std::size_t mask) noexcept {
    return static_cast<std::size_t>((std::uint64_t{index} * 0x9E3779B97F4A7C15ull) >> 17) & mask;
  }
  // The counter at `index`, added (zero) when absent; open addressing, linear probing, at most half full.
  std::uint32_t& sparse_slot(std::uint32_t index) {
    if (2 * (std::size_t{used_} + 1) > slots_.size()) {
      std::vector<Slot> old(std::max<std::size_t>(64, slots_.size() * 2));
      old.swap(slots_);
      for (const Slot& s : old)
        if (s.index != kEmpty) {
          std::size_t at = spot(s.index, slots_.size() - 1);
          while (slots_[at].index != kEmpty)
            at = (at + 1) & (slots_.size() - 1);
          slots_[at] = s;
        }
    }
    const std::size_t mask = slots_.size() - 1;
    std::size_t at = spot(index, mask);
    while (slots_[at].index != kEmpty && slots_[at].index != index)
      at = (at + 1) & mask;
    if (slots_[at].index == kEmpty) {
      slots_[at].index = index;
      ++used_;
    }
    return slots_[at].count;
  }
  std::uint32_t sparse_count(std::uint32_t index) const noexcept {
    if (slots_.empty()) return 0;
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t at = spot(index, mask);; at = (at + 1) & mask) {
      if (slots_[at].index == index) return slots_[at].count;
      if (slots_[at].index == kEmpty) return 0;
    }
  }
  void densify() {
    dense_.assign(n_, 0);
    for (const Slot& s : slots_)
      if (s.index != kEmpty) dense_[s.index] = s.count;
    std::vector<Slot>().swap(slots_);
    used_ = 0;
  }
  std::uint32_t n_ = 2 * kHashes;     // counters
  std::vector<std::uint32_t> dense_;  // all n_ counters, once a quarter are in use
  std::vector<Slot> slots_;           // before: those not zero
  std::uint32_t used_ = 0;            // slots_ in use
};

template <class Node>
class WTinyLfu : public NoGhosts {  // counting may allocate (the sketch grows): not noexcept
  enum : std::uint32_t { kWindow = 0, kProbation = 1, kProtected = 2 };

 public:
  WTinyLfu() = default;
  WTinyLfu(const PolicyParams& p, Units units, std::uint64_t capacity)
      : main_cap_(capacity - static_cast<std::uint64_t>(static_cast<double>(capacity) * p.window)), sketch_(main_cap_) {
    q_.unit = units;
    protected_cap_ = static_cast<std::uint64_t>(static_cast<double>(main_cap_) * p.protected_share);
    decay_every_ = 32 * std::max<std::uint64_t>(main_cap_, 1);
  }
  void insert(Node* n, std::uint32_t i) {
    q_.place(n, i, kWindow);
    sketch_.add(n[i].key);
  }
  void hit(Node* n, std::uint32_t i) {
    const std::uint32_t q = queue_of(n[i].meta);
    if (q == kWindow) {
      move_to_back(n, q_.list[kWindow], i);
      return;
    }
    if (q == kProbation) {
      q_.take(n, i);
      q_.place(n, i, kProtected);
      while (q_.units[kProtected] > protected_cap_) {
        const std::uint32_t c = q_.list[kProtected].head;
        q_.take(n, c);
        q_.place(n, c, kProbation);
      }
    } else {
      move_to_back(n, q_.list[kProtected], i);
    }
    sketch_.add(n[i].key);
    if (++main_hits_ >= decay_every_) {
      main_hits_ = 0;
      sketch_.halve();
    }
  }
  void replace(Node* n, std::uint32_t i, std::uint64_t old_bytes) {
    q_.resized(n, i, old_bytes);
    hit(n, i);
  }
  std::uint32_t victim(Node* n, std::uint32_t skip) {
    if (pending_ != kNil) to_main(n, std::exchange(pending_, kNil));  // its rival has gone
    more_ = false;
    while (true) {
      const std::uint32_t w = first_but(n, q_.list[kWindow], skip);
      if (w == kNil) return main_victim(n, skip);
      if (q_.units[kProbation] + q_.units[kProtected] + q_.unit.of(n[w]) <= main_cap_) {
        to_main(n, w);
        sketch_.add(n[w].key);
        continue;
      }
      const std::uint32_t m = main_victim(n, skip);
      const bool admit = m != kNil && sketch_.estimate(n[w].key) > sketch_.estimate(n[m].key);
      sketch_.add(n[w].key);
      if (!admit) return w;
      pending_ = w;
      more_ = true;
      return m;
    }
  }
  void remove(Node* n, std::uint32_t i, bool) noexcept {
    if (pending_ == i) pending_ = kNil;
    q_.take(n, i);
  }
  // After evicting main's victim for a window entry, keep going until a
  // window entry is evicted, as libCacheSim does.
  bool more() const noexcept { return more_; }
  void clear() {
    q_.clear();
    sketch_.clear();
    main_hits_ = 0;
    pending_ = kNil;
    more_ = false;
  }

 private:
  std::uint32_t main_victim(const Node* n, std::uint32_t skip) const noexcept {
    const std::uint32_t v = first_but(n, q_.list[kProbation], skip);
    return v != kNil ? v : first_but(n, q_.list[kProtected], skip);
  }
  // SLRU's insert: the first segment with room, else probation.
  void to_main(Node* n, std::uint32_t w) noexcept {
    q_.take(n, w);
    const std::uint64_t u = q_.unit.of(n[w]);
    const bool probation =
        q_.units[kProbation] + u <= main_cap_ - protected_cap_ || q_.units[kProtected] + u > protected_cap_;
    q_.place(n, w, probation ? kProbation : kProtected);
  }
  std::uint64_t main_cap_ = 0, protected_cap_ = 0;
  Queues<3> q_;  // window, probation, protected: least recently used first
  FrequencySketch sketch_;
  std::uint64_t main_hits_ = 0, decay_every_ = 1;
  std::uint32_t pending_ = kNil;  // a window entry admitted over main's victim, moved once it is gone
  bool more_ = false;
};

}  // namespace inferprof::policy
