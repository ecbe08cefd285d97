"""Tag slots (bpf/inflight.bpf.h): a block request in flight is kept in the slot its tag names in
its hardware queue's region. The loader sizes the regions to the machine's hardware queues and the
slots to the deepest tag space (user/layers/block.c, tag_slots_size). A request outside them (its
queue has no region, or its tag is deeper) is kept in the hashed in-flight table instead: still
measured, and counted; `-v` says how many at the stop."""
import contextlib
import json
import re
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, Tracer, queue_set, records, unseen
from test_block import assert_exact, scheduler_of, set_scheduler, traced_io

pytestmark = pytest.mark.root

SIZED = re.compile(r"block: tag slots: (\d+) regions of (\d+) for (\d+) hardware queues of "
                   r"depth up to (\d+) \((\d+) KiB\)")
OUTSIDE = re.compile(r"block: (\d+) requests issued outside the tag slots")
INFLIGHT_BYTES = 64  # sizeof(struct inflight), bpf/iostrata.h (ENTRY_BYTES)
LOAD = ROOT / "bin" / "iostrata-load"


def sysfs_int(path):
    return int(Path(path).read_text().split()[0])


def kernel_depth(disk):
    """The disk's hardware queues and its deepest tag space, as the kernel states them: driver
    tags per queue, the scheduler's nr_requests, and the default a scheduler chosen later gets
    (2 x min(driver depth, 128), block/blk-mq-sched.c)."""
    mq = Path(f"/sys/block/{disk}/mq")
    queues = [q for q in mq.iterdir() if q.name.isdigit()]
    tags = max(sysfs_int(q / "nr_tags") for q in queues)
    nr_requests = sysfs_int(f"/sys/block/{disk}/queue/nr_requests")
    return len(queues), max(tags, nr_requests, 2 * min(tags, 128))


def sizing(stderr):
    m = SIZED.search(stderr)
    assert m, stderr
    return tuple(int(g) for g in m.groups())


def outside(stderr):
    m = OUTSIDE.search(stderr)
    assert m, stderr
    return int(m.group(1))


def test_every_request_has_a_tag_slot_under_each_scheduler(loopdev, no_bpf_leak):
    """-d DISK: the slots are sized to that disk's queues and tags, and each of its requests,
    driver tag (none) or scheduler tag (mq-deadline, a deeper space), is kept in its slot."""
    disk = Path(loopdev).name
    was = scheduler_of(loopdev)
    try:
        for i, sched in enumerate(("none", "mq-deadline")):
            set_scheduler(loopdev, sched)
            nreads, nwrites = 300 + i, 100 + i
            tracer, recs = traced_io(loopdev, nreads, nwrites)
            regions, slots, queues, depth, kib = sizing(tracer.stderr)
            assert (queues, depth) == kernel_depth(disk), (sched, tracer.stderr)
            for n in (regions, slots):
                assert n & (n - 1) == 0, (regions, slots)
            # a region each and as many spare; a slot for every tag
            assert regions >= 2 * queues and slots >= depth, (regions, slots, queues, depth)
            assert kib == regions * slots * INFLIGHT_BYTES // 1024
            assert_exact(recs, disk, nreads, nwrites)
            assert outside(tracer.stderr) == 0, (sched, tracer.stderr)
            print(f"{sched}: {regions} regions x {slots} slots ({kib} KiB) for {queues} queue(s)"
                  f" of depth {depth}; {nreads}+{nwrites} requests, 0 outside the slots")
    finally:
        set_scheduler(loopdev, was)  # the loop device outlives the test: leave it as found


def test_a_tag_beyond_the_slots_is_measured_and_counted(slow_loopdev, no_bpf_leak):
    """nr_requests raised after the start gives the scheduler tags deeper than the slots. A
    device that takes 1 ms per request (one at a time) holds a load's 2 x SLOTS reads in flight
    at once, each with a scheduler tag of its own: at least about SLOTS of those tags are beyond
    the slots. Those requests are kept in the in-flight table and counted, and every request is
    measured all the same."""
    dev = slow_loopdev(1000)
    disk = Path(dev).name
    knob = Path(f"/sys/block/{disk}/queue/nr_requests")
    was, tracer = scheduler_of(dev), None
    old_nr = knob.read_text().strip()
    # no merges (plug or scheduler): 2 x SLOTS random reads at once would merge some adjacent
    # pairs, and each read is then one request
    with queue_set(dev, nomerges=2), contextlib.ExitStack() as undo:
        undo.callback(knob.write_text, old_nr)      # after the scheduler, which resets it
        undo.callback(set_scheduler, dev, was)
        undo.callback(lambda: tracer and tracer.proc.poll() is None and tracer.stop(check=False))
        set_scheduler(dev, "mq-deadline")
        tracer = Tracer(["-d", disk, "-D", "-F", "-j"])
        _, slots, _, _, _ = sizing(tracer.stderr)
        try:
            knob.write_text(str(4 * slots))
        except OSError as e:
            pytest.skip(f"this kernel does not take nr_requests {4 * slots}: {e}")
        assert sysfs_int(knob) == 4 * slots
        qd, ios = 2 * slots, 2 * slots + 100
        out = subprocess.run([str(LOAD), "--engine", "io_uring", "--device", dev, "--force",
                              "--rw", "randread", "--qd", str(qd), "--ios", str(ios), "--json"],
                             check=True, capture_output=True, text=True)
        assert json.loads(out.stdout)["jobs"][0]["read"]["total_ios"] == ios
        recs = records(tracer.stop())
    n = outside(tracer.stderr)
    assert n >= slots // 2, (n, slots, tracer.stderr)
    # every O_DIRECT read in the device stage, measured; the load's signature check adds a few
    # readahead requests, told apart by their flag (as in tests/test_session.py)
    got = {"device": 0, "unmeasured": 0, "total": 0, "wait": 0}
    sums = {"device": 0, "total": 0, "wait": 0}
    for rec in recs:
        for h in rec["hists"]:
            if h["labels"].get("disk") != disk or "rahead" in h["labels"].get("flags", ""):
                continue
            assert h["labels"]["op"] == "read", h["labels"]
            got[h["stage"]] += h["count"]
            got["unmeasured"] += h["unmeasured"]
            sums[h["stage"]] += h["sum_ns"]
    k = unseen(recs)
    assert got == {"device": ios - k, "unmeasured": 0, "total": ios - k, "wait": ios - k}, (got, k)
    assert sums["total"] == sums["wait"] + sums["device"], sums
    print(f"nr_requests {4 * slots}, {slots} slots: {n} of {ios} requests outside the slots, "
          f"all measured")
