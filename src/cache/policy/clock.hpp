#pragma once
// clock(bits=B): CLOCK with a B-bit use counter per entry (B = 1: the classic
// reference bit; libCacheSim's Clock, n-bit-counter). A new entry starts at 0;
// a hit adds one, up to 2^B - 1. To evict, the hand looks at the oldest
// entry: at 0 it goes; otherwise its counter drops by one and it moves to
// the back (FIFO-reinsertion), and the hand looks again. Replacing puts
// count as hits.
#include "cache/policy/common.hpp"

namespace inferprof::policy {

template <class Node>
class Clock : public NoGhosts {
 public:
  explicit Clock(unsigned bits = 1) : max_(bits >= 8 ? 255u : (1u << bits) - 1) {}
  void insert(Node* n, std::uint32_t i) noexcept {
    n[i].meta = 0;
    push_back(n, list_, i);
  }
  void hit(Node* n, std::uint32_t i) noexcept {
    if (n[i].meta < max_) ++n[i].meta;
  }
  void replace(Node* n, std::uint32_t i, std::uint64_t) noexcept { hit(n, i); }
  std::uint32_t victim(Node* n, std::uint32_t skip) noexcept {
    while (true) {
      const std::uint32_t v = list_.head;
      if (v != skip && n[v].meta == 0) return v;
      if (v != skip) --n[v].meta;
      move_to_back(n, list_, v);
    }
  }
  void remove(Node* n, std::uint32_t i, bool) noexcept { unlink(n, list_, i); }
  bool more() const noexcept { return false; }
  void clear() noexcept { list_ = List{}; }

 private:
  std::uint32_t max_;
  List list_;  // the hand is always at the head
};

}  // namespace inferprof::policy
