#!/usr/bin/env python3
"""Where iostrata's BPF programs spend their time, per source line: `make bench-profile`.

fio io_uring randread 4 KiB qd 32 O_DIRECT runs on a target (a tmpfs-backed loop device, or a
1 GiB file on the root filesystem) under bin/iostrata; `perf record -a` samples every CPU for a
few seconds meanwhile, and each sample that lands in one of the tracer's programs is mapped to
the source line it executes, through the program's JIT line table (bin/bench-jitdump) and its
xlated dump (`bpftool prog dump xlated id N linum`). Prints, per program, its samples and the
source lines that hold most of them.

Samples are not times. Where the VM has no PMU, perf samples on timer ticks: a guide to where a
program spends its time, not how long. A sample is charged to the line of the instruction it
interrupted, often the one after a slow load. Code run with interrupts off (hard-IRQ
completions) is sampled late or not at all. For times, use make bench-overhead.

    bench/profile.py [--target loop|root] [--seconds 6] [--top 8] [-- IOSTRATA ARGS...]
"""
import argparse
import bisect
import collections
import contextlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from block import IOSTRATA, bench_env, sh, wait_for  # noqa: E402
from layers import iostrata_ready, owned_progs, root_file, stop  # noqa: E402

JITDUMP = IOSTRATA.parent / "bench-jitdump"
SRC_RE = re.compile(r"^; (.*?)\s*\[file:(?:.*/)?([^/\]]+) line_num:(\d+)")
INSN_RE = re.compile(r"^\s*(\d+): ")


def prog_name(pid):
    out = sh("bpftool", "prog", "show", "id", pid)
    m = re.match(r"\d+: \S+\s+name (\S+)", out)
    return m.group(1) if m else f"prog#{pid}"


def source_lines(pid):
    """xlated instruction index -> 'file:line  source' for program pid."""
    src, cur = {}, None
    for line in sh("bpftool", "prog", "dump", "xlated", "id", pid, "linum").splitlines():
        m = SRC_RE.match(line)
        if m:
            cur = f"{m.group(2)}:{m.group(3)}  {m.group(1)}"
            continue
        m = INSN_RE.match(line)
        if m and cur:
            src[int(m.group(1))] = cur
    return src


def line_table(pids):
    """Sorted (kernel address, program, source line) over every program's line records."""
    table = []
    for pid in pids:
        name, src = prog_name(pid), source_lines(pid)
        idx = sorted(src)
        for row in sh(str(JITDUMP), pid).splitlines():
            addr, insn = row.split()
            i = bisect.bisect_right(idx, int(insn)) - 1
            table.append((int(addr, 16), name, src[idx[i]] if i >= 0 else "?"))
    table.sort()
    return table


def attribute(samples, table, slack=4096):
    """Samples (kernel addresses in bpf_prog_* symbols) -> {program: Counter(source line)}."""
    addrs = [a for a, _, _ in table]
    out = collections.defaultdict(collections.Counter)
    for ip in samples:
        i = bisect.bisect_right(addrs, ip) - 1
        if i >= 0 and ip - addrs[i] < slack:
            out[table[i][1]][table[i][2]] += 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", choices=("loop", "root"), default="root")
    ap.add_argument("--seconds", type=int, default=6, help="seconds of sampling (default 6)")
    ap.add_argument("--top", type=int, default=8, help="source lines shown per program")
    ap.add_argument("args", nargs="*", help="iostrata's arguments (default: every layer)")
    args = ap.parse_args()
    for tool in ("perf", "fio", "bpftool"):
        if not shutil.which(tool):
            sys.exit(f"bench-profile: {tool} not found (perf: Debian's linux-perf)")
    if not JITDUMP.exists():
        sys.exit(f"bench-profile: {JITDUMP} not built (make)")
    cmd = [str(IOSTRATA)] + (args.args or ["-l", "block,uring,aio,syscall"]) + ["-j"]
    with contextlib.ExitStack() as stack:
        dev = stack.enter_context(bench_env())
        if args.target == "root":
            dev = stack.enter_context(root_file())
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="iostrata-prof.")))
        tracer = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stack.callback(stop, tracer, "iostrata")
        wait_for(iostrata_ready(tracer, "iostrata"), "iostrata to attach", 30)
        fio = subprocess.Popen(["fio", "--name=prof", f"--filename={dev}", "--direct=1",
                                "--ioengine=io_uring", "--iodepth=32", "--rw=randread",
                                "--bs=4k", "--time_based", f"--runtime={args.seconds + 4}",
                                "--output-format=json"], stdout=subprocess.DEVNULL)
        stack.callback(fio.wait)
        time.sleep(2)
        data = work / "perf.data"
        subprocess.run(["perf", "record", "-q", "-a", "-F", "20000", "-o", str(data), "--",
                        "sleep", str(args.seconds)], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        # the programs are still loaded, where the samples were taken: their line tables now
        table = line_table(sorted(owned_progs(tracer.pid), key=int))
        script = subprocess.run(["perf", "script", "-i", str(data), "-F", "ip,sym"],
                                check=True, capture_output=True, text=True).stdout
    total = 0
    samples = []
    for line in script.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        total += 1
        if parts[1].startswith("bpf_prog_"):
            samples.append(int(parts[0], 16))
    by = attribute(samples, table)
    print(f"bench-profile: {' '.join(cmd[1:])}, fio io_uring randread 4k qd32 on the "
          f"{'root-disk file' if args.target == 'root' else 'loop device'}, {args.seconds} s: "
          f"{total} samples, {len(samples)} in BPF programs, "
          f"{sum(sum(c.values()) for c in by.values())} of them in iostrata's")
    for name, lines in sorted(by.items(), key=lambda kv: -sum(kv[1].values())):
        n = sum(lines.values())
        print(f"\n{name}: {n} samples")
        for src, k in lines.most_common(args.top):
            print(f"  {k:6} {100 * k / n:5.1f} %  {src[:100]}")


if __name__ == "__main__":
    main()
