#!/usr/bin/env python3
"""Overhead side by side: no tracer, iostrata block only, iostrata all layers, bpftrace.

fio (ioengine=io_uring, 4 KiB random reads, qd 32, O_DIRECT) drives a tmpfs-backed loop device
in four configurations, alternated within each of --runs rounds: no tracer; iostrata's block
layer alone; all layers (block, uring, aio, syscall; the block programs then link each request
to its bios); and bpftrace's block-latency one-liner (classic tracepoints, a hash keyed by
dev+sector: bench/block.py's BIOLATENCY). Figures: kernel.bpf_stats_enabled's run_time_ns of
each program family divided by the I/Os fio completed, the program runs per I/O, and fio's IOPS;
medians over the rounds. Each round also runs fio beside bin/bench-floor (empty tp_btf programs
on the block events, and one that only reads the clock) to measure, in the same conditions, what
bpf_stats charges for a program that does nothing and what one bpf_ktime_get_ns() adds: the
floor under any per-event tracer on this machine.
The sysctl, tracefs and the device are restored on exit. --doc writes the table to
docs/overhead.md with the date and the machine.
--baseline PATH runs every iostrata configuration a second time per round with another iostrata
binary (e.g. built by scripts/build-baseline.sh from an older commit), next to this build's run,
the two swapping order every other round; its rows are labelled "(baseline)".

Usage: bench/layers.py [--seconds S] [--runs N] [--doc] [--detail] [--only "iostrata all"]
                       [--baseline PATH]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from block import BIOLATENCY, FLOOR, IOSTRATA, bench_env, prog_stats, sh, wait_for  # noqa: E402

FAMILIES = {"block": ("tp_btf_block", "raw_tp_block"), "uring": ("tp_btf_io_uring",
            "raw_tp_io_uring"), "aio": ("aio_",), "syscall": ("sce_", "scx_"),
            "bpftrace": ("block_rq_",)}
CONFIGS = {"no tracer": None, "iostrata block": ["-l", "block"],
           "iostrata all": ["-l", "block,uring,aio,syscall"], "bpftrace": "bpftrace"}
TOP = Path(__file__).resolve().parent.parent
DOC = TOP / "docs" / "overhead.md"
DETAIL = False
BASELINE_TAG = " (baseline)"


def fio(dev, seconds):
    import json
    out = sh("fio", "--name=bench", f"--filename={dev}", "--direct=1", "--ioengine=io_uring",
             "--iodepth=32", "--rw=randread", "--bs=4k", "--time_based", f"--runtime={seconds}",
             "--output-format=json")
    job = json.loads(out)["jobs"][0]
    return job["read"]["total_ios"], job["read"]["iops"]


def floor(dev, seconds):
    """One fio run beside bench-floor: (ns per event of an empty program, ns of a clock read)."""
    prefixes = ("floor_", "fclock_")
    fl = subprocess.Popen([str(FLOOR)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert fl.stdout.readline().strip() == "attached", "bench-floor did not attach"
        before = prog_stats(prefixes)
        fio(dev, seconds)
        after = prog_stats(prefixes)
    finally:
        fl.stdin.close()
        fl.wait(timeout=30)

    def per_event(prefix):
        ns = sum(after[k][0] - before.get(k, (0, 0))[0] for k in after if k.startswith(prefix))
        cnt = sum(after[k][1] - before.get(k, (0, 0))[1] for k in after if k.startswith(prefix))
        return ns / max(cnt, 1)
    return per_event("floor_"), per_event("fclock_") - per_event("floor_rq_issue")


def owned_progs(pid):
    """IDs of the BPF programs process pid holds (program or link fds, from its fdinfo)."""
    ids = set()
    try:
        fds = list(Path(f"/proc/{pid}/fdinfo").iterdir())
    except FileNotFoundError:
        return ids
    for fd in fds:
        try:
            ids.update(line.split()[1] for line in fd.read_text().splitlines()
                       if line.startswith("prog_id:"))
        except OSError:
            pass
    return ids


def own(stats, ids):
    """The entries of prog_stats() whose program id is in ids."""
    return {k: v for k, v in stats.items() if k.rsplit("#", 1)[1] in ids}


def iostrata_ready(tracer, what, settle=0.5):
    """A predicate for wait_for: tracer holds its block programs and has loaded no program for
    settle seconds (iostrata starts its layers one after the other, block first)."""
    seen = {"ids": None, "since": 0.0}

    def ready():
        if tracer.poll() is not None:
            raise RuntimeError(f"{what} exited with status {tracer.returncode} before tracing")
        ids = owned_progs(tracer.pid)
        now = time.monotonic()
        if ids != seen["ids"]:
            seen.update(ids=ids, since=now)
            return False
        return (now - seen["since"] >= settle and
                len(own(prog_stats(("tp_btf_block", "raw_tp_block")), ids)) >= 3)
    return ready


def run(dev, seconds, config, binary=IOSTRATA, label=None):
    """One fio run under config, iostrata's configurations with binary: (ios, iops, {family:
    BPF ns per I/O}, program runs per I/O). label, if given, heads the --detail lines.
    iostrata's figures count only the programs its own process holds, so programs of an
    earlier run still being freed, or anyone else's, cannot be charged to it."""
    every = tuple(p for f in FAMILIES.values() for p in f)
    if config is None:
        ios, iops = fio(dev, seconds)
        return ios, iops, {f: 0.0 for f in FAMILIES}, 0.0
    if config == "bpftrace":
        tracer = subprocess.Popen(["bpftrace", "-e", BIOLATENCY], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        ready = lambda: len(prog_stats(("block_rq_",))) >= 2  # noqa: E731
        mine = lambda stats: stats  # noqa: E731
    else:
        cmd = [str(binary), *config, "-j"]
        tracer = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        ready = iostrata_ready(tracer, " ".join(cmd))
        ids = set()

        def mine(stats):
            ids.update(owned_progs(tracer.pid))
            return own(stats, ids)
    try:
        wait_for(ready, "the tracer to attach", 60)
        before = mine(prog_stats(("",)))
        ios, iops = fio(dev, seconds)
        after = mine(prog_stats(("",)))
    finally:
        tracer.send_signal(2)
        tracer.wait(timeout=30)
    stray = sorted(k for k in after if not k.startswith(every) and
                   after[k][1] != before.get(k, (0, 0))[1])
    if stray and config != "bpftrace":
        print(f"    warning: {', '.join(stray)} ran but match no layer's prefix; left out",
              file=sys.stderr)
    before = {k: v for k, v in before.items() if k.startswith(every)}
    after = {k: v for k, v in after.items() if k.startswith(every)}
    per = {}
    for fam, prefixes in FAMILIES.items():
        ns = sum(after[k][0] - before.get(k, (0, 0))[0] for k in after if k.startswith(prefixes))
        per[fam] = ns / ios
    runs = sum(after[k][1] - before.get(k, (0, 0))[1] for k in after)
    if DETAIL:
        if label:
            print(f"  {label}:")
        for k in sorted(after):
            ns, cnt = (after[k][i] - before.get(k, (0, 0))[i] for i in (0, 1))
            if cnt:
                print(f"    {k:<32} {cnt / ios:6.2f} runs/I/O {ns / cnt:6.0f} ns/run")
    return ios, iops, per, runs / ios


def round_order(names, r):
    """The configurations in table order; every other round each one and its baseline trade
    places, so neither binary always runs first and drift within a round hits both alike."""
    order = list(names)
    if r % 2:
        for i in range(1, len(order)):
            if order[i] == order[i - 1] + BASELINE_TAG:
                order[i - 1], order[i] = order[i], order[i - 1]
    return order


def revision(binary):
    """What binary was built from: for the baseline the BINARY.rev file build-baseline.sh
    writes, for bin/iostrata the checkout's git describe."""
    if binary != IOSTRATA:
        rev = Path(str(binary) + ".rev")
        return rev.read_text().strip().splitlines()[0] if rev.is_file() else "revision unknown"
    out = subprocess.run(["git", "-C", str(TOP), "describe", "--always", "--dirty"],
                         capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else "revision unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--doc", action="store_true", help="write the table to docs/overhead.md")
    ap.add_argument("--detail", action="store_true", help="each program's runs and ns per run")
    ap.add_argument("--only", help="configurations to run, comma-separated (default: all)")
    ap.add_argument("--baseline", metavar="PATH",
                    help="another iostrata binary: each iostrata configuration also runs with it, "
                    "in the same rounds, as a '(baseline)' row")
    args = ap.parse_args()
    global DETAIL
    DETAIL = args.detail
    baseline = None
    if args.baseline:
        baseline = Path(args.baseline).resolve()
        if not baseline.is_file() or not os.access(baseline, os.X_OK):
            sys.exit(f"bench: --baseline {args.baseline} is not an executable file")
    if os.geteuid() != 0:
        sys.exit("bench: must run as root")
    for tool in ("fio", "bpftool", "losetup"):
        if not shutil.which(tool):
            sys.exit(f"bench: {tool} is missing (make deps)")
    configs = dict(CONFIGS)
    if args.only:
        configs = {c: v for c, v in configs.items()
                   if c in args.only.split(",") or c == "no tracer"}
    if not shutil.which("bpftrace"):
        print("bpftrace is not installed: its row is left out")
        configs.pop("bpftrace", None)
    plan = {}  # row: (configuration, iostrata binary)
    for name, cfg in configs.items():
        plan[name] = (cfg, IOSTRATA)
        if baseline and isinstance(cfg, list):
            plan[name + BASELINE_TAG] = (cfg, baseline)
    width = max(15, *(len(n) for n in plan))
    with bench_env(tracefs="bpftrace" in configs) as dev:
        machine = (f"{os.uname().machine}, {os.cpu_count()} CPUs, kernel {os.uname().release}")
        load = (f"fio io_uring randread 4k qd32 O_DIRECT on a tmpfs-backed loop device, "
                f"{args.seconds} s per run, {args.runs} rounds")
        print(f"machine: {machine}\nload: {load}")
        if baseline:
            builds = (f"this build {IOSTRATA} ({revision(IOSTRATA)}), "
                      f"baseline {baseline} ({revision(baseline)})")
            print(builds)
        res = {c: [] for c in plan}
        floors = []
        for r in range(args.runs):
            for name in round_order(plan, r):
                cfg, binary = plan[name]
                ios, iops, per, evs = run(dev, args.seconds, cfg, binary,
                                          name if baseline else None)
                res[name].append((iops, per, evs))
                print(f"round {r + 1} {name:<{width}} {iops:9.0f} IOPS  " +
                      "  ".join(f"{f} {v:.0f}" for f, v in per.items() if v) +
                      f"  = {sum(per.values()):.0f} BPF ns/I/O, {evs:.2f} runs/I/O")
            floors.append(floor(dev, args.seconds))
            print(f"round {r + 1} floor: empty program {floors[-1][0]:.0f} ns/event, "
                  f"clock read {floors[-1][1]:.0f} ns")
        base = statistics.median(r[0] for r in res["no tracer"])
        rows = []
        for name, runs in res.items():
            iops = statistics.median(r[0] for r in runs)
            fam = {f: statistics.median(r[1][f] for r in runs) for f in FAMILIES}
            evs = statistics.median(r[2] for r in runs)
            rows.append((name, iops, 100 * (iops / base - 1), fam, sum(fam.values()), evs))
        med = {name: tot for name, _, _, _, tot, _ in rows}
        evs = {name: e for name, _, _, _, _, e in rows}
        empty = statistics.median(f[0] for f in floors)
        clock = statistics.median(f[1] for f in floors)
        lines = ["| configuration | IOPS | IOPS vs none | " +
                 " | ".join(FAMILIES) + " | BPF ns/I/O | runs/I/O |",
                 "|---" * (len(FAMILIES) + 5) + "|"]
        for name, iops, delta, fam, tot, ev in rows:
            lines.append(f"| {name} | {iops:.0f} | {delta:+.1f} % | " +
                         " | ".join(f"{fam[f]:.0f}" for f in FAMILIES) +
                         f" | {tot:.0f} | {ev:.2f} |")
        goals = [f"floor, measured beside the same fio runs: an empty tp_btf program costs "
                 f"{empty:.0f} ns per run, one bpf_ktime_get_ns() {clock:.0f} ns more; a program "
                 f"that times anything costs at least {empty + clock:.0f} ns per run"]
        if "bpftrace" in med and med.get("iostrata block"):
            goals.append(f"iostrata block takes {med['bpftrace'] / med['iostrata block']:.2f}x less "
                         "BPF time per I/O than bpftrace's one-liner (goal >= 5x, i.e. "
                         f"<= {med['bpftrace'] / 5:.0f} ns per I/O; the floor of iostrata's "
                         f"{evs['iostrata block']:.2f} timing runs per I/O is "
                         f"{evs['iostrata block'] * (empty + clock):.0f} ns)")
        if "iostrata all" in med:
            goals.append(f"iostrata all layers: {med['iostrata all']:.0f} ns per I/O (goal <= 400; "
                         f"the floor of its {evs['iostrata all']:.2f} runs per I/O is "
                         f"{evs['iostrata all'] * empty:.0f} ns without any clock read)")
            allrow = next(r for r in rows if r[0] == "iostrata all")
            goals.append(f"IOPS with all layers: {allrow[2]:+.1f} % (goal >= -3 %; IOPS A/B runs "
                         "vary +-15 % here, BPF time is the figure to compare)")
        for name in (n for n in plan if n.endswith(BASELINE_TAG)):
            new = name[:-len(BASELINE_TAG)]
            pct = lambda a, b: f"{100 * (a / b - 1):+.1f} %" if b else "n/a"  # noqa: E731
            rounds = [pct(sum(n[1].values()), sum(b[1].values()))
                      for n, b in zip(res[new], res[name])]
            goals.append(f"{new}, baseline -> this build: {med[name]:.0f} -> {med[new]:.0f} BPF ns "
                         f"per I/O ({pct(med[new], med[name])}; each round: {', '.join(rounds)}), "
                         f"runs/I/O {evs[name]:.2f} -> {evs[new]:.2f}")
        print("\nmedians\n" + "\n".join(lines) + "\n" + "\n".join(goals))
        if args.doc:
            DOC.write_text(
                "# Overhead: iostrata beside bpftrace\n\n"
                "Produced by `make bench-overhead" +
                (f" BASELINE={baseline}" if baseline else "") +
                f"` on {time.strftime('%Y-%m-%d')}.\n\n"
                f"- machine: {machine}\n- load: {load}\n" +
                (f"- builds: {builds}; each configuration and its baseline run back to back in "
                 "every round, swapping order every other round\n" if baseline else "") +
                "- BPF ns/I/O: kernel.bpf_stats_enabled run time of each program family / "
                "I/Os fio completed (the sysctl is restored afterwards)\n" +
                "- runs/I/O: BPF program runs per I/O fio completed (every program of the "
                "configuration)\n\n" +
                "\n".join(lines) + "\n\n" + "\n".join(f"- {g}" for g in goals) + "\n\n"
                "docs/benchmarks.md has the block layer's breakdown against the empty-program "
                "floor (`make bench`).\n")
            print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
