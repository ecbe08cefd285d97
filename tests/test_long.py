"""Requests in flight for longer than the tables' stale bound (issue 11: every stage obeys
count + unmeasured = requests seen starting it).

The in-flight tables take an entry older than 120 s for a leftover (an I/O whose end never came)
where nothing better tells one. A block request at its tag slot, an io_uring request at its
address and an aio iocb are told apart from leftovers otherwise (the kernel's allocation time
of the request; every submission claiming or forgetting its address; every io_submit claiming
its iocbs, unless one went unfollowed), so a request that takes minutes, the
hung device someone runs iostrata to find, is measured like any other. It used to be neither:
the block request counted unmeasured in every stage and the io_uring request in no stage at all,
both only as inflight_stale drops.

--stale-after (testing) shortens the bound to 1 s; slowfs holds every I/O of its loop device
for 2.5 s.
"""
import json
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, Tracer, drops_of, records

pytestmark = pytest.mark.root

LOAD = ROOT / "bin" / "iostrata-load"
DELAY_US = 2_500_000
IOS = 2


def hists(recs, layer, stage, op=None):
    return [h for r in recs for h in r["hists"] if h["layer"] == layer and h["stage"] == stage
            and (op is None or h["labels"].get("op") == op)]


def load_reads(dev, engine="io_uring"):
    out = subprocess.run([str(LOAD), "--engine", engine, "--device", dev, "--force",
                          "--rw", "randread", "--qd", "1", "--ios", str(IOS), "--json"],
                         capture_output=True, text=True, check=True, timeout=120)
    assert json.loads(out.stdout)["jobs"][0]["read"]["total_ios"] == IOS


def test_requests_past_the_stale_bound_are_measured(slow_loopdev, no_bpf_leak):
    dev = slow_loopdev(DELAY_US)
    tracer = Tracer(["-d", Path(dev).name, "-l", "block,uring", "-F", "-j",
                     "--stale-after", "1"])
    load_reads(dev)
    recs = records(tracer.stop())

    drops = drops_of(recs)
    assert "inflight_stale" not in drops and "uring_inflight_stale" not in drops, drops
    # the block layer: the load's reads, and any the kernel or udev made meanwhile; each held
    # 2.5 s by slowfs, so each is measured at 2.5 s at least, none left unmeasured
    for stage in ("device", "total"):
        hs = hists(recs, "block", stage, "read")
        assert sum(h["count"] for h in hs) >= IOS, (stage, hs)
        assert sum(h["unmeasured"] for h in hs) == 0, (stage, hs)
        assert min(h["min_ns"] for h in hs if h["count"]) >= DELAY_US * 1000, (stage, hs)
    # the io_uring layer: exactly the load's reads, each timed from its submission (total
    # ends at the reap, which no event bounds for the last CQE before the ring closes:
    # counted unmeasured, tests/test_uring.py)
    for stage in ("submit_cqe", "device", "total"):
        hs = hists(recs, "uring", stage)
        count, unmeasured = (sum(h[k] for h in hs) for k in ("count", "unmeasured"))
        assert count + unmeasured == IOS, (stage, hs)
        assert unmeasured == 0 or stage == "total", (stage, hs)
        assert min(h["min_ns"] for h in hs if h["count"]) >= DELAY_US * 1000, (stage, hs)


def test_aio_requests_past_the_stale_bound_are_measured(slow_loopdev, no_bpf_leak):
    """An aio entry has no kernel time to check it by, but every submission claims its iocb's
    entry: the one io_getevents finds is its latest submission's unless a submission since went
    unfollowed (tests/test_aio.py), so its age does not matter."""
    dev = slow_loopdev(DELAY_US)
    tracer = Tracer(["-d", Path(dev).name, "-l", "block,aio", "-j", "--stale-after", "1"])
    load_reads(dev, "libaio")
    recs = records(tracer.stop())
    drops = drops_of(recs)
    assert "aio_inflight_stale" not in drops, drops
    # linked: submit_complete ends at the block completion, 2.5 s on; then the reap follows
    for stage in ("submit_complete", "device", "total"):
        hs = hists(recs, "aio", stage)
        assert sum(h["count"] for h in hs) == IOS and not sum(h["unmeasured"] for h in hs), \
            (stage, hs)
        assert min(h["min_ns"] for h in hs if h["count"]) >= DELAY_US * 1000, (stage, hs)


def test_snoop_names_requests_past_the_stale_bound(slow_loopdev, no_bpf_leak):
    """snoop printed nothing for a request slower than the bound: the one it is run to find."""
    dev = slow_loopdev(DELAY_US)
    tracer = Tracer(["-d", Path(dev).name, "-l", "block,uring", "--slower", "2s", "-j",
                     "--stale-after", "1"], command=("snoop",))
    load_reads(dev)
    recs = records(tracer.stop())
    reqs = [r for r in recs if r["type"] == "snoop"]
    uring = [r for r in reqs if r["layer"] == "uring"]
    block = [r for r in reqs if r["layer"] == "block" and r["op"] == "read"]
    assert len(uring) == IOS, reqs
    assert len(block) >= IOS, reqs
    assert all(r["total_ns"] >= DELAY_US * 1000 for r in uring + block), reqs
    assert not [r for r in recs if r["type"] == "snoop_lost"], recs
