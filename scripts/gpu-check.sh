#!/usr/bin/env bash
# The GPU check (docs/gpu.md), for a machine with an NVIDIA GPU, a CUDA toolkit
# and a pip-installed torch, but no internet and no Debian packages. Builds
# inferprof against python3's torch with the vendored dependencies (copy
# third_party/ along: scripts/vendor-deps.sh fills it), then measures and
# prints ONE table (also written to $OUT/gpu-check-table.md, or to
# gpu-check-out/ without $OUT):
#   1. ResNet-18-shaped model, batch 1 and 32: the stage breakdown on the GPU
#   2. inferprof's h2d of a known-size copy vs CUDA event timing of that copy
#   3. inferprof's compute vs torch.profiler's kernel total (same file, batch)
#   4. latency with CUPTI + NVTX on vs off, interleaved in one process (batch 32)
#   5. dropped CUPTI records over 10 k requests
# Every step has a timeout and says its name when it fails. Exit 0: all checks
# pass; 1: a check failed (table printed); other: a step failed (a step's own
# exit 1 is reported as 2).
#
#   scripts/gpu-check.sh   (env: PYTHON, CUDA_ROOT, JOBS, GPU_CHECK_REQUESTS, CXX_STANDARD)
set -Eeuo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=${OUT:-$root/gpu-check-out}
mkdir -p "$out"
work=$(mktemp -d /tmp/gpu-check.XXXXXX)
# The models and traces are large and everything kept is copied to $out.
trap 'rm -rf "$work"' EXIT
log=$out/gpu-check.log
: >"$log"
py=${PYTHON:-python3}
jobs=${JOBS:-16}
requests=${GPU_CHECK_REQUESTS:-10000}
build=$root/build-gpu
step_name="start"
t_start=$(date +%s)

step() {
  step_name=$1
  echo "== [$(($(date +%s) - t_start)) s] $step_name" | tee -a "$log"
}
# shellcheck disable=SC2317  # called by the ERR trap
fail() {
  local rc=$?
  # Exit 1 means "a check failed"; a step that failed with 1 (cmake, a
  # compiler, inferprof's check_failed) must not read as that.
  if ((rc == 1)); then
    echo "gpu-check: FAILED at step '$step_name' (exit 1, reported as 2); the last lines of $log:" >&2
    rc=2
  else
    echo "gpu-check: FAILED at step '$step_name' (exit $rc); the last lines of $log:" >&2
  fi
  tail -n 30 "$log" >&2 || true
  exit "$rc"
}
trap fail ERR
# run SECONDS CMD...: the command's output goes to the log; a hang is cut off.
run() {
  local limit=$1
  shift
  timeout --kill-after=10 "$limit" "$@" >>"$log" 2>&1
}

step "environment"
nvidia-smi -L | tee -a "$log"
torch_prefix=$(timeout 120 "$py" -c 'import torch;print(torch.utils.cmake_prefix_path)')
torch_version=$(timeout 60 "$py" -c 'import torch;print(torch.__version__)')
torch_cuda=$(timeout 60 "$py" -c 'import torch;print(torch.version.cuda)')
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
cuda_root=${CUDA_ROOT:-/usr/local/cuda}
echo "torch $torch_version (CUDA $torch_cuda) at $torch_prefix; CUDA toolkit $cuda_root; $gpu_name" | tee -a "$log"
[[ -f third_party/src/simdjson.cpp ]] || { echo "third_party/ is missing: run scripts/vendor-deps.sh and carry it" | tee -a "$log"; false; }
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

step "configure (vendored deps, INFERPROF_WITH_CUDA=ON)"
cuda_args=(-DCUDAToolkit_ROOT="$cuda_root")
[[ -x $cuda_root/bin/nvcc ]] && cuda_args+=(-DCMAKE_CUDA_COMPILER="$cuda_root/bin/nvcc")
run 300 cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$torch_prefix" "${cuda_args[@]}" -DCMAKE_CXX_STANDARD="${CXX_STANDARD:-17}" \
  -DINFERPROF_VENDORED_DEPS=ON -DINFERPROF_WITH_CUDA=ON \
  -DINFERPROF_BUILD_TESTS=OFF -DINFERPROF_BUILD_BENCH=ON
grep -E "inferprof GPU support" "$log" | tail -n 1 || true

step "build inferprof + bench_gpu_overhead (-j$jobs)"
run 480 cmake --build "$build" -j "$jobs" --target inferprof bench_gpu_overhead
B=$build/inferprof

step "model and traces"
run 120 "$B" gen-model --arch resnet18 -o "$work/resnet18.pt"
run 120 "$B" gen-trace --requests "$requests" --keys "$requests" --shape 1,3,224,224 --dtype uint8 -o "$work/b1.jsonl"
run 120 "$B" gen-trace --requests 300 --keys 300 --shape 32,3,224,224 --dtype uint8 -o "$work/b32.jsonl"

step "inferprof run, batch 1, $requests requests (checks 1 and 5)"
run 300 "$B" run "$work/resnet18.pt" --trace "$work/b1.jsonl" --device cuda --warmup 10 --no-progress --out "$work/r1"
step "inferprof run, batch 32 (checks 1, 2, 3)"
run 240 "$B" run "$work/resnet18.pt" --trace "$work/b32.jsonl" --device cuda --warmup 10 --no-progress --out "$work/r32"
step "inferprof run, batch 32 --pinned (check 1)"
run 240 "$B" run "$work/resnet18.pt" --trace "$work/b32.jsonl" --device cuda --pinned --warmup 10 --no-progress \
  --out "$work/r32p"
sed -n '1,30p' "$work/r32/stacks.folded" >>"$log" || true

step "torch.profiler kernel totals and CUDA-event copy timing (checks 2, 3)"
export PYTHONUNBUFFERED=1
{
  timeout 300 "$py" scripts/gpu_check_torch.py kernels "$work/resnet18.pt" --batch 1 >"$work/torch_k1.json"
  timeout 300 "$py" scripts/gpu_check_torch.py kernels "$work/resnet18.pt" --batch 32 >"$work/torch_k32.json"
  timeout 120 "$py" scripts/gpu_check_torch.py copy --shape 32,3,224,224 >"$work/copy32.json"
} 2>>"$log"
cat "$work"/torch_k1.json "$work"/torch_k32.json "$work"/copy32.json >>"$log"

step "bench_gpu_overhead, batch 32, tracing on/off interleaved (check 4)"
timeout 300 "$build/bench/bench_gpu_overhead" "$work/resnet18.pt" --batch 32 --requests 30 --rounds 10 \
  >"$work/overhead.txt" 2>>"$log"
cat "$work/overhead.txt" >>"$log"

step "table"
printf '{"gpu": "%s", "torch": "%s", "cuda": "%s", "date": "%s", "model": "gen-model --arch resnet18"}\n' \
  "$gpu_name" "$torch_version" "$torch_cuda" "$(date -u +%F)" >"$work/env.json"
cp "$work/r1/summary.json" "$out/summary-b1.json"
cp "$work/r32/summary.json" "$out/summary-b32.json"
cp "$work/overhead.txt" "$out/overhead.txt"
trap - ERR
set +e
"$py" scripts/gpu_check_table.py "$work" "$out/gpu-check-table.md"
rc=$?
echo "gpu-check: done in $(($(date +%s) - t_start)) s; table in $out/gpu-check-table.md (exit $rc)"
exit "$rc"
