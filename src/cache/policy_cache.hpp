#pragma once
// PolicyCache<V>: the eviction policies of the in-process tier, and of
// `inferprof simulate`, which replays millions of requests a second through
// it with an empty V. Not thread-safe: the memory tier wraps it in one mutex.
//
// Semantics (the unit tests hold it to a brute-force model of each):
//  - the order entries are evicted in is the policy's, one file each under
//          cache/policy/ (lru, lfu, fifo and ttl, clock, sieve, s3fifo, arc,
//          wtinylfu, 2q, slru), behind the interface cache/policy/common.hpp
//          states. Policies that split the capacity (s3fifo, arc, wtinylfu,
//          2q, slru) split
//          max_bytes when there is one, else max_entries.
//  - ttl_s > 0 (any policy): an entry expires ttl_s after its value was last
//          put. A get of an expired entry is a miss that removes it; every
//          put first removes all expired entries (counted as expirations,
//          never as evictions), so a live entry is never evicted while an
//          expired one is held.
//  - max_entries / max_bytes (0: none): before an insert, and after a
//          replacement changes an entry's size, entries are evicted in policy
//          order until both limits hold. A replaced entry is never its own
//          victim. A value bigger than max_bytes is not stored (counted as
//          rejected), and any older value under its key is dropped.
//  - Time never goes backward: a `now` earlier than one already seen is
//          taken as the latest seen, so expiry order stays put order.
//
// Layout: nodes live in one vector and are reused through a free list;
// orders are intrusive index-linked lists; the policy is dispatched by a
// switch over inlined members, not a virtual call; the key index is an open-addressing
// table of 8-byte slots (linear probing, backward-shift deletion, no
// tombstones). A steady-state get or put allocates nothing. Pointers returned
// by get() stay valid until the next put, erase, clear or reserve.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "cache/policy/arc.hpp"
#include "cache/policy/clock.hpp"
#include "cache/policy/fifo.hpp"
#include "cache/policy/lfu.hpp"
#include "cache/policy/lru.hpp"
#include "cache/policy/s3fifo.hpp"
#include "cache/policy/sieve.hpp"
#include "cache/policy/slru.hpp"
#include "cache/policy/twoq.hpp"
#include "cache/policy/wtinylfu.hpp"
#include "inferprof/cache.hpp"
#include "inferprof/timing.hpp"

namespace inferprof {

struct PolicyCacheCounters {
  std::uint64_t hits = 0, misses = 0;
  std::uint64_t inserts = 0;      // puts that added a key
  std::uint64_t replaces = 0;     // puts that replaced the value of a held key
  std::uint64_t evictions = 0;    // live entries removed to make room
  std::uint64_t expirations = 0;  // entries removed because their TTL passed
  std::uint64_t rejected = 0;     // puts of a value bigger than max_bytes
};

namespace policy_cache_detail {

using policy::kNil;

// Empty values (the simulator's) take no room: empty-base optimisation.
template <class V, bool Empty = std::is_empty_v<V> && !std::is_final_v<V>>
struct ValueSlot {
  V value{};
  V& value_ref() noexcept { return value; }
};
template <class V>
struct ValueSlot<V, true> : V {
  V& value_ref() noexcept { return *this; }
};

}  // namespace policy_cache_detail

template <class V>
class PolicyCache {
  static constexpr std::uint32_t kNil = policy_cache_detail::kNil;

 public:
  PolicyCache(Policy policy, std::uint64_t max_entries, std::uint64_t max_bytes, double ttl_s,
              const PolicyParams& params = {})
      : policy_(policy), max_entries_(max_entries), max_bytes_(max_bytes), params_(params) {
    if (!std::isfinite(ttl_s) || ttl_s < 0) throw std::invalid_argument("PolicyCache: ttl_s must be finite and >= 0");
    if (policy == Policy::ttl && ttl_s <= 0) throw std::invalid_argument("PolicyCache: policy ttl needs ttl_s > 0");
    if (ttl_s > 0) {
      // Capped at ~31 years so now + ttl cannot overflow for any steady clock.
      const double ns = std::min(ttl_s, 1e9) * 1e9;
      ttl_ns_ = std::max<Nanos>(1, static_cast<Nanos>(std::llround(ns)));
    }
    init_table(kMinBits);
    open_policy();
  }
  explicit PolicyCache(const TierSpec& spec)
      : PolicyCache(spec.policy, spec.max_entries, spec.max_bytes, spec.ttl_s, spec.params) {}

  // nullptr on a miss. A hit counts as a use (recency, frequency).
  V* get(const CacheKey& key, Nanos now) {
    advance(now);
    const std::uint32_t h = hash32(key);
    const std::size_t s = probe(key, h);
    const std::uint32_t i = table_[s].node;
    if (i == kNil) {
      ++counters_.misses;
      return nullptr;
    }
    if (ttl_ns_ != 0 && nodes_[i].expires <= now_) {
      remove_at(s, i, false);
      ++counters_.expirations;
      ++counters_.misses;
      return nullptr;
    }
    with_policy([&](auto& p) { p.hit(nodes_.data(), i); });
    ++counters_.hits;
    return &nodes_[i].value_ref();
  }

  // Inserts, or replaces the value and size of a held key (a use).
  void put(const CacheKey& key, V value, std::uint64_t bytes, Nanos now) {
    advance(now);
    if (ttl_ns_ != 0) purge_expired();
    const std::uint32_t h = hash32(key);
    std::size_t s = probe(key, h);
    std::uint32_t i = table_[s].node;
    if (max_bytes_ != 0 && bytes > max_bytes_) {
      if (i != kNil) remove_at(s, i, false);
      ++counters_.rejected;
      if (retired_ != nullptr) retired_->push_back(std::move(value));
      return;
    }
    if (i != kNil) {
      Node& n = nodes_[i];
      const std::uint64_t old_bytes = n.bytes;
      bytes_ = bytes_ - n.bytes + bytes;
      n.bytes = bytes;
      std::swap(n.value_ref(), value);  // `value` now holds the old one
      if (retired_ != nullptr) retired_->push_back(std::move(value));
      with_policy([&](auto& p) { p.replace(nodes_.data(), i, old_bytes); });
      if (ttl_ns_ != 0) {
        n.expires = expiry_time();
        policy::move_to_back<Node, &Node::expiry>(nodes_.data(), expiry_, i);
      }
      ++counters_.replaces;
      make_room(i, 0, 0);
      return;
    }
    // The policies with ghosts, or that place a key by its size before room is made.
    if (policy_ == Policy::s3fifo || policy_ == Policy::arc || policy_ == Policy::twoq || policy_ == Policy::slru)
      with_policy([&](auto& p) { p.admit(key, max_bytes_ != 0 ? bytes : 1); });
    bool moved = make_room(kNil, 1, bytes);
    if (count_ + 1 > grow_at_) {
      rehash(bits_ + 1);
      moved = true;
    }
    // Evictions and growth move slots: the free slot found above may be stale.
    if (moved) s = probe(key, h);
    i = alloc_node();
    Node& n = nodes_[i];
    n.key = key;
    n.hash = h;
    n.bytes = bytes;
    n.value_ref() = std::move(value);
    table_[s] = Slot{i, h};
    ++count_;
    bytes_ += bytes;
    with_policy([&](auto& p) { p.insert(nodes_.data(), i); });
    if (ttl_ns_ != 0) {
      n.expires = expiry_time();
      policy::push_back<Node, &Node::expiry>(nodes_.data(), expiry_, i);
    }
    ++counters_.inserts;
  }

  // Removes a key without counting it anywhere. False if it was not held.
  bool erase(const CacheKey& key) {
    const std::size_t s = probe(key, hash32(key));
    const std::uint32_t i = table_[s].node;
    if (i == kNil) return false;
    remove_at(s, i, false);
    return true;
  }

  // Evicts the policy's next victim, counted as an eviction; false if empty.
  bool evict_one() {
    if (count_ == 0) return false;
    remove_node(with_policy([&](auto& p) { return p.victim(nodes_.data(), kNil); }), true);
    ++counters_.evictions;
    return true;
  }

  // Removes every key for which pred(key) holds, without counting them
  // anywhere; returns how many. O(table size).
  template <class Pred>
  std::uint64_t erase_if(Pred&& pred) {
    std::vector<CacheKey> doomed;
    for (const Slot& s : table_)
      if (s.node != kNil && pred(nodes_[s.node].key)) doomed.push_back(nodes_[s.node].key);
    for (const CacheKey& k : doomed)
      erase(k);
    return doomed.size();
  }

  // Whether the key is held (expired or not); no use is counted.
  bool contains(const CacheKey& key) const { return table_[probe(key, hash32(key))].node != kNil; }

  // Drops every entry and the memory behind them; counters stay.
  void clear() {
    nodes_.clear();
    nodes_.shrink_to_fit();
    free_ = kNil;
    with_policy([](auto& p) { p.clear(); });
    expiry_ = List{};
    count_ = 0;
    bytes_ = 0;
    init_table(kMinBits);
  }
  void reset_counters() { counters_ = PolicyCacheCounters{}; }

  // While set, values that leave the cache (evicted, expired, erased,
  // replaced, rejected) are moved into `sink` instead of being destroyed, so
  // a caller holding a lock can free them after releasing it. nullptr: off.
  void retire_into(std::vector<V>* sink) noexcept { retired_ = sink; }

  // Room for `entries` without growing (for benchmarks and known sizes).
  void reserve(std::size_t entries) {
    std::uint32_t bits = bits_;
    while (grow_limit(bits) < entries)
      ++bits;
    if (bits != bits_) rehash(bits);
    nodes_.reserve(entries);
  }

  std::size_t size() const noexcept { return count_; }
  std::uint64_t bytes() const noexcept { return bytes_; }
  const PolicyCacheCounters& counters() const noexcept { return counters_; }
  std::uint64_t evictions() const noexcept { return counters_.evictions; }
  std::uint64_t expirations() const noexcept { return counters_.expirations; }
  Policy policy() const noexcept { return policy_; }
  const PolicyParams& params() const noexcept { return params_; }
  std::uint64_t max_entries() const noexcept { return max_entries_; }
  std::uint64_t max_bytes() const noexcept { return max_bytes_; }
  Nanos ttl_ns() const noexcept { return ttl_ns_; }

 private:
  using Link = policy::Link;
  using List = policy::List;
  // What a hit reads and writes (value, key, order links, policy bits, expiry
  // time) comes first, so a get touches one cache line of the node where
  // alignment allows.
  struct Node : policy_cache_detail::ValueSlot<V> {
    CacheKey key;
    Link order;  // the policy's queue
    Nanos expires = 0;
    std::uint32_t meta = 0;  // the policy's: use bits, which queue, lfu's bucket
    std::uint32_t hash = 0;  // as in its slot, to find the slot again
    std::uint64_t bytes = 0;
    Link expiry;  // put order, when ttl > 0
  };
  using Ghosts = PolicyCache<policy::GhostMark>;
  // Every policy's state; only policy_'s is used (the others stay empty).
  struct Policies {
    policy::Lru<Node> lru;
    policy::Lfu<Node> lfu;
    policy::Fifo<Node> fifo;
    policy::Ttl<Node> ttl;
    policy::Clock<Node> clock;
    policy::Sieve<Node> sieve;
    policy::S3Fifo<Node, Ghosts> s3fifo;
    policy::Arc<Node, Ghosts> arc;
    policy::WTinyLfu<Node> wtinylfu;
    policy::TwoQ<Node, Ghosts> twoq;
    policy::Slru<Node> slru;
  };
  struct Slot {
    std::uint32_t node = kNil;  // kNil: empty
    std::uint32_t hash = 0;     // top bits pick the home slot; all 32 filter compares
  };

  static constexpr std::uint32_t kMinBits = 4;

  static std::uint32_t hash32(const CacheKey& k) noexcept {
    // Keys are XXH3 output, but tests and simulations may build them by hand
    // (sequential lo, constant hi): mix both halves before taking bits.
    std::uint64_t h = k.lo ^ (k.hi * 0x9E3779B97F4A7C15ull);
    h ^= h >> 32;
    h *= 0xD6E8FEB86659FD93ull;
    h ^= h >> 32;
    return static_cast<std::uint32_t>(h);
  }
  static std::size_t grow_limit(std::uint32_t bits) noexcept { return (std::size_t{1} << bits) / 4 * 3; }

  void init_table(std::uint32_t bits) {
    bits_ = bits;
    mask_ = (std::size_t{1} << bits) - 1;
    table_.assign(std::size_t{1} << bits, Slot{});
    table_.shrink_to_fit();
    grow_at_ = grow_limit(bits);
  }

  std::size_t home(std::uint32_t h) const noexcept { return static_cast<std::size_t>(h >> (32 - bits_)); }

  // The slot holding `key`, or the empty slot that ends its probe sequence.
  std::size_t probe(const CacheKey& key, std::uint32_t h) const noexcept {
    std::size_t i = home(h);
    while (true) {
      const Slot& s = table_[i];
      if (s.node == kNil || (s.hash == h && nodes_[s.node].key == key)) return i;
      i = (i + 1) & mask_;
    }
  }

  // Backward-shift deletion: pull later members of the cluster into the hole
  // when their home allows, so no tombstones ever lengthen probes.
  void erase_slot(std::size_t hole) noexcept {
    std::size_t j = hole;
    while (true) {
      j = (j + 1) & mask_;
      const Slot s = table_[j];
      if (s.node == kNil) break;
      const std::size_t h = home(s.hash);
      if (((j - h) & mask_) >= ((j - hole) & mask_)) {
        table_[hole] = s;
        hole = j;
      }
    }
    table_[hole] = Slot{};
  }

  void rehash(std::uint32_t bits) {
    if (bits > 32) throw std::length_error("PolicyCache: more than 2^31 entries");
    std::vector<Slot> old = std::move(table_);
    init_table(bits);
    for (const Slot& s : old) {
      if (s.node == kNil) continue;
      std::size_t i = home(s.hash);
      while (table_[i].node != kNil)
        i = (i + 1) & mask_;
      table_[i] = s;
    }
  }

  void advance(Nanos now) noexcept {
    if (now > now_) now_ = now;
  }
  Nanos expiry_time() const noexcept {
    return now_ > std::numeric_limits<Nanos>::max() - ttl_ns_ ? std::numeric_limits<Nanos>::max() : now_ + ttl_ns_;
  }

  // ---- nodes -------------------------------------------------------------
  std::uint32_t alloc_node() {
    if (free_ != kNil) {
      const std::uint32_t i = free_;
      free_ = nodes_[i].order.next;
      return i;
    }
    if (nodes_.size() >= kNil) throw std::length_error("PolicyCache: too many entries");
    nodes_.emplace_back();
    return static_cast<std::uint32_t>(nodes_.size() - 1);
  }

  void remove_at(std::size_t slot, std::uint32_t i, bool evicted) {
    erase_slot(slot);
    with_policy([&](auto& p) { p.remove(nodes_.data(), i, evicted); });
    Node& n = nodes_[i];
    if (ttl_ns_ != 0) policy::unlink<Node, &Node::expiry>(nodes_.data(), expiry_, i);
    bytes_ -= n.bytes;
    --count_;
    // Release what the value holds now, not at reuse -- or hand it to the
    // owner's sink, to be released outside its lock.
    if (retired_ != nullptr) retired_->push_back(std::move(n.value_ref()));
    n.value_ref() = V{};
    n.order.next = free_;
    free_ = i;
  }
  void remove_node(std::uint32_t i, bool evicted) { remove_at(probe(nodes_[i].key, nodes_[i].hash), i, evicted); }

  void purge_expired() {
    while (expiry_.head != kNil && nodes_[expiry_.head].expires <= now_) {
      remove_node(expiry_.head, false);
      ++counters_.expirations;
    }
  }

  // Evicts until adding `add_entries` entries of `add_bytes` fits; true if
  // anything was evicted.
  bool make_room(std::uint32_t skip, std::uint64_t add_entries, std::uint64_t add_bytes) {
    bool evicted = false;
    // add_bytes <= max_bytes_ here (bigger values are rejected first).
    // A policy may want more victims than the limits need (only wtinylfu and
    // 2q: a direct test, off the other policies' hot path).
    while ((max_entries_ != 0 && count_ + add_entries > max_entries_) ||
           (max_bytes_ != 0 && bytes_ > max_bytes_ - add_bytes) ||
           (policy_ == Policy::wtinylfu && policies_.wtinylfu.more()) ||
           (policy_ == Policy::twoq && policies_.twoq.more())) {
      const std::uint32_t v = with_policy([&](auto& p) { return p.victim(nodes_.data(), skip); });
      assert(v != kNil && v != skip);
      remove_node(v, true);
      ++counters_.evictions;
      evicted = true;
    }
    return evicted;
  }

  // ---- the policy ----------------------------------------------------------
  void open_policy() {
    const policy::Units units{max_bytes_ != 0};
    const std::uint64_t capacity = max_bytes_ != 0 ? max_bytes_ : max_entries_;
    if (policy_ == Policy::clock) policies_.clock = policy::Clock<Node>(params_.bits);
    if (policy_ == Policy::s3fifo) policies_.s3fifo = policy::S3Fifo<Node, Ghosts>(params_, units, capacity);
    if (policy_ == Policy::arc) policies_.arc = policy::Arc<Node, Ghosts>(units, capacity);
    if (policy_ == Policy::wtinylfu) policies_.wtinylfu = policy::WTinyLfu<Node>(params_, units, capacity);
    if (policy_ == Policy::twoq) policies_.twoq = policy::TwoQ<Node, Ghosts>(params_, units, capacity);
    if (policy_ == Policy::slru) policies_.slru = policy::Slru<Node>(params_.segments, units, capacity);
  }
  // Calls f with the state of policy_: a switch the compiler inlines, so the
  // hot path costs what the policy's own code does.
  template <class F>
  [[gnu::always_inline]] inline decltype(auto) with_policy(F&& f) {
    switch (policy_) {
      case Policy::lru:
        return f(policies_.lru);
      case Policy::lfu:
        return f(policies_.lfu);
      case Policy::fifo:
        return f(policies_.fifo);
      case Policy::ttl:
        return f(policies_.ttl);
      case Policy::clock:
        return f(policies_.clock);
      case Policy::sieve:
        return f(policies_.sieve);
      case Policy::s3fifo:
        return f(policies_.s3fifo);
      case Policy::arc:
        return f(policies_.arc);
      case Policy::twoq:
        return f(policies_.twoq);
      case Policy::slru:
        return f(policies_.slru);
      case Policy::wtinylfu:
        break;
    }
    return f(policies_.wtinylfu);
  }

  Policy policy_;
  std::uint64_t max_entries_;
  std::uint64_t max_bytes_;
  PolicyParams params_;
  Policies policies_;
  Nanos ttl_ns_ = 0;
  Nanos now_ = std::numeric_limits<Nanos>::min();

  std::vector<Slot> table_;
  std::size_t mask_ = 0;
  std::uint32_t bits_ = 0;
  std::size_t grow_at_ = 0;

  std::vector<Node> nodes_;
  std::uint32_t free_ = kNil;
  List expiry_;  // ttl > 0

  std::size_t count_ = 0;
  std::uint64_t bytes_ = 0;
  PolicyCacheCounters counters_;
  std::vector<V>* retired_ = nullptr;
};

}  // namespace inferprof
