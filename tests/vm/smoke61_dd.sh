#!/bin/bash
# Does the SAME static bin/iostrata work on Debian's 6.1 kernel? Boots
# linux-image-6.1.0-50-cloud-amd64-unsigned under QEMU (TCG: KVM hangs on these hosts) with a
# busybox initramfs holding bin/iostrata, loop, configfs and null_blk (irqmode=2
# completion_nsec=2000000: a 2 ms timer-completion /dev/nullb0), and runs:
#   a) iostrata features, and features -j
#   b) iostrata -D -F -j --duration 4 -d nullb0 around exactly 50 O_DIRECT 4 KiB reads (dd)
#   c) the same with --force-raw-tp
#   d) iostrata --fail-probe block_rq_complete --duration 1; echo rc=$?  (and with -l block, -v)
# Console: $SCRATCH/console.log; the part between the markers is printed. Downloads are cached in
# $SCRATCH/cache. Idempotent; exits non-zero when a marker is missing.
# (A sibling of smoke61.sh, which drives iostrata-load instead of busybox dd.)
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
SCRATCH=${SCRATCH:-/tmp/vm61}
CACHE=$SCRATCH/cache
PKG=linux-image-6.1.0-50-cloud-amd64-unsigned
NREADS=50

need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
[ -x /bin/busybox ] && file -L /bin/busybox | grep -q 'statically linked' || need+=(busybox-static)
command -v cpio >/dev/null || need+=(cpio)
command -v xz >/dev/null || need+=(xz-utils)
if [ ${#need[@]} -gt 0 ]; then
	apt-get install -y "${need[@]}" >/dev/null 2>&1 ||
		{ apt-get update >/dev/null && apt-get install -y "${need[@]}" >/dev/null; }
fi
[ -x "$top/bin/iostrata" ] || { echo "smoke61_dd: build first (make)" >&2; exit 1; }
file "$top/bin/iostrata" | grep -q 'statically linked' ||
	{ echo "smoke61_dd: bin/iostrata is not statically linked" >&2; exit 1; }

mkdir -p "$CACHE"
if [ ! -f "$CACHE/root/.done" ]; then
	rm -rf "$CACHE/root"
	ls "$CACHE"/"$PKG"_*.deb >/dev/null 2>&1 || (cd "$CACHE" && apt-get download "$PKG" >/dev/null 2>&1)
	dpkg -x "$CACHE"/"$PKG"_*.deb "$CACHE/root"
	touch "$CACHE/root/.done"
fi
kver=$(ls "$CACHE/root/lib/modules")
mods=$CACHE/root/lib/modules/$kver/kernel

ird=$SCRATCH/initrd
rm -rf "$ird" && mkdir -p "$ird"/{bin,proc,sys,dev,tmp,mod}
cp /bin/busybox "$ird/bin/"
for a in sh mount insmod losetup dd cat echo sleep grep poweroff kill ls head sed cut; do
	ln -s busybox "$ird/bin/$a"
done
cp "$top/bin/iostrata" "$ird/"
# modules, in load order; a .ko.xz is decompressed here (busybox insmod may not take .xz)
for m in drivers/block/loop fs/configfs/configfs drivers/block/null_blk/null_blk; do
	b=$(basename "$m")
	if [ -f "$mods/$m.ko" ]; then cp "$mods/$m.ko" "$ird/mod/$b.ko"
	elif [ -f "$mods/$m.ko.xz" ]; then xz -dc "$mods/$m.ko.xz" > "$ird/mod/$b.ko"
	else echo "smoke61_dd: no $m.ko in $kver: assuming it is built in" >&2
	fi
done
# reader: busybox dd if it knows iflag=direct, else a tiny static pread(O_DIRECT) helper
ddhelp=$(busybox dd --help 2>&1 || true)	# no pipe into grep -q: pipefail + SIGPIPE
if [[ $ddhelp == *iflag=*direct* ]]; then
	echo "dd if=/dev/nullb0 of=/dev/null bs=4096 count=$NREADS iflag=direct" > "$ird/reader"
else
	cat > "$SCRATCH/odread.c" <<'C'
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	int n = atoi(argv[2]), fd = open(argv[1], O_RDONLY | O_DIRECT), i;
	void *buf;

	if (fd < 0 || posix_memalign(&buf, 4096, 4096)) { perror(argv[1]); return 1; }
	for (i = 0; i < n; i++)
		if (pread(fd, buf, 4096, (off_t)i * 4096) != 4096) { perror("pread"); return 1; }
	printf("%d O_DIRECT reads\n", n);
	return 0;
}
C
	gcc -static -O2 -o "$ird/odread" "$SCRATCH/odread.c"
	echo "/odread /dev/nullb0 $NREADS" > "$ird/reader"
fi

cat > "$ird/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
up() { echo "[uptime $(cut -d' ' -f1 /proc/uptime)]"; }
for m in loop configfs; do [ -f /mod/$m.ko ] && insmod /mod/$m.ko; done
insmod /mod/null_blk.ko irqmode=2 completion_nsec=2000000 queue_mode=2
ls -l /dev/nullb0; echo "nullb0 logical_block_size $(cat /sys/block/nullb0/queue/logical_block_size)"
echo "=== A FEATURES (text)"; up
/iostrata features; echo "features rc=$?"
echo "=== A FEATURES (-j)"
/iostrata features -j; echo "features -j rc=$?"
for mode in tp_btf raw_tp; do
	extra=""; [ $mode = raw_tp ] && extra=--force-raw-tp
	echo "=== TRACE $mode"; up
	/iostrata -v -D -F -j $extra --duration 4 -d nullb0 > /tmp/out.json 2>/tmp/err.txt &
	pid=$!
	i=0
	# attaching under TCG can take a while: wait for "tracing", then 1 s more
	while ! grep -q "iostrata: tracing" /tmp/err.txt && kill -0 $pid 2>/dev/null && [ $i -lt 600 ]; do
		sleep 0.2; i=$((i + 1))
	done
	sleep 1; up
	sh /reader 2>&1
	wait $pid; echo "iostrata rc=$?"; up
	echo "--- stderr"; cat /tmp/err.txt
	echo "--- stdout"; cat /tmp/out.json
done
echo "=== D FAIL-PROBE"; up
/iostrata --fail-probe block_rq_complete --duration 1; echo "rc=$?"
echo "=== D2 FAIL-PROBE -l block"
/iostrata -l block --fail-probe block_rq_complete --duration 1; echo "rc=$?"
echo "=== D3 FAIL-PROBE -v (why D goes on without the block layer)"
/iostrata -v --fail-probe block_rq_complete --duration 1 >/dev/null 2>/tmp/d3.err; echo "rc=$?"
grep -v '^libbpf: ' /tmp/d3.err
echo "=== DONE"; up
poweroff -f
INIT
chmod +x "$ird/init"
(cd "$ird" && find . | cpio -o -H newc 2>/dev/null | gzip -1 > "$SCRATCH/initrd.gz")

t0=$(date +%s.%N)
timeout 600 qemu-system-x86_64 -accel tcg,thread=multi -m 1024 -smp 2 \
	-kernel "$CACHE/root/boot/vmlinuz-$kver" -initrd "$SCRATCH/initrd.gz" \
	-append "console=ttyS0 panic=-1 quiet" -nographic -no-reboot -nic none \
	> "$SCRATCH/console.log" 2>&1 || echo "smoke61_dd: qemu exit status $?"
t1=$(date +%s.%N)
tr -d '\r' < "$SCRATCH/console.log" > "$SCRATCH/console.txt"
sed -n '/^=== A FEATURES/,/^=== DONE/p' "$SCRATCH/console.txt"
awk -v a="$t0" -v b="$t1" -v k="$kver" 'BEGIN { printf "smoke61_dd: VM wall time %.1f s (kernel %s)\n", b - a, k }'
fail=0
grep -q "^=== DONE" "$SCRATCH/console.txt" || { echo "smoke61_dd: FAILED: no '=== DONE'" >&2; fail=1; }
[ "$(grep -c '^iostrata rc=0' "$SCRATCH/console.txt")" = 2 ] ||
	{ echo "smoke61_dd: FAILED: a trace run did not exit 0" >&2; fail=1; }
# D2: block asked for by name, its required event missing: must fail
sed -n '/^=== D2/,/^=== D3/p' "$SCRATCH/console.txt" | grep -q '^rc=1' ||
	{ echo "smoke61_dd: FAILED: -l block --fail-probe block_rq_complete did not exit 1" >&2; fail=1; }
# per mode and stage, the reads on nullb0 (all flags merged): count, p50, unmeasured
python3 - "$SCRATCH/console.txt" "$NREADS" <<'PY' || fail=1
import json, sys
txt, want, bad = open(sys.argv[1]).read(), int(sys.argv[2]), 0
for sec in txt.split("=== TRACE ")[1:]:
    mode, st = sec.split()[0], {}
    for line in sec.split("\n=== ")[0].splitlines():
        if line.startswith('{"type":"interval"'):
            for h in json.loads(line)["hists"]:
                if h["layer"] == "block" and h["labels"].get("op") == "read":
                    s = st.setdefault(h["stage"], [0, [], 0, set()])
                    s[0] += h["count"]; s[1].append(h["p50_ns"]); s[2] += h["unmeasured"]
                    s[3].add(json.dumps(h["labels"], sort_keys=True))
    for stage in ("wait", "device", "total"):
        c, p, u, lab = st.get(stage, [0, [], 0, set()])
        print(f"summary {mode:6} {stage:6} read count={c} p50_ns={p} unmeasured={u} labels={sorted(lab)}")
        bad |= c != want or u != 0
    p = st.get("device", [0, [0]])[1]
    bad |= not p or not 2_000_000 <= max(p) <= 3_000_000
sys.exit(bad)
PY
[ $fail = 0 ] && echo "smoke61_dd: PASS" || { echo "smoke61_dd: FAIL"; exit 1; }
