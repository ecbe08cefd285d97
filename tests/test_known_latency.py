"""A device with a known latency: the block layer's device stage must land on it.

The device is a loop device over a FUSE file whose every read and write sleeps a set time
(tests/helpers/slowfs.c): no request can complete faster than that, and with one request in
flight nothing but the FUSE round trip adds to it.
"""
from pathlib import Path

import pytest

from conftest import Tracer, drops_of, finish_dio, merged_p50, records, run_dio, without_unseen

pytestmark = pytest.mark.root

# the documented worst-case error of a reported bucket midpoint
BUCKET_ERR = 0.03125


def stage_hists(recs, op):
    """One merged view per stage for op: counts, sums and the buckets of every interval."""
    out = {}
    for rec in recs:
        for h in rec["hists"]:
            if h["labels"].get("op") != op:
                continue
            s = out.setdefault(h["stage"], {"count": 0, "sum_ns": 0, "unmeasured": 0,
                                            "buckets": [], "p50": []})
            s["count"] += h["count"]
            s["sum_ns"] += h["sum_ns"]
            s["unmeasured"] += h["unmeasured"]
            s["buckets"] += h["buckets"]
            if h["count"]:
                s["p50"].append(h["p50_ns"])
    return out


@pytest.mark.parametrize("delay_ms", [2, 20])
def test_device_stage_lands_on_the_known_latency(slow_loopdev, delay_ms, no_bpf_leak):
    delay_ns = delay_ms * 1_000_000
    dev = slow_loopdev(delay_ms * 1000)
    def run():
        tracer = Tracer(["-d", Path(dev).name, "-F", "-j"])
        p, _ = run_dio(dev, 40, 20)
        finish_dio(p)
        return tracer, records(tracer.stop())
    _, recs = without_unseen(run)

    for op, n in (("read", 40), ("write", 20)):
        st = stage_hists(recs, op)
        dev_st, wait, total = st["device"], st["wait"], st["total"]
        drops = drops_of(recs)
        assert dev_st["count"] == n and total["count"] == n and wait["count"] == n, \
            ({k: (v["count"], v["unmeasured"]) for k, v in st.items()}, drops)
        # nothing completes faster than the device sleeps: no sample in a bucket below it
        below = [b for b in dev_st["buckets"] if b[1] is not None and b[1] <= delay_ns]
        assert below == [], f"{op}: device samples below the known {delay_ms} ms: {below}"
        # the median is the known latency, within the bucket error plus the FUSE round trip
        # (a wake-up and a context switch or two: a generous margin, not a speed test)
        p50 = merged_p50(dev_st["buckets"])
        assert delay_ns * (1 - BUCKET_ERR) <= p50 <= max(delay_ns * 1.5, delay_ns + 2_000_000), \
            (op, p50)
        # the delay is the device's: it is not in wait
        assert merged_p50(wait["buckets"]) < delay_ns * 0.1, (op, wait)
        # per request total = wait + device exactly, so the sums agree exactly
        assert total["sum_ns"] == wait["sum_ns"] + dev_st["sum_ns"], (op, st)
        print(f"{delay_ms} ms {op}: device p50 {p50 / 1e6:.3f} ms "
              f"(interval p50s {[x / 1e6 for x in dev_st['p50']]}), "
              f"wait p50 {merged_p50(wait['buckets']) / 1e3:.1f} us")
