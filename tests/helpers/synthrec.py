"""Synthetic recordings in iostrata's format, written without tracing: the buckets are those
of bpf/hist.h (the same arithmetic, here in Python), so the report reads them as it reads a
real one. Used by make bench-report (an hour, 4 layers, 20 label sets) and by the tests
(short ones, and damaged ones)."""
import gzip
import json
import math
import random

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


def synthesize(path, seconds, seed=1, meta_record=True, fmt=1, end_record=True, extra=None):
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
            # another seed, another host: two of them recorded the same seconds, not one twice
            "host": "synthetic" if seed == 1 else f"synthetic-{seed}", "kernel": {"release": "6.1.0", "version": "#1", "machine":
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
    meta["format"] = fmt
    if extra:  # fields of a newer format
        meta.update(extra)
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wt") as f:
        if meta_record:
            f.write(json.dumps(meta) + "\n")
        for t in range(seconds):
            # the load over the hour: a slow swell, two bursts, noise
            load = 1 + 0.5 * math.sin(t / 600.0) + (1.2 if 1200 < t < 1260 or
                                                    2900 < t < 2960 else 0)
            li = min(3, max(0, int(load + rng.random() - 0.5)))
            hists = ",".join(rng.choice(variants[(k, li)]) for k in range(len(series)))
            at = seconds * 4 // 5   # a burst of drops 80 % of the way in: 3 in 4 intervals
            drops = '{"inflight_full":%d}' % (3 if at <= t < at + 4 else 0)
            f.write('{"type":"interval","ts":%d,"interval_ns":1000000000,"hists":[%s],'
                    '"drops":%s,"events":{}}\n' % (start + (t + 1) * 10**9, hists, drops))
        if not end_record:
            return len(series)
        f.write(json.dumps({"type": "end", "ts": start + seconds * 10**9, "reason": "duration",
                            "intervals": seconds, "duration_ns": seconds * 10**9,
                            "totals": [], "drops": {"inflight_full": 12}, "events": {}}) + "\n")
    return len(series)


