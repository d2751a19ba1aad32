#pragma once
// fifo: entries go in the order they were first inserted; hits and replacing
// puts do not reorder.
// ttl: entries go in the order their value was last put (a replacing put
// moves the entry to the back), which is also the order they expire in.
#include "cache/policy/common.hpp"

namespace inferprof::policy {

template <class Node, bool kPutReorders>
class InsertionOrder : public NoGhosts {
 public:
  void insert(Node* n, std::uint32_t i) noexcept { push_back(n, list_, i); }
  void hit(Node*, std::uint32_t) noexcept {}
  void replace(Node* n, std::uint32_t i, std::uint64_t) noexcept {
    if constexpr (kPutReorders) move_to_back(n, list_, i);
  }
  std::uint32_t victim(Node* n, std::uint32_t skip) noexcept { return first_but(n, list_, skip); }
  void remove(Node* n, std::uint32_t i, bool) noexcept { unlink(n, list_, i); }
  bool more() const noexcept { return false; }
  void clear() noexcept { list_ = List{}; }

 private:
  List list_;  // first inserted (fifo) or least recently put (ttl) first
};

template <class Node>
using Fifo = InsertionOrder<Node, false>;
template <class Node>
using Ttl = InsertionOrder<Node, true>;

}  // namespace inferprof::policy
