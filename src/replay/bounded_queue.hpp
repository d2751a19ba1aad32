#pragma once
// A bounded multi-producer multi-consumer queue between the trace reader and
// the workers (and between workers and the collector). Bounded so a trace
// larger than memory streams through; wakes a waiting producer only when half
// the queue has drained, so a worker does not pay a futex wake per request.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>

namespace inferprof::detail {

template <class T>
class BoundedQueue {
 public:
  explicit BoundedQueue(std::size_t capacity) : capacity_(capacity < 2 ? 2 : capacity) {}

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
    if (waiting_consumers_ > 0) not_empty_.notify_one();
    return true;
  }

  // Non-blocking push; false when full or aborted.
  bool try_push(T&& value) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_ || items_.size() >= capacity_) return false;
    items_.push_back(std::move(value));
    if (waiting_consumers_ > 0) not_empty_.notify_one();
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
  void take(T& out) {
    out = std::move(items_.front());
    items_.pop_front();
    if (waiting_producers_ > 0 && items_.size() <= capacity_ / 2) not_full_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable not_empty_, not_full_;
  std::deque<T> items_;
  std::size_t capacity_;
  int waiting_producers_ = 0, waiting_consumers_ = 0;
  bool closed_ = false, aborted_ = false;
};

}  // namespace inferprof::detail
