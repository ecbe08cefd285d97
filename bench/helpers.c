// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench-helpers: attaches bench/helpers.bpf.c's programs until stdin closes (a signal is not
 * needed: the caller closes the pipe). bench/helpers.py runs it beside fio.
 */
#include <stdio.h>
#include <unistd.h>
#include "helpers.skel.h"

int main(void)
{
	struct helpers_bpf *skel = helpers_bpf__open_and_load();
	char c;

	if (!skel || helpers_bpf__attach(skel)) {
		fprintf(stderr, "bench-helpers: cannot load or attach the programs\n");
		helpers_bpf__destroy(skel);
		return 1;
	}
	printf("attached\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	helpers_bpf__destroy(skel);
	return 0;
}
