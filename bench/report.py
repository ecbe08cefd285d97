#!/usr/bin/env python3
"""make bench-report: how fast `iostrata report` renders a long recording, and how big.

A synthetic recording (written here, no tracing): one hour of 1-second intervals, all four
layers with every stage, 20 label sets (5 per layer), each stage's latency drifting over the
hour with bursts and a rare tail, the buckets those of bpf/hist.h. Then `iostrata report` is
timed (best and median of a few runs) and the HTML's size is printed against the goals of
issue 12: <= 2 s and <= 5 MB. Figures are printed, never asserted.
"""
import argparse
import gzip
import json
import math
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IOSTRATA = ROOT / "bin" / "iostrata"
GOAL_S, GOAL_MB = 2.0, 5.0

SUB_BITS, SUB, MAX_LOG2 = 4, 16, 36
OVERFLOW = SUB + (MAX_LOG2 - SUB_BITS) * SUB


def hist_index(v):
    """bpf/hist.h's hist_index."""
    if v < SUB:
        return v
    m = v.bit_length() - 1
    if m >= MAX_LOG2:
        return OVERFLOW
    return ((m - SUB_BITS + 1) << SUB_BITS) + ((v >> (m - SUB_BITS)) & (SUB - 1))


def hist_lo(i):
    if i < SUB:
        return i
    if i >= OVERFLOW:
        return 1 << MAX_LOG2
    m = (i >> SUB_BITS) + SUB_BITS - 1
    return (SUB + (i & (SUB - 1))) << (m - SUB_BITS)


def hist_hi(i):
    if i >= OVERFLOW:
        return None
    if i < SUB:
        return i + 1
    return hist_lo(i) + (1 << ((i >> SUB_BITS) + SUB_BITS - 1 - SUB_BITS))


LAYERS = {
    "block": (["wait", "device", "total"], [20e3, 150e3, 170e3],
              lambda i: {"disk": f"nvme{i // 2}n1", "op": "read" if i % 2 == 0 else "write",
                         "flags": "sync"}),
    "uring": (["submit_cqe", "cqe_reap", "total", "submit_bio", "wait", "device", "device_cqe"],
              [180e3, 8e3, 190e3, 4e3, 15e3, 150e3, 6e3],
              lambda i: {"opcode": ["read", "write", "fsync", "read", "write"][i],
                         "pid": 4000 + i, "comm": f"db-worker-{i}"}),
    "aio": (["submit_complete", "complete_reap", "total", "submit_bio", "wait", "device"],
            [200e3, 12e3, 215e3, 5e3, 20e3, 160e3],
            lambda i: {"opcode": ["pread", "pwrite", "pread", "pwrite", "fsync"][i],
                       "pid": 5000 + i, "comm": f"aio-app-{i}"}),
    "syscall": (["duration"], [60e3],
                lambda i: {"syscall": ["pread64", "pwrite64", "read", "write", "fsync"][i],
                           "pid": 6000 + i, "comm": "app"}),
}


def hist_json(layer, stage, labels, median_ns, count, rng):
    """One histogram record: a skewed bell of buckets around the median, a rare slow tail."""
    c = hist_index(int(median_ns))
    width = rng.uniform(5, 14)
    weights = {}
    for i in range(max(0, c - int(2 * width)), min(OVERFLOW - 1, c + int(3.5 * width))):
        d = (i - c) / width
        weights[i] = math.exp(-d * d * (1.0 if d < 0 else 0.35))
    if rng.random() < 0.3:  # the rare tail: a few I/Os 5-50x slower
        t = hist_index(int(median_ns * rng.uniform(5, 50)))
        weights[min(t, OVERFLOW - 1)] = weights.get(t, 0) + 0.002
    total_w = sum(weights.values())
    buckets, n_sum = [], 0
    for i in sorted(weights):
        n = int(count * weights[i] / total_w)
        if n:
            buckets.append([hist_lo(i), hist_hi(i), n])
            n_sum += n
    if not buckets:
        buckets = [[hist_lo(c), hist_hi(c), 1]]
        n_sum = 1
    lo_b, hi_b = buckets[0], buckets[-1]
    mid = [b for b in buckets if b[0] <= median_ns < (b[1] or 1 << 62)]
    p = mid[0][0] if mid else lo_b[0]
    return {"layer": layer, "stage": stage, "labels": labels, "count": n_sum,
            "sum_ns": sum((b[0] + (b[1] - b[0]) // 2) * b[2] for b in buckets),
            "min_ns": lo_b[0], "max_ns": hi_b[1] - 1, "p50_ns": p, "p90_ns": p, "p99_ns": p,
            "p999_ns": hi_b[0], "unmeasured": 0, "buckets": buckets}


def synthesize(path, seconds, seed=1):
    rng = random.Random(seed)
    series = []
    for layer, (stages, medians, labels_of) in LAYERS.items():
        for i in range(5):
            labels = labels_of(i)
            for stage, med in zip(stages, medians):
                series.append((layer, stage, labels, med * (1 + 0.4 * i), 40 + 30 * i))
    # a handful of variants per series and level of load: the lines are assembled from them
    levels = [0.6, 1.0, 1.6, 3.0]
    variants = {}
    for k, (layer, stage, labels, med, cnt) in enumerate(series):
        for li, lv in enumerate(levels):
            variants[(k, li)] = [json.dumps(hist_json(layer, stage, labels, med * lv,
                                                      int(cnt * (0.8 + 0.4 * lv)), rng),
                                            separators=(",", ":")) for _ in range(4)]
    start = 1_790_000_000 * 10**9
    meta = {"type": "meta", "format": 1, "tool": "iostrata", "version": "bench",
            "host": "synthetic", "kernel": {"release": "6.1.0", "version": "#1", "machine":
                                            "x86_64"},
            "cpus": 16, "start_ns": start, "argv": ["record", "-o", "synthetic", "-D", "-F",
                                                    "-P", "-O"],
            "options": {"layers": [], "per_disk": True, "per_op": True, "per_process": True,
                        "per_opcode": True, "interval_ns": 10**9, "count": 0,
                        "duration_ns": seconds * 10**9, "inflight": 131072},
            "layers": [{"name": n, "stages": s[0], "attach": []} for n, s in LAYERS.items()],
            "buckets": {"scheme": "log-linear", "exact_below_ns": 16, "per_octave": 16,
                        "overflow_from_ns": 1 << 36, "slots": OVERFLOW + 1},
            "disks": [{"name": "nvme0n1", "scheduler": "none"}]}
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wt") as f:
        f.write(json.dumps(meta) + "\n")
        for t in range(seconds):
            # the load over the hour: a slow swell, two bursts, noise
            load = 1 + 0.5 * math.sin(t / 600.0) + (1.2 if 1200 < t < 1260 or
                                                    2900 < t < 2960 else 0)
            li = min(3, max(0, int(load + rng.random() - 0.5)))
            hists = ",".join(rng.choice(variants[(k, li)]) for k in range(len(series)))
            drops = '{"inflight_full":%d}' % (3 if 2900 < t < 2905 else 0)
            f.write('{"type":"interval","ts":%d,"interval_ns":1000000000,"hists":[%s],'
                    '"drops":%s,"events":{}}\n' % (start + (t + 1) * 10**9, hists, drops))
        f.write(json.dumps({"type": "end", "ts": start + seconds * 10**9, "reason": "duration",
                            "intervals": seconds, "duration_ns": seconds * 10**9,
                            "totals": [], "drops": {"inflight_full": 15}, "events": {}}) + "\n")
    return len(series)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=3600)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", help="keep the recording and report in this directory")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="iostrata-bench-report.", dir="/var/tmp") as tmp:
        d = Path(a.keep) if a.keep else Path(tmp)
        d.mkdir(parents=True, exist_ok=True)
        rec, html = d / "synthetic.ndjson.gz", d / "synthetic.html"
        t = time.monotonic()
        n = synthesize(rec, a.seconds)
        print(f"recording: {a.seconds} intervals x {n} histograms (4 layers, 20 label sets), "
              f"{rec.stat().st_size / 1e6:.1f} MB gzip, written in {time.monotonic() - t:.1f} s")
        load = os.getloadavg()[0]  # another job on the machine slows the wall clock
        times, cpu = [], []
        for _ in range(a.runs):
            ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.monotonic()
            r = subprocess.run([str(IOSTRATA), "report", str(rec), "-o", str(html)],
                               capture_output=True, text=True)
            times.append(time.monotonic() - t)
            ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(ru1.ru_utime - ru0.ru_utime + ru1.ru_stime - ru0.ru_stime)
            if r.returncode:
                sys.exit(f"iostrata report failed: {r.stderr}")
        size_mb = html.stat().st_size / 1e6
        best, med = min(times), statistics.median(times)
        print(r.stdout.strip())
        print(f"render: best {best:.2f} s, median {med:.2f} s of {a.runs} wall "
              f"(goal <= {GOAL_S:.0f} s: {'MET' if med <= GOAL_S else 'NOT MET'}); "
              f"CPU {statistics.median(cpu):.2f} s (both threads), "
              f"load average before {load:.2f}")
        print(f"html:   {size_mb:.2f} MB (goal <= {GOAL_MB:.0f} MB: "
              f"{'MET' if size_mb <= GOAL_MB else 'NOT MET'})")


if __name__ == "__main__":
    main()
