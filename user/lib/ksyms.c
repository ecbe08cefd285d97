// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "ksyms.h"

const struct link_syms *link_syms(void)
{
	static struct link_syms s;
	static bool done;
	static const struct { const char *name; size_t off; } want[] = {
		{ "iomap_dio_bio_end_io", offsetof(struct link_syms, endio_iomap) },
		{ "blkdev_bio_end_io", offsetof(struct link_syms, endio_blkdev) },
		{ "blkdev_bio_end_io_async", offsetof(struct link_syms, endio_blkdev_async) },
		{ "bio_chain_endio", offsetof(struct link_syms, endio_chain) },
		{ "io_complete_rw", offsetof(struct link_syms, kc_uring) },
		{ "io_complete_rw_iopoll", offsetof(struct link_syms, kc_uring_iopoll) },
		{ "aio_complete_rw", offsetof(struct link_syms, kc_aio) },
	};
	char line[256], name[128], type;
	unsigned long long addr;
	FILE *f;
	size_t i;

	if (done)
		return &s;
	done = true;
	f = fopen("/proc/kallsyms", "re");
	if (!f)
		return &s;
	while (fgets(line, sizeof(line), f)) {
		/* built-in symbols only: module lines carry a fourth field */
		if (sscanf(line, "%llx %c %127s", &addr, &type, name) != 3 || strchr(line, '['))
			continue;
		for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
			if (!strcmp(name, want[i].name))
				*(uint64_t *)((char *)&s + want[i].off) = addr;
	}
	fclose(f);
	return &s;
}

const char *link_problem(void)
{
	const struct link_syms *s = link_syms();

	if (!s->endio_iomap && !s->endio_blkdev && !s->kc_uring && !s->kc_aio)
		return "kernel addresses hidden (/proc/kallsyms, kptr_restrict)";
	if (!s->endio_iomap && !s->endio_blkdev && !s->endio_blkdev_async)
		return "no O_DIRECT bi_end_io function found in /proc/kallsyms";
	return "";
}
