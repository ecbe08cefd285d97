#!/bin/sh
# make sample-report: docs/sample/{recording.ndjson.gz,report.html,report.png} from one run of
# iostrata-load with a known latency mix, recorded by iostrata record with every layer, per
# process and opcode. As root (it loads BPF and attaches a loop device).
#
#   io_uring TIMEOUT 1 ms x 400 and 10 ms x 100     known latencies (uring submit_cqe)
#   libaio POLL 5 ms x 100                           a known latency (aio total)
#   io_uring randread qd 8, O_DIRECT on a loop device  linked to their bios: a waterfall
#   libaio randread qd 4 and psync randread            block, aio and syscall rows
set -eu
cd "$(dirname "$0")/.."
B=bin
OUT=docs/sample
TMP=$(mktemp -d /var/tmp/iostrata-sample.XXXXXX)
DEV=""
REC=""
cleanup() {
	[ -n "$REC" ] && kill -INT "$REC" 2>/dev/null && wait "$REC" 2>/dev/null
	[ -n "$DEV" ] && losetup -d "$DEV" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT INT TERM
mkdir -p "$OUT"
truncate -s 256M "$TMP/disk.img"
DEV=$(losetup -f --show --direct-io=on "$TMP/disk.img")

$B/iostrata record -v -o "$OUT/recording.ndjson.gz" --force -P -O -D -F >/dev/null 2>"$TMP/err" &
REC=$!
while ! grep -q "iostrata: tracing" "$TMP/err"; do
	kill -0 $REC 2>/dev/null || { cat "$TMP/err" >&2; exit 1; }
	sleep 0.1
done
load() { $B/iostrata-load "$@" >/dev/null; }
sleep 1
load --engine io_uring --op timeout --latency 1ms --ios 400
load --engine io_uring --rw randread --qd 8 --device "$DEV" --force --runtime 4s --rate 2000 &
READS=$!
load --engine libaio --op poll --latency 5ms --ios 100
load --engine io_uring --op timeout --latency 10ms --ios 100
wait $READS
load --engine libaio --rw randread --qd 4 --device "$DEV" --force --runtime 3s --rate 1000
load --engine psync --rw randread --device "$DEV" --force --runtime 3s --rate 500
sleep 1
kill -INT $REC
wait $REC
REC=""

$B/iostrata report "$OUT/recording.ndjson.gz" -o "$OUT/report.html" --force
# the screenshot the README shows: the top of the page at desktop width
if command -v chromium-headless-shell >/dev/null; then
	chromium-headless-shell --no-sandbox --hide-scrollbars --window-size=1280,1700 \
		--screenshot="$OUT/report.png" "file://$(pwd)/$OUT/report.html" 2>/dev/null
fi
ls -l "$OUT"
