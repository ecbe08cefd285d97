// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench-unseen DEV_T: counts DEV_T's block completions by the thread each ran on top of
 * (unseen.bpf.c), for bench/completions.py. Prints "attached", then reads commands on stdin:
 * "on" empties the counts and starts counting, "off" stops; each is answered "ok". At the end
 * of stdin it prints one line per thread, "COUNT<TAB>TID<TAB>COMM" (the name it had when first
 * seen), then "unrecorded N", and exits; its program detaches as it exits, however it exits.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "unseen.skel.h"

struct seen {
	__u64 n;
	char comm[16];
};

static void nop(int sig) { }

static void empty(int fd)
{
	__u32 k;

	while (!bpf_map_get_next_key(fd, NULL, &k))
		bpf_map_delete_elem(fd, &k);
}

static void dump(int fd)
{
	__u32 k, next, *prev = NULL;
	struct seen v;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if (!bpf_map_lookup_elem(fd, &next, &v))
			printf("%llu\t%u\t%.16s\n", (unsigned long long)v.n, next, v.comm);
		k = next;
		prev = &k;
	}
}

int main(int argc, char **argv)
{
	struct unseen_bpf *s;
	char line[64];
	char *end;
	unsigned long dev;
	int fd;

	if (argc != 2 || (errno = 0, dev = strtoul(argv[1], &end, 0), errno || *end || !*argv[1])) {
		fprintf(stderr, "usage: bench-unseen DEV_T (the kernel's encoding: major << 20 | minor)\n");
		return 2;
	}
	s = unseen_bpf__open();
	if (!s) {
		fprintf(stderr, "bench-unseen: cannot open the BPF object\n");
		return 1;
	}
	s->rodata->target_dev = dev;
	if (unseen_bpf__load(s) || unseen_bpf__attach(s)) {
		fprintf(stderr, "bench-unseen: cannot load or attach the program\n");
		unseen_bpf__destroy(s);
		return 1;
	}
	fd = bpf_map__fd(s->maps.by_thread);
	signal(SIGINT, nop);
	signal(SIGTERM, nop);
	printf("attached\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "on\n")) {
			empty(fd);
			s->bss->unrecorded = 0;
			__atomic_store_n(&s->bss->on, 1, __ATOMIC_SEQ_CST);
		} else if (!strcmp(line, "off\n")) {
			__atomic_store_n(&s->bss->on, 0, __ATOMIC_SEQ_CST);
		} else {
			fprintf(stderr, "bench-unseen: unknown command %s", line);
			continue;
		}
		printf("ok\n");
		fflush(stdout);
	}
	__atomic_store_n(&s->bss->on, 0, __ATOMIC_SEQ_CST);
	dump(fd);
	printf("unrecorded %llu\n", (unsigned long long)s->bss->unrecorded);
	unseen_bpf__destroy(s);
	return 0;
}
