#!/usr/bin/env python3
"""Whole-process start-up and simulate cost of the inferprof binary.

  python3 bench/startup.py [--binary build/inferprof [--binary OTHER/inferprof]] [--runs 15] [--requests 2000000]

Measures, over several runs each (min and median; the machine may be shared):
  - `inferprof --version`: wall time and peak RSS (targets: <= 20 ms, <= 20 MB);
  - `inferprof simulate --trace T.iptrace --tier l1=lru:10000` over a
    2 M-request .iptrace made with gen-trace + convert (target: <= 0.35 s);
  - `inferprof gen-model` for contrast: a command that loads libtorch.
Each run is one process (under GNU time, for its peak RSS), timed from spawn
to exit, so the figures include loading the executable and its libraries; CPU
is user + system time of the run. With several --binary, their runs alternate
(A, B, A, B, ...) so that both see the same machine, and each gets its line.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time


def measure_interleaved(argvs, runs):
    """measure() of each command line, their runs alternating; one result per command line."""
    results = [([], [], []) for _ in argvs]
    for _ in range(runs):
        for argv, (walls, cpus, rss) in zip(argvs, results):
            w, c, r = measure(argv, 1)
            walls += w
            cpus += c
            rss += r
    return results


def measure(argv, runs):
    """Wall (spawn to exit), CPU (user + system) and peak RSS of each run.

    GNU time reports the RSS: a child's peak counts its pages before exec, so
    a spawn from this (large) Python process would report Python's."""
    walls, cpus, rss = [], [], []
    with tempfile.NamedTemporaryFile() as out:
        for _ in range(runs):
            devnull = os.open(os.devnull, os.O_WRONLY)
            t0 = time.perf_counter()
            pid = os.posix_spawn("/usr/bin/time", ["/usr/bin/time", "-f", "%M", "-o", out.name] + argv, os.environ,
                                 file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
            _, status, usage = os.wait4(pid, 0)
            walls.append(time.perf_counter() - t0)
            os.close(devnull)
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit(f"{' '.join(argv)}: exit {os.waitstatus_to_exitcode(status)}")
            cpus.append(usage.ru_utime + usage.ru_stime)
            with open(out.name) as f:
                rss.append(int(f.read().split()[-1]) / 1024)  # KiB -> MiB
    return walls, cpus, rss


def report(name, walls, cpus, rss, wall_target=None, rss_target=None):
    line = (f"{name:<40} wall min {min(walls) * 1000:7.1f} ms  median {statistics.median(walls) * 1000:7.1f} ms"
            f"  CPU median {statistics.median(cpus) * 1000:7.1f} ms  RSS median {statistics.median(rss):6.1f} MB")
    verdicts = []
    if wall_target is not None:
        verdicts.append(f"wall min {'ok' if min(walls) <= wall_target else 'OVER'} (<= {wall_target * 1000:g} ms)")
    if rss_target is not None:
        verdicts.append(f"RSS {'ok' if statistics.median(rss) <= rss_target else 'OVER'} (<= {rss_target:g} MB)")
    print(line + ("  " + ", ".join(verdicts) if verdicts else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", action="append",
                    help="the inferprof to measure (repeatable; default build/inferprof)")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--requests", type=int, default=2_000_000)
    ap.add_argument("--keys", type=int, default=100_000)
    args = ap.parse_args()
    binaries = [os.path.abspath(b) for b in
                (args.binary or [os.path.join(os.path.dirname(__file__), "..", "build", "inferprof")])]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (a loaded machine inflates wall, not CPU)")
    with tempfile.TemporaryDirectory(prefix="inferprof-startup-") as tmp:
        jsonl, iptrace = os.path.join(tmp, "t.jsonl"), os.path.join(tmp, "t.iptrace")
        subprocess.run([binaries[0], "gen-trace", "--requests", str(args.requests), "--keys", str(args.keys), "--zipf",
                        "1.0", "-o", jsonl], check=True, stdout=subprocess.DEVNULL)
        subprocess.run([binaries[0], "convert", jsonl, "-o", iptrace], check=True, stdout=subprocess.DEVNULL)
        os.remove(jsonl)
        print(f"{', '.join(binaries)}; {args.runs} runs each; trace: {args.requests:,} requests, {args.keys:,} keys "
              f"(zipf 1.0), {os.path.getsize(iptrace) / 1e6:.1f} MB .iptrace")
        model = os.path.join(tmp, "m.pt")
        cases = [("inferprof --version", ["--version"], args.runs, 0.020, 20),
                 ("inferprof --help", ["--help"], args.runs, None, None),
                 ("inferprof simulate --tier l1=lru:10000", ["simulate", "--trace", iptrace, "--tier", "l1=lru:10000"],
                  args.runs, 0.35, None),
                 ("inferprof gen-model (loads libtorch)", ["gen-model", "--arch", "mlp", "-o", model],
                  max(3, args.runs // 3), None, None)]
        for name, argv, runs, wall_target, rss_target in cases:
            results = measure_interleaved([[b] + argv for b in binaries], runs)
            for k, result in enumerate(results):
                label = name if len(binaries) == 1 else f"{name} [{k + 1}]"
                report(label, *result, wall_target, rss_target)


if __name__ == "__main__":
    main()
