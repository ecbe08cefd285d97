#!/bin/bash
# Builds bin/iostrata as of git revision REV and copies it to DIR/iostrata, with DIR/iostrata.rev
# naming the commit ("<short hash> <subject>"), for bench/layers.py --baseline:
#
#   scripts/build-baseline.sh 33b907c /tmp/base && make bench-overhead BASELINE=/tmp/base/iostrata
#
# The build happens in a temporary detached worktree (git worktree add --detach), so neither this
# checkout nor any other worktree is touched; the worktree is removed afterwards, also on failure.
# Make variables in the environment (CLANG, BPFTOOL, MAKEFLAGS=-j2, ...) reach the build.
set -euo pipefail

if [ $# -ne 2 ]; then
	echo "usage: $0 REV DIR   (builds REV's bin/iostrata into DIR/iostrata)" >&2
	exit 2
fi
rev=$1
dir=$2
top=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
commit=$(git -C "$top" rev-parse --verify --quiet "$rev^{commit}") ||
	{ echo "$0: $rev is not a commit in $top" >&2; exit 1; }
short=$(git -C "$top" rev-parse --short "$commit")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/iostrata-baseline.XXXXXX")
wt=$tmp/iostrata-$short
cleanup() {
	if [ -e "$wt" ]; then
		git -C "$top" worktree remove --force "$wt" ||
			echo "$0: could not remove the worktree $wt (git worktree remove --force it)" >&2
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

git -C "$top" worktree add --quiet --detach "$wt" "$commit"
make -C "$wt" bin/iostrata
mkdir -p "$dir"
cp "$wt/bin/iostrata" "$dir/iostrata.tmp"
mv "$dir/iostrata.tmp" "$dir/iostrata"
git -C "$top" log -1 --format='%h %s' "$commit" > "$dir/iostrata.rev"
echo "$dir/iostrata: iostrata built from $(cat "$dir/iostrata.rev")"
