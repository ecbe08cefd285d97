#!/usr/bin/env python3
"""make soak: iostrata serve for 10 minutes under the fastest load this machine sustains, every
layer on, a scrape every second.

The load: iostrata-load's io_uring and libaio engines at qd 32 and psync, 4 KiB random O_DIRECT
reads, all three at once on a loop device over a file in /dev/shm (no disk to wait for), in a
cgroup of their own that serve filters on (-c), so that their counts can be compared exactly.
Every minute it prints serve's resident memory and open fds (from /proc/PID, read between two
scrapes: a scrape's own connection is not counted), the scrape's size and time, the I/O so far
and the drops. At the end:

- RSS and fds must be flat after the first minute (fds equal; RSS within 1 MiB);
- the counts serve exports must equal the load's: io_uring requests (submit_cqe, opcode read),
  libaio iocbs (aio total, opcode pread), psync pread64 calls (syscall duration; and each
  load's two reads of the device's signatures), and block read requests on the loop device
  (device stage, count + unmeasured, + the block layer's drops) against the kernel's
  /sys/block/DEV/stat;
- drops are printed.

The figures go to docs/soak.md. Exit 1 when a check fails.

Usage: bench/soak.py [--seconds S] [--no-doc]
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
IOSTRATA = TOP / "bin" / "iostrata"
LOAD = TOP / "bin" / "iostrata-load"
DOC = TOP / "docs" / "soak.md"
# the block layer's drop reasons: requests it saw and could not time or count (docs/iostrata.8)
BLOCK_DROPS = {"inflight_full", "inflight_stale", "inflight_reused", "hist_full",
               "complete_unseen"}
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def cgroup2():
    for line in Path("/proc/mounts").read_text().splitlines():
        dev, mnt, fstype = line.split()[:3]
        if fstype == "cgroup2":
            return Path(mnt)
    sys.exit("soak: no cgroup v2 mount (the loads run in a cgroup of their own)")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def parse(text):
    out = []
    for line in text.splitlines():
        if line.startswith("#") or not line:
            continue
        if "_bucket{" in line:
            continue
        m = SAMPLE.match(line)
        if m:
            out.append((m.group(1), dict(LABEL.findall(m.group(2) or "")), float(m.group(3))))
    return out


def total(samples, name, **labels):
    return sum(v for n, l, v in samples if n == name and
               all(l.get(k) == want for k, want in labels.items()))


def proc_figures(pid):
    rss = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) * 1024
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


def reads(disk):
    return int(Path(f"/sys/block/{disk}/stat").read_text().split()[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=600)
    ap.add_argument("--no-doc", action="store_true", help="do not write docs/soak.md")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("soak: must run as root (it loads BPF and makes a loop device)")
    port = free_port()
    cg = cgroup2() / f"iostrata-soak-{os.getpid()}"
    img = Path(tempfile.mkdtemp(prefix="iostrata-soak.", dir="/dev/shm")) / "disk.img"
    with open(img, "wb") as f:
        f.truncate(256 << 20)
    dev = subprocess.run(["losetup", "-f", "--show", "--direct-io=on", str(img)], check=True,
                         capture_output=True, text=True).stdout.strip()
    disk = Path(dev).name
    cg.mkdir()
    serve = loads = None
    failed = []
    try:
        serve = subprocess.Popen([str(IOSTRATA), "serve", "-O", "-c", str(cg), "--listen",
                                  f"127.0.0.1:{port}"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        line = serve.stdout.readline()
        if not line.startswith("serving"):
            sys.exit(f"soak: serve did not start: {serve.stderr.read()}")
        url = f"http://127.0.0.1:{port}/metrics"
        print(f"soak: serve (pid {serve.pid}) on {url}, every layer, -O, -c {cg}; "
              f"{args.seconds} s of io_uring qd 32 + libaio qd 32 + psync 4 KiB random "
              f"O_DIRECT reads on {dev} (a file in /dev/shm), a scrape every second", flush=True)
        reads0 = reads(disk)
        common = ["--rw", "randread", "--device", dev, "--force", "--runtime",
                  f"{args.seconds}s", "--json"]
        loads = {e: subprocess.Popen(
            ["sh", "-c", f'echo $$ > {cg}/cgroup.procs && exec "$0" "$@"', str(LOAD),
             "--engine", e, *qd, *common], stdout=subprocess.PIPE, text=True)
            for e, qd in (("io_uring", ["--qd", "32"]), ("libaio", ["--qd", "32"]),
                          ("psync", []))}
        t0 = time.monotonic()
        rows, scrapes, scrape_s, last = [], 0, 0.0, ""
        minute = 1
        print(f"{'min':>4} {'RSS MiB':>8} {'fds':>4} {'scrape KiB':>10} {'scrape ms':>9} "
              f"{'block reads':>12} {'uring':>10} {'aio':>10} {'pread64':>10}  drops",
              flush=True)
        while any(p.poll() is None for p in loads.values()):
            t = time.monotonic()
            with urllib.request.urlopen(url, timeout=30) as r:
                last = r.read().decode()
            scrape_s += time.monotonic() - t
            scrapes += 1
            if time.monotonic() - t0 >= 60 * minute:
                s = parse(last)
                # between scrapes: the one just taken has closed its connection by then
                time.sleep(0.3)
                rss, fds = proc_figures(serve.pid)
                drops = {l["reason"]: int(v) for n, l, v in s
                         if n == "iostrata_drops_total" and v}
                row = {"minute": minute, "rss": rss, "fds": fds, "bytes": len(last),
                       "scrape_ms": 1000 * scrape_s / scrapes,
                       "block": int(total(s, "iostrata_latency_seconds_count", layer="block",
                                          stage="device", device=disk, op="read")),
                       "uring": int(total(s, "iostrata_latency_seconds_count", layer="uring",
                                          stage="submit_cqe", opcode="read")),
                       "aio": int(total(s, "iostrata_latency_seconds_count", layer="aio",
                                        stage="total", opcode="pread")),
                       "pread64": int(total(s, "iostrata_latency_seconds_count",
                                            layer="syscall", syscall="pread64")),
                       "drops": drops}
                rows.append(row)
                print(f"{minute:>4} {rss / 2**20:>8.1f} {fds:>4} {len(last) / 1024:>10.0f} "
                      f"{row['scrape_ms']:>9.2f} {row['block']:>12} {row['uring']:>10} "
                      f"{row['aio']:>10} {row['pread64']:>10}  {drops or 'none'}", flush=True)
                minute += 1
            time.sleep(max(0.0, 1.0 - (time.monotonic() - t)))
        done = {e: json.loads(p.communicate()[0]) for e, p in loads.items()}
        for e, p in loads.items():
            if p.returncode:
                failed.append(f"iostrata-load --engine {e} exited {p.returncode}")
        ios = {e: d["total"]["read"]["total_ios"] for e, d in done.items()}
        # two more intervals: everything the loads did is drained
        n0 = total(parse(last), "iostrata_intervals_total")
        while True:
            with urllib.request.urlopen(url, timeout=30) as r:
                last = r.read().decode()
            if total(parse(last), "iostrata_intervals_total") >= n0 + 2:
                break
            time.sleep(0.3)
        s = parse(last)
        kernel_reads = reads(disk) - reads0
        got = {
            "io_uring": total(s, "iostrata_latency_seconds_count", layer="uring",
                              stage="submit_cqe", opcode="read"),
            "libaio": total(s, "iostrata_latency_seconds_count", layer="aio", stage="total",
                            opcode="pread"),
            "psync": total(s, "iostrata_latency_seconds_count", layer="syscall",
                           syscall="pread64"),
        }
        block = total(s, "iostrata_latency_seconds_count", layer="block", stage="device",
                      device=disk, op="read") + \
            total(s, "iostrata_unmeasured_total", layer="block", stage="device", device=disk,
                  op="read")
        drops = {l["reason"]: int(v) for n, l, v in s if n == "iostrata_drops_total" and v}
        rss, fds = proc_figures(serve.pid)
        serve.send_signal(signal.SIGTERM)
        _, err = serve.communicate(timeout=60)
        if serve.returncode:
            failed.append(f"serve exited {serve.returncode}: {err.strip()}")
    finally:
        for p in ([serve] if serve else []) + list((loads or {}).values()):
            if p.poll() is None:
                p.kill()
                p.wait()
        subprocess.run(["losetup", "-d", dev], check=False)
        img.unlink()
        img.parent.rmdir()
        if cg.exists():
            cg.rmdir()

    secs = args.seconds
    total_ios = sum(ios.values())
    print(f"\nload: {total_ios} reads in {secs} s ({total_ios / secs:.0f}/s): "
          + ", ".join(f"{e} {n}" for e, n in ios.items()))
    checks = []
    for e in ("io_uring", "libaio"):
        checks.append((f"{e}: serve {int(got[e])}, the load {ios[e]}", got[e] == ios[e]))
    # each load reads the device's first 256 KiB and its last 384 KiB, one pread64 each,
    # before its I/O (to refuse a device holding a filesystem or a RAID or ZFS label:
    # signature() in tools/load/target.c; the device here is far larger than 640 KiB)
    sig = 2 * len(ios)
    want = ios["psync"] + sig
    checks.append((f"psync: serve's pread64 {int(got['psync'])}, the load's {ios['psync']} + "
                   f"{sig} signature reads", got["psync"] == want))
    lost = sum(v for k, v in drops.items() if k in BLOCK_DROPS)
    what = (f"block reads on {disk}: serve {int(block)} (count + unmeasured)"
            + (f" + {lost} in drops" if lost else "")
            + f", /sys/block/{disk}/stat {kernel_reads}")
    checks.append((what, block + lost == kernel_reads))
    after = [r for r in rows if r["minute"] >= 1]
    if after:
        rss_span = max(r["rss"] for r in after) - min(r["rss"] for r in after)
        fd_set = sorted({r["fds"] for r in after})
        checks.append((f"RSS from minute 1 on: {min(r['rss'] for r in after) / 2**20:.1f} to "
                       f"{max(r['rss'] for r in after) / 2**20:.1f} MiB (span "
                       f"{rss_span / 1024:.0f} KiB, at most 1024)", rss_span <= 1 << 20))
        checks.append((f"open fds from minute 1 on: {fd_set}", len(fd_set) == 1))
    else:
        checks.append(("at least a minute of figures", False))
    for what, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {what}")
    print(f"drops: {drops or 'none'}")
    print(f"scrapes: {scrapes}, {1000 * scrape_s / max(scrapes, 1):.2f} ms each on average "
          f"(client side, {len(last) / 1024:.0f} KiB)")
    for f in failed:
        print(f"FAIL  {f}")
    ok = all(ok for _, ok in checks) and not failed
    if not args.no_doc:
        write_doc(rows, checks, drops, ios, secs, scrapes, scrape_s, len(last), disk, ok)
        print(f"wrote {DOC.relative_to(TOP)}")
    return 0 if ok else 1


def write_doc(rows, checks, drops, ios, secs, scrapes, scrape_s, size, disk, ok):
    uname = os.uname()
    lines = [
        "# iostrata serve: soak",
        "",
        "Written by `make soak` (bench/soak.py): `iostrata serve -O -c CGROUP` with every "
        f"layer for {secs} s, under iostrata-load's io_uring (qd 32), libaio (qd 32) and psync "
        "4 KiB random O_DIRECT reads at once on a loop device over a file in /dev/shm (the "
        "fastest load this machine sustains: nothing waits for a disk), a scrape of /metrics "
        "every second. Serve's resident memory and open fds are read from /proc/PID each "
        "minute; the counts it exports are compared with the load's own and with the kernel's "
        f"/sys/block/{disk}/stat.",
        "",
        f"Machine: {uname.nodename.split('.')[0]}, Linux {uname.release}, "
        f"{os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "",
        "| minute | RSS (MiB) | open fds | scrape (KiB) | scrape (ms, mean so far) | "
        "block reads | io_uring | libaio | pread64 | drops |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        d = ", ".join(f"{k} {v}" for k, v in r["drops"].items()) or "none"
        lines.append(f"| {r['minute']} | {r['rss'] / 2**20:.1f} | {r['fds']} | "
                     f"{r['bytes'] / 1024:.0f} | {r['scrape_ms']:.2f} | {r['block']} | "
                     f"{r['uring']} | {r['aio']} | {r['pread64']} | {d} |")
    n = sum(ios.values())
    lines += ["", f"Load: {n} reads in {secs} s ({n / secs:.0f}/s): "
              + ", ".join(f"{e} {v}" for e, v in ios.items()) + ".", ""]
    lines += [f"- {'PASS' if good else 'FAIL'}: {what}" for what, good in checks]
    lines += [f"- drops: {', '.join(f'{k} {v}' for k, v in drops.items()) or 'none'}",
              f"- scrapes: {scrapes}, {1000 * scrape_s / max(scrapes, 1):.2f} ms each on "
              f"average, measured by the client ({size / 1024:.0f} KiB each at the end)",
              "", f"Result: {'PASS' if ok else 'FAIL'}.", ""]
    DOC.write_text("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
