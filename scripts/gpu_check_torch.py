#!/usr/bin/env python3
"""The reference side of scripts/gpu-check.sh, in PyTorch on the same machine.

  gpu_check_torch.py kernels MODEL --batch N [--iters K] [--device cuda]
      kernel time per forward pass that torch.profiler reports (µs), for the
      same TorchScript file and batch inferprof ran (float32 input, as after
      the default profile's to_float).
  gpu_check_torch.py copy --shape 32,3,224,224 [--iters K] [--device cuda]
      host->device copy of a pageable float32 tensor of that shape, timed with
      CUDA events (median, µs).

Prints one JSON object. With --device cpu it runs the same code paths on the
CPU (a dry run of the script where there is no GPU).
"""
import argparse
import json
import statistics
import sys

import torch


def is_device_event(evt):
    # Kernel/memcpy/memset events are the device-side ones; the attribute was
    # renamed over the releases (device_type is in all 2.x).
    dt = getattr(evt, "device_type", None)
    return dt is not None and dt != torch.autograd.DeviceType.CPU


def kernels(args):
    dev = torch.device(args.device)
    model = torch.jit.load(args.model, map_location=dev)
    model.eval()
    shape = [args.batch, 3, 224, 224]
    x = torch.rand(shape, dtype=torch.float32, device=dev)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    activities = [torch.profiler.ProfilerActivity.CPU]
    if dev.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.inference_mode():
        for _ in range(args.warmup):  # TorchScript's profiling runs, cuDNN's choices
            model(x)
        sync()
        with torch.profiler.profile(activities=activities) as prof:
            for _ in range(args.iters):
                model(x)
                sync()
    total_us = 0.0
    count = 0
    names = {}
    for evt in prof.events():
        if dev.type == "cuda":
            if not is_device_event(evt) or evt.name.startswith("Memcpy"):
                continue
        elif evt.name != "aten::conv2d":  # CPU dry run: some op, to exercise the code
            continue
        us = evt.time_range.elapsed_us()
        total_us += us
        count += 1
        names[evt.name] = names.get(evt.name, 0.0) + us
    top = sorted(names.items(), key=lambda kv: -kv[1])[:5]
    print(json.dumps({
        "what": "torch.profiler kernel time per forward",
        "torch": torch.__version__,
        "batch": args.batch,
        "iters": args.iters,
        "kernel_us_per_forward": total_us / args.iters,
        "kernels_per_forward": count / args.iters,
        "top": [[n, us / args.iters] for n, us in top],
    }))


def copy(args):
    dev = torch.device(args.device)
    shape = [int(d) for d in args.shape.split(",")]
    x = torch.rand(shape, dtype=torch.float32)  # pageable, like inferprof's preprocessed input
    times = []
    if dev.type == "cuda":
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        for i in range(args.iters + 3):
            start.record()
            y = x.to(dev)
            stop.record()
            stop.synchronize()
            if i >= 3:
                times.append(start.elapsed_time(stop) * 1e3)  # ms -> µs
            del y
    else:
        import time
        for i in range(args.iters + 3):
            t0 = time.perf_counter()
            y = x.clone()
            t1 = time.perf_counter()
            if i >= 3:
                times.append((t1 - t0) * 1e6)
            del y
    nbytes = x.numel() * x.element_size()
    med = statistics.median(times)
    print(json.dumps({
        "what": "pageable float32 h2d copy, CUDA events",
        "bytes": nbytes,
        "iters": args.iters,
        "p50_us": med,
        "min_us": min(times),
        "gbps": nbytes / (med * 1e3),
    }))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    k = sub.add_parser("kernels")
    k.add_argument("model")
    k.add_argument("--batch", type=int, required=True)
    k.add_argument("--iters", type=int, default=50)
    k.add_argument("--warmup", type=int, default=10)
    k.add_argument("--device", default="cuda")
    c = sub.add_parser("copy")
    c.add_argument("--shape", required=True)
    c.add_argument("--iters", type=int, default=50)
    c.add_argument("--device", default="cuda")
    args = p.parse_args()
    {"kernels": kernels, "copy": copy}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
