// Throughput of the remote cache backends.
//
// Redis: get/put of the backend on one connection against redis-benchmark on
// the same server with one client (-c 1) and the same pipelining (-P 1 for
// get/put, -P 16 for get_many batches of 16). The goal is a ratio of 0.8 or
// better: the backend should cost little beyond the round trip itself.
// LMDB: get of a 4 KB and a 150 KB value, in µs and GB/s.
//
// get_many of 16 x 150 KB returns 2.4 MB of fresh strings per call, which
// this loop frees at once; glibc then hands those pages back to the kernel
// (top-of-heap trimming) and the next call faults them in again. Where page
// faults are dear (VMs) that dominates: compare a run with
// MALLOC_TRIM_THRESHOLD_=268435456 MALLOC_MMAP_THRESHOLD_=67108864.
//
// A plain main() printing a table; `bench_redis --quick` runs a tenth.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "inferprof/cache.hpp"
#include "inferprof/error.hpp"
#include "redis_server.hpp"
#include "temp_dir.hpp"

using namespace inferprof;
using Clock = std::chrono::steady_clock;

namespace {

CacheKey key(std::uint64_t i) {
  return CacheKey{0xbe9c4ull * 0x9E3779B97F4A7C15ull + i, ~i};
}

std::string random_bytes(std::size_t n) {
  std::mt19937_64 rng(42);
  std::string s(n, '\0');
  for (char& c : s)
    c = static_cast<char>(rng() & 0xff);
  return s;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// "SET: 41152.26 requests per second, p50=..." lines of redis-benchmark -q.
struct Baseline {
  double set = 0, get = 0;
};
Baseline redis_benchmark(int port, std::size_t size, int n, int pipeline) {
  std::string cmd = "redis-benchmark -h 127.0.0.1 -p " + std::to_string(port) + " -t set,get -d " +
                    std::to_string(size) + " -n " + std::to_string(n) + " -P " + std::to_string(pipeline) +
                    " -c 1 -q 2>&1";
  Baseline b;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return b;
  std::string out;
  char buf[4096];
  for (std::size_t got; (got = std::fread(buf, 1, sizeof buf, p)) > 0;)
    out.append(buf, got);
  ::pclose(p);
  std::regex line(R"((SET|GET): ([0-9.]+) requests per second)");
  for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it) {
    double rps = std::strtod((*it)[2].str().c_str(), nullptr);
    ((*it)[1] == "SET" ? b.set : b.get) = rps;
  }
  return b;
}

void row(const char* op, std::size_t size, const char* pipe, double ours, double theirs) {
  std::printf("%-10s %8zu  %-4s %14.0f %16.0f %8.2f\n", op, size, pipe, ours, theirs, theirs > 0 ? ours / theirs : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const int scale = quick ? 10 : 1;
  try {
    if (!inferprof::testing::RedisServer::available()) {
      std::printf("%s\n", inferprof::testing::RedisServer::why_unavailable().c_str());
    } else {
      inferprof::testing::RedisServer server;
      auto backend = make_redis_backend(server.url(), "bench");
      std::printf("Redis %s, one connection, against redis-benchmark -c 1 on the same server\n", server.url().c_str());
      std::printf("%-10s %8s  %-4s %14s %16s %8s\n", "op", "bytes", "-P", "inferprof op/s", "redis-benchmark", "ratio");
      for (std::size_t size : {std::size_t{4096}, std::size_t{150 * 1024}}) {
        const int n = (size <= 4096 ? 40000 : 6400) / scale / 16 * 16;  // whole get_many batches
        const std::uint64_t keyspace = size <= 4096 ? 1000 : 100;
        const std::string value = random_bytes(size);
        backend->clear();
        for (std::uint64_t i = 0; i < keyspace; ++i)
          backend->put(key(i), value, 0);  // warm up, fill

        auto t0 = Clock::now();
        for (int i = 0; i < n; ++i)
          backend->put(key(static_cast<std::uint64_t>(i) % keyspace), value, 0);
        double put_rate = n / seconds_since(t0);

        std::size_t checksum = 0;
        t0 = Clock::now();
        for (int i = 0; i < n; ++i)
          checksum += backend->get(key(static_cast<std::uint64_t>(i) % keyspace))->size();
        double get_rate = n / seconds_since(t0);

        constexpr int kBatch = 16;
        std::vector<CacheKey> batch(kBatch);
        t0 = Clock::now();
        for (int i = 0; i < n; i += kBatch) {
          for (int j = 0; j < kBatch; ++j)
            batch[j] = key(static_cast<std::uint64_t>(i + j) % keyspace);
          for (auto& v : backend->get_many(batch))
            checksum += v->size();
        }
        double many_rate = n / seconds_since(t0);
        if (checksum != size * static_cast<std::size_t>(n) * 2) std::printf("(unexpected value sizes)\n");

        Baseline p1 = redis_benchmark(server.port(), size, n, 1);
        Baseline p16 = redis_benchmark(server.port(), size, n, kBatch);
        row("put", size, "1", put_rate, p1.set);
        row("get", size, "1", get_rate, p1.get);
        row("get_many", size, "16", many_rate, p16.get);
      }
      backend->clear();
    }

    inferprof::testing::TempDir dir;
    auto lmdb = make_lmdb_backend(dir.file("lmdb"), "bench");
    std::printf("\nLMDB %s\n%-10s %8s %12s %10s %10s\n", dir.file("lmdb").c_str(), "op", "bytes", "op/s", "us/op",
                "GB/s");
    for (std::size_t size : {std::size_t{4096}, std::size_t{150 * 1024}}) {
      const std::uint64_t keyspace = 100;
      const int n = (size <= 4096 ? 400000 : 40000) / scale;
      const std::string value = random_bytes(size);
      auto t0 = Clock::now();
      for (std::uint64_t i = 0; i < keyspace; ++i)
        lmdb->put(key(i), value, 0);
      double put_s = seconds_since(t0) / static_cast<double>(keyspace);
      std::size_t checksum = 0;
      t0 = Clock::now();
      for (int i = 0; i < n; ++i)
        checksum += lmdb->get(key(static_cast<std::uint64_t>(i) % keyspace))->size();
      double get_s = seconds_since(t0) / n;
      if (checksum != size * static_cast<std::size_t>(n)) std::printf("(unexpected value sizes)\n");
      std::printf("%-10s %8zu %12.0f %10.2f %10.2f\n", "get", size, 1 / get_s, get_s * 1e6, size / get_s / 1e9);
      std::printf("%-10s %8zu %12.0f %10.2f %10.2f\n", "put", size, 1 / put_s, put_s * 1e6, size / put_s / 1e9);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_redis: %s\n", e.what());
    return 3;
  }
  return 0;
}
