#pragma once
// PolicyCache<V>: the eviction policies of the in-process tier, and of
// `inferprof simulate`, which replays millions of requests a second through
// it with an empty V. Not thread-safe: the memory tier wraps it in one mutex.
//
// Semantics (the unit tests hold it to a brute-force model of each):
//  - lru:  a hit or a replacing put makes the entry the most recently used;
//          the least recently used goes first.
//  - lfu:  a hit or a replacing put adds one use; the entry with the fewest
//          uses goes first, the least recently used among equals. A new
//          entry starts at one use (no memory of evicted keys).
//  - fifo: entries go in the order they were first inserted; hits and
//          replacing puts do not reorder.
//  - ttl:  entries go in the order their value was last put, which is also
//          the order they expire in.
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
// orders are intrusive index-linked lists; the key index is an open-addressing
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

inline constexpr std::uint32_t kNil = 0xFFFFFFFFu;

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
  PolicyCache(Policy policy, std::uint64_t max_entries, std::uint64_t max_bytes, double ttl_s)
      : policy_(policy), max_entries_(max_entries), max_bytes_(max_bytes) {
    if (!std::isfinite(ttl_s) || ttl_s < 0) throw std::invalid_argument("PolicyCache: ttl_s must be finite and >= 0");
    if (policy == Policy::ttl && ttl_s <= 0) throw std::invalid_argument("PolicyCache: policy ttl needs ttl_s > 0");
    if (ttl_s > 0) {
      // Capped at ~31 years so now + ttl cannot overflow for any steady clock.
      const double ns = std::min(ttl_s, 1e9) * 1e9;
      ttl_ns_ = std::max<Nanos>(1, static_cast<Nanos>(std::llround(ns)));
    }
    init_table(kMinBits);
  }
  explicit PolicyCache(const TierSpec& spec) : PolicyCache(spec.policy, spec.max_entries, spec.max_bytes, spec.ttl_s) {}

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
      remove_at(s, i);
      ++counters_.expirations;
      ++counters_.misses;
      return nullptr;
    }
    touch(i);
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
      if (i != kNil) remove_at(s, i);
      ++counters_.rejected;
      if (retired_ != nullptr) retired_->push_back(std::move(value));
      return;
    }
    if (i != kNil) {
      Node& n = nodes_[i];
      bytes_ = bytes_ - n.bytes + bytes;
      n.bytes = bytes;
      std::swap(n.value_ref(), value);  // `value` now holds the old one
      if (retired_ != nullptr) retired_->push_back(std::move(value));
      touch(i);
      if (ttl_ns_ != 0) {
        n.expires = expiry_time();
        move_to_back<&Node::expiry>(expiry_, i);
      }
      ++counters_.replaces;
      make_room(i, 0, 0);
      return;
    }
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
    switch (policy_) {
      case Policy::lru:
      case Policy::fifo:
        push_back<&Node::order>(order_, i);
        break;
      case Policy::lfu:
        lfu_insert(i);
        break;
      case Policy::ttl:
        break;  // the expiry list is its order
    }
    if (ttl_ns_ != 0) {
      n.expires = expiry_time();
      push_back<&Node::expiry>(expiry_, i);
    }
    ++counters_.inserts;
  }

  // Removes a key without counting it anywhere. False if it was not held.
  bool erase(const CacheKey& key) {
    const std::size_t s = probe(key, hash32(key));
    const std::uint32_t i = table_[s].node;
    if (i == kNil) return false;
    remove_at(s, i);
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
    buckets_.clear();
    bucket_free_ = kNil;
    bucket_head_ = kNil;
    order_ = List{};
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
  std::uint64_t max_entries() const noexcept { return max_entries_; }
  std::uint64_t max_bytes() const noexcept { return max_bytes_; }
  Nanos ttl_ns() const noexcept { return ttl_ns_; }

 private:
  struct Link {
    std::uint32_t prev = kNil, next = kNil;
  };
  struct List {
    std::uint32_t head = kNil, tail = kNil;
  };
  // What a hit reads and writes (value, key, order links, expiry time) comes
  // first, so a get touches one cache line of the node where alignment allows.
  struct Node : policy_cache_detail::ValueSlot<V> {
    CacheKey key;
    Link order;  // lru: recency; fifo: insertion; lfu: recency in its bucket
    Nanos expires = 0;
    std::uint32_t bucket = kNil;  // lfu: its frequency bucket
    std::uint32_t hash = 0;       // as in its slot, to find the slot again
    std::uint64_t bytes = 0;
    Link expiry;  // put order, when ttl > 0 (policy ttl's only order)
  };
  struct Bucket {
    std::uint64_t freq = 0;
    List items;  // least recently used first
    std::uint32_t prev = kNil, next = kNil;
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

  // ---- intrusive lists -------------------------------------------------
  template <Link Node::*L>
  void push_back(List& list, std::uint32_t i) noexcept {
    Link& l = nodes_[i].*L;
    l.prev = list.tail;
    l.next = kNil;
    if (list.tail != kNil) {
      (nodes_[list.tail].*L).next = i;
    } else {
      list.head = i;
    }
    list.tail = i;
  }
  template <Link Node::*L>
  void unlink(List& list, std::uint32_t i) noexcept {
    const Link l = nodes_[i].*L;
    if (l.prev != kNil) {
      (nodes_[l.prev].*L).next = l.next;
    } else {
      list.head = l.next;
    }
    if (l.next != kNil) {
      (nodes_[l.next].*L).prev = l.prev;
    } else {
      list.tail = l.prev;
    }
  }
  template <Link Node::*L>
  void move_to_back(List& list, std::uint32_t i) noexcept {
    if (list.tail == i) return;
    unlink<L>(list, i);
    push_back<L>(list, i);
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

  void remove_at(std::size_t slot, std::uint32_t i) {
    erase_slot(slot);
    switch (policy_) {
      case Policy::lru:
      case Policy::fifo:
        unlink<&Node::order>(order_, i);
        break;
      case Policy::lfu:
        lfu_remove(i);
        break;
      case Policy::ttl:
        break;
    }
    Node& n = nodes_[i];
    if (ttl_ns_ != 0) unlink<&Node::expiry>(expiry_, i);
    bytes_ -= n.bytes;
    --count_;
    // Release what the value holds now, not at reuse -- or hand it to the
    // owner's sink, to be released outside its lock.
    if (retired_ != nullptr) retired_->push_back(std::move(n.value_ref()));
    n.value_ref() = V{};
    n.order.next = free_;
    free_ = i;
  }
  void remove_node(std::uint32_t i) { remove_at(probe(nodes_[i].key, nodes_[i].hash), i); }

  void touch(std::uint32_t i) {
    if (policy_ == Policy::lru) {
      move_to_back<&Node::order>(order_, i);
    } else if (policy_ == Policy::lfu) {
      lfu_touch(i);
    }
  }

  void purge_expired() {
    while (expiry_.head != kNil && nodes_[expiry_.head].expires <= now_) {
      remove_node(expiry_.head);
      ++counters_.expirations;
    }
  }

  // The next entry to evict, never `skip`.
  std::uint32_t victim(std::uint32_t skip) const noexcept {
    std::uint32_t v = kNil;
    switch (policy_) {
      case Policy::lru:
      case Policy::fifo:
        v = order_.head;
        if (v == skip) v = nodes_[v].order.next;
        break;
      case Policy::ttl:
        v = expiry_.head;
        if (v == skip) v = nodes_[v].expiry.next;
        break;
      case Policy::lfu: {
        const std::uint32_t b = bucket_head_;
        v = buckets_[b].items.head;
        if (v == skip) {
          v = nodes_[v].order.next;
          if (v == kNil && buckets_[b].next != kNil) v = buckets_[buckets_[b].next].items.head;
        }
        break;
      }
    }
    return v;
  }

  // Evicts until adding `add_entries` entries of `add_bytes` fits; true if
  // anything was evicted.
  bool make_room(std::uint32_t skip, std::uint64_t add_entries, std::uint64_t add_bytes) {
    bool evicted = false;
    // add_bytes <= max_bytes_ here (bigger values are rejected first).
    while ((max_entries_ != 0 && count_ + add_entries > max_entries_) ||
           (max_bytes_ != 0 && bytes_ > max_bytes_ - add_bytes)) {
      const std::uint32_t v = victim(skip);
      assert(v != kNil);
      remove_node(v);
      ++counters_.evictions;
      evicted = true;
    }
    return evicted;
  }

  // ---- lfu frequency buckets (ascending by freq) ---------------------------
  std::uint32_t alloc_bucket(std::uint64_t freq) {
    std::uint32_t b;
    if (bucket_free_ != kNil) {
      b = bucket_free_;
      bucket_free_ = buckets_[b].next;
    } else {
      buckets_.emplace_back();
      b = static_cast<std::uint32_t>(buckets_.size() - 1);
    }
    buckets_[b] = Bucket{};
    buckets_[b].freq = freq;
    return b;
  }
  void free_bucket(std::uint32_t b) noexcept {
    const Bucket& k = buckets_[b];
    if (k.prev != kNil) {
      buckets_[k.prev].next = k.next;
    } else {
      bucket_head_ = k.next;
    }
    if (k.next != kNil) buckets_[k.next].prev = k.prev;
    buckets_[b].next = bucket_free_;
    bucket_free_ = b;
  }
  void lfu_insert(std::uint32_t i) {
    std::uint32_t b = bucket_head_;
    if (b == kNil || buckets_[b].freq != 1) {
      b = alloc_bucket(1);
      buckets_[b].next = bucket_head_;
      if (bucket_head_ != kNil) buckets_[bucket_head_].prev = b;
      bucket_head_ = b;
    }
    push_back<&Node::order>(buckets_[b].items, i);
    nodes_[i].bucket = b;
  }
  void lfu_touch(std::uint32_t i) {
    const std::uint32_t b = nodes_[i].bucket;
    const std::uint64_t f = buckets_[b].freq;
    std::uint32_t nb = buckets_[b].next;
    if (nb == kNil || buckets_[nb].freq != f + 1) {
      // Alone in its bucket: the bucket itself moves up one use; the next
      // bucket (if any) still has more uses, so the order holds.
      if (buckets_[b].items.head == i && buckets_[b].items.tail == i) {
        buckets_[b].freq = f + 1;
        return;
      }
      nb = alloc_bucket(f + 1);
      buckets_[nb].prev = b;
      buckets_[nb].next = buckets_[b].next;
      if (buckets_[b].next != kNil) buckets_[buckets_[b].next].prev = nb;
      buckets_[b].next = nb;
    }
    unlink<&Node::order>(buckets_[b].items, i);
    push_back<&Node::order>(buckets_[nb].items, i);
    nodes_[i].bucket = nb;
    if (buckets_[b].items.head == kNil) free_bucket(b);
  }
  void lfu_remove(std::uint32_t i) noexcept {
    const std::uint32_t b = nodes_[i].bucket;
    unlink<&Node::order>(buckets_[b].items, i);
    if (buckets_[b].items.head == kNil) free_bucket(b);
  }

  Policy policy_;
  std::uint64_t max_entries_;
  std::uint64_t max_bytes_;
  Nanos ttl_ns_ = 0;
  Nanos now_ = std::numeric_limits<Nanos>::min();

  std::vector<Slot> table_;
  std::size_t mask_ = 0;
  std::uint32_t bits_ = 0;
  std::size_t grow_at_ = 0;

  std::vector<Node> nodes_;
  std::uint32_t free_ = kNil;
  List order_;   // lru, fifo
  List expiry_;  // ttl > 0
  std::vector<Bucket> buckets_;
  std::uint32_t bucket_free_ = kNil;
  std::uint32_t bucket_head_ = kNil;

  std::size_t count_ = 0;
  std::uint64_t bytes_ = 0;
  PolicyCacheCounters counters_;
  std::vector<V>* retired_ = nullptr;
};

}  // namespace inferprof
