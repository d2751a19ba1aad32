#include "cli/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace inferprof::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string duration_text(double seconds) {
  auto s = static_cast<long long>(seconds + 0.5);
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

// Redraws one line four times a second from its own thread, so the replay
// only stores numbers and never waits on the terminal.
class TerminalProgress final : public ReplayObserver {
 public:
  TerminalProgress() : thread_([this] { loop(); }) {}
  ~TerminalProgress() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    clear_line();
  }

  void context(const std::string& label) override {
    std::lock_guard<std::mutex> lock(mu_);
    context_ = label;
  }
  void phase(Phase phase) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      phase_ = phase;
      if (phase == Phase::warming_up) warm_done_ = warm_total_ = 0;
      if (phase != Phase::replaying) counters_ = nullptr;  // the replay's counters go away
      if (phase == Phase::finished) {
        clear_line();  // before the table or an error is printed
        return;
      }
    }
    cv_.notify_all();  // show a new phase at once
  }
  void warmup(int done, int total) override {
    std::lock_guard<std::mutex> lock(mu_);
    warm_done_ = done;
    warm_total_ = total;
  }
  void replaying(const ReplayCounters& counters) override {
    std::lock_guard<std::mutex> lock(mu_);
    counters_ = &counters;
    started_ = Clock::now();
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      if (phase_ != Phase::finished) draw();
      cv_.wait_for(lock, std::chrono::milliseconds(250));
    }
  }

  // Under mu_.
  void draw() {
    std::string line = context_.empty() ? "" : context_ + " · ";
    switch (phase_) {
      case Phase::loading_model:
        line += "loading the model";
        break;
      case Phase::warming_up:
        line += warm_total_ > 0 ? fmt::format("warming up {}/{}", warm_done_, warm_total_) : "warming up";
        break;
      case Phase::replaying:
        line += replaying_text();
        break;
      case Phase::writing_reports:
        line += "writing reports";
        break;
      case Phase::finished:
        return;
    }
    std::fprintf(stderr, "\r  %s\x1b[K", line.c_str());
    std::fflush(stderr);
    drawn_ = true;
  }

  std::string replaying_text() const {
    if (!counters_) return "replaying";
    const std::uint64_t done = counters_->done.load(std::memory_order_relaxed);
    const std::uint64_t total = counters_->total.load(std::memory_order_relaxed);
    const std::uint64_t estimate = counters_->estimate.load(std::memory_order_relaxed);
    const double elapsed = std::chrono::duration<double>(Clock::now() - started_).count();
    const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
    std::string out = fmt::format("replaying: {} requests", done);
    const std::uint64_t of = total ? total : estimate;
    if (of > 0) out = fmt::format("replaying: {}/{}{} requests", done, total ? "" : "~", of);
    out += fmt::format(" · {:.0f} req/s", rate);
    if (of > done && rate > 0) out += " · ETA " + duration_text(static_cast<double>(of - done) / rate);
    return out;
  }

  void clear_line() {
    if (!drawn_) return;
    std::fprintf(stderr, "\r\x1b[K");
    std::fflush(stderr);
    drawn_ = false;
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false, drawn_ = false;
  Phase phase_ = Phase::finished;
  std::string context_;
  int warm_done_ = 0, warm_total_ = 0;
  const ReplayCounters* counters_ = nullptr;
  Clock::time_point started_;
  std::thread thread_;  // last: starts once the rest is set
};

}  // namespace

std::shared_ptr<ReplayObserver> make_progress_display() {
  if (!::isatty(STDERR_FILENO)) return nullptr;
  return std::make_shared<TerminalProgress>();
}

}  // namespace inferprof::cli
