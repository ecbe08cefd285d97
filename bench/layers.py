#!/usr/bin/env python3
"""Overhead side by side: no tracer, iostrata block only, iostrata all layers, bpftrace, biolatency.

fio (ioengine=io_uring, 4 KiB random reads, qd 32, O_DIRECT) drives two targets in turn: a
tmpfs-backed loop device (fast, so the tracers' cost shows) and a 1 GiB file on the root
filesystem (a real disk's latency and queueing, e.g. virtio). On each target, in nine
configurations alternated within each of --runs rounds: no tracer; iostrata's block layer alone
(three stages), and its device stage alone (--stages device: two programs per I/O, as biolatency);
all layers (block, uring, aio, syscall; the block programs then link each request to its bios);
the uring layer's own stages over the block layer's device stage (no bio tracked or linked);
`iostrata snoop --slower 10ms` over the same layers (no request of the load is that slow: the
cost of deciding, per request, that it is not, against issue 15's 10 %);
bpftrace's block-latency one-liner (classic tracepoints, a hash keyed by dev+sector:
bench/block.py's BIOLATENCY); and libbpf-tools' biolatency, plain (issue to completion) and with
-Q (insert to completion, the closest to iostrata's block layer). Figures:
kernel.bpf_stats_enabled's run_time_ns of each program family divided by the I/Os fio completed,
the program runs per I/O, and fio's IOPS; medians over the rounds. Each tracer is charged only
for the BPF programs its own process holds (from /proc/PID/fdinfo), so programs of an earlier
run still being freed, or anyone else's, are not. Each round also runs fio on each target beside
bin/bench-floor (empty tp_btf programs on the block events, and one that only reads the clock) to
measure, in the same conditions, what bpf_stats charges for a program that does nothing and what
one bpf_ktime_get_ns() adds: the floor under any per-event tracer on this machine.
The sysctl, tracefs, the device and the file are restored or removed on exit. --doc writes the
tables to docs/overhead.md with the date and the machine.
--baseline PATH runs every iostrata configuration a second time per round with another iostrata
binary (e.g. built by scripts/build-baseline.sh from an older commit), next to this build's run,
the two swapping order every other round; its rows are labelled "(baseline)".

Usage: bench/layers.py [--seconds S] [--runs N] [--doc] [--detail] [--only "iostrata all"]
                       [--baseline PATH]
"""
import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import contextlib  # noqa: E402
import tempfile  # noqa: E402

from block import BIOLATENCY, FLOOR, IOSTRATA, bench_env, prog_stats, sh, wait_for  # noqa: E402

# iostrata's layers, told apart by program name; the other tools' columns take every program
# their process holds.
FAMILIES = {"block": ("tp_btf_block", "raw_tp_block"), "uring": ("tp_btf_io_uring",
            "raw_tp_io_uring"), "aio": ("aio_",), "syscall": ("sce_", "scx_")}
TOOLS = ("bpftrace", "biolatency")
COLUMNS = (*FAMILIES, *TOOLS)
# libbpf-tools' biolatency (Debian's libbpf-tools puts it in /usr/sbin)
BIOLAT = shutil.which("biolatency", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") \
    or "/usr/sbin/biolatency"
# a list: iostrata's options; a tuple: another tool (its column, its command line)
CONFIGS = {"no tracer": None, "iostrata block": ["-l", "block"],
           "iostrata block device": ["-l", "block", "--stages", "device"],
           "iostrata all": ["-l", "block,uring,aio,syscall"],
           # the application's view with the device under it: no stage bounded by bio times,
           # so no bio is tracked or linked (4 programs per I/O)
           "iostrata uring+device": ["-l", "block,uring", "--stages",
                                     "uring.submit_cqe,uring.cqe_reap,uring.total,block.device"],
           # issue 15: snoop over the same layers; fio's load has no request of 10 ms or more
           "iostrata snoop": ["snoop", "--slower", "10ms", "-l", "block,uring,aio,syscall"],
           "bpftrace": ("bpftrace", ["bpftrace", "-e", BIOLATENCY]),
           "biolatency": ("biolatency", [BIOLAT]),
           "biolatency -Q": ("biolatency", [BIOLAT, "-Q"])}
# where fio reads: (key, how the tables name it)
TARGETS = (("loop", "tmpfs-backed loop device"), ("root", "1 GiB file on the root filesystem"))
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
    """A predicate for wait_for: tracer holds its block programs (two or more: --stages device
    loads two) and has loaded no program for settle seconds (iostrata starts its layers one
    after the other, block first)."""
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
                len(own(prog_stats(("tp_btf_block", "raw_tp_block")), ids)) >= 2)
    return ready


def tool_ready(tracer, what, errlog, least=2, settle=0.5):
    """A predicate for wait_for: another tool's process (bpftrace, biolatency) holds at least
    least programs and neither its programs nor its open fds (the perf events or links that
    attach them) have changed for settle seconds."""
    seen = {"state": None, "since": 0.0}

    def ready():
        if tracer.poll() is not None:
            errlog.seek(0)
            raise RuntimeError(f"{what} exited with status {tracer.returncode} before tracing: "
                               f"{errlog.read().decode(errors='replace').strip()[-500:]}")
        ids = owned_progs(tracer.pid)
        try:
            fds = tuple(sorted(os.listdir(f"/proc/{tracer.pid}/fd")))
        except FileNotFoundError:
            return False
        now = time.monotonic()
        if (ids, fds) != seen["state"]:
            seen.update(state=(ids, fds), since=now)
            return False
        return now - seen["since"] >= settle and len(ids) >= least
    return ready


def stop(tracer, what):
    """SIGINT, as a user would stop it; again if it is still there after 10 s (bpftrace once
    missed the first), then SIGKILL after 20 s more, so no tracer outlives the bench."""
    for sig, wait in ((signal.SIGINT, 10), (signal.SIGINT, 20), (signal.SIGKILL, 10)):
        if tracer.poll() is not None:
            return
        if sig != signal.SIGINT or wait != 10:
            print(f"    warning: {what} still running, sending {sig.name}", file=sys.stderr)
        tracer.send_signal(sig)
        try:
            tracer.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass


def run(dev, seconds, config, binary=IOSTRATA, label=None):
    """One fio run on dev (a device or a file) under config, iostrata's configurations with
    binary: (ios, iops, {column: BPF ns per I/O}, program runs per I/O). label, if given, heads
    the --detail lines. Every tracer's figures count only the programs its own process holds,
    so programs of an earlier run still being freed, or anyone else's, cannot be charged to it."""
    every = tuple(p for f in FAMILIES.values() for p in f)
    if config is None:
        ios, iops = fio(dev, seconds)
        return ios, iops, {f: 0.0 for f in COLUMNS}, 0.0, {}
    errlog = tempfile.TemporaryFile()
    if isinstance(config, tuple):
        column, cmd = config
        tracer = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errlog)
        ready = tool_ready(tracer, " ".join(cmd), errlog)
    else:
        column = None
        cmd = [str(binary), *config, "-j"]
        tracer = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        ready = iostrata_ready(tracer, " ".join(cmd))
    ids = set()

    def mine(stats):
        ids.update(owned_progs(tracer.pid))
        return own(stats, ids)
    try:
        wait_for(ready, f"{cmd[0]} to attach", 60)
        before = mine(prog_stats(("",)))
        ios, iops = fio(dev, seconds)
        after = mine(prog_stats(("",)))
    finally:
        stop(tracer, cmd[0])
        errlog.close()
    per = {f: 0.0 for f in COLUMNS}
    if column:  # another tool: all its programs are its column
        per[column] = sum(after[k][0] - before.get(k, (0, 0))[0] for k in after) / ios
    else:
        stray = sorted(k for k in after if not k.startswith(every) and
                       after[k][1] != before.get(k, (0, 0))[1])
        if stray:
            print(f"    warning: {', '.join(stray)} ran but match no layer's prefix; left out",
                  file=sys.stderr)
        before = {k: v for k, v in before.items() if k.startswith(every)}
        after = {k: v for k, v in after.items() if k.startswith(every)}
        for fam, prefixes in FAMILIES.items():
            ns = sum(after[k][0] - before.get(k, (0, 0))[0] for k in after
                     if k.startswith(prefixes))
            per[fam] = ns / ios
    runs = sum(after[k][1] - before.get(k, (0, 0))[1] for k in after)
    progs = {}  # program name (without its id): [ns, runs] over this run
    for k in after:
        ns, cnt = (after[k][i] - before.get(k, (0, 0))[i] for i in (0, 1))
        if cnt and column is None:
            acc = progs.setdefault(k.split("#")[0], [0, 0])
            acc[0] += ns
            acc[1] += cnt
    progs = {k: (cnt / ios, ns / cnt) for k, (ns, cnt) in progs.items()}
    if DETAIL:
        if label:
            print(f"  {label}:")
        for k in sorted(after):
            ns, cnt = (after[k][i] - before.get(k, (0, 0))[i] for i in (0, 1))
            if cnt:
                print(f"    {k:<32} {cnt / ios:6.2f} runs/I/O {ns / cnt:6.0f} ns/run")
    return ios, iops, per, runs / ios, progs


def breakdown(res, t, empty, clock):
    """Each iostrata program's median runs per I/O and ns per run on target t, against the
    floor of a timing program (an empty program plus one clock read)."""
    out = []
    for name in ("iostrata block", "iostrata block device", "iostrata all", "iostrata uring+device"):
        runs = res.get((t, name))
        if not runs:
            continue
        names = sorted({p for r in runs for p in r[3]})
        out += ["", f"{name}, per program (medians; floor of a timing run: "
                f"{empty + clock:.0f} ns):", "",
                "| program | runs/I/O | ns/run | ns/I/O | ns/run above the floor |",
                "|---|---|---|---|---|"]
        for p in names:
            per_io = statistics.median(r[3].get(p, (0, 0))[0] for r in runs)
            ns_run = statistics.median(r[3][p][1] for r in runs if p in r[3])
            if per_io < 0.005:
                continue
            out.append(f"| {p} | {per_io:.2f} | {ns_run:.0f} | {per_io * ns_run:.0f} | "
                       f"{ns_run - empty - clock:+.0f} |")
    return out


def round_order(names, r):
    """The configurations in table order; every other round each one and its baseline trade
    places, so neither binary always runs first and drift within a round hits both alike."""
    order = list(names)
    if r % 2:
        for i in range(1, len(order)):
            if order[i] == order[i - 1] + BASELINE_TAG:
                order[i - 1], order[i] = order[i], order[i - 1]
    return order


def knows(binary, cfg):
    """Does iostrata `binary` take configuration cfg? Its usage names each command and
    long option it has (a baseline may predate --stages or snoop)."""
    usage = subprocess.run([str(binary), "--help"], capture_output=True, text=True).stdout
    need = [f" {w.split('=')[0]}" for w in cfg if w.startswith("--")]
    if cfg and not cfg[0].startswith("-"):
        need.append(f"iostrata {cfg[0]} ")
    return all(w in usage for w in need)


def revision(binary):
    """What binary was built from: for the baseline the BINARY.rev file build-baseline.sh
    writes, for bin/iostrata the checkout's git describe."""
    if binary != IOSTRATA:
        rev = Path(str(binary) + ".rev")
        return rev.read_text().strip().splitlines()[0] if rev.is_file() else "revision unknown"
    out = subprocess.run(["git", "-C", str(TOP), "describe", "--always", "--dirty"],
                         capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else "revision unknown"


@contextlib.contextmanager
def root_file(size=1 << 30):
    """A file of size bytes on the root filesystem (under /var/tmp), written through (not sparse,
    not preallocated: O_DIRECT reads of holes or unwritten extents never reach the disk), yielded
    by path and removed on the way out."""
    base = "/var/tmp" if os.path.isdir("/var/tmp") else "/tmp"
    if shutil.disk_usage(base).free < 2 * size:
        sys.exit(f"bench: {base} has less than {2 * size >> 30} GiB free for the root-disk target")
    work = tempfile.mkdtemp(prefix="iostrata-bench.", dir=base)
    img = Path(work) / "disk.img"
    try:
        sh("dd", "if=/dev/zero", f"of={img}", "bs=1M", f"count={size >> 20}", "oflag=direct",
           "conv=fsync")
        yield str(img)
    finally:
        img.unlink(missing_ok=True)
        os.rmdir(work)


def goals_for(med, evs, rows, empty, clock):
    """The summary lines of one target: the floor, then issue 11's goals, each MET or NOT MET."""
    def verdict(ok):
        return "MET" if ok else "NOT MET"
    lines = [f"floor, measured beside the same fio runs: an empty tp_btf program costs "
             f"{empty:.0f} ns per run, one bpf_ktime_get_ns() {clock:.0f} ns more; a program "
             f"that times anything costs at least {empty + clock:.0f} ns per run"]
    delta = {r[0]: r[2] for r in rows}
    for name in ("iostrata block", "iostrata block device"):
        blk = med.get(name)
        if blk is None:
            continue
        tail = (f"; the floor of its {evs[name]:.2f} timing runs per I/O is "
                f"{evs[name] * (empty + clock):.0f} ns")
        if "bpftrace" in med:
            lim = med["bpftrace"] / 3
            lines.append(f"{name} <= 1/3 of bpftrace's BPF ns per I/O: {blk:.0f} ns vs "
                         f"bpftrace {med['bpftrace']:.0f} ns, limit {lim:.0f} "
                         f"({med['bpftrace'] / blk if blk else float('inf'):.2f}x less)"
                         f"{tail}: {verdict(blk <= lim)}")
        if "biolatency -Q" in med:
            lim = med["biolatency -Q"] / 2
            lines.append(f"{name} <= 1/2 of biolatency -Q's BPF ns per I/O: {blk:.0f} ns "
                         f"vs biolatency -Q {med['biolatency -Q']:.0f} ns, limit {lim:.0f}: "
                         f"{verdict(blk <= lim)}")
    if "iostrata all" in med and "iostrata snoop" in med:
        a, sn = med["iostrata all"], med["iostrata snoop"]
        lines.append(f"iostrata snoop --slower 10ms <= 1.10 x the histogram mode's BPF ns per I/O "
                     f"(same layers, no slow request): {sn:.0f} ns vs {a:.0f} ns "
                     f"({100 * (sn / a - 1) if a else 0:+.1f} %): {verdict(sn <= 1.10 * a)}")
    if "iostrata all" in med and "biolatency" in med:
        a, b = med["iostrata all"], med["biolatency"]
        lines.append(f"iostrata all layers <= biolatency's BPF ns per I/O: {a:.0f} ns vs "
                     f"biolatency {b:.0f} ns (the floor of its {evs['iostrata all']:.2f} runs "
                     f"per I/O is {evs['iostrata all'] * empty:.0f} ns without any clock read): "
                     f"{verdict(a <= b)}")
        la, lb = -delta["iostrata all"], -delta["biolatency"]
        lines.append(f"IOPS loss with all layers <= half of biolatency's: {la:.1f} % vs "
                     f"biolatency {lb:.1f} %, limit {lb / 2:.1f} % (IOPS A/B runs vary +-15 % "
                     f"here, BPF time is the figure to compare): {verdict(la <= lb / 2)}")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--doc", action="store_true", help="write the tables to docs/overhead.md")
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
            sys.exit(f"bench: --baseline {args.baseline} is not an executable file (for a "
                     "git revision, scripts/build-baseline.sh REV DIR builds DIR/iostrata)")
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
    if not os.access(BIOLAT, os.X_OK):
        print("biolatency is not installed (Debian's libbpf-tools): its rows are left out")
        configs.pop("biolatency", None)
        configs.pop("biolatency -Q", None)
    plan = {}  # row: (configuration, iostrata binary)
    for name, cfg in configs.items():
        plan[name] = (cfg, IOSTRATA)
        if baseline and isinstance(cfg, list):
            if knows(baseline, cfg):
                plan[name + BASELINE_TAG] = (cfg, baseline)
            else:
                print(f"the baseline predates {name}'s options: {name} is not compared")
    width = max(15, *(len(n) for n in plan))
    twidth = max(len(t) for t, _ in TARGETS)
    with bench_env(tracefs="bpftrace" in configs) as loopdev, root_file() as rootimg:
        where = {"loop": loopdev, "root": rootimg}
        rootdev = sh("findmnt", "-n", "-o", "SOURCE", "--target", rootimg).strip()
        names = {"loop": TARGETS[0][1], "root": f"{TARGETS[1][1]} ({rootdev})"}
        machine = (f"{os.uname().machine}, {os.cpu_count()} CPUs, kernel {os.uname().release}")
        load = (f"fio io_uring randread 4k qd32 O_DIRECT on each target (a "
                f"{names['loop']}; a {names['root']}), {args.seconds} s per run, "
                f"{args.runs} rounds")
        print(f"machine: {machine}\nload: {load}")
        if baseline:
            builds = (f"this build {IOSTRATA} ({revision(IOSTRATA)}), "
                      f"baseline {baseline} ({revision(baseline)})")
            print(builds)
        res = {(t, c): [] for t, _ in TARGETS for c in plan}
        floors = {t: [] for t, _ in TARGETS}
        for r in range(args.runs):
            for t, _ in TARGETS:
                for name in round_order(plan, r):
                    cfg, binary = plan[name]
                    ios, iops, per, evs, progs = run(where[t], args.seconds, cfg, binary,
                                                     f"{t} {name}" if baseline else None)
                    res[(t, name)].append((iops, per, evs, progs))
                    print(f"round {r + 1} {t:<{twidth}} {name:<{width}} {iops:9.0f} IOPS  " +
                          "  ".join(f"{f} {v:.0f}" for f, v in per.items() if v) +
                          f"  = {sum(per.values()):.0f} BPF ns/I/O, {evs:.2f} runs/I/O")
                floors[t].append(floor(where[t], args.seconds))
                print(f"round {r + 1} {t:<{twidth}} floor: empty program {floors[t][-1][0]:.0f} "
                      f"ns/event, clock read {floors[t][-1][1]:.0f} ns")
        sections = []  # (target's name, table lines, summary lines)
        for t, _ in TARGETS:
            base = statistics.median(r[0] for r in res[(t, "no tracer")])
            rows = []
            for name in plan:
                runs = res[(t, name)]
                iops = statistics.median(r[0] for r in runs)
                fam = {f: statistics.median(r[1][f] for r in runs) for f in COLUMNS}
                evs = statistics.median(r[2] for r in runs)
                rows.append((name, iops, 100 * (iops / base - 1), fam, sum(fam.values()), evs))
            med = {name: tot for name, _, _, _, tot, _ in rows}
            evs = {name: e for name, _, _, _, _, e in rows}
            empty = statistics.median(f[0] for f in floors[t])
            clock = statistics.median(f[1] for f in floors[t])
            lines = ["| configuration | IOPS | IOPS vs none | " +
                     " | ".join(COLUMNS) + " | BPF ns/I/O | runs/I/O |",
                     "|---" * (len(COLUMNS) + 5) + "|"]
            for name, iops, delta, fam, tot, ev in rows:
                lines.append(f"| {name} | {iops:.0f} | {delta:+.1f} % | " +
                             " | ".join(f"{fam[f]:.0f}" for f in COLUMNS) +
                             f" | {tot:.0f} | {ev:.2f} |")
            goals = goals_for(med, evs, rows, empty, clock)
            for name in (n for n in plan if n.endswith(BASELINE_TAG)):
                new = name[:-len(BASELINE_TAG)]
                pct = lambda a, b: f"{100 * (a / b - 1):+.1f} %" if b else "n/a"  # noqa: E731
                rounds = [pct(sum(n[1].values()), sum(b[1].values()))
                          for n, b in zip(res[(t, new)], res[(t, name)])]
                goals.append(f"{new}, baseline -> this build: {med[name]:.0f} -> {med[new]:.0f} "
                             f"BPF ns per I/O ({pct(med[new], med[name])}; each round: "
                             f"{', '.join(rounds)}), runs/I/O {evs[name]:.2f} -> {evs[new]:.2f}")
            lines += breakdown(res, t, empty, clock)
            sections.append((names[t], lines, goals))
        for tname, lines, goals in sections:
            print(f"\nmedians, {tname}\n" + "\n".join(lines) + "\n" + "\n".join(goals))
        if args.doc:
            DOC.write_text(
                "# Overhead: iostrata beside bpftrace and biolatency\n\n"
                "Produced by `make bench-overhead" +
                (f" BASELINE={baseline}" if baseline else "") +
                f"` on {time.strftime('%Y-%m-%d')}.\n\n"
                f"- machine: {machine}\n- load: {load}\n" +
                (f"- builds: {builds}; each configuration and its baseline run back to back in "
                 "every round, swapping order every other round\n" if baseline else "") +
                "- BPF ns/I/O: kernel.bpf_stats_enabled run time of each program family / "
                "I/Os fio completed (the sysctl is restored afterwards); each tracer is charged "
                "only for the programs its own process holds\n" +
                "- runs/I/O: BPF program runs per I/O fio completed (every program of the "
                "configuration)\n"
                "- bpftrace: bench/block.py's biolatency one-liner; biolatency: libbpf-tools' "
                "(Debian's libbpf-tools), plain (issue to completion) and -Q (insert to "
                "completion)\n" +
                "".join(f"\n## {tname}\n\n" + "\n".join(lines) + "\n\n" +
                        "\n".join(f"- {g}" for g in goals) + "\n"
                        for tname, lines, goals in sections) +
                "\ndocs/benchmarks.md has the block layer's breakdown against the empty-program "
                "floor (`make bench`).\n")
            print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
