// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench-floor: attaches empty tp_btf programs to the block layer's events until stdin closes
 * or a signal arrives. bench/block.sh runs it beside the tracer so the per-program cost that
 * bpf_stats charges for an empty program (the measurement floor) is read in the same run.
 */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include "floor.skel.h"

static void nop(int sig) { }

int main(void)
{
	struct floor_bpf *skel = floor_bpf__open_and_load();
	char c;

	if (!skel || floor_bpf__attach(skel)) {
		fprintf(stderr, "bench-floor: cannot load or attach the empty programs\n");
		floor_bpf__destroy(skel);
		return 1;
	}
	signal(SIGINT, nop);
	signal(SIGTERM, nop);
	printf("attached\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	floor_bpf__destroy(skel);
	return 0;
}
