#pragma once
// lru: a hit or a replacing put makes the entry the most recently used; the
// least recently used goes first.
#include "cache/policy/common.hpp"

namespace inferprof::policy {

template <class Node>
class Lru : public NoGhosts {
 public:
  void insert(Node* n, std::uint32_t i) noexcept { push_back(n, list_, i); }
  void hit(Node* n, std::uint32_t i) noexcept { move_to_back(n, list_, i); }
  void replace(Node* n, std::uint32_t i, std::uint64_t) noexcept { hit(n, i); }
  std::uint32_t victim(Node* n, std::uint32_t skip) noexcept { return first_but(n, list_, skip); }
  void remove(Node* n, std::uint32_t i, bool) noexcept { unlink(n, list_, i); }
  bool more() const noexcept { return false; }
  void clear() noexcept { list_ = List{}; }

 private:
  List list_;  // least recently used first
};

}  // namespace inferprof::policy
