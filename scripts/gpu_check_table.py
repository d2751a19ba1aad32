#!/usr/bin/env python3
"""Builds scripts/gpu-check.sh's one table from the files its steps wrote.

  gpu_check_table.py WORKDIR OUTFILE

WORKDIR holds r1/summary.json (batch 1, 10 k requests), r32/summary.json
(batch 32), r32p/summary.json (batch 32, --pinned), torch_k1.json,
torch_k32.json (torch.profiler kernel time), copy32.json (CUDA-event copy),
overhead.txt (bench_gpu_overhead) and env.json. Writes the Markdown table to
OUTFILE and prints it. Exits 1 if a check fails (the table is written anyway).
"""
import json
import os
import re
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def stage(summary, name, field="mean_us"):
    s = summary["stages"][name]
    return s.get(field, float("nan")) if s.get("applicable", True) else float("nan")


def verdict(ok):
    return "PASS" if ok else "FAIL"


def main():
    work, out_path = sys.argv[1], sys.argv[2]
    env = load(os.path.join(work, "env.json"))
    r1 = load(os.path.join(work, "r1", "summary.json"))
    r32 = load(os.path.join(work, "r32", "summary.json"))
    r32p = load(os.path.join(work, "r32p", "summary.json"))
    k1 = load(os.path.join(work, "torch_k1.json"))
    k32 = load(os.path.join(work, "torch_k32.json"))
    cp = load(os.path.join(work, "copy32.json"))
    with open(os.path.join(work, "overhead.txt")) as f:
        overhead_text = f.read()
    m = re.search(r"^overhead_ratio ([0-9.]+)$", overhead_text, re.M)
    overhead = float(m.group(1)) if m else float("nan")

    lines = []
    add = lines.append
    add(f"GPU check · {env['gpu']} · torch {env['torch']} (CUDA {env['cuda']}) · {env['date']} · "
        f"model {env['model']} · inferprof {r1['tool']['version']}")
    add("")
    add("1. Stage breakdown on the GPU (mean µs per request; CUPTI times for h2d/compute/d2h)")
    add("")
    add("| batch | requests | input | preprocess | h2d | compute | d2h | overhead (gpu_idle) | total | kernels/req "
        "| h2d GB/s (peak pageable / pinned) |")
    add("|---|---|---|---|---|---|---|---|---|---|---|")
    for label, s in (("1", r1), ("32", r32), ("32 --pinned", r32p)):
        g = s["gpu"]
        idle = g["gpu_idle_us"] / max(s["requests"], 1)
        peak = g["copy_peak_gbps"]
        add(f"| {label} | {s['requests']} | {stage(s, 'input'):.1f} | {stage(s, 'preprocess'):.1f} | "
            f"{stage(s, 'h2d'):.1f} | {stage(s, 'compute'):.1f} | {stage(s, 'd2h'):.1f} | "
            f"{stage(s, 'overhead'):.1f} ({idle:.1f}) | {s['total']['mean_us']:.1f} | "
            f"{g['kernels_per_request']:.1f} | {g['h2d_gbps']:.2f} ({peak['h2d_pageable']:.2f} / "
            f"{peak['h2d_pinned']:.2f}) |")
    add("")

    checks = []
    # 2. h2d of a known-size copy: inferprof's p50 against CUDA events' p50.
    bytes_per_req = r32["gpu"]["h2d_bytes"] / max(r32["requests"], 1)
    ip = stage(r32, "h2d", "p50_us")
    ratio2 = ip / cp["p50_us"] if cp["p50_us"] else float("nan")
    same_size = abs(bytes_per_req - cp["bytes"]) < 1
    checks.append(("2. h2d of a {:.1f} MB pageable copy (batch 32): inferprof p50 vs CUDA events p50".format(
        cp["bytes"] / 1e6), f"{ip:.1f} µs vs {cp['p50_us']:.1f} µs = {ratio2:.3f}"
        + ("" if same_size else f" (sizes differ: {bytes_per_req:.0f} vs {cp['bytes']} B)"),
        "within 5%", same_size and abs(ratio2 - 1) <= 0.05))
    # 3. compute against torch.profiler's kernel total, same model file and batch.
    for label, s, k in (("1", r1, k1), ("32", r32, k32)):
        c = stage(s, "compute")
        ratio3 = c / k["kernel_us_per_forward"] if k["kernel_us_per_forward"] else float("nan")
        checks.append((f"3. compute vs torch.profiler kernel total, batch {label}",
                       f"{c:.1f} µs vs {k['kernel_us_per_forward']:.1f} µs = {ratio3:.3f} "
                       f"({s['gpu']['kernels_per_request']:.1f} vs {k['kernels_per_forward']:.1f} kernels)",
                       "within 5%", abs(ratio3 - 1) <= 0.05))
    # 4. tracer overhead, interleaved in one process.
    checks.append(("4. latency with CUPTI + NVTX on / off, batch 32 (bench_gpu_overhead, median of rounds)",
                   f"{overhead:.4f}", "at most 1.03", overhead <= 1.03))
    # 5. dropped records.
    g1 = r1["gpu"]
    checks.append((f"5. dropped CUPTI records over {r1['requests']:,} requests (batch 1)",
                   f"{g1['dropped_records']} dropped of {g1['activity_records']:,} "
                   f"({g1['unattributed_records']:,} not on a request)", "0",
                   r1["requests"] >= 10000 and g1["dropped_records"] == 0))

    add("| check | measured | target | result |")
    add("|---|---|---|---|")
    for name, measured, target, ok in checks:
        add(f"| {name} | {measured} | {target} | {verdict(ok)} |")
    text = "\n".join(lines) + "\n"
    with open(out_path, "w") as f:
        f.write(text)
    print(text)
    return 0 if all(c[3] for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
