/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What the io_uring and aio layers share: their requests' histogram keys, labels and sizes. */
#ifndef IOSTRATA_LAYERS_REQ_H
#define IOSTRATA_LAYERS_REQ_H

#include <stddef.h>
#include "layer.h"

/*
 * Histogram keys they may need: two generations x path-flag sets (32), times 8 opcodes with -O
 * and 32 processes with -P (more are counted as *_hist_full).
 */
uint32_t req_keys_wanted(const struct trace_config *cfg);

/* "io-wq,poll,chain,failed,sqpoll" for REQ_FL_* bits. */
const char *req_flags_name(unsigned int flags, char *buf, size_t len);

/* Label a record from a struct ioreq_key: opcode by name(), path flags, pid and comm. */
void req_label(const struct layer_inst *l, const void *key, struct rec *r,
	       const char *(*name)(unsigned int, char *, size_t), size_t comm_map);

/* Every object with bpf/req.bpf.h: the request table's mask and the link functions. */
#define REQ_RODATA(ro, l) do {							\
	(ro)->req_mask = (l)->cfg->inflight_slots - 1;				\
	LINK_SYMS_RODATA(ro, link_syms());					\
	(ro)->per_process = (l)->cfg->per_process;				\
	(ro)->per_opcode = (l)->cfg->per_opcode;				\
} while (0)

#endif
