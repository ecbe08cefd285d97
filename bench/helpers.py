#!/usr/bin/env python3
"""What each building block of a tracing program costs on this machine.

bin/bench-floor helpers attaches one tp_btf program per block to block_rq_issue (bench/helpers.bpf.c):
an empty one, a clock read, the pid/tgid and cgroup id helpers, the cgroup id by direct loads,
bpf_loop over 1 and 4 steps, a per-CPU and a shared array slot, a per-CPU hash lookup, an 8-byte
bpf_probe_read_kernel. fio (io_uring randread 4 KiB qd 32, O_DIRECT) drives a tmpfs loop device;
kernel.bpf_stats_enabled gives each program's run time per event, and the block's cost is that
minus the empty program's, in the same run. Medians of --runs rounds. The sysctl and the device
are restored.

Usage: bench/helpers.py [--seconds S] [--runs N]
"""
import argparse
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from block import bench_env, prog_stats, sh  # noqa: E402

TOP = Path(__file__).resolve().parent.parent
FLOOR = TOP / "bin" / "bench-floor"
WHAT = {"hc_empty": "empty program (the floor bpf_stats charges)",
        "hc_ktime": "bpf_ktime_get_ns()",
        "hc_pid_tgid": "bpf_get_current_pid_tgid() (inlined)",
        "hc_cgroup_id": "bpf_get_current_cgroup_id()",
        "hc_cgroup_direct": "the same id by direct loads",
        "hc_loop_1": "bpf_loop, 1 step",
        "hc_loop_4": "bpf_loop, 4 steps",
        "hc_pcpu_array": "per-CPU array slot, ++ (lookup inlined)",
        "hc_array_atomic": "shared array slot, atomic add",
        "hc_pcpu_hash": "per-CPU hash lookup (hit), ++",
        "hc_probe_read": "bpf_probe_read_kernel, 8 bytes"}


def fio(dev, seconds):
    sh("fio", "--name=helpers", f"--filename={dev}", "--direct=1", "--ioengine=io_uring",
       "--iodepth=32", "--rw=randread", "--bs=4k", "--time_based", f"--runtime={seconds}",
       "--output-format=json")


def one_round(dev, seconds):
    """{program: ns per run} over one fio run with the programs attached."""
    hp = subprocess.Popen([str(FLOOR), "helpers"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          text=True)
    try:
        assert hp.stdout.readline().strip() == "attached", "bench-floor helpers did not attach"
        before = prog_stats(("hc_",))
        fio(dev, seconds)
        after = prog_stats(("hc_",))
    finally:
        hp.stdin.close()
        hp.wait(timeout=30)
    out = {}
    for k, (ns, cnt) in after.items():
        b_ns, b_cnt = before.get(k, (0, 0))
        out[k.split("#")[0]] = (ns - b_ns) / max(cnt - b_cnt, 1)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    rounds = []
    with bench_env() as dev:
        for r in range(args.runs):
            rounds.append(one_round(dev, args.seconds))
            print(f"round {r + 1}: " + ", ".join(f"{k[3:]} {v:.0f}"
                                                 for k, v in sorted(rounds[-1].items())))
    med = {k: statistics.median(r[k] for r in rounds) for k in WHAT}
    empty = med["hc_empty"]
    print(f"\nmedians of {args.runs} rounds, ns per run (bpf_stats), on block_rq_issue under "
          f"fio io_uring randread qd 32:")
    print(f"  {'block':<48} {'ns/run':>7} {'above empty':>12}")
    for k, what in WHAT.items():
        above = "" if k == "hc_empty" else f"{med[k] - empty:+.0f}"
        print(f"  {what:<48} {med[k]:7.0f} {above:>12}")


if __name__ == "__main__":
    main()
