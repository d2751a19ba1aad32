#!/usr/bin/env bash
# The traces bench/grid_sampling.sh was measured on (docs/simulate.md#sampling-error), as .iptrace in OUT_DIR:
#   cp.iptrace    libCacheSim's bundled block-I/O trace (data/cloudPhysicsIO: 113,872 requests, 48,974 keys)
#   cp40.iptrace  it repeated 40 times, each copy's keys relabelled: 4,554,880 requests over 1,958,960 keys,
#                 a large key space with the real trace's reuse
#   z.iptrace     Zipf(0.8) over 5,000,000 keys, 10,000,000 requests (seed 1)
# A small C++ generator writes the last two (compiled here with c++ -O2; no dependencies).
#
#   bench/grid_sampling_traces.sh LIBCACHESIM_DIR OUT_DIR [build/inferprof]
set -euo pipefail
L=${1:?usage: $0 LIBCACHESIM_DIR OUT_DIR [build/inferprof]}
O=${2:?usage: $0 LIBCACHESIM_DIR OUT_DIR [build/inferprof]}
B=${3:-build/inferprof}
mkdir -p "$O"
cat > "$O/gen.cpp" <<'CPP'
// gen zipf KEYS REQUESTS SKEW SEED OUT | gen relabel IN COPIES OUT (records: u64 key, i64 ts, u32 size, u32 flags)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>
static uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
struct Rec { uint64_t key; int64_t ts; uint32_t size, flags; };
static void header(FILE* f, uint64_t n) {
  char h[32] = {0};
  uint32_t version = 1, record = 24;
  memcpy(h, "IPTRACE1", 8); memcpy(h + 8, &version, 4); memcpy(h + 12, &record, 4); memcpy(h + 16, &n, 8);
  fwrite(h, 1, 32, f);
}
int main(int argc, char** argv) {
  if (argc < 5) return 2;
  if (std::string(argv[1]) == "zipf") {
    const uint64_t n = std::stoull(argv[2]), req = std::stoull(argv[3]);
    std::vector<double> cdf(n);
    double sum = 0;
    for (uint64_t k = 0; k < n; ++k) cdf[k] = sum += 1.0 / std::pow(double(k + 1), std::stod(argv[4]));
    std::mt19937_64 rng(std::stoull(argv[5]));
    std::uniform_real_distribution<double> u(0, sum);
    FILE* f = fopen(argv[6], "wb");
    header(f, req);
    for (uint64_t i = 0; i < req; ++i) {
      const Rec r{mix(uint64_t(std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin())), 0, 0, 0};
      fwrite(&r, 24, 1, f);
    }
    return fclose(f);
  }
  FILE* in = fopen(argv[2], "rb");
  char h[32];
  uint64_t n = 0;
  if (fread(h, 1, 32, in) != 32) return 1;
  memcpy(&n, h + 16, 8);
  std::vector<Rec> recs(n);
  if (fread(recs.data(), 24, n, in) != n) return 1;
  fclose(in);
  const int copies = std::stoi(argv[3]);
  FILE* f = fopen(argv[4], "wb");
  header(f, n * uint64_t(copies));
  for (int c = 0; c < copies; ++c)
    for (Rec r : recs) {
      if (c > 0) r.key = mix(r.key ^ mix(uint64_t(c)));
      r.ts = 0;
      r.flags &= ~2u;  // no timestamps: the copies would run back in time
      fwrite(&r, 24, 1, f);
    }
  return fclose(f);
}
CPP
c++ -O2 -o "$O/gen" "$O/gen.cpp"
"$B" convert "$L/data/cloudPhysicsIO.csv" --csv-columns ts=time,key=lbn -o "$O/cp.iptrace"
"$O/gen" relabel "$O/cp.iptrace" 40 "$O/cp40.iptrace"
"$O/gen" zipf 5000000 10000000 0.8 1 "$O/z.iptrace"
ls -l "$O"/*.iptrace
