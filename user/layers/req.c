// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "req.h"
#include "sysinfo.h"

uint32_t req_hist_keys(const struct layer_inst *l)
{
	return hist_map_keys(l, 2 * 32 * (l->cfg->per_opcode ? 8 : 1) *
			     (l->cfg->per_process ? 32 : 1));
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

void req_label(const struct layer_inst *l, const void *key, struct rec *r)
{
	const struct ioreq_key *k = key;

	if (k->opcode != 0xffff)
		l->desc->code_name(k->opcode, r->opcode, sizeof(r->opcode));
	req_flags_name(k->flags, r->flags, sizeof(r->flags));
	if (k->tgid) {
		r->pid = k->tgid;
		/* noted by the programs at submission: known after the process has gone */
		if (bpf_map__lookup_elem(layer_map(l, l->desc->comm_map), &r->pid, sizeof(r->pid), r->comm,
					 sizeof(r->comm), 0))
			process_comm(r->pid, r->comm, sizeof(r->comm));
		r->comm[sizeof(r->comm) - 1] = '\0';
	}
}
