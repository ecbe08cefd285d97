"""iostrata sched-ab on a loop device: every pair of the four schedulers, the disk put back
exactly after each, and every exit path (the load failing or missing, SIGINT and SIGTERM in a
round, bad specs, unknown schedulers and tunables, a disk in use, a bio-based disk) putting it
back too, with no BPF program left.

The loop device starts from settings no restore-to-defaults would give: kyber with
read_lat_nsec 3 ms (its default is 2 ms) and nr_requests 100 (a switch resets it). Every
writable queue attribute and every iosched tunable is compared, not only the scheduler."""
import contextlib
import fcntl
import json
import os
import re
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

import jsonschema
import pytest

from conftest import (IOSTRATA, ROOT, SLOWFS, assert_one_line_error, cgroup2_root, full_pipe,
                      our_bpf_programs, own_cgroup, stat_requests, wait_no_bpf_programs)

pytestmark = pytest.mark.root

SCHEDULERS = ["none", "mq-deadline", "kyber:read_lat_nsec=500000",
              "bfq:low_latency=0,slice_idle=0"]
PAIRS = [(a, b) for i, a in enumerate(SCHEDULERS) for b in SCHEDULERS[i + 1:]]
# one scheduler, two settings: each round must start it afresh (a write of the active
# scheduler's name is ignored by the kernel, tunables and all)
PAIRS.append(("mq-deadline", "mq-deadline:fifo_batch=1"))


def schema(name):
    return json.loads((ROOT / "docs" / name).read_text())


# sched-ab's document refers to compare's for the comparison inside it
CMP_SCHEMA = schema("compare.schema.json")
SAB_SCHEMA = schema("sched-ab.schema.json")
try:  # jsonschema 4.18+
    from referencing import Registry, Resource
    SAB_VALIDATOR = jsonschema.Draft7Validator(SAB_SCHEMA, registry=Registry().with_resource(
        CMP_SCHEMA["$id"], Resource.from_contents(CMP_SCHEMA)))
except ImportError:  # Debian 12's jsonschema 4.10, which CI uses
    SAB_VALIDATOR = jsonschema.Draft7Validator(SAB_SCHEMA, resolver=jsonschema.RefResolver.from_schema(
        SAB_SCHEMA, store={CMP_SCHEMA["$id"]: CMP_SCHEMA}))


def sysfs(path, value=None):
    if value is None:
        return Path(path).read_text().strip()
    Path(path).write_text(value)


def queue_state(dev):
    """The scheduler line, every iosched tunable and every writable queue attribute."""
    q = Path("/sys/block") / os.path.basename(dev) / "queue"
    state = {"scheduler": sysfs(q / "scheduler")}
    for f in sorted(q.iterdir()):
        if f.is_file() and f.name != "scheduler" and os.stat(f).st_mode & 0o200:
            try:
                state[f.name] = sysfs(f)
            except OSError:
                pass            # write-only
    if (q / "iosched").is_dir():
        for f in sorted((q / "iosched").iterdir()):
            state["iosched/" + f.name] = sysfs(f)
    return state


def procs(match):
    """Pids of the processes whose argv match(argv) accepts."""
    found = []
    for p in Path("/proc").iterdir():
        try:
            argv = (p / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if p.name.isdigit() and match(argv):
            found.append(int(p.name))
    return found


def load_procs(dev):
    """iostrata-load processes still running on dev."""
    return procs(lambda argv: argv[0].endswith(b"iostrata-load") and dev.encode() in argv)


def procs_with(word):
    return procs(lambda argv: word in argv)


@pytest.fixture
def disk(loopdev):
    """The loop device, set to kyber, read_lat_nsec 3 ms, nr_requests 100; (dev, that state)."""
    q = f"/sys/block/{os.path.basename(loopdev)}/queue"
    # a loop device keeps its queue settings when detached: the next user gets them back
    was = sysfs(f"{q}/scheduler").split("[")[1].split("]")[0], sysfs(f"{q}/nr_requests")
    sysfs(f"{q}/scheduler", "kyber")
    sysfs(f"{q}/iosched/read_lat_nsec", "3000000")
    sysfs(f"{q}/nr_requests", "100")
    state = queue_state(loopdev)
    assert "[kyber]" in state["scheduler"] and state["iosched/read_lat_nsec"] == "3000000"
    assert state["nr_requests"] == "100"
    assert our_bpf_programs() == [], "iostrata programs loaded before the test started"
    yield loopdev, state
    sysfs(f"{q}/scheduler", was[0])
    sysfs(f"{q}/nr_requests", was[1])
    assert wait_no_bpf_programs() == [], "sched-ab left BPF programs loaded"
    assert load_procs(loopdev) == [], "sched-ab left its load running"


def load_args(dev, *extra):
    return ["--", "--device", dev, "--force", "--rw", "randread", "--qd", "8", "--size", "64m",
            *extra]


def sched_ab(dev, a, b, out, *opts, load=None, rounds=2, secs=1):
    return subprocess.run([str(IOSTRATA), "sched-ab", "-d", dev, a, b, "--rounds", str(rounds),
                           "--round-secs", str(secs), "-o", str(out), *opts,
                           *(load if load is not None else load_args(dev))],
                          capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)


def recordings(out):
    """{round: (meta, interval records, end)} of the recordings sched-ab wrote."""
    rounds = {}
    for f in sorted(Path(out).glob("[AB]/round-*.ndjson")):
        recs = [json.loads(line) for line in f.read_text().splitlines()]
        meta, end = recs[0], recs[-1]
        assert meta["type"] == "meta" and end["type"] == "end", f
        assert f.parent.name == meta["sched_ab"]["side"], f
        rounds[meta["sched_ab"]["round"]] = (meta, recs[1:-1], end)
    return rounds


@pytest.mark.skipif(not shutil.which("strace"), reason="needs strace")
def test_load_started_after_the_first_interval(disk, tmp_path):
    """Each round's load starts once the round's first interval has: what the layers recorded
    while attaching is put aside just before it (session_begin). The load was started first,
    so the I/O it did before that was dropped, neither traced nor said. Here every round's
    setitimer, between the load's start and the trace's, is held 1 s (strace): before the fix,
    a second of each round's reads was missing against the disk's own count."""
    dev, before = disk
    cmd = [str(IOSTRATA), "sched-ab", "-d", dev, "none", "mq-deadline", "--rounds", "1",
           "--round-secs", "1", "-o", str(tmp_path / "out"), *load_args(dev)]
    r = subprocess.run(["strace", "-o", "/dev/null", "-e", "trace=setitimer",
                        "-e", "inject=setitimer:delay_enter=1000000", *cmd],
                       capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert "requests traced" not in r.stderr, r.stderr     # each round against the disk's stat
    rounds = recordings(tmp_path / "out")
    assert sorted(rounds) == [1, 2], rounds
    assert queue_state(dev) == before, "the disk was not put back exactly"


@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}-{b}".replace(":", "+") for a, b in PAIRS])
def test_pair_runs_and_restores(disk, tmp_path, a, b):
    dev, before = disk
    name = os.path.basename(dev)
    # sched-ab checks its load first (iostrata-load --check), which reads the device's first
    # blocks once, before round 1, as each round's load does when it starts: counted apart
    reads0 = stat_requests(dev)["read"]
    subprocess.run([str(IOSTRATA.parent / "iostrata-load"), "--check", *load_args(dev)[1:]],
                   check=True)
    check_reads = stat_requests(dev)["read"] - reads0
    assert check_reads > 0      # a filesystem's signature is looked for
    reads0 = stat_requests(dev)["read"]
    r = sched_ab(dev, a, b, tmp_path / "out")
    reads1 = stat_requests(dev)["read"] - check_reads
    assert r.returncode == 0, r.stderr
    assert "requests traced" not in r.stderr, r.stderr     # each round against the disk's stat
    assert queue_state(dev) == before, "the disk was not put back exactly"
    out = r.stdout
    assert f"A = {a}, B = {b}" in out
    assert "B/A" in out and "VERDICT" in out, out          # the compare table
    assert "A/A control: A's rounds 1 against 4" in out, out
    assert "\nverdicts: " in out, out
    assert f"{name}: original restored: kyber (read_lat_nsec=3000000 " in out, out
    rounds = recordings(tmp_path / "out")
    # ABBA, and each round ran under its own scheduler (the meta record reads it in the round)
    assert [rounds[i][0]["sched_ab"]["side"] for i in sorted(rounds)] == list("ABBA")
    for meta, ivs, end in rounds.values():
        spec = meta["sched_ab"]["spec"]
        assert spec == (a if meta["sched_ab"]["side"] == "A" else b)
        sched = {d["name"]: d["scheduler"] for d in meta["disks"]}[name]
        assert sched == spec.split(":")[0] == meta["sched_ab"]["scheduler"], meta["disks"]
        tunables = meta["sched_ab"]["tunables"]
        for kv in spec.partition(":")[2].split(",") if ":" in spec else []:
            k, v = kv.split("=")
            assert tunables[k] == v, (spec, tunables)
        if spec == "mq-deadline":
            assert tunables["fifo_batch"] == "16", tunables        # its default
        assert end["reason"] == "duration" and ivs, end
    # every read the disk completed during the run is in a round: the load is stopped while
    # tracing runs, and tracing ends once its requests are done
    # (complete_unseen: completed while no program could run, docs/trust.md)
    traced = sum(t["count"] + t["unmeasured"] for _, _, end in rounds.values()
                 for t in end["totals"] if t["stage"] == "total")
    traced += sum(end["drops"].get("complete_unseen", 0) for _, _, end in rounds.values())
    assert traced == reads1 - reads0, (traced, reads1 - reads0)


def test_restores_a_tunable_nr_requests_resets(disk, tmp_path):
    """mq-deadline with nr_requests 200 and async_depth 150: writing nr_requests back resets
    async_depth to 200, so the attributes must go back before the tunables (the restore used
    to write them the other way round, then fail: exit 1, no comparison printed)."""
    dev, _ = disk
    q = f"/sys/block/{os.path.basename(dev)}/queue"
    sysfs(f"{q}/scheduler", "mq-deadline")
    if not Path(f"{q}/iosched/async_depth").exists():
        pytest.skip("this kernel's mq-deadline has no async_depth tunable")
    sysfs(f"{q}/nr_requests", "200")
    sysfs(f"{q}/iosched/async_depth", "150")
    before = queue_state(dev)
    assert before["iosched/async_depth"] == "150" and before["nr_requests"] == "200", before
    r = sched_ab(dev, "none", "kyber", tmp_path / "out", rounds=2, secs=1)
    assert r.returncode == 0, r.stderr
    assert queue_state(dev) == before, "the disk was not put back exactly"
    assert "VERDICT" in r.stdout and "original restored: mq-deadline" in r.stdout, r.stdout


def test_json_and_gate(disk, tmp_path):
    """-j: one document; --gate: exit 3 exactly when the document says the stage regressed."""
    dev, before = disk
    r = sched_ab(dev, "mq-deadline", "none", tmp_path / "out", "-j", "--gate",
                 "block:total:p99", "--threshold", "10", "--seed", "7")
    assert queue_state(dev) == before
    doc = json.loads(r.stdout)
    SAB_VALIDATOR.validate(doc)                 # docs/sched-ab.schema.json
    assert doc["type"] == "sched_ab" and doc["restored"] is True
    assert [x["side"] for x in doc["rounds"]] == list("ABBA")
    for x in doc["rounds"]:
        assert x["requests"] == x["disk_completed"] > 0, x
    assert doc["compare"]["method"]["threshold"] == pytest.approx(0.10)
    assert doc["compare"]["method"]["seed"] == 7
    assert doc["aa"]["split"].startswith("A rounds 1, 8, 9, 16... against 4, 5"), doc["aa"]
    # reliable: the control judged at least half as many quantiles as the comparison (it has
    # half the rounds a side) and called none changed
    judged = doc["compare"]["compared"]
    assert doc["reliable"] == (doc["aa"]["changes"] == 0 and 2 * doc["aa"]["compared"] >= judged
                               and doc["aa"]["compared"] > 0), (doc["aa"], judged, doc.get("reason"))
    (gate,) = doc["gates"]
    assert (gate["layer"], gate["stage"], gate["q"]) == ("block", "total", "p99")
    # a gate on unreliable verdicts, on one the events lost could change, or on a quantile
    # with not enough data in every label set, neither passes nor fails: exit 4
    cells = [c for row in doc["compare"]["rows"] if row["layer"] == "block"
             and row["stage"] == "total" for c in row["quantiles"] if c["q"] == "p99"]
    assert cells, doc["compare"]["rows"]
    judged = [c for c in cells if c["verdict"] != "not enough data"]
    lost = any(c.get("lost") for c in cells)
    # a gate passes only when every interval with a verdict ends below 1 + limit: a "no
    # change" reaching past it does not exclude the regression the gate is there to catch
    limit = doc["compare"]["method"]["limit"]
    excluded = bool(judged) and all(c["ci_hi"] < 1 + limit for c in judged)
    assert gate["regressed"] == (doc["reliable"] and any(c["verdict"] == "slower"
                                                         for c in cells)), doc
    assert gate["judged"] == (doc["reliable"] and (gate["regressed"] or (
        not lost and bool(judged)))), gate
    assert gate["passed"] == (gate["judged"] and not gate["regressed"] and excluded), (gate, cells)
    assert gate["decided"] == (gate["regressed"] or gate["passed"]), gate
    assert ("gates_decided" in doc) == (not gate["decided"]), doc
    if not gate["decided"]:
        assert gate["passed"] is False and gate["regressed"] is False and gate["reason"], gate
    assert r.returncode == (4 if not gate["decided"] else 3 if gate["regressed"] else 0), \
        r.stderr


@pytest.mark.parametrize("load,needle,status", [
    (["--", "false"], "the load exited with status 1 in round 1 (A: mq-deadline); its output: ",
     1),
    # a command that cannot run: said before the disk or the directory is touched
    (["--", "no-such-command-iostrata"], "cannot run 'no-such-command-iostrata'", 2),
    # a directory passes access(X_OK): it used to switch the disk and make DIR first
    (["--", "/tmp"], "cannot run '/tmp'", 2),
    # iostrata-load's options and its --device's refusals (its --check): before anything too
    (["--", "--device", "/dev/no-such-disk", "--force"],
     "LOAD: /dev/no-such-disk is not a block device", 2),
    (["--", "--bogus"], "LOAD: unknown option '--bogus' (see iostrata-load --help)", 2),
    (["--", "--json", "--qd", "0"], "LOAD: bad --qd '0': expected an integer", 2),
    (["--", "--device", "DEV", "--rw", "randwrite"],
     "LOAD: refusing to use block device DEV without --force", 2),
    (["--", "--device", "DEV", "--force", "--size", "1t"], "less than --size", 2),
    # iostrata-load asked for no load: every round would end at once
    (["--", "--help"], "LOAD: iostrata-load printed its help or version, not a load", 2),
    (["--", "--rw", "randread", "--chec"], "LOAD: --chec makes iostrata-load check its", 2),
    # iostrata-load named as the command: checked all the same
    (["--", "LOADBIN", "--bogus"], "LOAD: unknown option '--bogus'", 2),
])
def test_load_failing_restores(disk, tmp_path, load, needle, status):
    dev, before = disk
    loadbin = str(IOSTRATA.parent / "iostrata-load")
    load = [dev if a == "DEV" else loadbin if a == "LOADBIN" else a for a in load]
    needle = needle.replace("DEV", dev)
    r = sched_ab(dev, "mq-deadline", "none", tmp_path / "out", load=load)
    assert queue_state(dev) == before
    line = assert_one_line_error(r, needle, quiet_stdout=status == 2)
    assert r.returncode == status, line
    if status == 2:
        assert not (tmp_path / "out").exists()
    else:   # the failed round's recording and output stay: the line names the log
        assert (tmp_path / "out" / "A" / "round-01.log").exists() and \
            "out/A/round-01.log" in line


def test_load_check_with_sigchld_ignored(disk, tmp_path):
    """Started ignoring SIGCHLD (some supervisors do), the kernel reaped the load's check
    itself, and sched-ab said "waiting for ...: No child processes" for a bad option."""
    dev, before = disk
    r = subprocess.run([str(IOSTRATA), "sched-ab", "-d", dev, "none", "kyber", "-o",
                        str(tmp_path / "out"), "--", "--bogus"], capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL,
                       preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN))
    assert_one_line_error(r, "LOAD: unknown option '--bogus'")
    assert r.returncode == 2 and queue_state(dev) == before


def reader(dev, marker):
    """sh code: a reader of dev in a session of its own (out of the load's process group),
    running until killed; marker is its $0."""
    return (f"setsid sh -c 'while :; do dd if={dev} of=/dev/null iflag=direct bs=4k "
            f"count=2000 2>/dev/null; done' {marker}")


@contextlib.contextmanager
def readers_killed(dev, marker):
    """Whatever happens, the readers marked so are killed at the end, and waited for."""
    try:
        yield
    finally:
        for pid in procs_with(marker.encode()):     # a session leader: its group, dd too
            os.killpg(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        reading = f"if={dev}".encode()
        while procs_with(marker.encode()) or procs(lambda a: a[:2] == [b"dd", reading]):
            assert time.monotonic() < deadline, "the escaped reader is still running"
            time.sleep(0.05)


@pytest.mark.parametrize("status", [3, 0])
def test_load_failing_as_the_round_ends_is_a_failure(disk, tmp_path, status):
    """LOAD exits with status 3 well within its 1 s round, but a reader it started, moved out of
    its cgroup (as anyone else's), keeps the disk busy past the round's end, so tracing is still
    settling the disk when the round's timer fires. The load's own end came first: the round is
    one it ended, and its failure is said (the timer's firing was counted instead, and the round
    taken for a good one: a load failing within a round's last ~100 ms passed so); the rounds
    recorded stay, B's empty directory with them, for `iostrata compare`. A load that ended
    well so makes its round cut 5 s after it, and says so (the wait was given up in
    silence); the next round, the reader gone, is not."""
    dev, before = disk
    marker = "iostrata-test-reader-43217"   # the escaped reader's $0: killed whatever happens
    escape = tmp_path / "escape.sh"
    once = tmp_path / "once"    # the first round's load alone starts it, to read for 6 s
    escape.write_text(f"mkdir {once} || exit 0\necho 0 > {cgroup2_root()}/cgroup.procs\n"
                      f"exec timeout 6 {reader(dev, marker)}\n")
    with readers_killed(dev, marker):
        r = sched_ab(dev, "mq-deadline", "none", tmp_path / "out", rounds=2 if status else 1,
                     load=["--", "sh", "-c", f"sh {escape} & sleep 0.2; exit {status}"])
    assert queue_state(dev) == before
    if status:
        line = assert_one_line_error(r, "the load exited with status 3 in round 1",
                                     quiet_stdout=False)
        assert r.returncode == 1, line
        assert (tmp_path / "out" / "A" / "round-01.ndjson").exists()
        assert (tmp_path / "out" / "B").is_dir()
        return
    assert r.returncode == 0, r.stderr
    said = re.findall(r"round (\d): \S+ was still completing requests 5 s after the load ended "
                      r"\(its writeback, or someone else's I/O\): the round ends there", r.stderr)
    assert said == ["1"], r.stderr


def test_loads_process_group_has_its_grace(disk, tmp_path):
    """LOAD is a shell running iostrata-load: the round's end sends SIGTERM to both, and the
    shell ends first. What was left in the load's cgroup was then killed at once, iostrata-load
    as it wrote its summary (its log empty, and a warning that the load left a process
    running). Its process group has its 2 s grace first: the summary is in the log, and nothing
    is said to be left."""
    dev, before = disk
    load = IOSTRATA.parent / "iostrata-load"
    r = sched_ab(dev, "mq-deadline", "none", tmp_path / "out", rounds=1, load=[
        "--", "sh", "-c", f"{load} --device {dev} --force --rw randread --qd 8 --size 64m; "
        "echo after"])
    assert r.returncode == 0, r.stderr
    assert "the load left" not in r.stderr, r.stderr
    for log in ("A/round-01.log", "B/round-02.log"):
        assert "context switches" in (tmp_path / "out" / log).read_text(), log
    assert queue_state(dev) == before


def test_uncontained_loads_process_group_has_its_grace_too(disk, tmp_path):
    """Where the load cannot have a cgroup of its own (here the cgroup2 hierarchy is read-only
    in sched-ab's mount namespace), its process group still has the 2 s grace after the round's
    SIGTERM: a shell whose child traps SIGTERM, takes 0.5 s and writes a line, writes it in
    every round. (Without a cgroup the wait ended at once, and the group was killed as soon as
    the disk was quiet: 0 lines.)"""
    dev, before = disk
    mark = tmp_path / "graced"
    inner = tmp_path / "inner.sh"
    inner.write_text(f"trap 'sleep 0.5; echo graced >> {mark}; exit 0' TERM\n"
                     f"while :; do dd if={dev} of=/dev/null iflag=direct bs=4k count=100 "
                     "2>/dev/null; done\n")
    out = tmp_path / "out"
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                        f"mount -o remount,bind,ro {cgroup2_root()} && exec \"$@\"", "sh",
                        str(IOSTRATA), "sched-ab", "-d", dev, "mq-deadline", "none",
                        "--rounds", "1", "--round-secs", "1", "-o", str(out), "--",
                        "sh", "-c", f"sh {inner}"],
                       capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert "the load runs without a cgroup of its own" in r.stderr, r.stderr
    assert mark.read_text().splitlines() == ["graced"] * 2
    assert queue_state(dev) == before


def test_a_live_runs_load_is_not_taken_for_a_dead_ones(disk, loopdev2, tmp_path):
    """A second run sweeps the cgroups of dead runs' loads before its round 1; a live run's is
    not one, whatever the second runs in: here a time namespace whose boot time is 100,000 s
    later, where every process's start time in /proc reads otherwise (the sweep once told the
    two apart by a pid and a start time in the name, and killed the first run's load)."""
    dev, before = disk
    first = subprocess.Popen([str(IOSTRATA), "sched-ab", "-d", dev, "mq-deadline", "none",
                              "--rounds", "1", "--round-secs", "4", "-o", str(tmp_path / "a"),
                              *load_args(dev)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not load_procs(dev):
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.05)
    timens = subprocess.run(["unshare", "-T", "--boottime", "100000", "true"]).returncode == 0
    print("the second run in a time namespace of its own:", timens)
    second = subprocess.run([*(["unshare", "-T", "--boottime", "100000"] if timens else []),
                             str(IOSTRATA), "sched-ab", "-d", loopdev2, "mq-deadline", "none",
                             "--rounds", "1", "--round-secs", "1", "-o", str(tmp_path / "b"),
                             "--", "dd", f"if={loopdev2}", "of=/dev/null", "iflag=direct",
                             "bs=4k", "count=100"],
                            capture_output=True, text=True, timeout=120,
                            stdin=subprocess.DEVNULL)
    out, err = first.communicate(timeout=120)
    assert second.returncode == 0, second.stderr
    assert "earlier run" not in second.stderr, second.stderr
    assert first.returncode == 0, err
    assert queue_state(dev) == before


@pytest.mark.parametrize("below", [False, True], ids=["session", "session-and-cgroup"])
def test_what_the_load_starts_in_a_session_of_its_own_ends_with_it(disk, tmp_path, below):
    """LOAD starts a reader in a session of its own (setsid: out of its process group, which
    was all that was stopped) and ends at once. The reader ran on after sched-ab exited 0,
    reading the disk through the later rounds and after the run. Now the load runs in a cgroup
    of its own, and what it left there is killed when it ends, and said: nothing is left
    running, each round's traced requests are the disk's own count for it (a warning says when
    they are not), and the cgroup is gone. So too when the reader is in a cgroup the load made
    below its own (it was not counted, and the cgroups were left behind)."""
    dev, before = disk
    marker = "iostrata-test-reader-51873"
    start = reader(dev, marker)
    if below:
        sub = tmp_path / "sub.sh"
        sub.write_text(f'd={cgroup2_root()}$(sed -n "s/^0:://p" /proc/self/cgroup)/sub\n'
                       f'mkdir "$d" && echo 0 > "$d/cgroup.procs" && exec {start}\n')
        start = f"sh {sub}"
    with readers_killed(dev, marker):
        r = sched_ab(dev, "mq-deadline", "none", tmp_path / "out",
                     load=["--", "sh", "-c", f"{start} & sleep 0.3; exit 0"])
        left = procs_with(marker.encode())
    assert r.returncode == 0, r.stderr
    assert left == [], "what the load started in a session of its own outlived the run"
    said = re.findall(r"round (\d): the load left [12] process(?:es)? running when it ended "
                      r"\(in the background, or a session of (?:its|their) own\): killed then",
                      r.stderr)
    assert said == ["1", "2", "3", "4"], r.stderr
    assert "requests traced, but" not in r.stderr, r.stderr
    assert "without a cgroup of its own" not in r.stderr, r.stderr
    assert [int(n) for n in re.findall(r" (\d+) requests ", r.stdout)] != [0] * 4, r.stdout
    assert list(own_cgroup().glob("iostrata-load-*")) == []
    assert queue_state(dev) == before


def test_a_killed_run_takes_its_load_with_it(disk, tmp_path):
    """sched-ab killed by SIGKILL, which nothing can catch: its load read the disk on, for
    ever. The load is killed with it (PR_SET_PDEATHSIG), and what the load started in a session
    of its own, left in the dead run's cgroup, is killed by the next run, before its first
    round, and said; the cgroup goes."""
    dev, _ = disk
    marker = "iostrata-test-reader-60412"
    load = IOSTRATA.parent / "iostrata-load"
    out = tmp_path / "out"
    with readers_killed(dev, marker):
        p = subprocess.Popen([str(IOSTRATA), "sched-ab", "-d", dev, "mq-deadline", "none",
                              "--rounds", "2", "--round-secs", "30", "-o", str(out), "--",
                              "sh", "-c", f"{reader(dev, marker)} & exec {load} --device {dev} "
                              "--force --rw randread --qd 8 --size 64m"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not (load_procs(dev) and procs_with(marker.encode())):
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()
            time.sleep(0.05)
        cg, = own_cgroup().glob(f"iostrata-load-{p.pid}-*")
        assert cg.is_dir()
        p.kill()
        p.communicate(timeout=60)
        deadline = time.monotonic() + 10
        while load_procs(dev):
            assert time.monotonic() < deadline, "the load outlived the run killed"
            time.sleep(0.05)
        assert procs_with(marker.encode()), "the reader is gone: nothing left for the next run"
        r = sched_ab(dev, "mq-deadline", "none", tmp_path / "again", "--rounds", "1",
                     load=["--", "dd", f"if={dev}", "of=/dev/null", "iflag=direct",
                           "bs=4k", "count=200"])
        left = procs_with(marker.encode())
    assert r.returncode == 0, r.stderr
    # before round 1: the dead run's reader was in it (657 requests traced for dd's 200)
    assert re.search(f"killed what the load of an earlier run, itself killed, left running in "
                     rf"{cg} \([12] process(es)?\)", r.stderr), r.stderr
    assert "requests traced, but" not in r.stderr, r.stderr
    assert left == []
    assert not cg.exists()
    assert wait_no_bpf_programs() == [], "a killed run's BPF programs stayed loaded"


def test_loads_own_runtime_is_kept_however_abbreviated(disk, tmp_path):
    """iostrata-load's --runtime given as --run=1s (getopt takes any unambiguous start): the
    load runs 1 s of each 2 s round, as asked. sched-ab looked for "--runtime" itself, did not
    see it, and put its own after it, which won: the load ran the whole round."""
    dev, before = disk
    r = sched_ab(dev, "mq-deadline", "none", tmp_path / "out", secs=2,
                 load=load_args(dev, "--run=1s"))
    assert r.returncode == 0, r.stderr
    took = [float(t) for t in re.findall(r"the load ended by itself after ([\d.]+) s",
                                         r.stderr)]
    assert len(took) == 4 and all(0.9 <= t < 1.9 for t in took), r.stderr
    assert queue_state(dev) == before


def test_load_leaves_nothing_running(disk, tmp_path):
    """A LOAD that ends at once, leaving a process in the background: the round ends with it,
    and what it left in its process group is killed before the next round."""
    dev, before = disk
    r = sched_ab(dev, "mq-deadline", "none", tmp_path / "out", rounds=1,
                 load=["--", "sh", "-c", "sleep 4321.5 & exit 0"])
    assert "the load ended by itself" in r.stderr, r.stderr
    assert queue_state(dev) == before
    assert procs_with(b"4321.5") == [], "the load's background process was left running"


def test_tracing_failing_restores(disk, tmp_path):
    """The block layer cannot start (a required tracepoint forced missing): the round is not
    run, nothing of it is left (DIR, A and B were left behind, empty), and the disk is put
    back."""
    dev, before = disk
    r = sched_ab(dev, "bfq", "none", tmp_path / "out", "--fail-probe", "block_rq_complete")
    assert r.returncode == 1
    assert_one_line_error(r, "required tracepoint block:block_rq_complete unavailable",
                          quiet_stdout=False)
    assert queue_state(dev) == before
    assert not (tmp_path / "out").exists()


def start_mid_round(dev, out, a, b, secs=30, ignored=()):
    """sched-ab of a and b in the first round of --round-secs secs: its recording holds an
    interval and its load runs. It starts with the signals ignored (as nohup does SIGHUP)."""
    def ignore():
        for sig in ignored:
            signal.signal(sig, signal.SIG_IGN)
    p = subprocess.Popen([str(IOSTRATA), "sched-ab", "-d", dev, a, b, "--rounds", "2",
                          "--round-secs", str(secs), "-o", str(out), *load_args(dev)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         stdin=subprocess.DEVNULL, preexec_fn=ignore)
    first = out / "A" / "round-01.ndjson"
    deadline = time.monotonic() + 60
    while not (first.exists() and first.read_text().count('"type":"interval"') >= 1
               and load_procs(dev)):
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        select.select([], [], [], 0.05)
    return p


# every catchable signal whose default ends the process: SIGUSR1, SIGALRM (sched-ab's own round
# timer's signal, from the kernel: one sent by anybody else is a stop) and the rest ended it with
# the disk switched and the load running
STOP_SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                signal.SIGUSR2, signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGXCPU,
                signal.SIGXFSZ, signal.SIGIO, signal.SIGPWR, signal.SIGSTKFLT, signal.SIGTRAP,
                signal.SIGSYS, signal.SIGABRT, signal.SIGRTMIN, signal.SIGRTMAX,
                # sent with kill, not faults: a request to stop like the others
                signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL]


@pytest.mark.parametrize("sig", STOP_SIGNALS, ids=[s.name for s in STOP_SIGNALS])
def test_signal_in_a_round_restores(disk, tmp_path, sig):
    dev, before = disk
    out = tmp_path / "out"
    p = start_mid_round(dev, out, "bfq:low_latency=0", "none")
    assert "[bfq]" in sysfs(f"/sys/block/{os.path.basename(dev)}/queue/scheduler")
    p.send_signal(sig)
    stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == 1, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert f"stopped by {sig.name} in round 1 of 4" in lines[0], lines[0]
    assert "restored to kyber (read_lat_nsec=3000000" in lines[0], lines[0]
    assert queue_state(dev) == before
    (meta, _, end), = recordings(out).values()
    assert end["reason"] == "signal"


@contextlib.contextmanager
def unkillable_read(tmp_path, secs):
    """sh code that reads a file of a FUSE server (slowfs) taking secs to answer each read: once
    the server has the request, the reader waits for its answer in D state, which no signal ends,
    SIGKILL included; and a function that says whether such a read is waiting now. Whatever
    happens, the reader has ended and the server is unmounted at the end."""
    mnt = tmp_path / "slowfs"
    mnt.mkdir()
    daemon = subprocess.Popen([str(SLOWFS), str(mnt), str(int(secs * 1e6)), "1"])
    src = f"if={mnt}/disk".encode()

    def readers():
        return procs(lambda a: a[:2] == [b"dd", src])

    def waiting():
        for pid in readers():
            try:
                if Path(f"/proc/{pid}/wchan").read_text() == "request_wait_answer":
                    return True
            except OSError:
                pass
        return False
    try:
        deadline = time.monotonic() + 10
        while not (mnt / "disk").exists():
            assert daemon.poll() is None and time.monotonic() < deadline, "slowfs did not mount"
            time.sleep(0.05)
        yield f"dd if={mnt}/disk of=/dev/null bs=4k count=1 2>/dev/null", waiting
    finally:
        deadline = time.monotonic() + secs + 10
        while readers():
            assert time.monotonic() < deadline, "the reader of slowfs never ended"
            time.sleep(0.1)
        subprocess.run(["fusermount3", "-u", str(mnt)], check=False)
        daemon.wait(timeout=10)


# one signal: every stop signal takes the same path (test_signal_in_a_round_restores sends each)
@pytest.mark.parametrize("sig", [signal.SIGTERM], ids=["TERM"])
def test_what_outlives_the_kill_at_a_signal_is_said(disk, tmp_path, sig):
    """A signal in a round stops the load, and what is in its cgroup is killed (cgroup.kill).
    A process still running 5 s later (here a read waiting, in D state, for a FUSE server that
    takes 12 s to answer) was said when the load ended by itself ("killed, but some still ran
    after 5 s"), but on a signal's stop nothing was said, its cgroup silently left behind. It is
    said there too: one warning, with the cgroup it is left in, beside the stop's line."""
    dev, before = disk
    out = tmp_path / "out"
    cg = None
    try:
        with unkillable_read(tmp_path, 12) as (read, waiting):
            p = subprocess.Popen([str(IOSTRATA), "sched-ab", "-d", dev, "mq-deadline", "none",
                                  "--rounds", "2", "--round-secs", "60", "-o", str(out), "--",
                                  "sh", "-c", f"{read} & exec sleep 300"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 stdin=subprocess.DEVNULL)
            try:
                deadline = time.monotonic() + 30
                while not (waiting() and (out / "A" / "round-01.ndjson").exists()):
                    assert p.poll() is None and time.monotonic() < deadline, p.communicate()
                    time.sleep(0.05)
                cg, = own_cgroup().glob(f"iostrata-load-{p.pid}-*")
                p.send_signal(sig)
                stdout, stderr = p.communicate(timeout=60)
                stuck = waiting()
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        lines = stderr.splitlines()
        assert stuck, "the read ended before its answer: nothing outlived the kill"
        assert p.returncode == 1 and len(lines) == 2, stderr
        assert lines[0] == "iostrata: warning: round 1: the load was stopped and killed, but " \
            f"some of it still ran after 5 s (in {cg})", lines
        assert f"stopped by {sig.name} in round 1 of 4" in lines[1], lines
        assert queue_state(dev) == before
    finally:
        if cg and cg.exists():      # left behind, populated; empty once the read has ended
            cg.rmdir()


def test_nohup_run_outlives_a_hangup(disk, tmp_path):
    """Started under nohup (SIGHUP ignored), a run goes on when the terminal closes, as the
    other commands do: it ran its rounds and put the disk back at the end. sched-ab used to
    catch SIGHUP whatever it was started with, so a nohup'd A/B stopped at the logout."""
    dev, before = disk
    out = tmp_path / "out"
    p = start_mid_round(dev, out, "mq-deadline", "none", secs=2, ignored=[signal.SIGHUP])
    p.send_signal(signal.SIGHUP)
    stdout, stderr = p.communicate(timeout=120)
    assert p.returncode == 0, stderr
    assert "stopped" not in stderr, stderr
    assert sorted(e["reason"] for _, _, e in recordings(out).values()) == ["duration"] * 4
    assert queue_state(dev) == before


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGUSR1], ids=["TERM", "USR1"])
def test_signal_after_the_rounds_stops(disk, tmp_path, sig):
    """A signal after the last round, the disk already put back, while the result is made or
    written: it was ignored and the run exited 0 as one that ran its course. The run was asked
    to stop: one line says so, exit 1. Made to land there for sure: -j writes nothing to stdout
    until the result, and stdout is a full pipe, so sched-ab waits in that write; the stop
    ends that wait once stdout has taken nothing for a grace (a pipe nobody reads held it for
    ever), the result cut short."""
    dev, before = disk
    out = tmp_path / "out"
    r, w = full_pipe()
    try:
        p = subprocess.Popen([str(IOSTRATA), "sched-ab", "-d", dev, "mq-deadline", "none",
                              "--rounds", "2", "--round-secs", "1", "-o", str(out), "-j",
                              *load_args(dev)], stdout=w, stderr=subprocess.PIPE, text=True,
                             stdin=subprocess.DEVNULL)
        os.close(w)
        deadline = time.monotonic() + 120

        def ended():    # rounds whose recording has its end record
            return sum(f.read_text().rstrip("\n").rsplit("\n", 1)[-1].startswith(
                '{"type":"end"') for f in out.glob("[AB]/round-*.ndjson"))
        def waits():    # in write() (before stopout), or in stopout's poll (as the rounds)
            w = Path(f"/proc/{p.pid}/wchan").read_text()
            return "pipe_write" in w or "poll_schedule_timeout" in w
        # every round ran to its end and the disk is back: only the result is left, and
        # sched-ab waits for room in stdout
        while not (ended() == 4 and queue_state(dev) == before and waits()):
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()
            select.select([], [], [], 0.05)
        assert sorted(e["reason"] for _, _, e in recordings(out).values()) == ["duration"] * 4
        p.send_signal(sig)
        _, stderr = p.communicate(timeout=60)  # the pipe is read by no one until it ended
    finally:
        os.close(r)
    assert p.returncode == 1, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    err = json.loads(lines[0])
    assert err["type"] == "error"
    name = os.path.basename(dev)
    assert err["message"].startswith(f"stopped by {sig.name} after the last round, its "
                                     f"result cut short (stdout full): {name} restored to "
                                     "kyber (read_lat_nsec=3000000"), err
    assert err["message"].endswith(f"; the rounds are in {out} (iostrata compare {out}/A "
                                   f"{out}/B)"), err
    assert queue_state(dev) == before


def test_second_run_on_the_disk_is_refused(disk, tmp_path):
    """Two sched-ab on one disk: the second took the first's scheduler of the moment (bfq,
    low_latency 0, nr_requests 256) for the original and put it back when it ended, after the
    first had put back kyber; and it switched the scheduler under the first's rounds. It is
    refused, before it touches anything."""
    dev, before = disk
    name = os.path.basename(dev)
    p = start_mid_round(dev, tmp_path / "one", "bfq:low_latency=0", "none")
    try:
        r = sched_ab(dev, "mq-deadline", "none", tmp_path / "two")
        line = assert_one_line_error(r, f"refusing {name}: another iostrata sched-ab is "
                                     f"running on it (it holds /sys/block/{name}/queue/"
                                     "scheduler locked)")
        assert r.returncode == 1, line
        assert not (tmp_path / "two").exists()
        q = f"/sys/block/{name}/queue"
        assert "[bfq]" in sysfs(f"{q}/scheduler") and sysfs(f"{q}/iosched/low_latency") == "0"
    finally:
        p.send_signal(signal.SIGINT)
        _, stderr = p.communicate(timeout=60)
    assert p.returncode == 1 and "stopped by SIGINT in round 1 of 4" in stderr, stderr
    assert queue_state(dev) == before
    # the lock goes with the process: the disk is free again
    r = sched_ab(dev, "mq-deadline", "none", tmp_path / "three")
    assert r.returncode == 0, r.stderr
    assert queue_state(dev) == before


@pytest.mark.parametrize("knob,value,said", [
    ("scheduler", "mq-deadline", "'s scheduler is mq-deadline, not bfq"),
    ("iosched/low_latency", "1", "'s iosched/low_latency is '1', not '0'"),
])
def test_change_by_someone_else_in_a_round_stops_the_run(disk, tmp_path, knob, value, said):
    """The scheduler or a tunable changed by someone else in a round: the round did not run
    under its spec, though its meta record says it did. It was compared as the spec's, exit
    0; now the run stops there with one line naming the change, and the disk is put back."""
    dev, before = disk
    name = os.path.basename(dev)
    out = tmp_path / "out"
    p = start_mid_round(dev, out, "bfq:low_latency=0", "none", secs=3)
    sysfs(f"/sys/block/{name}/queue/{knob}", value)
    stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == 1, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert f"{name} was changed during round 1, not by sched-ab ({name}{said})" in lines[0], \
        lines[0]
    assert "the round did not run under A (bfq:low_latency=0) alone" in lines[0], lines[0]
    assert "B against A" not in stdout and "verdicts" not in stdout, stdout
    assert queue_state(dev) == before
    (meta, _, end), = recordings(out).values()
    assert end["reason"] == "error"


def sched_ab_in_round_one(dev, a, out):
    """sched-ab of a against none, LOAD a sleep, in its first round: its recording holds an
    interval (stderr piped, for its one line)."""
    p = subprocess.Popen([str(IOSTRATA), "sched-ab", "-d", dev, a, "none", "--rounds", "2",
                          "--round-secs", "2", "-o", str(out), "--", "sleep", "100"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         stdin=subprocess.DEVNULL)
    first = out / "A" / "round-01.ndjson"
    deadline = time.monotonic() + 60
    while not (first.exists() and '"type":"interval"' in first.read_text()):
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        select.select([], [], [], 0.05)
    return p


def test_disk_removed_in_a_round(tmp_path):
    """The disk goes away in a round (a loop device detached and deleted, as a hot-unplugged
    disk): one line saying so, where it said that the disk 'was changed' because it was 'not
    a blk-mq disk', then that its scheduler could not be switched back."""
    img = tmp_path / "gone.img"
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    dev = subprocess.run(["losetup", "-f", "--show", str(img)], check=True,
                         capture_output=True, text=True).stdout.strip()
    name = os.path.basename(dev)
    out = tmp_path / "out"
    try:
        p = sched_ab_in_round_one(dev, "mq-deadline", out)
    finally:
        subprocess.run(["losetup", "-d", dev], check=True)
        ctl = os.open("/dev/loop-control", os.O_RDWR)
        try:
            fcntl.ioctl(ctl, 0x4C81, int(name[4:]))     # LOOP_CTL_REMOVE
            _, stderr = p.communicate(timeout=60)
        finally:
            try:
                fcntl.ioctl(ctl, 0x4C80, int(name[4:]))     # LOOP_CTL_ADD: the host's set back
            except FileExistsError:
                pass
            os.close(ctl)
    assert p.returncode == 1
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert f"{name} is gone (removed during the run): nothing to put back; it was " in lines[0]
    assert wait_no_bpf_programs() == []


def test_disk_replaced_in_a_round(tmp_path):
    """The loop device's file detached in a round and another attached to the same loopN: a
    different disk under the same name (its queue keeps the settings of the one before). It
    ran on, its rounds mixing two disks, and wrote the original settings to the new one. Its
    diskseq differs: one line says so, exit 1, and the new disk's settings are left alone."""
    imgs = [tmp_path / "one.img", tmp_path / "two.img"]
    for img in imgs:
        with open(img, "wb") as f:
            f.truncate(64 << 20)
    dev = subprocess.run(["losetup", "-f", "--show", str(imgs[0])], check=True,
                         capture_output=True, text=True).stdout.strip()
    name = os.path.basename(dev)
    q = Path(f"/sys/block/{name}/queue")
    was = sysfs(q / "scheduler").split("[")[1].split("]")[0]
    nr = sysfs(q / "nr_requests")
    seq = sysfs(f"/sys/block/{name}/diskseq")
    out = tmp_path / "out"
    try:
        p = sched_ab_in_round_one(dev, "bfq", out)
        subprocess.run(["losetup", "-d", dev], check=True)
        subprocess.run(["losetup", dev, str(imgs[1])], check=True)
        _, stderr = p.communicate(timeout=60)
        now = sysfs(f"/sys/block/{name}/diskseq")
        assert "[bfq]" in sysfs(q / "scheduler"), "the new disk's scheduler was changed"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        sysfs(q / "scheduler", was)
        sysfs(q / "nr_requests", nr)
        subprocess.run(["losetup", "-d", dev], check=False)
    assert p.returncode == 1, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0] == (f"iostrata: error: {name} was replaced during the run (diskseq {seq} at "
                        f"the start, diskseq {now} now: another disk, or another file on the "
                        f"loop device): its settings are left alone; it was {was}, "
                        f"nr_requests {nr}"), lines[0]
    assert wait_no_bpf_programs() == []


@pytest.mark.parametrize("a,b,needle,rc", [
    ("bfq:low_latency", "none", "bad tunable 'low_latency' in scheduler spec", 2),
    ("Bad!", "none", "bad scheduler spec 'Bad!'", 2),
    ("none:x=1", "bfq", "none has no tunables", 2),
    # a scheduler the disk does not offer is bad input, as a LOAD that cannot run is
    ("fifo", "none", "offers no scheduler 'fifo' (it offers: ", 2),
    # and so is a spec the disk's scheduler refuses (exit 1 once: found by trying the disk)
    ("bfq:no_such=1", "none", "bfq has no tunable 'no_such' (its tunables: ", 2),
    ("none", "kyber:read_lat_nsec=abc", "kyber's read_lat_nsec does not take 'abc'", 2),
    # taken without an error, yet not what the spec says: a value clamped, one tunable
    # resetting another (strict_guarantees=1 puts slice_idle back to 8 ms)
    ("none", "mq-deadline:front_merges=2",
     "mq-deadline's front_merges reads '1' after '2' was written", 2),
    ("bfq:slice_idle=2,strict_guarantees=1", "none",
     "bfq's slice_idle reads '8' after '2' was written", 2),
])
def test_bad_spec_is_one_line_and_restores(disk, tmp_path, a, b, needle, rc):
    """Refused before anything runs: no directory made, the disk as it was (a bad tunable is
    found by switching to its scheduler: that is put back too)."""
    dev, before = disk
    r = sched_ab(dev, a, b, tmp_path / "out")
    assert r.returncode == rc
    assert_one_line_error(r, needle)
    assert queue_state(dev) == before
    assert not (tmp_path / "out").exists()


def test_unknown_scheduler_says_how_to_load_it(disk, tmp_path):
    """Named with those the disk offers, exit 2 (bad input), nothing made or changed."""
    dev, before = disk
    offered = sysfs(f"/sys/block/{os.path.basename(dev)}/queue/scheduler").replace("[", "")
    r = sched_ab(dev, "noop", "none", tmp_path / "out")
    assert_one_line_error(r, f"offers no scheduler 'noop' (it offers: "
                          f"{offered.replace(']', '')}); ", "modprobe noop-iosched")
    assert r.returncode == 2
    assert queue_state(dev) == before
    assert not (tmp_path / "out").exists()


def test_mounted_disk_is_refused(loopdev, tmp_path):
    """A loop device holding a mounted filesystem: refused and untouched, unless
    --allow-mounted (whose run is not made here: that is the user's call)."""
    subprocess.run(["mkfs.ext4", "-q", "-F", loopdev], check=True, capture_output=True)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", loopdev, str(mnt)], check=True)
    try:
        before = queue_state(loopdev)
        r = sched_ab(loopdev, "mq-deadline", "none", tmp_path / "out", load=["--", "true"])
        line = assert_one_line_error(r, f"refusing {os.path.basename(loopdev)}: it is mounted "
                                     f"on {mnt}", "--allow-mounted")
        assert r.returncode == 1, line
        assert queue_state(loopdev) == before
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_disk_held_exclusively_is_refused(loopdev, tmp_path):
    """A disk the kernel holds for exclusive use without any line in mountinfo naming it (a
    btrfs mount names an anonymous device; here a process holds it with O_EXCL, as a mount
    does): refused and untouched. iostrata-load, which writes whole devices, refuses it too."""
    fd = os.open(loopdev, os.O_RDONLY | os.O_EXCL)
    try:
        before = queue_state(loopdev)
        r = sched_ab(loopdev, "mq-deadline", "none", tmp_path / "out", load=["--", "true"])
        assert_one_line_error(r, f"refusing {os.path.basename(loopdev)}: it is in use: the "
                              "kernel holds it for exclusive use", "--allow-mounted")
        assert r.returncode == 1 and queue_state(loopdev) == before
        w = subprocess.run([str(ROOT / "bin" / "iostrata-load"), "--device", loopdev, "--force",
                            "--rw", "randwrite", "--ios", "5"], capture_output=True, text=True)
        assert_one_line_error(w, "refusing", "exclusive use")
        assert w.returncode != 0
    finally:
        os.close(fd)


def test_root_disk_is_refused(tmp_path):
    root = os.stat("/").st_dev
    disk = Path(f"/sys/dev/block/{os.major(root)}:{os.minor(root)}").resolve()
    if (disk / "partition").exists():
        disk = disk.parent
    if not (disk / "queue" / "scheduler").exists():
        pytest.skip(f"the root filesystem's disk {disk.name} has no scheduler")
    before = queue_state(disk.name)
    r = sched_ab(disk.name, "mq-deadline", "none", tmp_path / "out", load=["--", "true"])
    assert_one_line_error(r, f"refusing {disk.name}: ", "mounted on /")
    assert queue_state(disk.name) == before


def test_bio_based_disk_is_refused(tmp_path):
    zram = sorted(Path("/sys/block").glob("zram*"))
    if not zram:
        pytest.skip("no zram device here (bio-based, without a scheduler)")
    r = sched_ab(zram[0].name, "mq-deadline", "none", tmp_path / "out", load=["--", "true"])
    assert_one_line_error(r, f"{zram[0].name} is not a blk-mq disk")
    assert r.returncode == 2, r.returncode      # bad input, as -d zram0 is to tracing


def test_gate_on_unreliable_verdicts_is_not_decided(disk, tmp_path):
    """One round a side: no A/A control, so the verdicts are UNRELIABLE, and a gate neither
    passes nor fails: exit 4, each gate said 'not decided' (it used to exit 3 or 0 on them)."""
    dev, before = disk
    r = sched_ab(dev, "none", "mq-deadline", tmp_path / "out", "--gate", "block:wait:p50",
                 rounds=1, secs=1)
    assert queue_state(dev) == before
    assert r.returncode == 4, (r.returncode, r.stdout[-800:], r.stderr)
    assert "verdicts: UNRELIABLE: the A/A control could not be run" in r.stdout, r.stdout
    assert "gate block:wait:p50: not decided (the verdicts are UNRELIABLE)" in r.stdout, r.stdout
    assert "passed" not in r.stdout.split("verdicts:")[1] and "REGRESSED" not in r.stdout


def test_earlier_rounds_in_dir_are_refused_before_any_round(disk, tmp_path):
    """Without --force, a DIR holding an earlier run's round is refused before round 1, not
    when this run comes to that round: round 4's log alone there made the run fail after
    rounds 1 to 3 had run (and rounds of other numbers stayed, for compare to mix)."""
    dev, before = disk
    out = tmp_path / "out"
    (out / "A").mkdir(parents=True)
    (out / "A" / "round-04.log").write_text("an earlier run's\n")
    r = sched_ab(dev, "none", "mq-deadline", out, rounds=2, secs=1)
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert_one_line_error(r, f"{out}/A holds an earlier run's round (round-04.log): --force "
                             "replaces its rounds, or choose another -o")
    assert "round  1/4" not in r.stdout, r.stdout
    assert queue_state(dev) == before
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == ["A/round-04.log"], files
    assert (out / "A" / "round-04.log").read_text() == "an earlier run's\n"


def test_force_leaves_only_this_runs_rounds(disk, tmp_path):
    """--force into a DIR that holds a run of more rounds: that run's rounds go, so that
    DIR/A and DIR/B hold this run's alone (compare DIR/A DIR/B mixed the two runs: rounds 1
    and 4 of one beside 2 and 3 of the other)."""
    dev, before = disk
    out = tmp_path / "out"
    r = sched_ab(dev, "none", "mq-deadline", out, rounds=2, secs=1)
    assert r.returncode == 0, r.stderr
    (out / "A" / "notes.txt").write_text("the user's own\n")
    r = sched_ab(dev, "kyber", "bfq", out, "--force", rounds=1, secs=1)
    assert r.returncode == 0, r.stderr
    assert queue_state(dev) == before
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == ["A/notes.txt", "A/round-01.log", "A/round-01.ndjson", "B/round-02.log",
                     "B/round-02.ndjson"], files
    for side, sched in (("A", "kyber"), ("B", "bfq")):
        meta = json.loads((out / side / next(
            p.name for p in (out / side).glob("round-*.ndjson"))).read_text().splitlines()[0])
        assert meta["sched_ab"]["spec"] == sched, meta["sched_ab"]


def test_usage_errors(tmp_path):
    for args, needle in [
        (["-d", "loop0", "none", "bfq"], "no LOAD"),
        (["-d", "loop0", "none", "--", "true"], "expected two scheduler specs"),
        (["none", "bfq", "--", "true"], "no disk"),
        (["-d", "loop0", "none", "bfq", "--rounds", "0", "--", "true"], "bad --rounds '0'"),
        # intervals of 100 us, below what the tracer takes: it used to run, and exit 0
        (["-d", "loop0", "none", "bfq", "--round-secs", "0.001", "--", "true"],
         "a round is at least 1 s"),
        (["-d", "loop0", "none", "bfq", "--gate", "block:total", "--", "true"], "bad --gate"),
        (["-d", "loop0", "none", "bfq", "--gate", "nope:total:p99", "--", "true"],
         "sched-ab traces the block layer"),
        (["-d", "loop0", "none", "bfq", "--gate", "block:nosuch:p99", "--", "true"],
         "whose stages are wait, device and total"),
        (["-d", "loop0", "none", "bfq", "--threshold", "x", "--", "true"], "bad --threshold"),
        # as root, the disk's name is checked before anything else is: a usage error too
        (["-d", "nosuchdisk0", "none", "bfq", "--", "true"], "unknown disk 'nosuchdisk0'"),
    ]:
        r = subprocess.run([str(IOSTRATA), "sched-ab", *args], capture_output=True, text=True,
                           timeout=30)
        assert r.returncode == 2, (args, r)
        assert_one_line_error(r, needle)
