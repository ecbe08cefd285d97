#!/usr/bin/env python3
"""make bench-report: how fast `iostrata report` renders a long recording, and how big.

A synthetic recording (written here, no tracing): one hour of 1-second intervals, all four
layers with every stage, 20 label sets (5 per layer), each stage's latency drifting over the
hour with bursts and a rare tail, the buckets those of bpf/hist.h. Then `iostrata report` is
timed (best and median of a few runs) and the HTML's size is printed against the goals of
issue 12: <= 2 s and <= 5 MB. Figures are printed, never asserted.
"""
import argparse
import os
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

sys.path.insert(0, str(ROOT / "tests" / "helpers"))
from synthrec import synthesize  # noqa: E402  (the tests' synthetic recordings)


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
            r = subprocess.run([str(IOSTRATA), "report", str(rec), "-o", str(html), "--force"],
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
