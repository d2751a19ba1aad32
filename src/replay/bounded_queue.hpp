#pragma once
// A bounded multi-producer multi-consumer queue between the trace reader and
// the workers (and between workers and the collector). Bounded so a trace
// larger than memory streams through. Wakes are rationed: a waiting producer
// only when half the queue has drained, a waiting consumer only when
// `wake_consumer_at` items wait (or on close). Each wake is a system call on
// the waking thread, and on a 2-core machine the woken thread often runs on
// the waker's core first, stalling it for microseconds to milliseconds: the
// worker serving requests must wake others rarely.
#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>

namespace inferprof::detail {

template <class T>
class BoundedQueue {
 public:
  explicit BoundedQueue(std::size_t capacity, std::size_t wake_consumer_at = 1)
      : capacity_(capacity < 2 ? 2 : capacity),
        wake_consumer_at_(std::clamp<std::size_t>(wake_consumer_at, 1, capacity_)) {}

  // Blocks while full. False if the queue was aborted.
  bool push(T&& value) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (items_.size() >= capacity_) {
      ++waiting_producers_;
      not_full_.wait(lock, [&] { return items_.size() < capacity_ || aborted_; });
      --waiting_producers_;
    }
    if (aborted_) return false;
    items_.push_back(std::move(value));
    wake_consumer();
    return true;
  }

  // Non-blocking push; false when full or aborted.
  bool try_push(T&& value) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_ || items_.size() >= capacity_) return false;
    items_.push_back(std::move(value));
    wake_consumer();
    return true;
  }

  // Blocks while empty. False when closed and drained, or aborted.
  bool pop(T& out) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (items_.empty() && !closed_ && !aborted_) {
      ++waiting_consumers_;
      not_empty_.wait(lock, [&] { return !items_.empty() || closed_ || aborted_; });
      --waiting_consumers_;
    }
    if (aborted_ || items_.empty()) return false;
    take(out);
    return true;
  }

  bool try_pop(T& out) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_ || items_.empty()) return false;
    take(out);
    return true;
  }

  // How often a push woke a waiting consumer, and how many wait now.
  std::size_t consumer_wakes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return consumer_wakes_;
  }
  int waiting_consumers() {
    std::lock_guard<std::mutex> lock(mutex_);
    return waiting_consumers_;
  }

  // No more pushes; consumers drain what is left.
  void close() {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    not_empty_.notify_all();
  }
  // Stop everything now: pending items are dropped, all waiters return false.
  void abort() {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

 private:
  void wake_consumer() {
    if (waiting_consumers_ > 0 && items_.size() >= wake_consumer_at_) {
      ++consumer_wakes_;
      not_empty_.notify_one();
    }
  }
  void take(T& out) {
    out = std::move(items_.front());
    items_.pop_front();
    if (waiting_producers_ > 0 && items_.size() <= capacity_ / 2) not_full_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable not_empty_, not_full_;
  std::deque<T> items_;
  std::size_t capacity_, wake_consumer_at_;
  std::size_t consumer_wakes_ = 0;
  int waiting_producers_ = 0, waiting_consumers_ = 0;
  bool closed_ = false, aborted_ = false;
};

}  // namespace inferprof::detail
