// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "common.h"
#include "maps.h"

uint32_t gen_retire(volatile uint32_t *gen, struct interval *iv)
{
	struct timespec grace = { 0, 5 * 1000 * 1000 };
	uint32_t old = *gen & 1;

	if (!iv->end_mono_ns)
		iv->end_mono_ns = clock_ns(CLOCK_MONOTONIC);
	__atomic_store_n(gen, old ^ 1, __ATOMIC_SEQ_CST);
	while (nanosleep(&grace, &grace) && errno == EINTR)	/* a signal does not shorten it */
		;
	return old;
}

int map_keys(int fd, size_t key_size, void **keys, size_t *n)
{
	size_t cap = 0;
	char *v = NULL, *grown;

	*n = 0;
	*keys = NULL;
	for (;;) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			grown = realloc(v, cap * key_size);
			if (!grown) {
				free(v);
				return -ENOMEM;
			}
			v = grown;
		}
		/* the previous key is the last one stored */
		if (bpf_map_get_next_key(fd, *n ? v + (*n - 1) * key_size : NULL,
					 v + *n * key_size))
			break;
		(*n)++;
	}
	*keys = v;
	return 0;
}

int drops_read(struct bpf_map *drops, int ncpus, uint32_t first, uint32_t last,
	       const char *const *names, uint64_t *prev, struct interval *iv)
{
	return counters_read(drops, ncpus, first, last, names, prev, iv->drops, &iv->ndrops);
}

int counters_read(struct bpf_map *map, int ncpus, uint32_t first, uint32_t last,
		  const char *const *names, uint64_t *prev, struct drop_count *out, int *nout)
{
	uint64_t *pc = calloc((size_t)ncpus, sizeof(*pc)), sum;
	uint32_t r;
	int cpu;

	if (!pc)
		return -ENOMEM;
	for (r = first; r <= last && *nout < MAX_DROPS; r++) {
		if (!names[r])
			continue;
		sum = 0;
		if (!bpf_map_lookup_elem(bpf_map__fd(map), &r, pc))
			for (cpu = 0; cpu < ncpus; cpu++)
				sum += pc[cpu];
		out[*nout].name = names[r];
		out[(*nout)++].n = sum - prev[r];
		prev[r] = sum;
	}
	free(pc);
	return 0;
}

int cgroup_filter_set(struct bpf_map *map)
{
	uint32_t zero = 0;
	int fd = open(opts.cgroup, O_RDONLY | O_DIRECTORY);

	if (fd < 0 || bpf_map__update_elem(map, &zero, sizeof(zero), &fd, sizeof(fd), 0)) {
		errorf("-c %s: not a cgroup v2 directory", opts.cgroup);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

void report_maps_mem(struct layer_report *rep, struct bpf_map *const *maps, int n)
{
	int i;

	for (i = 0; i < n && rep->nmaps < MAX_MAPS; i++) {
		struct map_mem *m = &rep->maps[rep->nmaps++];

		snprintf(m->name, sizeof(m->name), "%s", bpf_map__name(maps[i]));
		m->bytes = map_memlock(bpf_map__fd(maps[i]));
		m->note[0] = '\0';
	}
}

void report_map_note(struct layer_report *rep, const char *name, const char *note)
{
	int i;

	for (i = 0; i < rep->nmaps; i++)
		if (!strcmp(rep->maps[i].name, name))
			snprintf(rep->maps[i].note, sizeof(rep->maps[i].note), "%s", note);
}

bool retired_read_and_zero(int fd, const void *key, void *vals, size_t vals_size)
{
	static const char zero[64];
	const char *p = vals;
	size_t i;
	bool empty = true;

	if (bpf_map_lookup_elem(fd, key, vals))
		return false;
	for (i = 0; i < vals_size && empty; i += sizeof(zero))
		empty = !memcmp(p + i, zero, vals_size - i < sizeof(zero) ? vals_size - i : sizeof(zero));
	if (empty) {
		/* idle for a whole generation: free its room (the race above needs an event
		 * exactly now on a key that had none for an interval) */
		bpf_map_delete_elem(fd, key);
		return false;
	}
	{
		void *zeros = calloc(1, vals_size);

		if (zeros) {
			bpf_map_update_elem(fd, key, zeros, BPF_EXIST);
			free(zeros);
		}
	}
	return true;
}

int hists_to_recs(const void *key, const struct hist *vals, int ncpus, int nstages,
		  const char *layer, const char *const *stages,
		  void (*label)(const void *key, struct rec *r, void *ctx), void *ctx,
		  struct interval *iv)
{
	static struct hist sum;
	struct rec *rec;
	int cpu, st;

	for (st = 0; st < nstages; st++) {
		if (!stages[st])
			continue;
		memset(&sum, 0, sizeof(sum));
		for (cpu = 0; cpu < ncpus; cpu++)
			hist_merge(&sum, &vals[cpu * nstages + st]);
		if (!sum.count && !sum.unmeasured)
			continue;
		rec = recs_add(&iv->recs);
		if (!rec)
			return -ENOMEM;
		rec->layer = layer;
		rec->stage = stages[st];
		rec->stage_order = st;
		label(key, rec, ctx);
		rec->h = sum;
	}
	return 0;
}

int drain_hists(int fd, size_t key_size, uint32_t gen, int ncpus, struct hist *vals, int nstages,
		const char *layer, const char *const *stages,
		void (*label)(const void *key, struct rec *r, void *ctx), void *ctx,
		struct interval *iv)
{
	size_t vals_size = (size_t)ncpus * (size_t)nstages * sizeof(*vals);
	char *keys;
	size_t nkeys, i;
	int err = map_keys(fd, key_size, (void **)&keys, &nkeys);

	for (i = 0; i < nkeys && !err; i++) {
		const void *key = keys + i * key_size;
		uint32_t g;

		memcpy(&g, key, sizeof(g));
		if (g != gen || !retired_read_and_zero(fd, key, vals, vals_size))
			continue;
		err = hists_to_recs(key, vals, ncpus, nstages, layer, stages, label, ctx, iv);
	}
	free(keys);
	return err;
}

uint32_t hist_map_keys(size_t value_size, int ncpus, uint32_t want)
{
	uint64_t fit = HIST_MAP_BUDGET / ((uint64_t)value_size * (uint64_t)(ncpus > 0 ? ncpus : 1));

	if (fit < 16)
		fit = 16;
	return want < fit ? want : (uint32_t)fit;
}
