/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A layer describes itself in one table (struct layer): its events (tracepoints, the tp_btf
 * program and its raw_tp twin taken from the skeleton's handles, required or optional), its
 * stages (which events bound each), its histogram maps and their label decoder, its counters.
 * One routine (layer.c) probes, loads, attaches, falls back, drains and reports for all of
 * them; a layer's own code is what only it has: its .rodata and map sizes, and its labels.
 */
#ifndef IOSTRATA_LAYER_H
#define IOSTRATA_LAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "interval.h"
#include "iostrata.h"
#include "sysinfo.h"

enum layer_id { LAYER_BLOCK, LAYER_URING, LAYER_AIO, LAYER_SYSCALL, NLAYERS };
_Static_assert(NLAYERS <= CFG_LAYERS, "trace_config.stages has a slot per layer");

/* Every layer this build has, in the order their records are printed (user/layers/). */
extern const struct layer *const layers[NLAYERS];

enum ev_kind {
	EV_TP,		/* a tracepoint with a tp_btf program and a raw_tp twin (no tracefs needed) */
	EV_SYSCALL,	/* a classic syscalls:NAME tracepoint (needs tracefs) */
};

/* A program of a skeleton, by offset: a misspelt name does not compile. */
#define SKEL_PROG(skel, name)	offsetof(struct skel##_bpf, progs.name)
#define SKEL_MAP(skel, name)	offsetof(struct skel##_bpf, maps.name)
#define ARRAY_LEN(a)		(sizeof(a) / sizeof((a)[0]))
#define BIT(n)			(1u << (n))

/* A layer file's skeleton wrappers, and the struct layer fields every skeleton fills alike:
 * its tables (named events, stages, hists, maps, drop_names) and its common.bpf.h maps. */
#define LAYER_SKELETON(skel)							\
	static void *skel##_open(void) { return skel##_bpf__open(); }		\
	static void skel##_destroy(void *s) { skel##_bpf__destroy(s); }
#define LAYER_COMMON(skel)							\
	.name = #skel, .events = events, .nevents = ARRAY_LEN(events),				\
	.stages = stages, .nstages = ARRAY_LEN(stages),				\
	.hists = hists, .nhists = ARRAY_LEN(hists),				\
	.open = skel##_open, .destroy = skel##_destroy,				\
	.drops_map = SKEL_MAP(skel, drops), .gens_map = SKEL_MAP(skel, gens),	\
	.cgroup_map = SKEL_MAP(skel, cgroup_filter), .snoop_map = SKEL_MAP(skel, snoop_rb)

#define MAX_EVENTS 40
#define MAX_STAGES 8
#define MAX_MAPS 24	/* the block object has 18 (layer_report: every map its memory) */

struct layer_event {
	const char *tp;		/* tracepoint; EV_SYSCALL: its name under syscalls/ */
	enum ev_kind kind;
	size_t btf, raw;	/* its programs (EV_SYSCALL: btf only, the classic one) */
	/* the same event under the name older kernels give it, and its programs */
	const char *old_tp;
	size_t old_btf, old_raw;
	/* a tp_btf program for the prototype typed_ok() recognises (direct loads) */
	size_t typed;
	bool (*typed_ok)(const char *tp);
	/* prototypes handled: nargs or, with an extra leading argument, nargs + 1 (the pointer we
	 * read is then argument 1); nargs_any: any count from nargs up; exact_nargs: nargs only.
	 * 0: not checked */
	int nargs;
	bool nargs_any, exact_nargs;
	int pair;		/* EV_SYSCALL: the other half (+1 / -1), both or neither attach */
	bool required;
	const char *role;
};

#define STAGE_LINKED 1	/* needs bio linking: the kernel's functions and the block layer */

struct layer_stage {
	const char *name;	/* NULL: this histogram slot is not the layer's */
	int from, to;		/* bounding events, or -1: from_text / to_text */
	const char *from_text, *to_text;
	unsigned int flags;
	const char *how;	/* how it is bounded, when more than "from [method] -> to [method]" */
	int note_ev;		/* with note: said when this event is unavailable */
	const char *note;
	const char *unmeasured;	/* why a request can be counted but not timed here */
};

struct layer_inst;

/* A spill slot whose key a drain dropped, held from reuse until the next drain. */
struct spill_held {
	char key[64];
	uint32_t slot;
	int hists;		/* its layer_hists */
};

/* A histogram map: per-CPU values of nstages histograms. */
struct layer_hists {
	size_t map;
	size_t key_size;	/* a hash whose keys start with their __u32 generation; 0: an array */
	/* array: slots per generation (at most), at gen * per_gen + i, or i * 2 + gen when
	 * interleaved (the loader may size it to fewer: the slots past its end are not read) */
	uint32_t per_gen;
	bool interleaved;
	/* array: the hash key the slot stands for, for the label decoder */
	void (*array_key)(uint32_t gen, uint32_t i, void *key);
	/*
	 * entries the configuration needs, NULL: as built. A hash gets hist_map_keys() of them;
	 * the rest go to its spill map, up to hist_spill_keys().
	 */
	uint32_t (*entries)(const struct layer_inst *l);
	/* a hash: at most this many of them per CPU, below hist_map_keys() (NULL: no less) */
	uint32_t (*percpu)(const struct layer_inst *l);
	/* a hash: its spill maps (HIST_SPILL_MAPS): the slots shared by the CPUs, key -> slot,
	 * and the free slots; 0: none */
	size_t spill, spill_idx, spill_free;
};


struct layer {
	const char *name;
	const struct layer_event *events;
	int nevents;
	const struct layer_stage *stages;	/* histogram slots of a value, in order */
	int nstages;
	const struct layer_hists *hists;
	int nhists;
	void (*label)(const struct layer_inst *l, const void *key, struct rec *r);
	/* the drop reasons its programs count (bit per enum drop_reason), shown as the layer's
	 * name, '_' and the reason's ("uring_hist_full"), or the reason's alone (block, the first
	 * layer: its counters kept their names); the traced applications' events it counts */
	uint32_t drops;
	bool drops_unprefixed;
	const char *const *event_names;		/* [EV_NEVENTS], or NULL */
	size_t drops_map, events_map, gens_map, cgroup_map, reqs_map, snoop_map;	/* 0: none */
	bool requests;		/* io_uring/aio: its requests live in the shared request table */
	size_t comm_map;	/* the submitting processes' names (-P, snoop) */
	/* its requests' codes (io_uring opcodes, aio commands, syscalls), by number */
	const char *(*code_name)(unsigned int code, char *buf, size_t len);
	const char *link_fn;	/* the kernel function that completes its linked requests */
	size_t link_sym;	/* its address in struct link_syms */
	/* the skeleton */
	void *(*open)(void);
	void (*destroy)(void *skel);
	/* before load: .rodata and map sizes; the chosen events are in l->rep */
	int (*configure)(struct layer_inst *l);
	/* after probing: refuse to start (one line said) if what is there cannot serve the config */
	int (*check)(const struct layer_inst *l);
	/* why what cfg asks does not need event ev (--stages, another layer doing the job), or
	 * NULL when it does; the hook NULL: every event is needed */
	const char *(*event_unneeded)(const struct trace_config *cfg, int ev);
	/* after a drain: requests whose end no event will show any more (final: tracing stops),
	 * counted as unmeasured in the stages they started (layer_add_stage) */
	int (*pending)(struct layer_inst *l, bool final, struct interval *iv);
};

/* How one tracepoint attaches here, or why it cannot. */
struct event_status {
	const char *event;	/* tracepoint name */
	const char *role;
	const char *method;	/* "tp_btf", "raw_tp", "tracepoint", or NULL when unavailable */
	char why[160];		/* reason when unavailable */
	int nargs;
	int arg;		/* index of the pointer argument */
	int required;
};

struct stage_status {
	const char *layer, *stage;
	const char *from, *to;	/* bounding events, as the docs name them */
	int available;
	char how[400];		/* attach methods, or the reason it is unavailable */
};

struct map_mem {
	char name[32];
	uint64_t bytes;		/* kernel's memlock figure (fdinfo), or our estimate */
	char note[96];
};

struct layer_report {
	struct event_status events[MAX_EVENTS];
	int nevents;
	struct stage_status stages[MAX_STAGES];
	int nstages;
	struct map_mem maps[MAX_MAPS];
	int nmaps;
};

struct cgroup_names;

/* What the session shares with every layer it starts. */
struct session_shared {
	int gen_fd;		/* the generation map */
	int reqs_fd;		/* the request table; -1 when no io_uring/aio layer runs */
	int snoop_fd;		/* snoop's ring buffer; -1 without snoop */
	int comm_fd;		/* the submitting processes' names (req_comm) */
	uint32_t self_tgid;	/* iostrata: excluded in the kernel */
	bool tracefs;		/* syscall tracepoints are visible */
	struct cgroup_names *cgroups;	/* cgroup v2 ids to paths (-C labels, snoop records) */
};

/* A running layer. */
struct layer_inst {
	const struct layer *desc;
	const struct trace_config *cfg;
	const struct session_shared *shared;
	void *skel;
	struct bpf_link *links[MAX_EVENTS];
	/* EV_SYSCALL: a perf event of iostrata's own on the tracepoint, holding it registered
	 * while the links detach (layer_detach); -1: none */
	int tp_holds[MAX_EVENTS];
	struct bpf_program *progs[MAX_EVENTS];	/* the chosen program of each event */
	struct layer_report rep;
	int ncpus;
	struct hist *vals;	/* read buffer: ncpus x nstages histograms */
	struct hist *blank;	/* ncpus x nstages zeroed histograms: a per-CPU value emptied */
	struct hist *spill_blank;	/* nstages: a spill slot emptied (marked shared) */
	bool spill;		/* the spill maps have room: hist_spill in the programs */
	/* spill slots whose keys were dropped, kept from reuse until the next drain */
	struct spill_held *held;
	size_t nheld, held_cap;
	/* the most keys one drain found in the per-CPU hashes and in the spill slots (-v) */
	size_t keys_peak, spill_peak;
	char drop_names[DROP_NREASONS][40];
	uint64_t prev_drops[DROP_NREASONS];
	uint64_t prev_events[EV_NEVENTS];
};

/*
 * Probe, open, configure, load and attach (tp_btf, else the raw_tp twins). 0, or -1 with one
 * line said and nothing left loaded. *out is to be freed with layer_free(); *rep (if not NULL)
 * gets the report either way: how each event attached, or why it could not.
 */
int layer_start(const struct layer *d, const struct trace_config *cfg,
		const struct session_shared *sh, struct layer_inst **out, struct layer_report *rep);
/* Detach every program (starts of requests first); the maps stay readable. What is left to
 * release, which takes the kernel longer, is released by layer_free(). */
void layer_detach(struct layer_inst *l);
/* The same for ls[0..n) (NULL: none) at once: their syscall pairs detach together. */
void layers_detach(struct layer_inst *const *ls, int n);
void layer_free(struct layer_inst *l);
/* The report from BTF and tracefs alone, loading nothing (features as non-root). */
void layer_report_static(const struct layer *d, const struct trace_config *cfg,
			 struct layer_report *rep);

/* -v: the most histogram keys the layer held per CPU and in spill slots, and their room. */
void layer_log_keys(const struct layer_inst *l);
/* Append generation gen's records to iv, reading and zeroing them. */
int layer_drain(struct layer_inst *l, uint32_t gen, struct interval *iv);
/* One request of histogram key `key` in stage slot `stage`, from user space (what a program's
 * stage_add() does): timed from -> to, or unmeasured when from or to is 0. */
int layer_add_stage(const struct layer_inst *l, const void *key, int stage, uint64_t from,
		    uint64_t to, struct interval *iv);
/* Append the growth of the drop and application-event counters since the last call. */
int layer_counters(struct layer_inst *l, struct interval *iv);
/* Sums over the attached programs: recursion misses, and BPF run time (with bpf_stats on). */
uint64_t layer_recursion_misses(const struct layer_inst *l);
uint64_t layer_run_time_ns(const struct layer_inst *l);

/* -C: the cgroup label of a record from a histogram key's cgroup id (0: not a label). */
void layer_label_cgroup(const struct layer_inst *l, uint64_t id, struct rec *r);

/* Why a record of this layer and stage can be unmeasured, from the layer table. */
const char *layer_unmeasured_why(const char *layer, const char *stage);
/* Does cfg ask for stage st of layer id (--stages; every stage without it)? */
bool stage_wanted(const struct trace_config *cfg, int id, int st);
/* The layer called name, or NULL. */
/* Is name one of the drop reasons (inflight_full, complete_unseen...), unprefixed? */
bool layer_drop_reason(const char *name);
const struct layer *layer_by_name(const char *name, int *id);

/* Every value of an ARRAY map (an in-flight or request table), with its index, in batches, to
 * fn; stops at fn's first non-zero return, which it returns (-errno when the map cannot be read). */
int array_sweep(int fd, size_t value_size,
		int (*fn)(uint32_t idx, const void *v, void *arg), void *arg);
/*
 * Check a table of bpf/table.bpf.h, once its programs are detached: each slot's count of entries
 * placed beyond it must be the number of live entries placed from it (else a lookup could have
 * missed an entry). Warns, naming the table, and returns how many slots disagree (-errno when
 * the map cannot be read). value_size and spill_off: the entry's size and its spill word's place.
 */
int table_spill_check(int fd, const char *name, uint32_t nslots, size_t value_size,
		      size_t spill_off);

/* ---- for a layer's configure() */

/* A map of the layer's skeleton. */
struct bpf_map *layer_map(const struct layer_inst *l, size_t off);
/*
 * Keys of a preallocated per-CPU histogram map: want, but no more than HIST_MAP_BUDGET bytes of
 * values hold, and at least 16. Every histogram map is preallocated: a new key's per-CPU value
 * allocated in a program's atomic context comes from already-populated per-CPU memory, and
 * failed in bursts (6.1 and 6.18). A full map is counted (*hist_full).
 */
#define HIST_MAP_BUDGET (32u << 20)
uint32_t hist_map_keys(const struct layer_inst *l, uint32_t want);
/*
 * Slots of the spill maps beside it (0: none needed): twice the want - percpu keys the per-CPU
 * map has no room for (a dropped key's slot is held back for a drain before it is free: a key
 * back meanwhile needs another), no more than HIST_MAP_BUDGET bytes of slots hold (one copy
 * per key, not one per CPU), and at least 16.
 */
uint32_t hist_spill_keys(const struct layer_inst *l, uint32_t want, uint32_t percpu);
/*
 * What every object's common.bpf.h reads from .rodata: the owner filters, iostrata's own tgid,
 * snoop and -C, and whether kernel objects can be read by direct loads (bpf_rdonly_cast).
 */
#define COMMON_RODATA(ro, l) do {						\
	(ro)->direct_reads = kernel_direct_reads();		\
	(ro)->filter_tgid = (uint32_t)(l)->cfg->tgid;				\
	(ro)->filter_cgroup = (l)->cfg->cgroup != NULL;				\
	(ro)->self_tgid = (l)->shared->self_tgid;				\
	(ro)->snoop = (l)->cfg->snoop;						\
	(ro)->snoop_slower_ns = (l)->cfg->snoop_slower_ns;			\
	(ro)->snoop_wake_bytes = (l)->cfg->snoop_rb_bytes / 2;			\
	(ro)->per_cgroup = (l)->cfg->per_cgroup;				\
	(ro)->stale_ns = (l)->cfg->stale_ns;					\
	(ro)->hist_spill = (l)->spill;						\
} while (0)

#endif
