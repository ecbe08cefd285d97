#!/bin/sh
# Installs the Debian packages iostrata needs to build, test and benchmark, when run as root;
# otherwise names the missing ones and fails. Quiet when nothing is missing.
set -eu

PKGS="make gcc libc6-dev clang-19 llvm-19 libbpf-dev bpftool libelf-dev zlib1g-dev
      python3 python3-pytest python3-jsonschema util-linux fio libfuse3-dev fuse3 pkg-config
      liburing-dev libaio-dev libjsmn-dev prometheus python3-yaml
      chromium-headless-shell librsvg2-bin libxml2-utils
      qemu-system-x86 busybox-static cpio e2fsprogs strace
      $*"	# extra packages a target needs (make bench-overhead: bpftrace libbpf-tools)

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "deps: not a Debian system; install the equivalents of: $(echo $PKGS)" >&2
	exit 1
fi

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "deps: missing Debian packages:$missing (run 'make deps' as root)" >&2
	exit 1
fi
echo "deps: installing$missing"
apt-get update -q >/dev/null
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >/dev/null
