#pragma once
// sieve: SIEVE (Zhang et al., NSDI '24; libCacheSim's Sieve). Entries stay in
// insertion order and are never moved; a hit sets the entry's visited bit. To
// evict, a hand walks from where it last stopped (at first the oldest entry)
// toward newer ones, clearing visited bits, and evicts the first unvisited
// entry; past the newest it wraps to the oldest. Replacing puts count as hits.
#include "cache/policy/common.hpp"

namespace inferprof::policy {

template <class Node>
class Sieve : public NoGhosts {
 public:
  void insert(Node* n, std::uint32_t i) noexcept {
    n[i].meta = 0;
    push_back(n, list_, i);
  }
  void hit(Node* n, std::uint32_t i) noexcept { n[i].meta = 1; }
  void replace(Node* n, std::uint32_t i, std::uint64_t) noexcept { hit(n, i); }
  std::uint32_t victim(Node* n, std::uint32_t skip) noexcept {
    std::uint32_t v = hand_ == kNil ? list_.head : hand_;
    while (v == skip || n[v].meta != 0) {
      if (v != skip) n[v].meta = 0;
      v = n[v].order.next == kNil ? list_.head : n[v].order.next;
    }
    hand_ = n[v].order.next;
    return v;
  }
  void remove(Node* n, std::uint32_t i, bool) noexcept {
    if (hand_ == i) hand_ = n[i].order.next;
    unlink(n, list_, i);
  }
  bool more() const noexcept { return false; }
  void clear() noexcept {
    list_ = List{};
    hand_ = kNil;
  }

 private:
  List list_;                  // oldest first
  std::uint32_t hand_ = kNil;  // kNil: start at the oldest
};

}  // namespace inferprof::policy
