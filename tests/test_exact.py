"""Exact against the kernel's own counters (issue 11): the block layer's requests per op equal
the deltas of /sys/block/DEV/stat over the same window.

The kernel counts a request in /sys/block/DEV/stat when it ends (blk_account_io_done: one per
request, merges included, only with queue/iostats on). iostrata counts a request at its final
block_rq_complete. Over a window that starts after the tracer attached and ends before it
detaches, with nothing in flight at either end, the two must agree for every op: each
request is either in a histogram (count, or unmeasured when a stage's start was not seen) or
counted in drops.complete_unseen, and complete_unseen must stay 0.
The host disk's version of this comparison is `make check-exact` (bench/exact.py).
"""
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, Tracer, drops_of, records, stat_requests

pytestmark = pytest.mark.root

LOAD = ROOT / "bin" / "iostrata-load"
def block_requests(recs, disk, stage="device"):
    """Requests iostrata saw end on disk, per op: measured or unmeasured, never both."""
    per_op = {}
    for rec in recs:
        for h in rec["hists"]:
            if h["layer"] == "block" and h["stage"] == stage and \
                    h["labels"].get("disk") == disk:
                op = h["labels"]["op"]
                per_op[op] = per_op.get(op, 0) + h["count"] + h["unmeasured"]
    return per_op


@pytest.fixture
def scheduler(request, loopdev):
    """The loop device under the scheduler asked, its own restored afterwards."""
    path = Path(f"/sys/block/{Path(loopdev).name}/queue/scheduler")
    text = path.read_text()
    if request.param not in text.replace("[", " ").replace("]", " ").split():
        pytest.skip(f"this kernel offers no {request.param} scheduler ({text.strip()})")
    old = text[text.index("[") + 1:text.index("]")]
    path.write_text(request.param)
    yield request.param
    path.write_text(old)


# Without a scheduler a request sits at its driver tag; with one, at its scheduler tag
# (bpf/inflight.bpf.h): both must find every request they put.
# keys "1": one (disk, op, flags) key fits the per-CPU histogram map, as few as a host with many
# CPUs holds; the others go to the shared spill map, counted there with atomics.
@pytest.mark.parametrize("scheduler,keys", [("none", None), ("mq-deadline", None),
                                            ("bfq", None), ("none", "1")],
                         indirect=["scheduler"])
def test_block_counts_equal_the_kernels_stat_under_randrw_qd32(loopdev, scheduler, keys,
                                                               no_bpf_leak):
    disk = Path(loopdev).name
    iostats = Path(f"/sys/block/{disk}/queue/iostats")
    if iostats.exists() and iostats.read_text().strip() != "1":
        pytest.skip(f"{disk} has queue/iostats off: the kernel does not count its requests")
    tracer = Tracer(["-d", disk, "-D", "-F", "-j"] + (["--hist-keys", keys] if keys else []))
    try:
        before = stat_requests(disk)
        for jobs, qd in ((2, 32), (1, 64)):
            out = subprocess.run([str(LOAD), "--engine", "io_uring", "--device", loopdev,
                                  "--force", "--rw", "randrw", "--qd", str(qd), "--jobs",
                                  str(jobs), "--ios", "20000", "--json"],
                                 capture_output=True, text=True, check=True)
            done = json.loads(out.stdout)["jobs"]
            assert sum(j["read"]["total_ios"] + j["write"]["total_ios"] for j in done) == \
                20000 * jobs
        after = stat_requests(disk)
    finally:
        recs = records(tracer.stop())
    kernel = {op: after[op] - before[op] for op in before if after[op] != before[op]}
    ours = block_requests(recs, disk)
    drops = drops_of(recs)
    print(f"{disk}: kernel /sys/block stat {kernel}; iostrata {ours}; "
          f"complete_unseen {drops.get('complete_unseen', 0)}")
    assert kernel["read"] > 20000 and kernel["write"] > 20000, kernel
    unseen = drops.get("complete_unseen", 0)
    # every request the kernel completed is in a histogram, or counted unseen: nothing vanishes
    assert sum(ours.values()) + unseen == sum(kernel.values()), (ours, kernel, drops)
    for op, n in kernel.items():
        assert ours.get(op, 0) <= n, (op, ours, kernel)
    assert set(ours) <= set(kernel), (ours, kernel)
    assert block_requests(recs, disk, "total") == ours
    # every request's issue was found at its completion (a slot lost would be unmeasured)
    unmeasured = sum(h["unmeasured"] for r in recs for h in r["hists"]
                     if h["layer"] == "block" and h["stage"] == "device")
    assert unmeasured == 0, unmeasured
    if unseen:
        # this kernel ran no BPF program for some completions (docs/trust.md): said, not hidden
        print(f"NOTE: {unseen} completions the kernel made reached no BPF program here; "
              "docs/trust.md, complete_unseen")


FLUSH_HOLD_US = 60_000_000     # at most: the test ends the hold itself once attached


def quiet(disk):
    """Wait until disk has nothing in flight and completes nothing for 0.5 s (at most 20 s)."""
    deadline = time.monotonic() + 20
    last = None
    while time.monotonic() < deadline:
        now = (Path(f"/sys/block/{disk}/inflight").read_text().split(), stat_requests(disk))
        if now == last and now[0] == ["0", "0"]:
            return
        last = now
        time.sleep(0.5)
    raise AssertionError(f"{disk} did not go quiet in 20 s")


# an fsync of the device: an empty PREFLUSH request, run as a flush; an O_DIRECT|O_DSYNC write:
# FUA, which the loop device lacks, so its data is written, then a flush run after it
FLUSHERS = {
    "fsync": "import os, sys; os.fsync(os.open(sys.argv[1], os.O_RDONLY))",
    "dsync-write": "import mmap, os, sys; buf = mmap.mmap(-1, 4096); "
                   "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_DIRECT | os.O_DSYNC); "
                   "assert os.write(fd, buf) == 4096",
}


@pytest.mark.parametrize("flusher_kind", sorted(FLUSHERS))
def test_a_flush_in_flight_at_the_attach_is_counted(slow_loopdev, tmp_path, flusher_kind,
                                                    no_bpf_leak):
    """A flush issued before the tracer attached and completed after it: the kernel counts it
    in /sys/block stat (flushes completed), so iostrata must count it too, as a request whose
    issue it did not see (unmeasured). /sys/block/DEV/inflight does not show flushes, so no
    window can be made to start without one: `make check-exact` missed exactly one such flush
    on 2026-11-27 (kernel 1, iostrata 0, complete_unseen short by 1). Here slowfs holds each
    flush (reads and writes at once) until the tracer has attached, so the flush is in flight
    across the attach, and the write it was for ends with it: an fsync's empty write, or a dsync
    write whose data ended before the attach, which the kernel counts only at that second end
    (iostrata did not)."""
    mark, hold = tmp_path / "flushing", tmp_path / "hold"
    dev = slow_loopdev(0, FLUSH_HOLD_US, mark, hold)
    disk = Path(dev).name
    quiet(disk)     # udev's probe of the new device done
    hold.touch()
    flusher = subprocess.Popen([sys.executable, "-c", FLUSHERS[flusher_kind], dev])
    try:
        deadline = time.monotonic() + 10
        while not mark.exists():    # the flush reached slowfs: held until hold goes
            assert flusher.poll() is None and time.monotonic() < deadline, "no flush came"
            time.sleep(0.01)
        before = stat_requests(disk)
        tracer = Tracer(["-d", disk, "-D", "-F", "-j"])
        # still in flight after the attach: nothing completed meanwhile
        assert flusher.poll() is None and stat_requests(disk) == before, \
            "the flush ended before iostrata had attached"
        hold.unlink()
        assert flusher.wait(timeout=60) == 0
    finally:
        hold.unlink(missing_ok=True)
        flusher.kill()
        flusher.wait()
    quiet(disk)     # udev may probe the device after a writer closed it: in both counts
    after = stat_requests(disk)
    recs = records(tracer.stop())
    kernel = {op: after[op] - before[op] for op in before if after[op] != before[op]}
    ours = block_requests(recs, disk)
    print(f"{disk}: kernel /sys/block stat {kernel}; iostrata {ours}; drops {drops_of(recs)}")
    # the dsync writer's close may add an fsync's pair (seen: 2 and 2), after the attach
    assert kernel.get("flush", 0) >= 1 and kernel.get("write", 0) >= 1, kernel
    assert ours == kernel and not drops_of(recs), (ours, kernel, drops_of(recs))
    flushes = [h for r in recs for h in r["hists"] if h["layer"] == "block" and
               h["stage"] == "device" and h["labels"].get("op") == "flush"]
    assert sum(h["unmeasured"] for h in flushes) == 1, flushes     # the one across the attach
