"""iostrata-load: exact counts through every engine, verified writes, known-latency probes, safety.

Most of these need no root. Files live under a directory on a disk filesystem (O_DIRECT needs
one; /tmp may be tmpfs)."""
import contextlib
import errno
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import stat
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import conftest
from conftest import ROOT, schema_check

LOAD = ROOT / "bin" / "iostrata-load"
SCHEMA = json.loads((ROOT / "docs" / "load.schema.json").read_text())
MAGIC = 0x31444C5254534F49
HDR = struct.Struct("<QQQIIQ")  # magic, offset, seq, job, bs, seed

ENGINES = [
    ("psync", []),
    ("libaio", []),
    ("posixaio", []),
    ("io_uring", []),
    ("io_uring", ["--fixed-bufs", "--fixed-files"]),
    ("io_uring", ["--submit-batch", "4", "--complete-batch", "2"]),
    ("io_uring", ["--sqpoll"]),
    ("threadpool", ["--workers", "3"]),
]
IDS = [e + "".join(a[:1]) for e, a in ENGINES]


def io_uring_usable():
    p = Path("/proc/sys/kernel/io_uring_disabled")
    return not p.exists() or p.read_text().strip() == "0"


@pytest.fixture
def workdir():
    """A directory on a disk filesystem (O_DIRECT), removed afterwards."""
    base = "/var/tmp" if os.access("/var/tmp", os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="iostrata-load-test.", dir=base) as d:
        yield Path(d)


def load(*args, check=True, env=None):
    r = subprocess.run([str(LOAD), *map(str, args)], capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL, env=env)
    if check:
        assert r.returncode == 0, f"iostrata-load {' '.join(map(str, args))}: {r.stderr}"
    return r


def load_json(*args, env=None):
    r = load(*args, "--json", env=env)
    doc = json.loads(r.stdout)
    schema_check(doc, SCHEMA)
    return doc


def skip_without_uring(engine):
    if engine == "io_uring" and not io_uring_usable():
        pytest.skip("io_uring is disabled on this kernel (kernel.io_uring_disabled)")


def assert_one_line_error(r, *needles):
    # a job that fails mid-run still prints its report on stdout; the error is one line
    return conftest.assert_one_line_error(r, *needles, quiet_stdout=False)


@pytest.mark.parametrize("engine,extra", ENGINES, ids=IDS)
def test_exact_reads(engine, extra, workdir):
    skip_without_uring(engine)
    n = 300
    doc = load_json("--engine", engine, *extra, "--rw", "randread", "--ios", n, "--bs", "4k",
                    "--size", "2m", "--file", workdir / "f")
    rd = doc["total"]["read"]
    assert rd["total_ios"] == n and rd["io_bytes"] == n * 4096
    assert rd["errors"] == 0 and rd["short_ios"] == 0
    assert doc["total"]["write"]["total_ios"] == 0
    lat = rd["lat_ns"]
    assert lat["N"] == n and sum(b[2] for b in lat["buckets"]) == n
    assert lat["min"] <= lat["percentile"]["50.000000"] <= lat["max"]
    if engine in ("libaio", "io_uring", "posixaio", "threadpool"):
        assert rd["slat_ns"]["N"] == n and rd["clat_ns"]["N"] == n
    assert not (workdir / "f").exists(), "a file it created was left behind"


@pytest.mark.parametrize("qd", [1, 8])
def test_io_uring_reap_bound(qd, workdir):
    """io_uring: each read also timed from its preparation to the first submit after its reap
    (reap_bound_ns), where a tracer sees the reap at the latest: at least its time to the reap,
    and for every read reaped before another submit (at depth 1 all but the last; at depth 8
    all but the last batch). Other engines, and SQPOLL (whose submits are not ring events of
    ours), have none."""
    skip_without_uring("io_uring")
    n = 300
    rd = load_json("--engine", "io_uring", "--qd", qd, "--rw", "randread", "--ios", n,
                   "--size", "2m", "--file", workdir / "f")["total"]["read"]
    bound, lat = rd["reap_bound_ns"], rd["lat_ns"]
    assert (bound["N"] == n - 1) if qd == 1 else (n - qd <= bound["N"] < n), bound["N"]
    assert bound["min"] >= lat["min"] and bound["max"] >= lat["min"], (bound, lat["min"])
    for engine in ("psync", "libaio"):
        rd = load_json("--engine", engine, "--rw", "randread", "--ios", 50, "--size", "2m",
                       "--file", workdir / "f")["total"]["read"]
        assert "reap_bound_ns" not in rd, engine
    r = load("--engine", "io_uring", "--sqpoll", "--op", "nop", "--ios", 100, "--json",
             check=False)
    if r.returncode == 0:
        assert "reap_bound_ns" not in json.loads(r.stdout)["total"]["nop"]


@pytest.mark.parametrize("engine,extra", ENGINES, ids=IDS)
def test_exact_writes_are_verifiable(engine, extra, workdir):
    """N sequential writes: the file holds exactly N blocks, each with its own header."""
    skip_without_uring(engine)
    n, bs = 200, 8192
    f = workdir / "w"
    doc = load_json("--engine", engine, *extra, "--rw", "write", "--ios", n, "--bs", bs,
                    "--size", n * bs, "--file", f, "--keep", "--seed", 7)
    wr = doc["total"]["write"]
    assert wr["total_ios"] == n and wr["io_bytes"] == n * bs and wr["lat_ns"]["N"] == n
    assert doc["total"]["read"]["total_ios"] == 0
    data = f.read_bytes()
    assert len(data) == n * bs
    seqs = set()
    for i in range(n):
        magic, off, seq, job, hbs, seed = HDR.unpack_from(data, i * bs)
        assert magic == MAGIC, f"block {i} was not written by iostrata-load"
        assert off == i * bs and hbs == bs and job == 0 and seed == 7
        seqs.add(seq)
    assert seqs == set(range(n)), "every write landed exactly once, in order"


def test_mixed_counts_add_up(workdir):
    """randrw:70 draws each I/O's kind from the seeded generator: the same seed, the same mix;
    about 70 % reads (within 5 standard deviations of 1,000 draws: 14.5 reads each)."""
    counts = []
    for name in ("m1", "m2"):
        doc = load_json("--engine", "libaio", "--rw", "randrw:70", "--ios", 1000, "--size",
                        "4m", "--file", workdir / name)
        rd, wr = doc["total"]["read"], doc["total"]["write"]
        assert rd["total_ios"] + wr["total_ios"] == 1000
        counts.append(rd["total_ios"])
    assert counts[0] == counts[1], f"one seed, two mixes: {counts}"
    assert abs(counts[0] - 700) <= 72, counts


def written(f, bs):
    """{offset: (the job's I/O number, seed)} of each block f's header says was written."""
    data, out = f.read_bytes(), {}
    for off in range(0, len(data), bs):
        magic, at, seq, _, _, seed = HDR.unpack_from(data, off)
        if magic == MAGIC:
            assert at == off
            out[off] = (seq, seed)
    return out


def test_every_seed_is_taken_and_gives_random_offsets(workdir):
    """--seed 0 was refused ("expected an integer from 1 to ..."), though 0 is what people
    type and the seed is never the generator's state itself. And the one seed that made job 0's
    xorshift64* state 0 kept it at 0: every I/O at offset 0. Both run now: 64 random writes
    over 256 blocks land at many offsets, each block's header naming the seed, and the same
    seed writes the same blocks in the same order again."""
    k = 0x9E3779B97F4A7C15
    stuck = -pow(k, -1, 1 << 64) % (1 << 64)   # seed * k + 0 + 1 == 0 (mod 2^64)
    assert (stuck * k + 1) % (1 << 64) == 0
    for seed in (0, stuck):
        runs = []
        for name in ("a", "b"):
            f = workdir / name
            load("--rw", "randwrite", "--ios", 64, "--qd", 1, "--size", "1m", "--file", f,
                 "--keep", "--seed", seed)
            runs.append(written(f, 4096))
            f.unlink()
        assert runs[0] == runs[1], f"--seed {seed}: the same seed, other writes"
        assert len(runs[0]) > 32, f"--seed {seed}: 64 random writes on {sorted(runs[0])}"
        assert {s for _, s in runs[0].values()} == {seed}


def test_jobs_each_do_their_ios(workdir):
    doc = load_json("--engine", "psync", "--jobs", 3, "--ios", 50, "--size", "1m",
                    "--file", workdir / "j")
    assert [j["read"]["total_ios"] for j in doc["jobs"]] == [50, 50, 50]
    assert doc["total"]["read"]["total_ios"] == 150


def test_buffered_and_fsync(workdir):
    doc = load_json("--engine", "psync", "--buffered", "--rw", "write", "--ios", 64,
                    "--fsync-every", 16, "--size", "256k", "--file", workdir / "b")
    assert doc["global options"]["direct"] == 0
    assert doc["total"]["write"]["total_ios"] == 64
    assert doc["total"]["sync"]["total_ios"] == 4 and doc["jobs"][0]["sync"]["total_ios"] == 4


def disk_flushes(dev):
    """/sys/block/DEV/stat's 16th field: flush requests completed (kernels from 5.5)."""
    f = Path(f"/sys/block/{Path(dev).name}/stat").read_text().split()
    if len(f) < 17:
        pytest.skip("this kernel does not count flushes in /sys/block/DEV/stat")
    return int(f[15])


@pytest.mark.root
@pytest.mark.parametrize("engine,extra", ENGINES + [("io_uring", ["--complete-batch", "16"])],
                         ids=IDS + ["io_uring-complete-batch"])
def test_fsync_every_n_is_one_fsync_per_n_writes(engine, extra, loopdev):
    """--fsync-every 10 over 1000 writes is 100 fsyncs, each a flush the device counts. An
    engine reaping several completions at once reset the count to 0 past 10, dropping the
    excess: 40 to 90 fsyncs, not 100. 1003 writes: still 100 (the last 3 owe none)."""
    skip_without_uring(engine)
    for n, want in ((1000, 100), (1003, 100)):
        f0 = disk_flushes(loopdev)
        doc = load_json("--device", loopdev, "--force", "--engine", engine, *extra, "--rw",
                        "randwrite", "--ios", n, "--fsync-every", 10, "--size", "16m")
        f1 = disk_flushes(loopdev)
        assert doc["total"]["write"]["total_ios"] == n
        assert doc["total"]["sync"]["total_ios"] == want, doc["total"]["sync"]
        assert f1 - f0 == want, f"the device completed {f1 - f0} flushes"
    # the text report says it too; per job with --jobs
    if engine == "psync":
        r = load("--device", loopdev, "--force", "--engine", engine, "--rw", "randwrite", "--ios",
                 25, "--jobs", 2, "--fsync-every", 10, "--size", "16m")
        assert "\nfsync: 4 issued, one after every 10 writes completed\n" in r.stdout


def test_default_run_is_useful(workdir):
    """`iostrata-load --engine X` alone: a temporary file, random reads, a report; no leftovers."""
    env = dict(os.environ, TMPDIR=str(workdir))
    engine = "io_uring" if io_uring_usable() else "libaio"
    r = load("--engine", engine, "--runtime", "1s", "--size", "8m", env=env)
    assert "IOPS" in r.stdout and "P99.99" in r.stdout and "us per I/O" in r.stdout
    assert list(workdir.iterdir()) == []


# ---- known latency: the generator's own clock against a latency set in advance ----

@pytest.mark.parametrize("latency_ms", [1, 10])
def test_io_uring_timeout_probe(latency_ms):
    skip_without_uring("io_uring")
    n = 200 if latency_ms == 1 else 40
    doc = load_json("--engine", "io_uring", "--op", "timeout", "--latency", f"{latency_ms}ms",
                    "--ios", n)
    t = doc["total"]["timeout"]
    assert t["total_ios"] == n and t["errors"] == 0
    p50 = t["lat_ns"]["percentile"]["50.000000"]
    assert abs(p50 - latency_ms * 1e6) <= 0.05 * latency_ms * 1e6, p50
    assert t["lat_ns"]["min"] >= latency_ms * 1e6, "a timeout cannot fire early"


def test_aio_poll_probe():
    doc = load_json("--engine", "libaio", "--op", "poll", "--latency", "5ms", "--ios", 40)
    t = doc["total"]["poll"]
    assert t["total_ios"] == 40 and t["errors"] == 0
    p50 = t["lat_ns"]["percentile"]["50.000000"]
    assert abs(p50 - 5e6) <= 0.05 * 5e6, p50


def test_probes_default_to_their_one_engine():
    """A probe runs on one engine only; without --engine it takes that one. `--op poll` was
    refused ("needs --engine libaio") for the io_uring default, whose reads it does not do."""
    doc = load_json("--op", "poll", "--latency", "4ms", "--ios", 30)
    assert doc["global options"]["ioengine"] == "libaio"
    t = doc["total"]["poll"]
    assert t["total_ios"] == 30 and t["errors"] == 0
    assert abs(t["lat_ns"]["percentile"]["50.000000"] - 4e6) <= 0.05 * 4e6
    if io_uring_usable():
        for op in (["--op", "timeout", "--latency", "1ms"], ["--op", "nop"]):
            doc = load_json(*op, "--ios", 20)
            assert doc["global options"]["ioengine"] == "io_uring", op
            assert doc["total"][op[1]]["total_ios"] == 20


def test_io_uring_nop():
    skip_without_uring("io_uring")
    doc = load_json("--engine", "io_uring", "--op", "nop", "--ios", 5000)
    assert doc["total"]["nop"]["total_ios"] == 5000


# ---- safety ----

def digest(p):
    return hashlib.sha256(Path(p).read_bytes()).hexdigest()


def test_existing_file_is_not_written_without_force(workdir):
    f = workdir / "precious"
    f.write_bytes(os.urandom(1 << 20))
    before = digest(f)
    assert_one_line_error(load("--rw", "randwrite", "--ios", 10, "--file", f, check=False),
                          "refusing to write to existing file", "--force")
    assert digest(f) == before
    # reading it is fine, and leaves it as it was
    doc = load_json("--engine", "psync", "--rw", "randread", "--ios", 20, "--file", f)
    assert doc["total"]["read"]["total_ios"] == 20
    assert digest(f) == before and f.exists()
    # with --force it is written, and kept: it was not ours
    load("--engine", "psync", "--rw", "randwrite", "--ios", 20, "--file", f, "--force")
    assert digest(f) != before and f.exists()


@pytest.mark.skipif(not shutil.which("strace"), reason="needs strace")
@pytest.mark.parametrize("engine", ["psync", "libaio"])
def test_jobs_write_the_file_that_was_checked(workdir, engine):
    """The checks ran on one lookup of --file, and the file was opened again by its path for
    the dio check and by each job: a path swapped in that window (here for a symlink to a file
    never checked; a disk, as well) was written. strace slows every open by 100 ms and the path
    is swapped as soon as the first call naming it returns: what was checked is what is
    written, and the file swapped in is untouched."""
    checked, victim, link = workdir / "checked", workdir / "victim", workdir / "target"
    for f in (link, victim):
        f.write_bytes(os.urandom(1 << 20))
    before = digest(victim)
    p = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=%file", "-e",
                          "inject=openat:delay_enter=100000", str(LOAD), "--engine", engine,
                          "--file", str(link), "--force", "--rw", "write", "--ios", "5",
                          "--size", "1m", "--json"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    for line in p.stderr:
        if f'"{link}"' in line and "resumed>" not in line and "unfinished" not in line:
            os.rename(link, checked)        # the file checked keeps its inode
            link.symlink_to(victim)
            break
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 0
    doc = json.loads(out)
    assert doc["total"]["write"]["total_ios"] == 5
    assert digest(victim) == before, "a file swapped in after the checks was written"
    data = checked.read_bytes()
    assert sum(HDR.unpack_from(data, o)[0] == MAGIC for o in range(0, len(data), 4096)) == 5


@pytest.mark.skipif(not shutil.which("strace"), reason="needs strace")
def test_a_stop_as_the_file_is_made_never_removes_another_s(workdir):
    """A --file found absent, then made by someone else just before iostrata-load's own create
    (which so fails, EEXIST), and two stop signals then: the second one's cleanup removed that
    other file, its name taken for ours before the create. strace holds the create 5 s."""
    f, trace = workdir / "f", workdir / "strace.out"
    p = subprocess.Popen(["strace", "-f", "-qq", "-o", str(trace), "-P", str(f),
                          "-e", "trace=openat", "-e", "inject=openat:delay_enter=5000000:when=2",
                          str(LOAD), "--file", str(f), "--ios", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while "O_CREAT|O_EXCL" not in (trace.read_text() if trace.exists() else ""):
        assert time.monotonic() < deadline and p.poll() is None, p.communicate()
        time.sleep(0.01)
    f.write_text("someone else's\n")       # the held create finds it
    pid = int(trace.read_text().split()[0])
    os.kill(pid, signal.SIGINT)
    os.kill(pid, signal.SIGTERM)            # a second one, not merged with the first
    out, err = p.communicate(timeout=60)
    # the moment asked for: the create held while the file was made, so it failed
    assert "O_CREAT|O_EXCL, 0600) = -1 EEXIST" in trace.read_text(), trace.read_text()
    assert p.returncode in (1, 130), (p.returncode, err)
    assert f.exists() and f.read_text() == "someone else's\n", (out, err)


def test_a_dangling_symlink_is_refused_as_one(workdir):
    """--file naming a symlink to nothing said "cannot create X: File exists" (O_EXCL does not
    follow it): it says what is wrong, and creates nothing."""
    link = workdir / "link"
    link.symlink_to(workdir / "nowhere")
    r = load("--file", link, "--rw", "write", "--ios", 5, "--size", "1m", check=False)
    assert r.returncode == 1
    assert_one_line_error(r, f"refusing {link}: it is a dangling symlink", "does not follow")
    assert sorted(p.name for p in workdir.iterdir()) == ["link"] and link.is_symlink()


@pytest.mark.parametrize("path,fs", [("/proc/version", "procfs"),
                                     ("/sys/kernel/uevent_seqnum", "sysfs"),
                                     ("trace_marker", "tracefs")])
def test_kernel_interfaces_are_not_storage(path, fs, tmp_path):
    """A --file on procfs, sysfs, tracefs (debugfs, cgroupfs, efivarfs, ...) passed every check
    with --force and was written where the kernel let it (a writable sysfs attribute is 4096
    bytes long). Refused, with what it is on, whatever --force says, and read too. These
    ones are read-only or empty: before the fix no write could reach them either. tracefs is
    mounted here for the test (a fresh machine may have none mounted)."""
    mnt = None
    if fs == "tracefs":
        if os.geteuid() != 0:
            pytest.skip("mounting tracefs needs root")
        mnt = tmp_path / "tracefs"
        mnt.mkdir()
        subprocess.run(["mount", "-t", "tracefs", "nodev", str(mnt)], check=True)
        path = str(mnt / path)
    try:
        check_refused(path, fs)
    finally:
        if mnt:
            subprocess.run(["umount", str(mnt)], check=True)


def check_refused(path, fs):
    for args in (["--force", "--rw", "write", "--buffered", "--bs", "4k"], ["--buffered"]):
        r = load("--file", path, *args, "--ios", 1, check=False)
        assert r.returncode == 1
        assert_one_line_error(r, f"refusing {path}: it is on {fs}, a kernel interface, "
                              "not storage")


def test_sigint_removes_its_files(workdir):
    f = workdir / "made-here"
    p = subprocess.Popen([str(LOAD), "--engine", "psync", "--rw", "randwrite", "--runtime", "60",
                          "--size", "4m", "--file", str(f)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (f.exists() and f.stat().st_size == 4 << 20):
        assert p.poll() is None and time.monotonic() < deadline, p.stderr.read()
        time.sleep(0.05)
    time.sleep(0.5)  # into the run itself
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert "INTERRUPTED" in out, "the report says the run was cut short"
    assert not f.exists(), "SIGINT left the file it created"


def ring_submitted(pid):
    """SQEs the process has put on its io_uring (its fdinfo's SqTail), 0 before it has one."""
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if "io_uring" not in os.readlink(f"/proc/{pid}/fd/{fd}"):
                continue
            for line in Path(f"/proc/{pid}/fdinfo/{fd}").read_text().splitlines():
                if line.startswith("SqTail:"):
                    return int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return 0


def interrupted_once_submitting(*args):
    """iostrata-load ARGS --json, SIGINT once its ring has taken a submission: its report."""
    p = subprocess.Popen([str(LOAD), *map(str, args), "--json"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not ring_submitted(p.pid):
        assert p.poll() is None and time.monotonic() < deadline, p.stderr.read()
        time.sleep(0.01)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    return json.loads(out)


# clock_nanosleep, io_getevents and io_pgetevents, by machine: what /proc/PID/task/TID/syscall
# shows of a libaio job thread once its POLL probe is submitted (it sleeps until the probe's
# time, then waits for the completion)
AIO_PROBE_WAITS = {"x86_64": {230, 208, 333}, "aarch64": {115, 4, 292}}


def probe_in_flight(pid, uring):
    """An io_uring load has submitted (SqTail); a libaio one has a job thread (not the main
    one) in one of the waits above, which it enters only with the probe submitted."""
    if uring:
        return ring_submitted(pid) > 0
    waits = AIO_PROBE_WAITS[platform.machine()]
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            nr = Path(f"/proc/{pid}/task/{tid}/syscall").read_text().split()[0]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if tid != str(pid) and nr.isdigit() and int(nr) in waits:
            return True
    return False


@pytest.mark.parametrize("ios,interrupted", [(1, False), (2, True)])
def test_interrupted_only_when_cut_short(ios, interrupted):
    """SIGINT while the load's first 3 s TIMEOUT is in flight, at depth 1. With --ios 1 the run
    is whole (it waits for that TIMEOUT and reports it), and was said INTERRUPTED all the same;
    with --ios 2 the second is never issued: cut short, said."""
    doc = interrupted_once_submitting("--op", "timeout", "--latency", "3s", "--qd", "1",
                                      "--ios", ios)
    assert doc["interrupted"] is interrupted
    assert doc["total"]["timeout"]["total_ios"] == 1, doc["total"]


def test_a_huge_ios_cut_short_is_interrupted():
    """--ios 2^62 with --jobs 4: the I/Os asked for, --ios times --jobs, wrapped to 0 in 64
    bits, and a run cut short by SIGINT after millions of NOPs was said whole ("interrupted":
    false). Each job is compared with its own --ios."""
    skip_without_uring("io_uring")
    doc = interrupted_once_submitting("--op", "nop", "--ios", 1 << 62, "--jobs", "4")
    assert doc["interrupted"] is True
    assert 0 < doc["total"]["nop"]["total_ios"] < 4 << 62


def exit_status_section():
    man = (ROOT / "docs" / "iostrata-load.1").read_text()
    return man.split(".SH EXIT STATUS", 1)[1].split(".SH", 1)[0]


@pytest.mark.parametrize("second", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
def test_a_second_signal_leaves_at_once_with_130(second):
    """A first signal stops the load, which waits for what is in flight (here a 5 s probe) to
    report it; a second one leaves at once: exit 130, nothing printed. The man page's EXIT
    STATUS did not list 130."""
    if io_uring_usable():
        args = ["--engine", "io_uring", "--op", "timeout"]
    else:
        args = ["--engine", "libaio", "--op", "poll"]
    p = subprocess.Popen([str(LOAD), *args, "--latency", "5s", "--ios", "2", "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         stdin=subprocess.DEVNULL)
    # into the run: the first probe is in flight. A job thread that had started but not yet
    # submitted took the first signal as a stop with nothing to wait for, and left with 0
    # before the second came (a CI failure).
    deadline = time.monotonic() + 30
    while not probe_in_flight(p.pid, uring=args[1] == "io_uring"):
        assert p.poll() is None and time.monotonic() < deadline, p.stderr.read()
        time.sleep(0.01)
    p.send_signal(signal.SIGINT)
    time.sleep(0.2)                 # the first is taken (no timing is asserted)
    p.send_signal(second)
    out, err = p.communicate(timeout=60)
    assert (p.returncode, out, err) == (130, "", "")
    assert "130 when a second signal" in exit_status_section()


def test_nohup_keeps_a_hangup_ignored(workdir):
    """Started ignoring SIGHUP (nohup, so that a logout does not end it), the load runs on
    through a hangup (a review found it stopping: the handler was installed regardless)."""
    p = subprocess.Popen([str(LOAD), "--engine", "psync", "--rw", "randread", "--size", "4m",
                          "--runtime", "1.5s", "--file", str(workdir / "f"), "--json"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    time.sleep(0.5)
    p.send_signal(signal.SIGHUP)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert json.loads(out)["interrupted"] is False


def wait_for_lay_out(p, workdir):
    """Until load p has begun laying out its file in workdir (a byte of it written; the file,
    open, is found by its descriptor: a temporary one has no name by then): its size so far."""
    deadline = time.monotonic() + 30
    while True:
        assert p.poll() is None and time.monotonic() < deadline, p.stderr.read()
        for fd in os.listdir(f"/proc/{p.pid}/fd"):
            try:
                if os.readlink(f"/proc/{p.pid}/fd/{fd}").startswith(str(workdir) + "/"):
                    laid = os.stat(f"/proc/{p.pid}/fd/{fd}").st_size
                    if laid:
                        return laid
            except FileNotFoundError:
                pass
        time.sleep(0.005)


# every catchable signal whose default ends the process
STOP_SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                signal.SIGUSR2, signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGXCPU,
                signal.SIGXFSZ, signal.SIGIO, signal.SIGPWR, signal.SIGSTKFLT, signal.SIGTRAP,
                signal.SIGSYS, signal.SIGABRT, signal.SIGRTMIN, signal.SIGRTMAX,
                # sent with kill, not faults: a request to stop like the others
                signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL]


@pytest.mark.parametrize("sig", STOP_SIGNALS, ids=[s.name[3:] for s in STOP_SIGNALS])
def test_a_signal_during_layout_leaves_nothing(workdir, sig):
    """HUP (a closed terminal) and QUIT (Ctrl-\\) once left a half-laid-out file; so did USR1,
    ALRM and every other signal whose default ends the process. The file is big enough for its
    lay-out to take a while, and fits the filesystem (else the load would refuse it at once)."""
    env = dict(os.environ, TMPDIR=str(workdir))
    vfs = os.statvfs(workdir)
    size = min(4 << 30, vfs.f_bavail * vfs.f_frsize // 2) >> 20 << 20
    p = subprocess.Popen([str(LOAD), "--size", str(size), "--engine", "psync"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_lay_out(p, workdir)
    p.send_signal(sig)
    p.communicate(timeout=60)
    assert list(workdir.iterdir()) == []


def test_a_killed_load_leaves_no_temporary_file(workdir):
    """The temporary file is unlinked as soon as it is opened (the man page's word), so nothing
    is left whatever ends the load: it used to be unlinked only once laid out, and a SIGKILL (or
    the OOM killer) during a lay-out of seconds left the whole file in TMPDIR."""
    env = dict(os.environ, TMPDIR=str(workdir))
    vfs = os.statvfs(workdir)
    size = min(4 << 30, vfs.f_bavail * vfs.f_frsize // 2) >> 20 << 20
    p = subprocess.Popen([str(LOAD), "--size", str(size), "--engine", "psync", "--ios", "1"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    laid = wait_for_lay_out(p, workdir)
    p.kill()
    p.communicate(timeout=60)
    assert laid < size, "killed during the lay-out"
    assert list(workdir.iterdir()) == []


def mounted_block_device():
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        src = line.split(" - ")[1].split()[1]
        if src.startswith("/dev/") and Path(src).is_block_device():
            return src
    return None


def test_mounted_device_is_refused():
    dev = mounted_block_device()
    if not dev:
        pytest.skip("no mounted block device on this machine")
    assert_one_line_error(load("--device", dev, "--rw", "randread", "--ios", 1, check=False),
                          "--force")
    line = assert_one_line_error(load("--device", dev, "--force", "--rw", "randread", "--ios", 1,
                                      check=False), "refusing", "mounted")
    assert dev in line


@pytest.mark.root
def test_device_with_a_filesystem_is_refused_and_a_blank_one_works(loopdev):
    subprocess.run(["dd", "if=/dev/zero", f"of={loopdev}", "bs=1M", "count=4", "oflag=direct"],
                   check=True, capture_output=True)
    doc = load_json("--device", loopdev, "--force", "--rw", "randwrite", "--ios", 50,
                    "--size", "4m")
    assert doc["total"]["write"]["total_ios"] == 50
    # more than the device holds: refused, as for a file (it was shrunk to fit, unsaid)
    assert_one_line_error(load("--device", loopdev, "--force", "--rw", "randread", "--ios", 5,
                               "--size", "1g", check=False), "less than --size 1073741824")
    subprocess.run(["mkfs.ext4", "-q", "-F", loopdev], check=True, capture_output=True)
    assert_one_line_error(load("--device", loopdev, "--force", "--rw", "randwrite", "--ios", 5,
                               check=False), "refusing", "ext2/3/4 signature")


@pytest.mark.root
def test_check_exits_as_a_run_would_and_makes_nothing(loopdev, tmp_path):
    """--check (sched-ab's, before it switches a disk): each refusal a run says before making
    or writing anything, with the run's exit status and line; nothing made or written."""
    work = tmp_path / "work"        # beside the loop device's image
    work.mkdir()
    env = dict(os.environ, TMPDIR=str(work))
    dev = ["--device", loopdev]
    # each: what a run says, the same from --check (a good one: 0 and nothing said)
    cases = [[], ["--file", work / "f"], ["--bogus"], ["--qd", "0", "--json"],
             dev + ["--rw", "randread"], dev + ["--force", "--rw", "randread"],
             dev + ["--force", "--size", "1g"], dev + ["--force", "--bs", "100"],
             ["--device", work / "f", "--force"], ["--device", "/dev/null", "--force"]]
    mounted = mounted_block_device()
    if mounted:
        cases.append(["--device", mounted, "--force", "--rw", "randread"])
    seen = set()
    for args in cases:
        c = load("--check", *args, check=False, env=env)
        assert c.stdout == "" and list(work.iterdir()) == [], args
        r = load(*args, "--ios", 1, check=False, env=env)
        assert c.returncode == r.returncode, (args, c, r)
        if c.returncode:    # errors are text, even with --json: sched-ab reads the line
            line = assert_one_line_error(c, "iostrata-load: error: ")
            said = json.loads(r.stderr)["message"] if "--json" in args else \
                r.stderr.removeprefix("iostrata-load: error: ").rstrip("\n")
            assert line == "iostrata-load: error: " + said, args
        else:
            assert c.stderr == "", args
        seen.add(c.returncode)
    assert seen == {0, 1, 2}
    # a load that would write a blank device: passes, and opens nothing for writing (the close
    # of a disk opened to write has udev read it again), nor writes a byte
    before = digest(loopdev)
    trace = tmp_path / "check.strace"       # strace: scripts/deps.sh installs it
    subprocess.run(["strace", "-f", "-qq", "-o", str(trace), "-e", "trace=openat,open",
                    str(LOAD), "--check", *dev, "--force", "--rw", "randwrite"],
                   check=True, capture_output=True, timeout=60)
    opens = [o for o in trace.read_text().splitlines() if "open" in o]
    assert any(loopdev in o for o in opens), opens       # it was looked at
    assert not [o for o in opens if "O_RDWR" in o or "O_WRONLY" in o], opens
    assert digest(loopdev) == before, "--check wrote to the device"
    # held exclusively by someone (a mkfs, another load writing it): refused as a run is, not
    # passed for a run that then cannot start
    held = os.open(loopdev, os.O_RDONLY | os.O_EXCL)
    try:
        c = load("--check", *dev, "--force", "--rw", "randwrite", check=False)
        r = load(*dev, "--force", "--rw", "randwrite", "--ios", 1, check=False)
    finally:
        os.close(held)
    assert c.returncode == r.returncode == 1 and c.stderr == r.stderr, (c, r)
    assert "it is in use" in c.stderr
    # what the device holds is read: a filesystem's signature is refused by both
    subprocess.run(["mkfs.ext4", "-q", "-F", loopdev], check=True, capture_output=True)
    before = digest(loopdev)
    c = load("--check", *dev, "--force", "--rw", "randwrite", check=False)
    assert digest(loopdev) == before, "--check wrote to the device"
    assert c.returncode == 1 and "ext2/3/4 signature" in c.stderr


def mem_available():
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    pytest.skip("no MemAvailable in /proc/meminfo")


def test_buffers_past_the_memory_are_refused_before_the_target(workdir):
    """Each job's --qd buffers of --bs bytes were allocated after the file was made and laid
    out: --qd 65536 --bs 64m (4 TiB) laid out its 256 MiB, then said "out of memory", and
    --check said 0. And buffers that fit one by one but not together (--jobs 256 --qd 32 --bs
    64m: 512 GiB) were each had, then filled by the jobs until the OOM killer ended the load,
    its --file left behind. Both are refused before any target is made, by --check too (the
    second one only by --check here: a run would be killed)."""
    f = workdir / "f"
    huge = ["--engine", "libaio", "--qd", "65536", "--bs", "64m", "--file", f, "--size", "64m"]
    c = load("--check", *huge, check=False)
    r = load(*huge, "--ios", 1, check=False)
    assert (c.returncode, c.stderr) == (r.returncode, r.stderr) and r.returncode == 1, (c, r)
    assert "memory" in assert_one_line_error(r) and not f.exists()
    many = ["--jobs", "256", "--qd", "32", "--bs", "64m", "--file", f, "--size", "64m"]
    if 256 * 32 * (64 << 20) <= mem_available():
        pytest.skip("this machine has the memory for 512 GiB of buffers")
    line = assert_one_line_error(load("--check", *many, check=False),
                                 "more than the memory available")
    assert "549755813888 bytes" in line and not f.exists()


def as_nobody():
    """A preexec_fn: run as nobody (uid and gid 65534, no supplementary groups)."""
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)


def test_check_refuses_a_file_as_a_run_would(workdir):
    """--check said 0 for every --file (and the temporary file's TMPDIR): a directory, a FIFO,
    /proc/version, a file smaller than --bs, an existing file to be written without --force, a
    --size that does not fit, a directory that is not there, a file nobody may read or create.
    A run refused each (exit 1), so sched-ab switched a disk's scheduler for a load that could
    not start. --check says what the run says, with its status, and makes nothing."""
    (workdir / "dir").mkdir()
    os.mkfifo(workdir / "fifo")
    (workdir / "small").write_bytes(b"abc")
    (workdir / "precious").write_bytes(os.urandom(64 << 10))
    (workdir / "private").write_bytes(os.urandom(64 << 10))
    os.chmod(workdir / "private", 0o600)
    before = digest(workdir / "precious")
    vfs = os.statvfs(workdir)
    cases = [(["--file", workdir / "dir"], None), (["--file", workdir / "fifo"], None),
             (["--file", "/proc/version", "--buffered"], None),
             (["--file", workdir / "small"], None),
             (["--file", workdir / "precious", "--rw", "randwrite"], None),
             (["--file", workdir / "new", "--size", vfs.f_blocks * vfs.f_frsize], None),
             (["--file", workdir / "not-there" / "new", "--size", "1m"], None),
             (["--file", workdir / "small" / "new", "--size", "1m"], None),
             (["--size", "1m"], {"TMPDIR": str(workdir / "not-there")})]
    if os.geteuid() == 0:
        os.chmod(workdir, 0o755)
        cases += [(["--file", workdir / "private"], as_nobody),
                  (["--file", workdir / "new", "--size", "1m"], as_nobody)]
    made = sorted(workdir.iterdir())
    for args, how in cases:
        env = dict(os.environ, **how) if isinstance(how, dict) else None
        pre = how if callable(how) else None
        said = []
        for extra in (["--check"], ["--ios", "1"]):
            r = subprocess.run([str(LOAD), *map(str, args), *extra], capture_output=True,
                               text=True, timeout=30, stdin=subprocess.DEVNULL, env=env,
                               preexec_fn=pre)
            # the free space said is read at each call: what others write meanwhile moves it
            said.append((r.returncode, re.sub(r"[\d.]+ MiB free", "N MiB free",
                                              assert_one_line_error(r))))
            assert sorted(workdir.iterdir()) == made, (args, extra)
        assert said[0] == said[1] and said[0][0] == 1, (args, said)
    assert digest(workdir / "precious") == before


@pytest.mark.root
def test_the_file_under_a_mounted_loop_device_is_refused(loopdev, tmp_path):
    """--file over the image a mounted loop device reads from wrote under the filesystem, even
    its superblock, with --force (a helper's fuzzing found it). Refused while mounted, whatever
    --force says; once unmounted, --force writes it, as for any existing file."""
    img = tmp_path / "disk.img"     # loopdev's backing file
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mkfs.ext4", "-q", "-F", loopdev], check=True, capture_output=True)
    subprocess.run(["mount", loopdev, str(mnt)], check=True)
    try:
        before = hashlib.sha256(img.read_bytes()).hexdigest()
        line = assert_one_line_error(load("--file", img, "--force", "--rw", "write", "--ios", 5,
                                          "--size", "1m", check=False), "refusing", "mounted")
        assert Path(loopdev).name in line
        assert hashlib.sha256(img.read_bytes()).hexdigest() == before
        # reading it is harmless
        load("--file", img, "--rw", "randread", "--ios", 5, "--size", "1m", "--buffered")
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
    doc = load_json("--file", img, "--force", "--rw", "write", "--ios", 5, "--size", "1m")
    assert doc["total"]["write"]["total_ios"] == 5


@pytest.mark.root
@pytest.mark.parametrize("how", ["unlinked", "newline"])
def test_the_file_under_a_mounted_loop_device_is_found_by_its_inode(tmp_path, how):
    """The backing file was found by the name sysfs shows for it: the image of a mounted
    filesystem reached by another hard link after its first name was removed (sysfs shows
    "NAME (deleted)"), or one whose name holds a newline (read back cut short), was written
    with --force, under the mounted filesystem. The loop device knows its file's inode."""
    first = tmp_path / ("disk.img" if how == "unlinked" else "disk\nimg")
    img = tmp_path / "alias.img" if how == "unlinked" else first
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    with open(first, "wb") as f:
        f.truncate(64 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(first)], check=True, capture_output=True)
    dev = subprocess.run(["losetup", "-f", "--show", str(first)], check=True,
                         capture_output=True, text=True).stdout.strip()
    try:
        if how == "unlinked":
            os.link(first, img)
            first.unlink()
        subprocess.run(["mount", dev, str(mnt)], check=True)
        try:
            before = digest(img)
            line = assert_one_line_error(load("--file", img, "--force", "--rw", "write", "--ios",
                                              5, "--size", "1m", check=False),
                                         "refusing", "mounted")
            assert Path(dev).name in line
            assert digest(img) == before, "the mounted filesystem's image was written"
        finally:
            subprocess.run(["umount", str(mnt)], check=True)
    finally:
        subprocess.run(["losetup", "-d", dev], check=True)


def job_fd_on(pid, dev):
    """Has process pid an O_DIRECT fd on dev (what the load's jobs open)?"""
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            if os.path.realpath(f"/proc/{pid}/fd/{fd}") != dev:
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                flags = int(next(l for l in f if l.startswith("flags:")).split()[1], 8)
            if flags & os.O_DIRECT:
                return True
    except (FileNotFoundError, ProcessLookupError, StopIteration):
        pass            # the process or the fd went meanwhile
    return False


@pytest.mark.root
def test_a_writing_load_holds_its_device_exclusively(loopdev):
    """Checked free, the device could still be mounted (or taken by md or LVM) while the load
    writes over it. A writing load now holds it with O_EXCL until it exits: an exclusive open
    (what mount does) is refused meanwhile. A reading load holds nothing."""
    subprocess.run(["dd", "if=/dev/zero", f"of={loopdev}", "bs=1M", "count=1", "oflag=direct"],
                   check=True, capture_output=True)

    def exclusive_open_while(rw):
        p = subprocess.Popen([str(LOAD), "--device", loopdev, "--force", "--rw", rw, "--size",
                              "4m", "--ios", "400", "--rate", "200", "--qd", "1"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            # wait for a job's O_DIRECT fd on the device: the load's checks are over (one
            # of them opens it O_EXCL for a moment), its hold, if any, taken before
            while p.poll() is None and not job_fd_on(p.pid, loopdev):
                time.sleep(0.01)
            try:
                os.close(os.open(loopdev, os.O_RDONLY | os.O_EXCL))
                return None
            except OSError as e:
                return e.errno
        finally:
            assert p.wait(timeout=60) == 0, p.stderr.read()

    assert exclusive_open_while("randwrite") == errno.EBUSY
    assert exclusive_open_while("randread") is None
    os.close(os.open(loopdev, os.O_RDONLY | os.O_EXCL))    # and let go at exit


def _md10_at(size):
    return (((size >> 9) - 16) & ~7) * 512


@pytest.mark.root
@pytest.mark.parametrize("name,where,magic", [
    ("md RAID (1.2)", lambda size: 4096, b"\xfc\x4e\x2b\xa9"),
    ("md RAID (1.1)", lambda size: 0, b"\xfc\x4e\x2b\xa9"),
    ("md RAID (1.0)", _md10_at, b"\xfc\x4e\x2b\xa9"),
    ("md RAID (0.90)", lambda size: (size & ~0xffff) - 0x10000, (0xa92b4efc).to_bytes(4, "little")),
    ("ZFS", lambda size: 128 * 1024 + 3 * 1024, (0x00bab10c).to_bytes(8, "little")),
    ("ZFS", lambda size: (size & ~0x3ffff) - 100 * 1024, (0x00bab10c).to_bytes(8, "big")),
    ("LVM2", lambda size: 512, b"LABELONE"),
    ("Ceph BlueStore", lambda size: 0, b"bluestore block device\n"),
], ids=["md1.2", "md1.1", "md1.0", "md0.90", "zfs-front", "zfs-back", "lvm", "bluestore"])
def test_device_with_another_signature_is_refused(loopdev, name, where, magic):
    """Signatures beyond filesystems: RAID members (md keeps 0.90 and 1.0 superblocks at the
    device's end), ZFS labels (two at the end), LVM labels in any of the first four sectors,
    BlueStore. An md 1.2 member used to be written over with --force."""
    size = int(subprocess.run(["blockdev", "--getsize64", loopdev], check=True,
                              capture_output=True, text=True).stdout)
    with open(loopdev, "r+b") as f:
        f.write(bytes(256 * 1024))
        f.seek(size - 384 * 1024)
        f.write(bytes(384 * 1024))
        f.seek(where(size))
        f.write(magic)
        os.fsync(f.fileno())
    line = assert_one_line_error(load("--device", loopdev, "--force", "--rw", "randwrite",
                                      "--ios", 5, check=False), "refusing")
    assert f"a {name} signature" in line, line


@pytest.mark.root
def test_no_space_is_one_line(small_tmpfs):
    mnt = small_tmpfs("1m")
    # refused before a byte is written (5 % of a filesystem stays free), nothing left
    assert_one_line_error(load("--file", mnt / "f", "--size", "8m", "--buffered",
                               "--ios", 1, check=False), "does not fit", "MiB free")
    assert list(mnt.iterdir()) == []
    assert_one_line_error(load("--file", mnt / "f", "--size", "1000k", "--buffered",
                               "--ios", 1, check=False), "does not fit")
    assert list(mnt.iterdir()) == []
    # the default temporary file, kept (--keep): refused the same way, nothing left
    env = {**os.environ, "TMPDIR": str(mnt)}
    assert_one_line_error(load("--size", "8m", "--buffered", "--ios", 1, "--keep",
                               check=False, env=env), "does not fit")
    assert list(mnt.iterdir()) == []
    r = load("--file", mnt / "f", "--size", "512k", "--buffered", "--ios", 1, check=False)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("extra", [["--qd", "1"], ["--qd", "8", "--submit-batch", "4"],
                                   ["--qd", "8", "--submit-batch", "4", "--hold-submits", "3"]],
                         ids=["qd1", "qd8-sb4", "qd8-sb4-hold"])
def test_sqpoll_does_every_io(extra):
    """With SQPOLL, io_uring_submit counts what the poller had not consumed yet: taken for
    what the kernel took, SQEs already done were held back and waited for (a hang). And a
    ring whose completions were reaped before the poller moved its SQ head past them looked
    full with nothing in flight: the job ended early, exit 0 (17,349 of 20,000 NOPs at qd 1).
    Each run must do every I/O it was asked for."""
    for _ in range(5):
        r = load("--engine", "io_uring", "--sqpoll", "--op", "nop", "--ios", 20000, *extra,
                 "--json", check=False)
        if "io_uring_setup" in r.stderr:
            pytest.skip(f"SQPOLL refused here: {r.stderr.strip()}")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["total"]["nop"]["total_ios"] == 20000


def test_keep_keeps_the_default_temporary_file(tmp_path):
    """Without --file the load works on an unlinked temporary file in TMPDIR, gone whatever ends
    the load; --keep used to be ignored there. Now the file stays, laid out, under the name the
    load prints."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    load("--size", "256k", "--ios", 10, env=env)
    assert list(tmp_path.iterdir()) == []
    doc = load_json("--size", "256k", "--ios", 10, "--keep", env=env)
    kept = list(tmp_path.iterdir())
    assert [str(f) for f in kept] == [doc["global options"]["filename"]], (kept, doc)
    assert kept[0].stat().st_size == 256 * 1024
    text = load("--size", "256k", "--ios", 10, "--keep", env=env).stdout
    assert len(list(tmp_path.iterdir())) == 2 and "(temporary)" not in text, text


def test_a_name_is_one_line_in_the_text_report(workdir):
    """The text report's first line printed the --file name raw: a newline in it split the line,
    an escape sequence drove the terminal. Each is a C escape now (as --help and the man page
    say), a backslash doubled, so the line is one and the name can be read back; --json keeps
    the name itself."""
    raw = b"a\nb\tc\rd\x1b[31me\x7ff\\g\xffh\xc2\x85i\xe2\x80\xaej\xc3\xa9"
    f = os.fsencode(workdir) + b"/" + raw
    r = subprocess.run([str(LOAD), "--ios", "5", "--size", "1m", "--file", f, "--keep"],
                       capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    first, rest = r.stdout.split(b"\n", 1)
    assert first == b"io_uring, randread, bs 4096, qd 32, 1 job; " + os.fsencode(workdir) + \
        b"/a\\nb\\tc\\rd\\x1b[31me\\x7ff\\\\g\\xffh\\xc2\\x85i\\xe2\\x80\\xaej\xc3\xa9, " \
        b"O_DIRECT", first
    assert rest.startswith(b"JOB "), rest
    assert not re.search(rb"[\x00-\x09\x0b-\x1f\x7f]", r.stdout), r.stdout
    os.unlink(f)
    name = load_json("--ios", 5, "--size", "1m", "--file", os.fsdecode(f))["global options"]
    assert name["filename"].endswith("/a\nb\tc\rd\x1b[31me\x7ff\\g\ufffdh\x85i\u202ej\u00e9")


@pytest.mark.parametrize("args,needle", [
    (["--engine", "spdk"], "unknown --engine 'spdk'"),
    (["--rw", "sideways"], "bad --rw 'sideways'"),
    (["--rw", "read:50"], "only rw and randrw"),
    (["--bs", "4q"], "bad --bs '4q'"),
    (["--bs", "1000"], "not a multiple of 512"),
    # each written block starts with a 40-byte header: a smaller block overran its buffer
    (["--buffered", "--bs", "8", "--rw", "write"], "too small for writes"),
    (["--buffered", "--bs", "32", "--rw", "randrw"], "too small for writes"),
    (["--size", "1e3"], "bad --size '1e3'"),       # strtod's forms are not sizes
    (["--bs", "0x200"], "bad --bs '0x200'"),
    (["--engine", "io_uring", "--qd", "65536"], "at most 32768 with io_uring"),
    # was a job's error after the report ("registering 20000 buffers: Invalid argument")
    (["--fixed-bufs", "--qd", "20000"], "at most 16384 with --fixed-bufs"),
    # a probe has no file nor reads and writes: these were taken and did nothing, the report
    # saying "registerfiles": true with no file registered
    (["--op", "nop", "--fixed-files"], "are for reads and writes"),
    (["--op", "nop", "--async"], "are for reads and writes"),
    (["--op", "timeout", "--latency", "1ms", "--fsync-every", "2"], "are for reads and writes"),
    (["--op", "nop", "--fixed-bufs"], "are for reads and writes"),
    (["--qd", "0"], "bad --qd '0'"),
    (["--engine", "psync", "--qd", "8"], "psync is synchronous"),
    (["--engine", "libaio", "--sqpoll"], "io_uring options"),
    (["--sqpoll-cpu", "1"], "--sqpoll-cpu needs --sqpoll"),
    (["--op", "timeout"], "need --latency"),
    (["--op", "timeout", "--latency", "1ms", "--engine", "libaio"], "need --engine io_uring"),
    # an engine given that cannot run the probe is refused, not replaced
    (["--op", "poll", "--latency", "1ms", "--engine", "io_uring"],
     "--op poll needs --engine libaio"),
    (["--op", "nop", "--engine", "psync"], "need --engine io_uring"),
    (["--runtime", "soon"], "bad --runtime 'soon'"),
    # strtod's exponents, taken though never documented (1e3 was 1000 s), and what is no
    # time: a unit but ns, us, ms, s and m (minutes)
    (["--runtime", "1e3"], "bad --runtime '1e3'"),
    (["--runtime", "1E3"], "bad --runtime '1E3'"),
    (["--runtime", "1e-3s"], "bad --runtime '1e-3s'"),
    (["--op", "timeout", "--latency", "1e3us"], "bad --latency '1e3us'"),
    (["--poll-time", "5e2ns"], "bad --poll-time '5e2ns'"),
    (["--runtime", "1.5.2s"], "bad --runtime '1.5.2s'"),
    (["--runtime", "10 s"], "bad --runtime '10 s'"),
    (["--runtime", "1h"], "(digits, then ns, us, ms, s or m for minutes)"),
    (["--runtime", "1M"], "bad --runtime '1M'"),
    (["--runtime", "1min"], "bad --runtime '1min'"),
    (["--runtime", "+1s"], "bad --runtime '+1s'"),
    (["--runtime", "."], "bad --runtime '.'"),
    (["--runtime", "s"], "bad --runtime 's'"),
    (["--ios", "-3"], "bad --ios '-3'"),
    # strtoull takes blanks and signs: ' -1' was 2^64 - 1 (fuzzing found these)
    (["--ios", " 5"], "bad --ios ' 5'"),
    (["--ios", "+5"], "bad --ios '+5'"),
    (["--seed", " -1"], "bad --seed ' -1'"),
    (["--rw", "rw: 5"], "bad --rw read share ' 5'"),
    (["--cpus", "0,"], "expected a list such as 0,2-3"),
    (["--jobs", "0x10"], "bad --jobs '0x10'"),     # decimal only: 010 is ten, not eight
    (["--file", "a", "--device", "b"], "exclusive"),
    (["--cpus", "0-99999"], "bad --cpus"),
    (["--cpus", "5x"], "expected a list such as 0,2-3"),
    (["--cpus", "-0"], "expected a list such as 0,2-3"),
    (["--workers", "2"], "threadpool option"),
    (["--engine", "psync", "--poll-time", "1ms"], "--poll-time is an io_uring option"),
    (["--frobnicate"], "unknown option '--frobnicate'"),
    (["--sq", "1"], "ambiguous option '--sq': --sqpoll, --sqpoll-cpu"),
    (["--size"], "needs an argument"),
    (["extra"], "unexpected argument 'extra'"),
    # no path: a bad option (exit 2), not "cannot create : No such file or directory" (exit 1)
    (["--file", ""], "bad --file '': expected a path"),
    (["--device", ""], "bad --device '': expected a path"),
    (["--file=", "--rw", "write"], "bad --file '': expected a path"),
])
def test_bad_options_are_one_line(args, needle):
    r = load(*args, check=False)
    assert_one_line_error(r, needle)
    assert r.returncode == 2, "a bad option exits 2"


@pytest.mark.parametrize("runtime", ["0.005m", ".005m", "300ms", "0.3", "0.3s", "300000us"])
def test_times_as_documented(workdir, runtime):
    """TIME's forms as --help and the man page say: m is minutes (0.005m is 300 ms, not the
    5 ms an m for milli would be), ms milliseconds, no unit seconds. The run lasts at least
    that long (a bound one way: what it says is no speed)."""
    assert "m (minutes, never" in load("--help").stdout
    doc = load_json("--runtime", runtime, "--rate", 100, "--size", "1m", "--buffered",
                    "--file", workdir / "f")
    assert 299 <= doc["total"]["runtime"] < 30000, doc["total"]["runtime"]


def test_io_uring_setup_einval_is_one_line():
    skip_without_uring("io_uring")
    r = load("--engine", "io_uring", "--sqpoll", "--sqpoll-cpu", "4095", "--op", "nop",
             "--ios", 1, check=False)
    # a CPU this machine does not have is named before the kernel's EINVAL could be
    assert_one_line_error(r, f"bad --sqpoll-cpu '4095': CPUs are 0 to {os.sysconf('SC_NPROCESSORS_CONF') - 1} here")
    # an offline CPU gets past that check: the kernel's refusal is one line
    offline = [int(c.name[3:]) for c in Path("/sys/devices/system/cpu").glob("cpu[0-9]*")
               if (c / "online").exists() and (c / "online").read_text().strip() == "0"]
    if offline:
        r = load("--engine", "io_uring", "--sqpoll", "--sqpoll-cpu", offline[0], "--op", "nop",
                 "--ios", 1, check=False)
        assert r.returncode != 0 and "io_uring_setup" in r.stderr.splitlines()[-1], r.stderr


def test_errors_are_json_under_json():
    r = load("--json", "--engine", "nope", check=False)
    rec = json.loads(assert_one_line_error(r))
    assert rec == {"type": "error", "message": rec["message"]} and "nope" in rec["message"]


def test_iopoll_without_poll_queues_is_one_line(workdir):
    """IOPOLL on a device without poll queues: the first I/O fails, and the error says why."""
    skip_without_uring("io_uring")
    r = load("--iopoll", "--ios", 10, "--size", "1m", "--file", workdir / "p", check=False)
    if r.returncode == 0:
        pytest.skip("this filesystem's device has poll queues: IOPOLL works here")
    line = assert_one_line_error(r, "Operation not supported", "poll queues")
    assert "job 0" in line


@pytest.mark.parametrize("engine,extra", ENGINES, ids=IDS)
def test_rate_holds_no_pacing_in_latency(engine, extra, workdir):
    """--rate 50 at depth 8: an I/O is due every 20 ms. Pacing once slept inside the fill loop,
    after the first I/O of a batch was stamped, so its latency held the next ones' waits (p50
    19.4 ms at --rate 1000 --qd 32, against 80 us at --qd 1), and reaping waited for the next
    I/O's turn. A page-cached 4 KiB read takes microseconds: the median stays far below the
    20 ms interval (it read 60-80 ms so), and all 40 are issued."""
    skip_without_uring(engine)
    qd = [] if engine == "psync" else ["--qd", 8]
    doc = load_json("--engine", engine, *extra, *qd, "--rate", 50, "--ios", 40, "--buffered",
                    "--rw", "randread", "--size", "1m", "--file", workdir / "r")
    rd = doc["total"]["read"]
    assert rd["total_ios"] == 40 and rd["errors"] == 0, rd
    assert rd["lat_ns"]["percentile"]["50.000000"] < 20_000_000 / 2, rd["lat_ns"]


@pytest.mark.parametrize("engine,extra", ENGINES, ids=IDS)
def test_rate_issues_every_io(engine, extra, workdir):
    """--rate 20000 --ios 5000 at depth 4: every I/O is issued. A job whose next I/O fell due
    between two clock reads was taken for one that had ended: it stopped early, exit 0 (167 of
    5000 once, threadpool)."""
    skip_without_uring(engine)
    qd = [] if engine == "psync" else ["--qd", 4]
    doc = load_json("--engine", engine, *extra, *qd, "--rate", 20000, "--ios", 5000,
                    "--buffered", "--rw", "randread", "--size", "4m", "--file", workdir / "r")
    assert doc["total"]["read"]["total_ios"] == 5000, doc["total"]["read"]["total_ios"]


def test_rate_and_cpus_still_count_exactly(workdir):
    doc = load_json("--engine", "libaio", "--qd", 4, "--rate", 400, "--ios", 80, "--cpus", "0",
                    "--size", "1m", "--file", workdir / "r")
    assert doc["total"]["read"]["total_ios"] == 80


def test_every_option_is_in_the_man_page():
    help_text = load("--help").stdout
    man = (ROOT / "docs" / "iostrata-load.1").read_text().replace("\\-", "-")
    opts = {w.split("=")[0].rstrip(",;)") for w in help_text.split() if w.startswith("--")}
    missing = sorted(o for o in opts if o not in man)
    assert not missing, f"options in --help but not in docs/iostrata-load.1: {missing}"


@pytest.mark.root
def test_backing_device_of_a_loop_device_is_refused(loopdev):
    """A loop device set up over this device registers no holder: it is found by its
    backing_file and the device is refused, with it named."""
    stacked = subprocess.run(["losetup", "-f", "--show", loopdev], check=True,
                             capture_output=True, text=True).stdout.strip()
    try:
        line = assert_one_line_error(load("--device", loopdev, "--force", "--rw", "randwrite",
                                          "--ios", 5, check=False), "refusing", "backing file")
        assert Path(stacked).name in line
    finally:
        subprocess.run(["losetup", "-d", stacked], check=True)


@pytest.mark.root
@pytest.mark.parametrize("how", ["unlinked", "newline"])
def test_backing_device_of_a_loop_device_is_found_by_its_number(loopdev, tmp_path, how):
    """blkdev's loop_backed_by stat()ed the name sysfs shows for a loop device's backing file:
    a loop device set up over another node of the disk, since removed (sysfs shows "NODE
    (deleted)"), or one whose name holds a newline (read back cut short), was not seen, and the
    disk under it was written with --force. The loop device knows its backing device's number
    (LOOP_GET_STATUS64). sched-ab's refusal of a disk in use is the same check."""
    st = os.stat(loopdev)
    node = tmp_path / ("node" if how == "unlinked" else "no\nde")
    os.mknod(node, 0o600 | stat.S_IFBLK, st.st_rdev)
    stacked = subprocess.run(["losetup", "-f", "--show", str(node)], check=True,
                             capture_output=True, text=True).stdout.strip()
    try:
        if how == "unlinked":
            node.unlink()
        r0 = disk_stat(loopdev)[2]
        line = assert_one_line_error(load("--device", loopdev, "--force", "--rw", "randwrite",
                                          "--ios", 5, check=False), "refusing", "backing file")
        assert Path(stacked).name in line
        assert disk_stat(loopdev)[2] == r0, "the disk under a loop device was written"
    finally:
        subprocess.run(["losetup", "-d", stacked], check=True)


def fail_syscall(nr, err):
    """A preexec_fn: a seccomp filter making every call of syscall nr fail with errno err,
    everything else allowed (x86_64)."""
    def preexec():
        import ctypes
        BPF_LD_W_ABS, BPF_JEQ_K, BPF_RET_K = 0x20, 0x15, 0x06
        AUDIT_ARCH_X86_64 = 0xC000003E
        SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000

        class Insn(ctypes.Structure):
            _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8),
                        ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]

        class Prog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(Insn))]

        insns = (Insn * 6)(Insn(BPF_LD_W_ABS, 0, 0, 4),                 # seccomp_data.arch
                           Insn(BPF_JEQ_K, 0, 3, AUDIT_ARCH_X86_64),
                           Insn(BPF_LD_W_ABS, 0, 0, 0),                 # seccomp_data.nr
                           Insn(BPF_JEQ_K, 0, 1, nr),
                           Insn(BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | err),
                           Insn(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW))
        prog = Prog(6, insns)
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) or \
                libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0):
            os._exit(99)
    return preexec


def fail_io_submit_with_eagain():
    """preexec_fn: every io_submit(2) fails with EAGAIN (what the kernel says when it has no
    memory for an iocb), everything else allowed (x86_64)."""
    fail_syscall(209, errno.EAGAIN)()


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the seccomp filter is x86_64's")
def test_libaio_refused_submissions_wait_and_end_at_the_stop(workdir):
    """io_submit -EAGAIN was retried in a tight loop that never looked at the stop: a job whose
    submissions the kernel kept refusing spun a CPU forever. It now pauses 100 us between tries,
    asleep, and ends at --runtime with no I/O done. (Its CPU time is a ratio to its own run, a
    spin's 1.0 against a pause's few hundredths: no clock of the test's is compared.)"""
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run([str(LOAD), "--engine", "libaio", "--runtime", "1s", "--json",
                        "--file", str(workdir / "f"), "--size", "4m"], capture_output=True,
                       text=True, timeout=60, stdin=subprocess.DEVNULL,
                       preexec_fn=fail_io_submit_with_eagain)
    assert r.returncode != 99, "the seccomp filter could not be set"
    doc = json.loads(r.stdout)
    schema_check(doc, SCHEMA)
    assert r.returncode == 0, r.stderr
    assert doc["total"]["read"]["total_ios"] == doc["total"]["write"]["total_ios"] == 0, doc
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    assert cpu < 0.5, f"{cpu:.2f} s of CPU in a 1 s run that did nothing: a spin"


@pytest.mark.parametrize("redirect", [">/dev/full", ">&-", "<&- >&-"],
                         ids=["full", "closed", "stdin-too"])
def test_a_report_that_cannot_be_written_is_an_error(tmp_path, redirect):
    """The report is the whole output: stdout on a full disk, or closed, is an error, one line,
    exit 1 (it exited 0, the report lost; with stdout closed the target file took fd 1; with
    stdin closed too, /dev/null took fd 0 and the load exited 1 saying nothing)."""
    for json_out in ("", " --json"):
        r = subprocess.run(["bash", "-c", f"{LOAD} --ios 10 --size 1m --file {tmp_path / 'f'}"
                            f"{json_out} {redirect}"], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 1 and len(r.stderr.splitlines()) == 1, r
        assert "writing the report" in r.stderr, r.stderr
        assert not (tmp_path / "f").exists()


@pytest.mark.parametrize("bs,size", [("512", 512), ("512b", 512), ("512B", 512), ("4k", 4096),
                                     ("4kb", 4096), ("4KiB", 4096), ("1m", 1 << 20)])
def test_size_suffixes(tmp_path, bs, size):
    """Sizes as people write them (512b was refused while 1kb was taken: fuzzing)."""
    doc = load_json("--bs", bs, "--ios", 1, "--size", "1m", "--buffered", "--file",
                    tmp_path / "f")     # buffered: 512 B direct I/O fails on 4Kn storage
    assert doc["global options"]["bs"] == size, doc["global options"]


@pytest.fixture
def loopdev_4kn(tmp_path):
    """A 64 MiB loop device of 4096-byte logical blocks (a 4Kn disk); always detached."""
    img = tmp_path / "4kn.img"
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    dev = subprocess.run(["losetup", "-f", "--show", "--direct-io=on", "--sector-size", "4096",
                          str(img)], check=True, capture_output=True, text=True).stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


def disk_stat(dev):
    """/sys/block/DEV/stat: reads, read sectors, writes, write sectors (merges counted in)."""
    f = [int(x) for x in Path(f"/sys/block/{Path(dev).name}/stat").read_text().split()]
    return f[0] + f[1], f[2], f[4] + f[5], f[6]


@pytest.mark.root
def test_bs_below_the_logical_block_size_is_a_bad_option(loopdev_4kn, tmp_path):
    """On a 4Kn device (or a file on a filesystem over one) O_DIRECT takes no 512-byte I/O: every
    I/O failed with EINVAL mid-run, after a report of errors. It is a bad --bs for that target:
    one line, exit 2, before any I/O and with no file left behind."""
    r0, _, w0, _ = disk_stat(loopdev_4kn)
    for bs in ("512", "2k", "6k"):
        r = load("--device", loopdev_4kn, "--force", "--rw", "randwrite", "--bs", bs, "--ios", 5,
                 check=False)
        assert r.returncode == 2, r
        assert_one_line_error(r, f"--bs {int(bs[:-1]) * 1024 if bs.endswith('k') else bs} is "
                              f"not a multiple of {loopdev_4kn}'s logical block size, 4096")
        assert r.stdout == ""
    assert disk_stat(loopdev_4kn)[2] == w0, "a refused load wrote the device"
    # a multiple of it works, every I/O counted by the kernel as the load counts it
    _, rs0, w0, ws0 = disk_stat(loopdev_4kn)
    doc = load_json("--device", loopdev_4kn, "--force", "--rw", "randwrite", "--bs", "8k",
                    "--ios", 40, "--engine", "libaio")
    _, rs1, w1, ws1 = disk_stat(loopdev_4kn)
    assert doc["total"]["write"]["total_ios"] == 40 and doc["total"]["write"]["errors"] == 0
    assert (w1 - w0, (ws1 - ws0) * 512) == (40, 40 * 8192)
    # --buffered: the page cache takes any multiple of 512
    load("--device", loopdev_4kn, "--force", "--rw", "randread", "--bs", "512", "--ios", 5,
         "--buffered")
    # a file on a filesystem over it: the same, for a file it would create and an existing one
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mkfs.ext4", "-q", "-F", loopdev_4kn], check=True, capture_output=True)
    subprocess.run(["mount", loopdev_4kn, str(mnt)], check=True)
    try:
        r = load("--file", mnt / "new", "--size", "1m", "--bs", "1k", "--ios", 5, check=False)
        assert r.returncode == 2
        assert_one_line_error(r, "--bs 1024 is not a multiple of", "logical block size, 4096")
        assert not (mnt / "new").exists(), "the file it created was left behind"
        (mnt / "old").write_bytes(bytes(1 << 20))
        r = load("--file", mnt / "old", "--bs", "512", "--ios", 5, check=False)
        assert r.returncode == 2
        assert_one_line_error(r, "--bs 512 is not a multiple of", "logical block size, 4096")
        doc = load_json("--file", mnt / "old", "--bs", "4k", "--ios", 5)
        assert doc["total"]["read"]["total_ios"] == 5 and doc["total"]["read"]["errors"] == 0
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


@pytest.mark.root
@pytest.mark.parametrize("engine", ["io_uring", "libaio", "threadpool", "posixaio", "psync"])
def test_a_job_stopped_by_an_error_counts_what_it_had_in_flight(small_tmpfs, engine):
    """A loop device over a sparse file on a 4 MiB tmpfs: its writes fail (ENOSPC) once the
    tmpfs is full, and the job stops. io_uring, libaio and the thread pool waited for what they
    had in flight then but did not count it: the report said fewer writes than the kernel
    counted on the device (1068 against 1097 at qd 32). Every write that reached the device is
    in the report, its errors among them."""
    img = small_tmpfs("4m") / "sparse"
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    dev = subprocess.run(["losetup", "-f", "--show", str(img)], check=True,
                         capture_output=True, text=True).stdout.strip()
    try:
        _, _, w0, _ = disk_stat(dev)
        r = load("--device", dev, "--force", "--json", "--engine", engine,
                 *([] if engine == "psync" else ["--qd", 32]), "--rw", "randwrite",
                 "--ios", 100000, check=False)
        _, _, w1, _ = disk_stat(dev)
    finally:
        subprocess.run(["losetup", "-d", dev], check=True)
    assert r.returncode == 1
    assert_one_line_error(r, "No space left on device")
    doc = json.loads(r.stdout)
    schema_check(doc, SCHEMA)
    wr = doc["total"]["write"]
    assert wr["errors"] >= 1 and wr["total_ios"] < 100000
    assert wr["total_ios"] == w1 - w0, "the report and the kernel disagree on the writes issued"
    assert wr["lat_ns"]["N"] == wr["total_ios"]


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the seccomp filter is x86_64's")
def test_a_job_that_cannot_be_pinned_ends_the_run(workdir):
    """--cpus on a CPU the process may not run on (outside its cpuset; here every
    sched_setaffinity fails) stopped the job before it began, unmarked as ended: the load
    waited for it forever. It ends the run with one error line and exit 1."""
    f = workdir / "f"
    r = subprocess.run([str(LOAD), "--cpus", "0", "--ios", "10", "--size", "1m", "--file", str(f),
                        "--json"], capture_output=True, text=True, timeout=30,
                       stdin=subprocess.DEVNULL, preexec_fn=fail_syscall(203, errno.EINVAL))
    assert r.returncode == 1
    assert_one_line_error(r, "job 0: cannot pin to CPU 0: Invalid argument")
    doc = json.loads(r.stdout)
    schema_check(doc, SCHEMA)
    assert doc["total"]["read"]["total_ios"] == 0 and doc["jobs"][0]["error"] == errno.EINVAL
    assert doc["total"]["runtime"] < 30000, "a job that never ran has no run time to speak of"
    assert not f.exists()


@pytest.mark.skipif(os.cpu_count() < 2, reason="needs two CPUs")
def test_cpus_given_twice_is_the_last_list(workdir):
    """Every option is the last one given; --cpus appended to the earlier list instead, so
    --cpus 0 --cpus 1 pinned the only job to CPU 0."""
    p = subprocess.Popen([str(LOAD), "--cpus", "0", "--cpus", "1", "--engine", "psync",
                          "--size", "1m", "--runtime", "20s", "--file", str(workdir / "f")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pinned = set()
    try:
        deadline = time.monotonic() + 15
        while not pinned and p.poll() is None and time.monotonic() < deadline:
            for t in Path(f"/proc/{p.pid}/task").iterdir():
                try:
                    status = (t / "status").read_text()
                except (FileNotFoundError, ProcessLookupError):
                    continue
                cpus = next(l.split()[1] for l in status.splitlines()
                            if l.startswith("Cpus_allowed_list:"))
                if cpus in ("0", "1"):
                    pinned.add(cpus)
            time.sleep(0.05)
    finally:
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert pinned == {"1"}


@contextlib.contextmanager
def cpuset_of(cpu):
    """A preexec_fn that moves the process into a cpuset of cpu alone (the cgroup v1 cpuset
    hierarchy, or cgroup v2 where cpuset can be enabled below ours), removed afterwards; skips
    where neither can be made."""
    v1 = Path("/sys/fs/cgroup/cpuset")
    if (v1 / "cpuset.cpus").exists():
        cg, procs = v1 / f"iostrata-load-test-{os.getpid()}", "tasks"
        mems = (v1 / "cpuset.mems").read_text().strip().split(",")[0].split("-")[0]
        try:
            cg.mkdir()
            (cg / "cpuset.cpus").write_text(str(cpu))
            (cg / "cpuset.mems").write_text(mems)
        except OSError as e:
            if cg.exists():
                cg.rmdir()
            pytest.skip(f"cannot make a cpuset: {e}")
    else:
        own = conftest.own_cgroup()
        if not own or "cpuset" not in (own / "cgroup.controllers").read_text().split():
            pytest.skip("no cpuset controller to restrict a process with")
        cg, procs = own / f"iostrata-load-test-{os.getpid()}", "cgroup.procs"
        try:
            (own / "cgroup.subtree_control").write_text("+cpuset")
            cg.mkdir()
            (cg / "cpuset.cpus").write_text(str(cpu))
        except OSError as e:
            if cg.exists():
                cg.rmdir()
            pytest.skip(f"cannot make a cpuset: {e}")

    def enter():
        (cg / procs).write_text("0")
    try:
        yield enter
    finally:
        deadline = time.monotonic() + 10
        while (cg / procs).read_text().strip():
            assert time.monotonic() < deadline, "a process is still in the test's cpuset"
            time.sleep(0.05)
        cg.rmdir()


@pytest.mark.root
@pytest.mark.skipif(os.cpu_count() < 2, reason="needs two CPUs")
def test_cpus_it_may_not_run_on_are_refused_before_the_target(workdir):
    """--cpus naming a CPU outside the load's cpuset passed --check (exit 0), while a run laid
    out its file, printed its report, then failed (exit 1: "cannot pin to CPU 1"); under
    taskset -c 0 both ran, pinned outside the CPUs they were given. A CPU the process may not
    run on (its affinity: taskset, a cpuset; an offline one is not in it either) is a bad
    option: --check and the run say the same line, exit 2, with nothing made or printed."""
    f = workdir / "f"
    args = ["--cpus", "1", "--ios", "10", "--size", "1m", "--file", f]
    with cpuset_of(0) as enter:
        said = []
        for extra in (["--check"], []):
            r = subprocess.run([str(LOAD), *map(str, args), *extra], capture_output=True,
                               text=True, timeout=60, stdin=subprocess.DEVNULL, preexec_fn=enter)
            said.append((r.returncode, assert_one_line_error(r), r.stdout))
            assert not f.exists(), extra
    assert said[0] == said[1], said
    assert said[0][:2] == (2, "iostrata-load: error: bad --cpus '1': CPU 1 is not one this "
                              "process may run on (its affinity: taskset, a cpuset)"), said
    # a CPU left out by taskset, among others; one this machine does not have
    last = os.sysconf("SC_NPROCESSORS_CONF") - 1
    for pre, cpus, needle in [(["taskset", "-c", "0"], "0-1", "CPU 1 is not one this process"),
                              ([], str(last + 1), f"CPUs are 0 to {last} here")]:
        said = []
        for extra in (["--check"], []):
            r = subprocess.run([*pre, str(LOAD), "--cpus", cpus, *map(str, args[2:]), *extra],
                               capture_output=True, text=True, timeout=60,
                               stdin=subprocess.DEVNULL)
            said.append((r.returncode, assert_one_line_error(r, needle), r.stdout))
            assert not f.exists(), extra
        assert said[0] == said[1] and said[0][0] == 2, said
