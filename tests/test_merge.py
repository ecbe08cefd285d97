"""Sequential O_DIRECT reads under a plug merge into block requests of dozens of bios: every
bio's queue time is consumed and every io_uring / aio request is linked, not only the first
few bios of each block request (those were walked inline, the rest are walked in a bpf_loop)."""
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT, Tracer, records, without_unseen

pytestmark = pytest.mark.root
LOAD = ROOT / "bin" / "iostrata-load"
READS = 4096
INLINE_BIOS = 8		# BIO_WALK_MAX in bpf/iostrata.h


@pytest.mark.parametrize("engine,layer,first", [("io_uring", "uring", "submit_cqe"),
                                                ("libaio", "aio", "submit_complete")])
def test_merged_requests_link_every_bio(engine, layer, first, loopdev, no_bpf_leak):
    disabled = Path("/proc/sys/kernel/io_uring_disabled")
    if engine == "io_uring" and disabled.exists() and disabled.read_text().strip() != "0":
        pytest.skip("io_uring is disabled on this kernel (kernel.io_uring_disabled)")
    disk = Path(loopdev).name
    def run():
        tracer = Tracer(["-l", f"block,{layer}", "-D", "-O", "-P", "-j"])
        subprocess.run([str(LOAD), "--engine", engine, "--device", loopdev, "--force", "--rw",
                        "read", "--qd", "32", "--submit-batch", "32", "--ios", str(READS)],
                       check=True, capture_output=True)
        return tracer, records(tracer.stop())
    _, recs = without_unseen(run)
    st, blk = {}, 0
    for rec in recs:
        assert not any(rec["drops"].values()), rec["drops"]
        for h in rec["hists"]:
            lab = h["labels"]
            if h["layer"] == "block" and h["stage"] == "device" and lab.get("disk") == disk:
                blk += h["count"]
            if h["layer"] == layer and lab.get("comm") == "iostrata-load":
                v = st.setdefault(h["stage"], {"count": 0, "unmeasured": 0, "sum_ns": 0})
                for f in v:
                    v[f] += h[f]
    # the path under test: block requests averaging more bios than are walked inline
    assert 0 < blk * (INLINE_BIOS + 1) <= READS, f"{blk} block requests: too few merges"
    assert st[first]["count"] == READS, st
    for stage in ("submit_bio", "wait", "device"):
        assert st[stage]["count"] == READS and st[stage]["unmeasured"] == 0, (stage, st)
    # per request the linked stages add up to the first one: so do their sums, to the ns
    parts = ("submit_bio", "wait", "device") + (("device_cqe",) if layer == "uring" else ())
    assert sum(st[s]["sum_ns"] for s in parts) == st[first]["sum_ns"], st
