"""iostrata calibrate on the live kernel: it passes here, and a wrong expectation makes it fail."""
import json
import subprocess

import pytest

from conftest import ROOT, assert_one_line_error

pytestmark = pytest.mark.root
IOSTRATA = ROOT / "bin" / "iostrata"


def calibrate(*args):
    return subprocess.run([str(IOSTRATA), "calibrate", *args], capture_output=True, text=True,
                          timeout=120)


def test_calibrate_passes_and_reports_cost(no_bpf_leak):
    r = calibrate("-j")
    doc = json.loads(r.stdout)
    checks = [c for c in doc["checks"] if c["unit"] not in ("drops", "retry")]
    # runs repeated because the kernel completed requests no BPF program received, and what
    # each run could not record: said here, and with a failure
    said = [(c["check"], c["unit"], c["detail"]) for c in doc["checks"]
            if c["unit"] in ("drops", "retry")]
    for s in said:
        print("calibrate:", *s)
    bad = [(c["check"], c["expected"], c["observed"], c.get("detail")) for c in checks
           if c["result"] != "PASS"]
    assert r.returncode == 0 and doc["result"] == "PASS", (bad, said) if bad else r.stderr
    names = " ".join(c["check"] for c in doc["checks"])
    for what in ("psync", "posixaio", "libaio", "io_uring", "timeout 5 ms", "poll 5 ms",
                 "linked to bios", "block read requests"):
        assert what in names, what
    for c in checks:
        assert c["observed"] is not None, c
    cost = doc["cost"]
    assert cost["bpf_ns_per_io"]["total"] > 0 and cost["iops_untraced"] > 0, cost
    assert cost["bpf_ns_per_io"]["uring"] > 0 and cost["bpf_ns_per_io"]["block"] > 0, cost


def test_a_wrong_expectation_fails(no_bpf_leak):
    """--skew 20: every expected latency 20 % high; the known-latency probes must fail."""
    r = calibrate("--skew", "20")
    assert r.returncode == 1, r.stdout
    failed = [line for line in r.stdout.splitlines() if line.rstrip().endswith("FAIL")]
    assert any("timeout 5 ms" in line and "p50" in line for line in failed), r.stdout
    assert any("poll 5 ms" in line and "p50" in line for line in failed), r.stdout
    assert r.stdout.rstrip().splitlines()[-1].startswith("FAIL:")


@pytest.mark.parametrize("args,needle", [
    (["--skew", "x"], "bad --skew"),
    (["--dir", "/nonexistent"], "not a writable directory"),
    (["--bogus"], "--bogus"),
    (["extra"], "no argument"),
])
def test_bad_input(args, needle):
    assert_one_line_error(calibrate(*args), needle)
