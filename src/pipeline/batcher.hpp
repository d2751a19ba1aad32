#pragma once
// The dynamic batcher behind --max-batch N --batch-delay-us D, the two knobs
// of a serving system's dynamic batcher. A request ready for the model joins
// the open batch of its kind (same model version, same input names, dtypes
// and shapes past dim 0); the request that opened a batch leads it: it waits
// until the batch is full or D has passed, then for the model's turn (one
// batch runs at a time, as on one model instance, in the order batches became
// ready), and runs the model once for every request of the batch on its own
// thread. Until its run starts a batch keeps taking requests, so the next
// batch forms while one runs. Every request waits on its own thread (a
// replay worker) until its batch has run.
// No libtorch here: the pipeline instantiates it with its tensors, the unit
// tests with numbers.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "inferprof/error.hpp"
#include "inferprof/timing.hpp"

namespace inferprof::detail {

template <class Input, class Output>
class Batcher {
 public:
  // What one request got from its batch.
  struct Served {
    Output output{};
    std::size_t size = 0;     // requests in its batch
    Nanos joined = 0;         // it entered the batcher
    Nanos started = 0;        // its batch's run began: batch_wait is started - joined
    Nanos ended = 0;          // ... and ended
    bool led = false;         // its thread ran the batch
    std::vector<Span> spans;  // what the run recorded (the leader's stage spans), for the others to copy
  };

  Batcher(std::size_t max_batch, Nanos delay_ns) : max_(max_batch < 1 ? 1 : max_batch), delay_(delay_ns) {}

  // Blocks until the batch `input` joined has run. `run(inputs, spans)` runs
  // one batch on the leader's thread: it returns one output per input, in
  // order, and may fill `spans` with what the others should record. What it
  // throws reaches every request of the batch.
  // Requests in batches that have not started running (for tests).
  std::size_t queued() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t n = 0;
    for (const auto& open : open_)
      n += open->inputs.size();
    return n;
  }

  template <class Run>
  Served submit(const std::string& kind, const Input& input, Run&& run) {
    std::unique_lock<std::mutex> lock(mutex_);
    Served s;
    s.joined = now_ns();
    std::shared_ptr<Batch> b;
    for (const auto& open : open_)
      if (open->kind == kind) b = open;
    s.led = !b;
    if (s.led) {
      b = std::make_shared<Batch>();
      b->kind = kind;
      b->deadline = s.joined + delay_;
      open_.push_back(b);
    }
    const std::size_t index = b->inputs.size();
    b->inputs.push_back(&input);
    if (b->inputs.size() >= max_) {
      close(b.get());  // full: the next request of this kind opens another
      cv_.notify_all();
    }
    if (s.led) lead(lock, *b, std::forward<Run>(run));
    cv_.wait(lock, [&] { return b->done; });
    if (b->error) std::rethrow_exception(b->error);
    s.output = std::move(b->outputs[index]);
    s.size = b->inputs.size();
    s.started = b->started;
    s.ended = b->ended;
    if (!s.led) s.spans = b->spans;
    return s;
  }

 private:
  struct Batch {
    std::string kind;
    std::vector<const Input*> inputs;
    std::vector<Output> outputs;
    std::vector<Span> spans;
    Nanos deadline = 0, started = 0, ended = 0;
    bool done = false;
    std::exception_ptr error;
  };

  // No more requests join it (it is full, or its run starts).
  void close(const Batch* b) {
    for (auto it = open_.begin(); it != open_.end(); ++it)
      if (it->get() == b) {
        open_.erase(it);
        return;
      }
  }
  bool is_open(const Batch& b) const {
    for (const auto& open : open_)
      if (open.get() == &b) return true;
    return false;
  }

  template <class Run>
  void lead(std::unique_lock<std::mutex>& lock, Batch& b, Run&& run) {
    using Clock = std::chrono::steady_clock;  // now_ns()'s clock
    const Clock::time_point deadline{std::chrono::nanoseconds(b.deadline)};
    cv_.wait_until(lock, deadline, [&] { return !is_open(b); });
    const std::uint64_t ticket = next_ticket_++;
    cv_.wait(lock, [&] { return serving_ == ticket; });
    close(&b);
    b.started = now_ns();
    lock.unlock();
    try {
      b.outputs = run(b.inputs, b.spans);
      if (b.outputs.size() != b.inputs.size())
        throw runtime_failure("the batch gave " + std::to_string(b.outputs.size()) + " outputs for " +
                              std::to_string(b.inputs.size()) + " requests");
    } catch (...) {
      b.error = std::current_exception();
    }
    lock.lock();
    b.ended = now_ns();
    b.done = true;
    ++serving_;
    cv_.notify_all();
  }

  const std::size_t max_;
  const Nanos delay_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<Batch>> open_;  // batches still taking requests, oldest first
  std::uint64_t next_ticket_ = 0, serving_ = 0;
};

}  // namespace inferprof::detail
