#!/usr/bin/env python3
"""What a spilled histogram key costs: iostrata -l block,uring -P, its key in the per-CPU
histogram map (as on a host with few CPUs) against its key in a spill slot shared by the CPUs
(as on a host with many CPUs, where the per-CPU map holds ~17 keys: docs/design.md, "Histogram
keys on hosts with many CPUs").

fio (io_uring, 4 KiB random reads, qd 32, O_DIRECT) on a tmpfs-backed loop device, --seconds per
run, --runs rounds, the two alternated within each round and swapping order every other round.
The spilled runs start iostrata with --hist-keys 1 (one key per per-CPU map) and let a one-NOP
io_uring process take that key before fio starts, so every fio request's histograms are in a
spill slot; one interval for the whole run, so no drain frees a key meanwhile. Figure: the uring
programs' kernel.bpf_stats_enabled run time (of the tracer's own programs) per I/O fio
completed, median over the rounds; the sysctl and the device are restored on exit.

Usage: bench/spill.py [--seconds S] [--runs N]
"""
import argparse
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import layers  # noqa: E402
from block import IOSTRATA, bench_env, prog_stats, wait_for  # noqa: E402

LOAD = Path(__file__).resolve().parent.parent / "bin" / "iostrata-load"
CASES = (("per-CPU key", [], False), ("spilled key", ["--hist-keys", "1"], True))


def run(dev, seconds, extra, nop_first):
    """uring BPF ns per I/O and fio's IOPS for one run."""
    cmd = [str(IOSTRATA), "-l", "block,uring", "-P", "3600", "-j", *extra]
    tracer = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    ids = set()

    def mine(stats):
        ids.update(layers.owned_progs(tracer.pid))
        return layers.own(stats, ids)
    try:
        wait_for(layers.iostrata_ready(tracer, " ".join(cmd)), f"{cmd[0]} to attach", 60)
        if nop_first:
            subprocess.run([str(LOAD), "--engine", "io_uring", "--op", "nop", "--ios", "1"],
                           check=True, capture_output=True)
        before = mine(prog_stats(("",)))
        ios, iops = layers.fio(dev, seconds)
        after = mine(prog_stats(("",)))
    finally:
        layers.stop(tracer, cmd[0])
    uring = layers.FAMILIES["uring"]
    ns = sum(after[k][0] - before.get(k, (0, 0))[0] for k in after if k.startswith(uring))
    return ns / ios, iops


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    res = {name: [] for name, _, _ in CASES}
    with bench_env() as dev:
        for r in range(args.runs):
            for name, extra, nop in (CASES if r % 2 == 0 else CASES[::-1]):
                ns, iops = run(dev, args.seconds, extra, nop)
                res[name].append(ns)
                print(f"round {r + 1}: {name}: {ns:.0f} uring ns/I/O, {iops:.0f} IOPS",
                      flush=True)
    med = {k: statistics.median(v) for k, v in res.items()}
    for k, v in res.items():
        print(f"{k}: median {med[k]:.0f} uring BPF ns/I/O (rounds: "
              f"{', '.join(f'{x:.0f}' for x in v)})")
    a, b = med["per-CPU key"], med["spilled key"]
    print(f"a spilled key costs {b - a:+.0f} ns per I/O ({(b - a) / a * 100:+.0f} %)")


if __name__ == "__main__":
    main()
