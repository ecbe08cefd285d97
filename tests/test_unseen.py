"""drops.complete_unseen (issue 11): a block request whose block_rq_complete no BPF program saw.

On this VM the kernel does emit the event (ftrace records it), but every BPF program attached to
it (tp_btf, raw_tp, perf tracepoint, block_io_done too) is skipped when the completion softirq runs
on top of certain tasks (docs/trust.md, "complete_unseen"). iostrata cannot see those requests;
what it promises is that none of them disappears silently: every read the kernel completed is
either in a histogram or counted in drops.complete_unseen when its request is reused. Only the
last round of the queue (at most --qd requests) can end unseen and never be reused.
"""
import json
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, Tracer, records

pytestmark = pytest.mark.root

LOAD = ROOT / "bin" / "iostrata-load"
QD = 16
RUNS = 5
IOS = 20000


def kernel_reads_completed(disk):
    return int(Path(f"/sys/block/{disk}/stat").read_text().split()[0])


def test_every_completed_read_is_measured_or_counted_unseen(loopdev, no_bpf_leak):
    disk = Path(loopdev).name
    nomerges = Path(f"/sys/block/{disk}/queue/nomerges")
    old = nomerges.read_text().strip()
    nomerges.write_text("2")  # one request per bio: the setting the losses were reported on
    try:
        tracer = Tracer(["-d", disk, "-j", "-F"])
        before = kernel_reads_completed(disk)
        for _ in range(RUNS):
            out = subprocess.run([str(LOAD), "--engine", "io_uring", "--device", loopdev,
                                  "--force", "--rw", "randread", "--qd", str(QD),
                                  "--ios", str(IOS), "--json"],
                                 capture_output=True, text=True, check=True)
            assert json.loads(out.stdout)["jobs"][0]["read"]["total_ios"] == IOS
        completed = kernel_reads_completed(disk) - before
        recs = records(tracer.stop())
    finally:
        nomerges.write_text(old)

    unseen = sum(r["drops"].get("complete_unseen", 0) for r in recs)
    assert sum(r["drops"].get("prog_recursion", 0) for r in recs) == 0
    for stage in ("device", "total"):
        seen = sum(h["count"] + h["unmeasured"] for r in recs for h in r["hists"]
                   if h["layer"] == "block" and h["stage"] == stage)
        # each read once: measured, or counted unseen when its request came back
        assert seen + unseen <= completed, (stage, seen, unseen, completed)
        # only the final round can end unseen without its request being issued again
        assert completed - (seen + unseen) <= QD, (stage, seen, unseen, completed)
    print(f"kernel completed {completed} reads; complete_unseen {unseen}")
