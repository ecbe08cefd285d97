#!/bin/bash
# Smoke check of the same static binaries on Debian's 6.1 kernel, under QEMU (TCG; KVM hangs on
# these hosts). The guest's clock is QEMU's instruction counter at a fixed rate (-icount
# shift=0: one instruction is 1 ns) that jumps to the next timer when the guest is idle
# (sleep=off): guest time is then a function of the guest's own instructions alone, and a timer
# set for 100 us fires at 100 us of guest time however busy the host is. Without -icount, TCG's
# timers fire 70-100 us late; with shift=auto, QEMU re-tunes ns per instruction to the host's
# load, and a starved guest saw its 2 ms device take 3.87 ms (issue 11). One vCPU: with two,
# QEMU's single TCG thread under -icount delivers a wakeup to the other vCPU only at the next
# timer (reads of the 2 ms device took 4, 8, 16 ms; submissions 2 ms), and a fixed shift stalls
# the second CPU's bring-up. Boots a busybox initramfs holding bin/iostrata, bin/iostrata-load,
# configfs, null_blk (2 ms and 100 us timer completion), dm-mod and dm-delay, and scsi_debug (a
# disk serving one command at a time, in 2 ms, for sched-ab), mounts a cgroup v2 hierarchy for -C
# and -c, prints what the tools print there, and exits non-zero when a marker is missing;
# tests/test_vm61.py checks the figures.
# Downloads are cached in $CACHE.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${CACHE:-/var/tmp/iostrata-vm-cache}
PKG=linux-image-6.1.0-50-cloud-amd64-unsigned
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! command -v qemu-system-x86_64 >/dev/null; then
	echo "smoke61: SKIP: qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)"
	exit 0
fi
for b in iostrata iostrata-load reaper; do
	[ -x "$top/bin/$b" ] || { echo "smoke61: build first (make)" >&2; exit 1; }
done
mkdir -p "$CACHE"
if [ ! -d "$CACHE/root" ]; then
	(cd "$CACHE" && apt-get download "$PKG" >/dev/null && dpkg -x "$PKG"_*.deb root)
fi
kver=$(ls "$CACHE/root/lib/modules")
mods=$CACHE/root/lib/modules/$kver/kernel

mkdir -p "$work"/initrd/{bin,proc,sys,dev,tmp,mod}
cp "$(command -v busybox)" "$work/initrd/bin/"
for a in sh mount insmod rmmod sleep cat echo poweroff grep mkdir rm kill sed cp cut tr ip wget; do ln -s busybox "$work/initrd/bin/$a"; done
cp "$top/bin/iostrata" "$top/bin/iostrata-load" "$top/bin/reaper" "$work/initrd/"
cp "$mods/fs/configfs/configfs.ko" "$mods/drivers/block/null_blk/null_blk.ko" \
	"$mods/drivers/md/dm-mod.ko" "$mods/drivers/md/dm-delay.ko" \
	"$mods"/drivers/scsi/{scsi_common,scsi_mod,sd_mod,scsi_debug}.ko \
	"$mods/block/kyber-iosched.ko" "$work/initrd/mod/"
# no dmsetup in busybox: a static helper makes the dm-delay device through the DM ioctls
${CC:-cc} -static -O2 -o "$work/initrd/dmdelay" "$top/tests/vm/dmdelay.c"
cat > "$work/initrd/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
insmod /mod/configfs.ko; insmod /mod/null_blk.ko irqmode=2 completion_nsec=2000000
echo "=== FEATURES"; /iostrata features
for mode in tp_btf raw_tp; do
	extra=""; [ $mode = raw_tp ] && extra=--force-raw-tp
	echo "=== TRACE $mode"
	# stopped by SIGINT once the load is done
	# a fresh file: the previous run's "tracing" line must not start the load early
	rm -f /tmp/t.err
	/iostrata -v -D -F -j $extra -d nullb0 > /tmp/t.json 2>/tmp/t.err &
	tracer=$!
	until grep -q "iostrata: tracing" /tmp/t.err 2>/dev/null; do sleep 0.2; done
	/iostrata-load --device /dev/nullb0 --force --engine io_uring --qd 1 --rw randread \
		--ios 40 --size 64m > /tmp/l.txt 2>&1 && echo "LOAD OK"
	sleep 0.5
	kill -INT $tracer
	wait
	grep -v "^iostrata: " /tmp/t.err; cat /tmp/t.json
	grep -E "read  |error" /tmp/l.txt
done
uring_section() {
	# one key per per-CPU histogram map (as few as a host with many CPUs holds): the keys of
	# the processes past the first spill to the shared maps, counted on 6.1 with its atomics
	/iostrata -v -l block,uring,aio,syscall -P -O -j --hist-keys 1 > /tmp/u.json 2>/tmp/u.err &
	tracer=$!
	until grep -q "iostrata: tracing" /tmp/u.err; do sleep 0.2; done
	# an aio key first, so that the libaio reads' keys below spill too
	/iostrata-load --engine libaio --op poll --latency 1ms --ios 5 > /dev/null
	/iostrata-load --engine io_uring --op timeout --latency 10ms --ios 40 > /dev/null &&
		echo "URING LOAD OK"
	/iostrata-load --device /dev/nullb0 --force --engine psync --ios 30 --size 64m >/dev/null
	# their own latency lines too: a device figure off the mark must say whose number it is
	/iostrata-load --device /dev/nullb0 --force --engine io_uring --qd 4 --rw randread \
		--ios 40 --size 64m > /tmp/lu.txt 2>&1
	/iostrata-load --device /dev/nullb0 --force --engine libaio --qd 4 --rw randread \
		--ios 40 --size 64m > /tmp/la.txt 2>&1
	sleep 0.5
	kill -INT $tracer
	wait
	grep -v "^iostrata: " /tmp/u.err; grep "io_uring_complete attached" /tmp/u.err
	cat /tmp/u.json
	echo "LOAD io_uring $(grep -E '^all +read +[0-9.]+[mu]s' /tmp/lu.txt)"
	echo "LOAD libaio $(grep -E '^all +read +[0-9.]+[mu]s' /tmp/la.txt)"
	echo "CLOCKSOURCE $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
}
uring_section > /tmp/uring.txt
echo "=== URING"
cat /tmp/uring.txt
echo "=== SCENARIOS"
# known-latency devices: nullb0 (module parameters) completes in 2 ms; a configfs device in
# 100 us; dm-delay adds 10 ms above the 100 us one
insmod /mod/dm-mod.ko; insmod /mod/dm-delay.ko
mount -t configfs configfs /sys/kernel/config
cfg=/sys/kernel/config/nullb/fast
mkdir $cfg; echo 2 > $cfg/irqmode; echo 100000 > $cfg/completion_nsec; echo 1024 > $cfg/size
echo 1 > $cfg/power
sleep 0.5
# its disk is nullb<index> or, on newer kernels, named after the configfs directory
fast=nullb$(cat $cfg/index); [ -e /sys/block/$fast ] || fast=fast
echo "FAST $fast ($(ls /sys/block | tr '\n' ' '))"
rm -f /tmp/s.err /tmp/n.err
/iostrata -v -D -F -P -O -l block,uring -j > /tmp/s.json 2>/tmp/s.err &
tracer=$!
# beside it, snoop: the dm-delay reads are the only requests of 5 ms or more
/iostrata snoop -v --slower 5ms -l block,uring -j > /tmp/n.json 2>/tmp/n.err &
snooper=$!
until grep -q "iostrata: tracing" /tmp/s.err 2>/dev/null; do sleep 0.2; done
until grep -q "iostrata: tracing" /tmp/n.err 2>/dev/null; do sleep 0.2; done
/iostrata-load --device /dev/nullb0 --force --engine psync --rw randread --ios 200 \
	--size 64m >/dev/null && echo "SCENARIO LOAD nullb0"
/iostrata-load --device /dev/$fast --force --engine psync --rw randread --ios 200 \
	--size 64m >/dev/null && echo "SCENARIO LOAD $fast"
/dmdelay delayed /dev/$fast "$(cat /sys/block/$fast/size)" 10 && \
/iostrata-load --device /dev/dm-0 --force --engine io_uring --qd 1 --rw randread --ios 40 \
	--size 64m >/dev/null && echo "SCENARIO LOAD dm-0"
sleep 0.5
kill -INT $tracer $snooper
wait
grep -v "^iostrata: " /tmp/s.err; cat /tmp/s.json
echo "=== SNOOP"
grep -v "^iostrata: " /tmp/n.err; cat /tmp/n.json
echo "=== CGROUP"
# -C and -c on 6.1: 40 io_uring reads from cgroup a, 20 psync reads from cgroup b, on nullb0;
# one tracer labels each request with its submitter's cgroup, the other counts a's alone
mkdir -p /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup && mkdir /sys/fs/cgroup/a /sys/fs/cgroup/b
rm -f /tmp/c.err /tmp/f.err
/iostrata -v -D -F -O -C -l block,uring -j > /tmp/c.json 2>/tmp/c.err &
labeller=$!
/iostrata -v -D -F -O -l block,uring -c /sys/fs/cgroup/a -j > /tmp/f.json 2>/tmp/f.err &
filter=$!
until grep -q "iostrata: tracing" /tmp/c.err 2>/dev/null; do sleep 0.2; done
until grep -q "iostrata: tracing" /tmp/f.err 2>/dev/null; do sleep 0.2; done
in_cg() { cg=$1; shift; sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "/sys/fs/cgroup/$cg" "$@"; }
in_cg a /iostrata-load --device /dev/nullb0 --force --engine io_uring --qd 4 --rw randread \
	--ios 40 --size 64m >/dev/null && echo "CGROUP LOAD a"
in_cg b /iostrata-load --device /dev/nullb0 --force --engine psync --rw randread --ios 20 \
	--size 64m >/dev/null && echo "CGROUP LOAD b"
sleep 0.5
kill -INT $labeller $filter
wait
grep -v "^iostrata: " /tmp/c.err /tmp/f.err
echo "LABELLED"; cat /tmp/c.json
echo "FILTERED"; cat /tmp/f.json
echo "=== PROBE"; /iostrata-load --engine io_uring --op timeout --latency 1ms --ios 50 | grep timeout
echo "=== FAIL"; /iostrata -l block --fail-probe block_rq_complete --duration 1; echo "FAIL rc=$?"
echo "=== SCHED-AB"
# a disk that serves one command at a time, each in 2 ms (scsi_debug, queue_depth 1: the
# scheduler, not the device, holds what waits), a reader beside eight writers: none serves
# them in arrival order, mq-deadline with fifo_batch=1 serves a waiting read next
# (docs/sched-ab.md predicts the figures)
for m in scsi_common scsi_mod sd_mod; do insmod /mod/$m.ko; done
insmod /mod/scsi_debug.ko ndelay=2000000 dev_size_mb=16
# sd attaches the disk asynchronously; 10 s without it and sched-ab says what is missing
n=0; until [ -e /sys/block/sda ] || [ $n = 100 ]; do sleep 0.1; n=$((n + 1)); done
q=/sys/block/sda/queue
echo 1 > /sys/block/sda/device/queue_depth
# an original that is no scheduler's default, which sched-ab must put back
echo mq-deadline > $q/scheduler; echo 128 > $q/nr_requests; echo 4 > $q/iosched/fifo_batch
sched() { echo "SCHED $1 $(cat $q/scheduler) nr_requests=$(cat $q/nr_requests)" \
	"fifo_batch=$(cat $q/iosched/fifo_batch)"; echo "UPTIME $(cat /proc/uptime)"; }
sched before
L="/iostrata-load --device /dev/sda --force --engine psync --size 16m"
# the reader and the writers start together: each waits for one file, made once both are
# waiting. Started one after the other, either could run alone for the first part of a round
# (the reader alone reads in one cycle, not nine: A's read p50 2.02 ms in one run, and the A/A
# control called 2 of 12; the writers alone, and B's writes looked as fast as A's)
LOAD='rm -f /tmp/ab-go; for rw in "randwrite --jobs 8" randread; do
	(until [ -e /tmp/ab-go ]; do sleep 0.01; done; exec '"$L"' --rw $rw >/dev/null) & done
	sleep 0.3; echo > /tmp/ab-go; wait'
# the scenario, then the tunable alone: mq-deadline's default fifo_batch (16) against 1.
# --threshold 20: a round's cycle is 2 ms + the CPU's share, and a read under none waits 9 of
# them; the effects are x0.2 and x1.5. 4 rounds a side: the A/A control's halves (A rounds 1+8 against
# 4+5) then sit at the same mean position as A and B do, so drift cancels in the control
# too (with 2, it compared the first round with the last: under -icount shift=auto, drift alone
# called 2 of 10 once in 2 runs). 2-second rounds keep the writes' p99 (TCG's scheduling hiccups) out of the halves.
# "AA" lines: what the A/A control called.
for a in none mq-deadline; do
	/iostrata sched-ab -d sda $a mq-deadline:fifo_batch=1 --rounds 4 --round-secs 2 \
		--threshold 20 -o /tmp/ab-$a -j -- sh -c "$LOAD"
	echo "SCHED-AB rc=$?"
	mkdir -p /tmp/aa-$a/1 /tmp/aa-$a/2
	cp /tmp/ab-$a/A/round-01.ndjson /tmp/ab-$a/A/round-08.ndjson /tmp/aa-$a/1/
	cp /tmp/ab-$a/A/round-04.ndjson /tmp/ab-$a/A/round-05.ndjson /tmp/aa-$a/2/
	/iostrata compare --threshold 20 /tmp/aa-$a/1 /tmp/aa-$a/2 |
		grep -E "faster|slower" | sed "s/^/AA $a /"
	sched after
done
echo "=== SCHED-LOST"
# the original scheduler's module is removed during the run (kyber is not in use once sched-ab
# has tried both sides): it cannot be put back (no modprobe here to load it again), which
# sched-ab says, and the queue's own attributes (nr_requests 32) are put back all the same
insmod /mod/kyber-iosched.ko
echo kyber > $q/scheduler; echo 32 > $q/nr_requests
echo "LOST before $(cat $q/scheduler) nr_requests=$(cat $q/nr_requests)"
/iostrata sched-ab -d sda none mq-deadline --rounds 2 --round-secs 1 -o /tmp/ab-lost -j \
	-- sh -c "rmmod kyber_iosched && touch /tmp/rmmod.ok; $L --rw randread --runtime 3s" \
	>/dev/null 2>/tmp/lost.err
echo "SCHED-LOST rc=$?"
[ -e /tmp/rmmod.ok ] && echo "RMMOD OK"
sed 's/^/LOST err /' /tmp/lost.err
echo "LOST after $(cat $q/scheduler) nr_requests=$(cat $q/nr_requests)"
echo "=== REQUEUE"
# every 4th SCSI command finds the host busy (scsi_debug's HOST_BUSY injection): the block
# layer requeues the request, which is issued again, the same I/O. Two tracers, all stages by
# tp_btf and the device stage alone by raw_tp, the kernel's read count read inside their window
sdbg=/sys/bus/pseudo/drivers/scsi_debug
echo 4 > $sdbg/every_nth; echo 0x8000 > $sdbg/opts
rm -f /tmp/r1.err /tmp/r2.err
/iostrata -v -d sda -F -j > /tmp/r1.json 2>/tmp/r1.err &
r1=$!
/iostrata -v -d sda -F -j --stages block.device --force-raw-tp > /tmp/r2.json 2>/tmp/r2.err &
r2=$!
until grep -q "iostrata: tracing" /tmp/r1.err 2>/dev/null; do sleep 0.2; done
until grep -q "iostrata: tracing" /tmp/r2.err 2>/dev/null; do sleep 0.2; done
echo "STAT before $(cat /sys/block/sda/stat)"
/iostrata-load --device /dev/sda --force --engine io_uring --qd 4 --rw randread --ios 100 \
	--size 16m >/dev/null && echo "REQUEUE LOAD OK"
sleep 0.5
echo "STAT after $(cat /sys/block/sda/stat)"
kill -INT $r1 $r2
wait
echo 0 > $sdbg/opts; echo 0 > $sdbg/every_nth
for r in r1 r2; do
	echo "TRACER $r"; grep -E "requeued|not seen completing" /tmp/$r.err; cat /tmp/$r.json
done
echo "=== UNFOLLOWED"
# requests the programs cannot follow, each counted, none timed: an SQE failing before its
# submission event in the request a skipped NOP left (io_uring), and io_submit calls whose iocbpp
# array is not resident (aio: all taken, then 1 of 10 taken, the refused 9 no requests);
# tests/test_uring.py and tests/test_aio.py on the host kernel
rm -f /tmp/f.err
/iostrata -v -l uring,aio -P -O -j > /tmp/f.json 2>/tmp/f.err &
tracer=$!
until grep -q "iostrata: tracing" /tmp/f.err 2>/dev/null; do sleep 0.2; done
/reaper uring-skip 20 && /reaper aio-unreadable 10 /dev/nullb0 &&
	/reaper aio-unread-tail 10 /dev/nullb0 && echo "UNFOLLOWED LOAD OK"
sleep 0.5
kill -INT $tracer
wait
grep "io_uring_req_failed" /tmp/f.err; cat /tmp/f.json
echo "=== SERVE"
# with kernel.unprivileged_bpf_disabled at Debian's 2, 6.1 (5.19 and later) still lets a process
# without capabilities use the BPF fds it holds: serve, having asked, runs with none at all
echo "unprivileged_bpf_disabled $(cat /proc/sys/kernel/unprivileged_bpf_disabled)"
ip link set lo up
/iostrata serve --user 65534 -l uring > /tmp/s.out 2>/tmp/s.err &
srv=$!
until grep -q "serving" /tmp/s.out 2>/dev/null || ! kill -0 $srv 2>/dev/null; do sleep 0.2; done
grep -E "^(Uid|CapEff|CapPrm|NoNewPrivs)" /proc/$srv/status
for t in /proc/$srv/task/*; do echo "task $(grep CapEff $t/status)"; done
/iostrata-load --engine io_uring --op timeout --latency 1ms --ios 20 > /dev/null
sleep 2.5
wget -q -O - http://127.0.0.1:9750/metrics | grep -E "^iostrata_latency_seconds_count.*submit_cqe"
kill -TERM $srv
wait $srv
echo "SERVE rc=$?"
cat /tmp/s.err
echo "=== DONE"
poweroff -f
INIT
chmod +x "$work/initrd/init"
(cd "$work/initrd" && find . | cpio -o -H newc 2>/dev/null | gzip -1 > "$work/initrd.gz")
timeout 900 qemu-system-x86_64 ${QEMU_ACCEL:--accel tcg,thread=single -icount shift=0,sleep=off} -m 1024 -smp 1 \
	-kernel "$CACHE/root/boot/vmlinuz-$kver" -initrd "$work/initrd.gz" \
	-append "console=ttyS0 panic=-1 quiet" -nographic -no-reboot -nic none \
	> "$work/console.log" 2>&1 || true
sed -n '/=== FEATURES/,/=== DONE/p' "$work/console.log"
for m in "block_rq_complete  *tp_btf" "LOAD OK" "URING LOAD OK" "SCENARIO LOAD dm-0" \
	"CGROUP LOAD b" "FAIL rc=1" "SCHED-AB rc=0" "REQUEUE LOAD OK" "UNFOLLOWED LOAD OK" "SERVE rc=0" \
	"=== DONE"; do
	grep -q "$m" "$work/console.log" || { echo "smoke61: FAILED: no '$m'" >&2; exit 1; }
done
[ "$(grep -c '^LOAD OK' "$work/console.log")" = 2 ] || { echo "smoke61: FAILED: a load run" >&2; exit 1; }
echo "smoke61: PASS on $kver"
