#!/usr/bin/env bash
# Compile-and-link check of the gpu module's CUDA half (src/gpu/cuda/ and the
# factory with INFERPROF_HAS_CUDA=1) on a machine with a CUDA toolkit but a
# CPU-only libtorch, where INFERPROF_WITH_CUDA=ON cannot configure. The CUDA
# half includes no libtorch, so it compiles alone: with the project's warning
# flags, linked against the toolkit's CUPTI and CUDA runtime into a small
# program that asks for the device. Without a GPU that program must fail the
# way inferprof does: exit 3, "no CUDA device is usable".
#
#   scripts/check-gpu-sources.sh [CUDA_ROOT]     (default /usr/local/cuda)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cuda=${1:-/usr/local/cuda}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=(-std=c++17 -O1 -Wall -Wextra -Wpedantic -Wundef -Werror -I"$root/include" -I"$root/src" -isystem "$cuda/include")
cat >"$tmp/main.cpp" <<'CPP'
#include <cstdio>
#include "inferprof/error.hpp"
#include "inferprof/gpu.hpp"
int main() {
  using namespace inferprof;
  if (!gpu::kSupported) return 10;
  try {
    std::printf("device: %s\n", gpu::device_name(0).c_str());
    auto peak = gpu::measure_copy_peak(0, 8u << 20);
    std::printf("h2d pinned %.1f GB/s\n", peak.h2d_pinned);
    auto t = gpu::make_tracer({0, true});
    std::printf("records %llu\n", static_cast<unsigned long long>(t->finish().records));
    return 0;
  } catch (const Error& e) {
    std::printf("exit %d: %s\n", e.exit_code(), e.what());
    return e.exit_code();
  }
}
CPP
for src in gpu/cuda/cuda_tracer.cpp gpu/factory.cpp gpu/attribution.cpp timing/spans.cpp timing/error.cpp; do
  g++ "${flags[@]}" -DINFERPROF_HAS_CUDA=1 -c "$root/src/$src" -o "$tmp/$(basename "$src" .cpp).o"
done
g++ "${flags[@]}" -c "$tmp/main.cpp" -o "$tmp/main.o"
g++ "$tmp"/*.o -o "$tmp/gpu_probe" -L"$cuda/lib64" -Wl,-rpath,"$cuda/lib64" -lcupti -lcudart -lfmt -ldl -pthread
echo "check-gpu-sources: compiled and linked against $cuda (CUPTI $(grep -m1 'define CUPTI_API_VERSION' "$cuda/include/cupti_version.h" | awk '{print $3}'))"
set +e
"$tmp/gpu_probe"
rc=$?
set -e
if [[ $rc -eq 0 ]]; then
  echo "check-gpu-sources: a GPU is here and the tracer started"
elif [[ $rc -eq 3 ]]; then
  echo "check-gpu-sources: no GPU here: the probe exited 3 as inferprof does"
else
  echo "check-gpu-sources: unexpected exit $rc" >&2
  exit 1
fi
