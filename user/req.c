// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "common.h"
#include "maps.h"
#include "req.h"

static int shared_fd = -1;

const struct req_syms *req_syms(void)
{
	static struct req_syms s;
	static bool done;
	static const struct { const char *name; size_t off; } want[] = {
		{ "iomap_dio_bio_end_io", offsetof(struct req_syms, endio_iomap) },
		{ "blkdev_bio_end_io", offsetof(struct req_syms, endio_blkdev) },
		{ "blkdev_bio_end_io_async", offsetof(struct req_syms, endio_blkdev_async) },
		{ "bio_chain_endio", offsetof(struct req_syms, endio_chain) },
		{ "io_complete_rw", offsetof(struct req_syms, kc_uring) },
		{ "io_complete_rw_iopoll", offsetof(struct req_syms, kc_uring_iopoll) },
		{ "aio_complete_rw", offsetof(struct req_syms, kc_aio) },
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

const char *req_link_problem(void)
{
	const struct req_syms *s = req_syms();

	if (!s->endio_iomap && !s->endio_blkdev && !s->kc_uring && !s->kc_aio)
		return "kernel addresses hidden (/proc/kallsyms, kptr_restrict)";
	if (!s->endio_iomap && !s->endio_blkdev && !s->endio_blkdev_async)
		return "no O_DIRECT bi_end_io function found in /proc/kallsyms";
	return "";
}

int reqs_open(uint32_t slots)
{
	LIBBPF_OPTS(bpf_map_create_opts, o);

	if (shared_fd >= 0)
		return shared_fd;
	shared_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "reqs", sizeof(uint32_t),
				   sizeof(struct ioreq), slots, &o);
	return shared_fd;
}

void reqs_close(void)
{
	if (shared_fd >= 0)
		close(shared_fd);
	shared_fd = -1;
}

int reqs_fd(void)
{
	return shared_fd;
}

int reqs_use(struct bpf_map *m)
{
	if (shared_fd >= 0)
		return bpf_map__reuse_fd(m, shared_fd);
	return bpf_map__set_max_entries(m, opts.inflight_slots);
}

uint32_t req_keys_wanted(void)
{
	return 2 * 32 * (opts.per_opcode ? 8 : 1) * (opts.per_process ? 32 : 1);
}

const char *req_flags_name(unsigned int flags, char *buf, size_t len)
{
	static const char *const names[] = { "io-wq", "poll", "chain", "failed", "sqpoll" };
	size_t i, n = 0;

	buf[0] = '\0';
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (flags & (1u << i) && n < len)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "", names[i]);
	return buf;
}

/* Label a record from a struct ioreq_key: opcode, path flags, pid and comm. */
static void req_label(const void *key, struct rec *rec, void *ctx)
{
	const struct req_report *r = ctx;
	const struct ioreq_key *k = key;
	int comm_fd = r->comm_fd;

	if (k->opcode != 0xffff)
		r->name(k->opcode, rec->opcode, sizeof(rec->opcode));
	req_flags_name(k->flags, rec->flags, sizeof(rec->flags));
	if (k->tgid) {
		rec->pid = k->tgid;
		if (comm_fd < 0 || bpf_map_lookup_elem(comm_fd, &rec->pid, rec->comm))
			process_comm(rec->pid, rec->comm, sizeof(rec->comm));
		rec->comm[sizeof(rec->comm) - 1] = '\0';
	}
}

int req_report_init(struct req_report *r)
{
	r->ncpus = libbpf_num_possible_cpus();
	r->vals = r->ncpus > 0 ? calloc((size_t)r->ncpus, sizeof(struct ioreq_hists)) : NULL;
	return r->vals ? 0 : -1;
}

void req_report_free(struct req_report *r)
{
	free(r->vals);
	r->vals = NULL;
}

int req_report_collect(struct req_report *r, volatile uint32_t *gen, struct bpf_map *hists,
		       struct bpf_map *comm, struct bpf_map *drops, struct bpf_map *events,
		       struct interval *iv)
{
	uint32_t old = gen_retire(gen, iv);
	int err;

	r->comm_fd = bpf_map__fd(comm);
	err = drain_hists(bpf_map__fd(hists), sizeof(struct ioreq_key), old, r->ncpus, r->vals,
			  REQ_NSTAGES, r->layer, r->stages, req_label, r, iv);
	if (!err)
		err = drops_read(drops, r->ncpus, 0, DROP_NREASONS - 1, r->drop_names, r->prev_drops,
				 iv);
	if (!err)
		err = counters_read(events, r->ncpus, 0, EV_NEVENTS - 1, r->event_names,
				    r->prev_events, iv->events, &iv->nevents);
	return err;
}
