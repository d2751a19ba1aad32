#pragma once
// lfu: a hit or a replacing put adds one use; the entry with the fewest uses
// goes first, the least recently used among equals. A new entry starts at one
// use (no memory of evicted keys). O(1): entries sit in frequency buckets,
// kept in ascending order; an entry's bucket index is its `meta`.
#include <vector>

#include "cache/policy/common.hpp"

namespace inferprof::policy {

template <class Node>
class Lfu : public NoGhosts {
 public:
  void insert(Node* n, std::uint32_t i) {
    std::uint32_t b = head_;
    if (b == kNil || buckets_[b].freq != 1) {
      b = alloc_bucket(1);
      buckets_[b].next = head_;
      if (head_ != kNil) buckets_[head_].prev = b;
      head_ = b;
    }
    push_back(n, buckets_[b].items, i);
    n[i].meta = b;
  }
  void hit(Node* n, std::uint32_t i) {
    const std::uint32_t b = n[i].meta;
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
    unlink(n, buckets_[b].items, i);
    push_back(n, buckets_[nb].items, i);
    n[i].meta = nb;
    if (buckets_[b].items.empty()) free_bucket(b);
  }
  void replace(Node* n, std::uint32_t i, std::uint64_t) { hit(n, i); }
  std::uint32_t victim(Node* n, std::uint32_t skip) const noexcept {
    const std::uint32_t b = head_;
    std::uint32_t v = buckets_[b].items.head;
    if (v == skip) {
      v = n[v].order.next;
      if (v == kNil && buckets_[b].next != kNil) v = buckets_[buckets_[b].next].items.head;
    }
    return v;
  }
  void remove(Node* n, std::uint32_t i, bool) noexcept {
    const std::uint32_t b = n[i].meta;
    unlink(n, buckets_[b].items, i);
    if (buckets_[b].items.empty()) free_bucket(b);
  }
  bool more() const noexcept { return false; }
  void clear() noexcept {
    buckets_.clear();
    buckets_.shrink_to_fit();
    free_ = head_ = kNil;
  }

 private:
  struct Bucket {
    std::uint64_t freq = 0;
    List items;  // least recently used first
    std::uint32_t prev = kNil, next = kNil;
  };
  std::uint32_t alloc_bucket(std::uint64_t freq) {
    std::uint32_t b;
    if (free_ != kNil) {
      b = free_;
      free_ = buckets_[b].next;
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
      head_ = k.next;
    }
    if (k.next != kNil) buckets_[k.next].prev = k.prev;
    buckets_[b].next = free_;
    free_ = b;
  }
  std::vector<Bucket> buckets_;
  std::uint32_t free_ = kNil;
  std::uint32_t head_ = kNil;  // fewest uses
};

}  // namespace inferprof::policy
