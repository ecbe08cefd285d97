/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What the io_uring and aio layers share: their requests' histogram keys, labels and sizes. */
#ifndef IOSTRATA_LAYERS_REQ_H
#define IOSTRATA_LAYERS_REQ_H

#include <stddef.h>
#include "layer.h"

/*
 * Histogram keys they may need: two generations x path-flag sets (32), times 8 opcodes with -O
 * and 32 processes with -P (more than the per-CPU map and its spill map hold are counted as
 * *_hist_full).
 */
uint32_t req_hist_keys(const struct layer_inst *l);
/* Of them, at most this many per CPU (the rest of the budget the flat array leaves). */
uint32_t req_hash_percpu(const struct layer_inst *l);

/*
 * Without -O, -P and -C, the programs keep the histograms of the path flags below req_flat()
 * in a per-CPU array at path flags * 2 + generation instead of the hash: all REQ_FLAT_PER_GEN
 * where the per-CPU budget holds them, else the commonest (0: plain, 1: io-wq, 2: poll, ...)
 * in all but 4 keys of the budget, the others in the hash. req_flat: 0 with -O, -P or -C. Then
 * the array's slots (1 when unused), and the hash key slot i of generation gen stands for.
 */
uint32_t req_flat(const struct layer_inst *l);
uint32_t req_flat_slots(const struct layer_inst *l);
void req_flat_key(uint32_t gen, uint32_t i, void *key);

/* "io-wq,poll,chain,failed,sqpoll" for REQ_FL_* bits. */
const char *req_flags_name(unsigned int flags, char *buf, size_t len);

/* Label a record from a struct ioreq_key: opcode by the layer's code_name, path flags, pid and
 * the process's name (noted by the programs, from the layer's comm_map). */
void req_label(const struct layer_inst *l, const void *key, struct rec *r);

/*
 * When tracing stops: the layer's requests still in the shared table (submitted, not yet ended:
 * for aio, also completed but never reaped) are counted as unmeasured in the stages they
 * started; a stage whose end was seen (aio's completion, a linked request's block times) keeps
 * its value. aio: the table's aio entries (REQ_FL_AIO), else io_uring's.
 */
int req_pending_final(struct layer_inst *l, bool aio, struct interval *iv);

/* How the linked stages are bounded, and why one can be unmeasured. */
#define REQ_LINKED_HOW "O_DIRECT requests linked through bi_end_io; needs the block layer"
#define REQ_UNLINKED "not linked to bios (buffered or no block I/O, another disk, or see drops)"

/* The stages of a request linked to its bios, the same in both layers; submit: its event. */
#define REQ_LINKED_STAGES(submit)						\
	[REQ_SUBMIT_BIO] = { "submit_bio", submit, -1, .to_text = "block events",	\
		.flags = STAGE_LINKED, .how = REQ_LINKED_HOW, .unmeasured = REQ_UNLINKED },	\
	[REQ_WAIT] = { "wait", -1, -1, "block events", "block events", STAGE_LINKED,	\
		REQ_LINKED_HOW, .unmeasured = REQ_UNLINKED },			\
	[REQ_DEVICE] = { "device", -1, -1, "block events", "block events", STAGE_LINKED,	\
		REQ_LINKED_HOW, .unmeasured = REQ_UNLINKED }

/* Their histogram maps: skel_hists, keyed by struct ioreq_key, and skel_flat (req_flat). */
#define REQ_HISTS(sk)								\
static const struct layer_hists hists[] = {					\
	{ .map = SKEL_MAP(sk, sk##_hists), .key_size = sizeof(struct ioreq_key),	\
	  .entries = req_hist_keys, .percpu = req_hash_percpu,			\
	  .spill = SKEL_MAP(sk, sk##_spill),					\
	  .spill_idx = SKEL_MAP(sk, sk##_spill_idx),				\
	  .spill_free = SKEL_MAP(sk, sk##_spill_free) },			\
	{ .map = SKEL_MAP(sk, sk##_flat), .per_gen = REQ_FLAT_PER_GEN,		\
	  .interleaved = true, .array_key = req_flat_key, .entries = req_flat_slots },	\
}

/* The fields of struct layer the io_uring and aio layers fill alike: code_name names their
 * opcodes; link_fn completes their linked requests (its address: link_syms()->sym); each file
 * defines its pending(). */
#define REQ_LAYER_COMMON(skel, name_fn, link, sym)				\
	LAYER_COMMON(skel), .label = req_label, .requests = true,		\
	.code_name = name_fn, .link_fn = #link,					\
	.link_sym = offsetof(struct link_syms, sym),				\
	.configure = configure, .pending = pending,				\
	.event_names = event_names, .events_map = SKEL_MAP(skel, app_events),	\
	.reqs_map = SKEL_MAP(skel, reqs), .comm_map = SKEL_MAP(skel, req_comm)

/* Their skeleton wrappers and configure(): the owner filters, the request table's mask, the
 * link functions, -P, -O. */
#define REQ_LAYER_FUNCS(sk)							\
LAYER_SKELETON(sk)								\
static int configure(struct layer_inst *l)					\
{										\
	struct sk##_bpf *s = l->skel;						\
										\
	COMMON_RODATA(s->rodata, l);						\
	s->rodata->req_mask = l->cfg->inflight_slots - 1;			\
	LINK_SYMS_RODATA(s->rodata, link_syms());				\
	s->rodata->per_process = l->cfg->per_process;				\
	s->rodata->per_opcode = l->cfg->per_opcode;				\
	s->rodata->flat_per_gen = req_flat(l);					\
	return 0;								\
}

#endif
