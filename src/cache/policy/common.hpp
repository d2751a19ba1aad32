#pragma once
// What every eviction policy of PolicyCache shares: index-linked lists over
// the cache's node array, and the per-node bits a policy may use.
//
// A policy is a class template over the cache's Node type with this interface
// (PolicyCache calls nothing else; `n` is the node array, `i` a node index):
//   insert(n, i)             a new entry, after room was made for it
//   hit(n, i)                a get that found it
//   replace(n, i, old_bytes) a put that replaced its value (and maybe size)
//   admit(key)               before room is made for a new key (ghost lists)
//   victim(n, skip)          the next entry to evict, never `skip`; may reorder
//   remove(n, i, evicted)    it leaves: evicted to make room, or erased/expired
//   clear()                  forget everything
// Every node has `order` (a Link), `meta` (32 bits the policy owns) and `bytes`.
#include <cstddef>
#include <cstdint>

#include "inferprof/cache.hpp"

namespace inferprof::policy {

inline constexpr std::uint32_t kNil = 0xFFFFFFFFu;

struct Link {
  std::uint32_t prev = kNil, next = kNil;
};
// head: the oldest end (evicted first); tail: the newest.
struct List {
  std::uint32_t head = kNil, tail = kNil;
  bool empty() const noexcept { return head == kNil; }
};

// L: which of the node's links (policies use `order`; PolicyCache's expiry
// list its own).
template <class Node, Link Node::*L = &Node::order>
void push_back(Node* n, List& list, std::uint32_t i) noexcept {
  Link& l = n[i].*L;
  l.prev = list.tail;
  l.next = kNil;
  if (list.tail != kNil) {
    (n[list.tail].*L).next = i;
  } else {
    list.head = i;
  }
  list.tail = i;
}
template <class Node, Link Node::*L = &Node::order>
void unlink(Node* n, List& list, std::uint32_t i) noexcept {
  const Link l = n[i].*L;
  if (l.prev != kNil) {
    (n[l.prev].*L).next = l.next;
  } else {
    list.head = l.next;
  }
  if (l.next != kNil) {
    (n[l.next].*L).prev = l.prev;
  } else {
    list.tail = l.prev;
  }
}
template <class Node, Link Node::*L = &Node::order>
void move_to_back(Node* n, List& list, std::uint32_t i) noexcept {
  if (list.tail == i) return;
  unlink<Node, L>(n, list, i);
  push_back<Node, L>(n, list, i);
}
// The oldest entry of `list` other than `skip`.
template <class Node>
std::uint32_t first_but(const Node* n, const List& list, std::uint32_t skip) noexcept {
  const std::uint32_t v = list.head;
  return v == skip && v != kNil ? n[v].order.next : v;
}

// `meta`'s low byte: a use counter or reference bits; next byte: which queue.
inline std::uint32_t bits_of(std::uint32_t meta) noexcept {
  return meta & 0xFFu;
}
inline std::uint32_t queue_of(std::uint32_t meta) noexcept {
  return (meta >> 8) & 0xFFu;
}
inline std::uint32_t make_meta(std::uint32_t queue, std::uint32_t bits) noexcept {
  return (queue << 8) | bits;
}

// The size an entry counts for in a policy's partitions: bytes when the cache
// has a byte limit, else one.
struct Units {
  bool by_bytes = false;
  template <class Node>
  std::uint64_t of(const Node& n) const noexcept {
    return by_bytes ? n.bytes : 1;
  }
};

// Entries spread over Q queues, each oldest first with its total units; an
// entry's queue is its meta's second byte (s3fifo, arc, wtinylfu).
template <std::size_t Q>
struct Queues {
  List list[Q];
  std::uint64_t units[Q] = {};
  Units unit;

  template <class Node>
  void place(Node* n, std::uint32_t i, std::uint32_t q) noexcept {
    n[i].meta = make_meta(q, 0);
    push_back(n, list[q], i);
    units[q] += unit.of(n[i]);
  }
  template <class Node>
  void take(Node* n, std::uint32_t i) noexcept {
    const std::uint32_t q = queue_of(n[i].meta);
    unlink(n, list[q], i);
    units[q] -= unit.of(n[i]);
  }
  // After a replacing put changed the entry's bytes from `old_bytes`.
  template <class Node>
  void resized(Node* n, std::uint32_t i, std::uint64_t old_bytes) noexcept {
    units[queue_of(n[i].meta)] += unit.of(n[i]) - (unit.by_bytes ? old_bytes : 1);
  }
  void clear() noexcept {
    for (std::size_t q = 0; q < Q; ++q) {
      list[q] = List{};
      units[q] = 0;
    }
  }
};

// Policies with no ghosts and no admission use these.
struct NoGhosts {
  void admit(const CacheKey&, std::uint64_t) noexcept {}
};

}  // namespace inferprof::policy
