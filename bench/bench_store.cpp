// Model fetch from each tier of the model store, for a ResNet-shaped model
// (inferprof gen-model --arch resnet18, ~45 MB): memory, Redis without and
// with zstd, a file:// remote, and an http:// remote (Python's http.server
// serving the same folder). Same process, same Redis server, same bytes.
//
// Each remote/Redis fetch runs in a fresh ModelStore (empty memory), so it
// is served by the tier under test; the Redis tiers are filled once first.
// "fetch" is the tier's transfer (plus chunk checks and zstd), "verify" the
// sha256 of the bytes against meta.json, "total" the fetch() call.
//
//   bench_store [--model model.pt] [--reps N] [--chunk BYTES (Redis chunk size, 4 MB)]
// Without --model, 45 MB of random bytes stand in (incompressible, like float
// weights mostly are).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "http_server.hpp"
#include "inferprof/cache.hpp"
#include "inferprof/error.hpp"
#include "inferprof/store.hpp"
#include "redis_server.hpp"
#include "temp_dir.hpp"

using namespace inferprof;
using Clock = std::chrono::steady_clock;

namespace {

std::string random_bytes(std::size_t n) {
  std::mt19937_64 rng(42);
  std::string s(n, '\0');
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    std::uint64_t v = rng();
    std::memcpy(s.data() + i, &v, 8);
  }
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Row {
  std::string tier;
  double total_ms, fetch_ms, verify_ms;
  double stored_mb = 0;  // what Redis holds for the model
};

}  // namespace

int main(int argc, char** argv) {
  std::string model_path;
  int reps = 5;
  std::uint64_t chunk = 4 << 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--model") == 0 && i + 1 < argc) {
      model_path = argv[++i];
    } else if (std::strcmp(argv[i], "--chunk") == 0 && i + 1 < argc) {
      chunk = std::max<std::uint64_t>(1, std::strtoull(argv[++i], nullptr, 10));
    } else if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: bench_store [--model model.pt] [--reps N] [--chunk BYTES]\n");
      return 2;
    }
  }
  try {
    if (!testing::RedisServer::available()) {
      std::printf("%s\n", testing::RedisServer::why_unavailable().c_str());
      return 0;
    }
    std::string bytes;
    if (model_path.empty()) {
      bytes = random_bytes(45u << 20);
    } else {
      std::ifstream in(model_path, std::ios::binary);
      if (!in) throw bad_input(model_path + ": cannot read");
      std::stringstream ss;
      ss << in.rdbuf();
      bytes = ss.str();
    }
    const double mb = static_cast<double>(bytes.size()) / (1 << 20);
    testing::TempDir dir;
    std::string root = dir.file("models");
    open_remote_store(root)->put(ModelRef{"m", "v1"}, bytes);
    testing::RedisServer redis;
    testing::HttpServer http(root);
    const ModelRef ref{"m", "v1"};

    auto opts = [&](const std::string& remote, const std::string& ns, bool redis_on, bool zstd) {
      StoreOptions o;
      o.remote_url = remote;
      if (redis_on) o.redis_url = redis.url();
      o.redis_namespace = ns;
      o.zstd = zstd;
      o.redis_chunk_bytes = chunk;
      return o;
    };
    // Fresh store per rep: `want` must be the tier that served.
    auto measure = [&](const std::string& name, const StoreOptions& o, StoreTier want) {
      std::vector<double> total, fetch, verify;
      for (int r = 0; r < reps; ++r) {
        ModelStore store(o);
        auto t0 = Clock::now();
        FetchedModel f = store.fetch(ref);
        total.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        if (f.tier != want) throw runtime_failure(name + ": served by " + std::string(store_tier_name(f.tier)));
        fetch.push_back(static_cast<double>(f.fetch_ns) / 1e6);
        verify.push_back(static_cast<double>(f.verify_ns) / 1e6);
      }
      return Row{name, median(total), median(fetch), median(verify)};
    };

    std::vector<Row> rows;
    {
      ModelStore store(opts(root, "bench", false, false));
      store.fetch(ref);
      std::vector<double> total;
      for (int r = 0; r < reps * 20; ++r) {
        auto t0 = Clock::now();
        FetchedModel f = store.fetch(ref);
        total.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        if (f.tier != StoreTier::memory) throw runtime_failure("memory: not served by memory");
      }
      rows.push_back(Row{"memory", median(total), median(total), 0});
    }
    ModelStore(opts(root, "bench-plain", true, false)).fetch(ref);  // fills Redis
    ModelStore(opts(root, "bench-zstd", true, true)).fetch(ref);
    auto stored_mb = [&](const char* ns) {
      return static_cast<double>(make_redis_backend(redis.url(), ns)->bytes()) / (1 << 20);
    };
    rows.push_back(measure("redis", opts(root, "bench-plain", true, false), StoreTier::redis));
    rows.back().stored_mb = stored_mb("bench-plain");
    rows.push_back(measure("redis+zstd", opts(root, "bench-zstd", true, true), StoreTier::redis));
    rows.back().stored_mb = stored_mb("bench-zstd");
    rows.push_back(measure("remote file://", opts("file://" + root, "bench", false, false), StoreTier::remote));
    rows.push_back(measure("remote http://", opts(http.url(), "bench", false, false), StoreTier::remote));

    std::printf("model %s: %.1f MB; median of %d fetches per tier (memory: %d); Redis %s, %llu-byte chunks; HTTP %s\n",
                model_path.empty() ? "(random bytes)" : model_path.c_str(), mb, reps, reps * 20, redis.url().c_str(),
                static_cast<unsigned long long>(chunk), http.url().c_str());
    std::printf("%-15s %10s %10s %10s %11s %12s %14s\n", "tier", "total ms", "fetch ms", "verify ms", "fetch MB/s",
                "in Redis MB", "file total /");
    const double file_total = rows[3].total_ms;
    for (const Row& r : rows) {
      if (r.tier == "memory") {  // a pointer handed out: no transfer to rate
        std::printf("%-15s %10.4f %10s %10s %11s %12s %14s\n", r.tier.c_str(), r.total_ms, "-", "-", "-", "-", "-");
        continue;
      }
      std::string stored = r.stored_mb > 0 ? std::to_string(r.stored_mb).substr(0, 5) : "-";
      std::printf("%-15s %10.1f %10.1f %10.1f %11.0f %12s %13.2fx\n", r.tier.c_str(), r.total_ms, r.fetch_ms,
                  r.verify_ms, mb / (r.fetch_ms / 1000), stored.c_str(), file_total / r.total_ms);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_store: %s\n", e.what());
    return 1;
  }
}
