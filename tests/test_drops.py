"""Nothing is lost: with an in-flight table far too small for the queue depth, every request the
kernel completed is still accounted for (measured, or counted unmeasured) and every failed
insert is shown in drops."""
import json
import subprocess
from pathlib import Path

import pytest

from conftest import Tracer, drops_of, records, stat_requests

pytestmark = pytest.mark.root


@pytest.mark.parametrize("tag_slots", [False, True], ids=["hashed", "tag-slots"])
def test_undersized_inflight_table_counts_every_request(loopdev, no_bpf_leak, tag_slots):
    """hashed (--no-tag-slots): bios and requests share the 64 slots, every stage loses starts.
    tag-slots (the default): requests sit at their tags, outside the table: only the stages that
    start at a bio (wait, total) lose any, and the device stage is measured for every request."""
    disk = Path(loopdev).name
    before = stat_requests(disk)["read"]
    tracer = Tracer(["-d", disk, "-j", "--inflight", "64"] + ([] if tag_slots else
                                                               ["--no-tag-slots"]))
    fio = subprocess.run(["fio", "--name=deep", f"--filename={loopdev}", "--direct=1",
                          "--ioengine=libaio", "--iodepth=512", "--iodepth_batch_submit=128",
                          "--rw=randread", "--bs=4k", "--io_size=40M", "--output-format=json"],
                         capture_output=True, text=True, check=True)
    recs = records(tracer.stop())
    completed = stat_requests(disk)["read"] - before
    assert json.loads(fio.stdout)["jobs"][0]["read"]["total_ios"] == 10240

    seen = {}
    drops = drops_of(recs)
    for rec in recs:
        for h in rec["hists"]:
            c = seen.setdefault(h["stage"], [0, 0])
            c[0] += h["count"]
            c[1] += h["unmeasured"]
    # 64 slots for up to 512 bios (and, hashed, their requests): inserts fail, and are shown
    assert drops["inflight_full"] > 0, drops
    assert set(seen) == {"wait", "device", "total"}, seen
    unseen = drops.get("complete_unseen", 0)
    for stage, (count, unmeasured) in seen.items():
        # every request the kernel completed is here exactly once, measured or not, or counted
        # as one whose completion reached no BPF program (docs/trust.md, complete_unseen)
        assert count + unmeasured + unseen == completed, (stage, count, unmeasured, unseen,
                                                          completed)
        if tag_slots and stage == "device":
            assert unmeasured == 0, (stage, drops)
        else:
            assert unmeasured > 0, (stage, drops)
    print(f"kernel completed {completed} reads; drops {drops}; stages {seen}")
