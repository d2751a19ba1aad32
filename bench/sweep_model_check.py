#!/usr/bin/env python3
"""Reruns sweep's queueing model outside the tool, from `sweep --out DIR --service-times`.

  bench/sweep_model_check.py DIR [DIR ...]

For each sweep folder and configuration it recomputes the model's capacity from
service_times.csv (each request's median service over the replays, scaled to
the replays' mean total, through a FIFO queue with the configuration's workers
at the trace's arrivals scaled to a load; p99 by nearest rank; bisection) and
prints it beside sweep.json's. Given several folders of the same sweep, it also
prints each one's capacity with its services scaled to the first folder's
total: how far the capacities move once the machine's pace is held fixed.
An independent check of the tool (docs/sweep-measurements.md), not a test.
"""
import csv
import json
import math
import statistics
import sys
from collections import defaultdict
from heapq import heappop, heappush


def fifo_latencies(arrivals, services, workers):
    free_at = [0.0] * max(workers, 1)
    out = []
    for a, s in zip(arrivals, services):
        start = max(a, heappop(free_at))
        heappush(free_at, start + s)
        out.append(start + s - a)
    return out


def p99(values):
    v = sorted(values)
    return v[max(1, math.ceil(0.99 * len(v))) - 1]


def capacity_load(unit_arrivals, measured, services, workers, slo_us, low, high):
    def at(load):
        lat = fifo_latencies([a / load for a in unit_arrivals], services, workers)
        return p99([x for x, m in zip(lat, measured) if m])

    if at(low) > slo_us:
        return 0.0
    if at(high) <= slo_us:
        return high
    for _ in range(40):
        mid = (low + high) / 2
        if at(mid) <= slo_us:
            low = mid
        else:
            high = mid
    return low


def load_sweep(folder):
    doc = json.load(open(f"{folder}/sweep.json", encoding="utf-8"))
    replays = defaultdict(dict)  # caches -> replay -> (load, [service])
    arrivals, measured = defaultdict(list), defaultdict(list)
    with open(f"{folder}/service_times.csv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            name, replay = row["caches"], int(row["replay"])
            load, services = replays[name].setdefault(replay, (float(row["load"]), []))
            services.append(float(row["service_us"]))
            if replay == 0:
                arrivals[name].append(float(row["unit_arrival_us"]))
                measured[name].append(row["measured"] == "1")
    return doc, replays, arrivals, measured


def main(folders):
    sweeps = [load_sweep(f) for f in folders]
    first_total = {}
    rows = defaultdict(list)
    for folder, (doc, replays, arrivals, measured) in zip(folders, sweeps):
        slo_us = doc["slo_p99_ms"] * 1000
        for c in doc["configurations"]:
            name, model = c["name"], c.get("queueing_model")
            if not model or name not in replays:
                continue
            runs = [replays[name][k] for k in sorted(replays[name])]
            n = len(arrivals[name])
            medians = [statistics.median(services[k] for _, services in runs) for k in range(n)]
            typical = sum(medians)
            pace = statistics.mean(sum(services) / typical for _, services in runs)
            total = typical * pace
            loads = [load for load, _ in runs]
            steps = c["steps"]
            per_load = steps[0]["offered_rps"] / steps[0]["load"]
            low, high = steps[0]["load"] / 16, 1.25 * max(loads)
            workers = c.get("workers", 1)
            own = per_load * capacity_load(arrivals[name], measured[name], [m * pace for m in medians], workers,
                                           slo_us, low, high)
            first_total.setdefault(name, total)
            scale = first_total[name] / typical
            common = per_load * capacity_load(arrivals[name], measured[name], [m * scale for m in medians], workers,
                                              slo_us, low, high)
            rows[name].append((own, common, total))
            print(f"{folder}: {name}: model {model['capacity_rps']:.1f} req/s, rerun here {own:.1f} "
                  f"({own / model['capacity_rps'] - 1:+.2%}); service total {total / 1000:.1f} ms; "
                  f"at the first folder's total {common:.1f} req/s")
    if len(folders) > 1:
        for name, r in rows.items():
            def spread(xs):
                return max(xs) / min(xs) if min(xs) > 0 else float("inf")
            print(f"{name}: model max/min {spread([x[0] for x in r]):.3f}; service total max/min "
                  f"{spread([x[2] for x in r]):.3f}; at one service total max/min {spread([x[1] for x in r]):.3f}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
