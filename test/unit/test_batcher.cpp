// The dynamic batcher's rules (pipeline/batcher.hpp) with numbers for
// tensors; test/e2e/test_cli_batching.cpp runs it with a real model.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "pipeline/batcher.hpp"

using namespace inferprof;
using TestBatcher = detail::Batcher<int, int>;

namespace {

// Each input's output is input x 10; the run's batch size is recorded.
struct Runs {
  std::mutex mutex;
  std::vector<std::vector<int>> batches;
  std::atomic<int> running{0}, most_at_once{0};
  std::vector<int> operator()(const std::vector<const int*>& inputs, std::vector<Span>& spans) {
    const int now = ++running;
    int seen = most_at_once.load();
    while (now > seen && !most_at_once.compare_exchange_weak(seen, now)) {
    }
    std::vector<int> in, out;
    for (const int* x : inputs) {
      in.push_back(*x);
      out.push_back(*x * 10);
    }
    spans.push_back(Span{name_id(Stage::compute), -1, 1, 2, -1});
    {
      std::lock_guard<std::mutex> lock(mutex);
      batches.push_back(in);
    }
    --running;
    return out;
  }
};

// Waits (without a clock limit the test could trip on a slow machine) until `n` requests are queued.
void wait_queued(const TestBatcher& b, std::size_t n) {
  while (b.queued() < n)
    std::this_thread::yield();
}

}  // namespace

TEST_SUITE("batcher") {
  TEST_CASE("full batches: 8 requests with a long delay run as two batches of 4, each given its own output") {
    TestBatcher batcher(4, 3'600'000'000'000);  // an hour: only a full batch can start
    Runs runs;
    std::vector<TestBatcher::Served> served(8);
    std::vector<int> inputs{0, 1, 2, 3, 4, 5, 6, 7};
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i)
      threads.emplace_back([&, i] { served[i] = batcher.submit("a", inputs[i], std::ref(runs)); });
    for (auto& t : threads)
      t.join();
    REQUIRE(runs.batches.size() == 2);
    CHECK(runs.batches[0].size() == 4);
    CHECK(runs.batches[1].size() == 4);
    int leaders = 0;
    for (int i = 0; i < 8; ++i) {
      CHECK(served[i].output == i * 10);
      CHECK(served[i].size == 4);
      CHECK(served[i].started >= served[i].joined);
      CHECK(served[i].ended >= served[i].started);
      leaders += served[i].led ? 1 : 0;
      // The others copy what the leader's run recorded; the leader has it already.
      CHECK(served[i].spans.size() == (served[i].led ? 0u : 1u));
    }
    CHECK(leaders == 2);
    CHECK(runs.most_at_once == 1);
  }

  TEST_CASE("a lone request runs alone once its delay has passed") {
    TestBatcher batcher(8, 2'000'000);  // 2 ms
    Runs runs;
    const auto s = batcher.submit("a", 5, std::ref(runs));
    CHECK(s.output == 50);
    CHECK(s.size == 1);
    CHECK(s.led);
    CHECK(s.started - s.joined >= 2'000'000);  // it waited its delay for company
  }

  TEST_CASE("delay 0: the requests that arrive while the model runs form the next batch together") {
    TestBatcher batcher(8, 0);
    Runs runs;
    std::atomic<bool> started{false}, release{false};
    // The first batch holds the model until three more requests queue behind it.
    auto first_run = [&](const std::vector<const int*>& in, std::vector<Span>& spans) {
      started = true;
      while (!release)
        std::this_thread::yield();
      return runs(in, spans);
    };
    std::thread first([&] { batcher.submit("a", 100, first_run); });
    while (!started)
      std::this_thread::yield();
    std::vector<std::thread> more;
    std::vector<TestBatcher::Served> served(3);
    for (int i = 0; i < 3; ++i)
      more.emplace_back([&, i] { served[i] = batcher.submit("a", i, std::ref(runs)); });
    wait_queued(batcher, 3);
    release = true;
    first.join();
    for (auto& t : more)
      t.join();
    REQUIRE(runs.batches.size() == 2);
    CHECK(runs.batches[0] == std::vector<int>{100});
    CHECK(runs.batches[1].size() == 3);
    for (int i = 0; i < 3; ++i)
      CHECK(served[i].output == i * 10);
  }

  TEST_CASE("requests of different kinds never share a batch") {
    TestBatcher batcher(4, 3'600'000'000'000);
    Runs runs;
    std::vector<std::thread> threads;
    std::vector<int> inputs{1, 2, 3, 4, 5, 6, 7, 8};
    for (int i = 0; i < 8; ++i)
      threads.emplace_back([&, i] { batcher.submit(i % 2 ? "odd" : "even", inputs[i], std::ref(runs)); });
    for (auto& t : threads)
      t.join();
    REQUIRE(runs.batches.size() == 2);
    for (const auto& b : runs.batches) {
      REQUIRE(b.size() == 4);
      CHECK(std::all_of(b.begin(), b.end(), [&](int x) { return x % 2 == b.front() % 2; }));
    }
  }

  TEST_CASE("a failing run reaches every request of its batch") {
    TestBatcher batcher(3, 3'600'000'000'000);
    auto fail = [](const std::vector<const int*>&, std::vector<Span>&) -> std::vector<int> {
      throw std::runtime_error("model failed");
    };
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    std::vector<int> inputs{1, 2, 3};
    for (int i = 0; i < 3; ++i)
      threads.emplace_back([&, i] {
        try {
          batcher.submit("a", inputs[i], fail);
        } catch (const std::runtime_error&) {
          ++failures;
        }
      });
    for (auto& t : threads)
      t.join();
    CHECK(failures == 3);
  }

  TEST_CASE("a run that gives the wrong number of outputs is an error, not a misplaced result") {
    TestBatcher batcher(1, 0);
    auto short_run = [](const std::vector<const int*>&, std::vector<Span>&) { return std::vector<int>{}; };
    CHECK_THROWS_AS(batcher.submit("a", 1, short_run), Error);
  }
}
