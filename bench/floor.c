// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench-floor: attaches BPF programs until stdin closes or a signal arrives, for a bench to
 * read their bpf_stats beside its load.
 *   bench-floor          empty tp_btf programs on the block layer's events (floor.bpf.c): what
 *                        bpf_stats charges here for a program that does nothing (bench/block.py,
 *                        bench/layers.py)
 *   bench-floor helpers  one program per building block (helpers.bpf.c; bench/helpers.py)
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "floor.skel.h"
#include "helpers.skel.h"

static void nop(int sig) { }

int main(int argc, char **argv)
{
	bool helpers = argc > 1 && !strcmp(argv[1], "helpers");
	struct helpers_bpf *h = NULL;
	struct floor_bpf *f = NULL;
	char c;
	int err;

	if (helpers)
		err = !(h = helpers_bpf__open_and_load()) || helpers_bpf__attach(h);
	else
		err = !(f = floor_bpf__open_and_load()) || floor_bpf__attach(f);
	if (err) {
		fprintf(stderr, "bench-floor: cannot load or attach the programs\n");
		helpers_bpf__destroy(h);
		floor_bpf__destroy(f);
		return 1;
	}
	signal(SIGINT, nop);
	signal(SIGTERM, nop);
	printf("attached\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	helpers_bpf__destroy(h);
	floor_bpf__destroy(f);
	return 0;
}
