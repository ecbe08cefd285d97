/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What every layer's loader does with its maps: the shared steps, written once. */
#ifndef IOSTRATA_MAPS_H
#define IOSTRATA_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "layer.h"

struct bpf_map;

/*
 * Retire the histogram generation the programs write (flip `gen`, then a grace period: tracing
 * programs run to completion in microseconds with migration disabled; an event from a program
 * delayed past it would be reported an interval late, never lost). Returns the retired one and
 * marks the interval's end if no layer did yet.
 */
uint32_t gen_retire(volatile uint32_t *gen, struct interval *iv);

/* Every key of a hash map, collected before any is deleted (deleting restarts a walk);
 * *keys is to be freed, and NULL on failure. */
int map_keys(int fd, size_t key_size, void **keys, size_t *n);

/*
 * Read a retired key's per-CPU values into vals, then zero them in place. Zeroing, not
 * deleting: a program preempted past the grace period still holds a pointer to the element,
 * and its late write then lands in the zeroed element, reported when this generation is read
 * again, where a deleted element would lose it. A key that held nothing is deleted, so keys
 * of processes and disks gone free their room. Returns false when the key held nothing.
 */
bool retired_read_and_zero(int fd, const void *key, void *vals, size_t vals_size);

/*
 * The records of one key's values, vals: ncpus * nstages histograms. A record (layer, stages[i])
 * per stage that saw anything, with the CPUs' sum, labelled by label(key). A NULL stage name is
 * not reported.
 */
int hists_to_recs(const void *key, const struct hist *vals, int ncpus, int nstages,
		  const char *layer, const char *const *stages,
		  void (*label)(const void *key, struct rec *r, void *ctx), void *ctx,
		  struct interval *iv);

/*
 * For each retired non-empty key of a per-CPU hash whose keys start with their __u32 generation
 * and whose values are nstages histograms: a record (layer, stages[i]) per stage that saw
 * anything, with the CPUs' sum, labelled by label(). vals holds ncpus * nstages histograms.
 * A NULL stage name is not reported.
 */
int drain_hists(int fd, size_t key_size, uint32_t gen, int ncpus, struct hist *vals, int nstages,
		const char *layer, const char *const *stages,
		void (*label)(const void *key, struct rec *r, void *ctx), void *ctx,
		struct interval *iv);

/*
 * Append to iv the growth since the last call of per-CPU counters drops[first..last], named
 * names[i] (NULL names are skipped); prev holds the last sums.
 */
int drops_read(struct bpf_map *drops, int ncpus, uint32_t first, uint32_t last,
	       const char *const *names, uint64_t *prev, struct interval *iv);

/* The same for any per-CPU counter array, into out[*nout] (the interval's drops or events). */
int counters_read(struct bpf_map *map, int ncpus, uint32_t first, uint32_t last,
		  const char *const *names, uint64_t *prev, struct drop_count *out, int *nout);

/*
 * Keys of a preallocated per-CPU histogram map: want, but no more than HIST_MAP_BUDGET bytes of
 * values (value_size x ncpus per key) hold, and at least 16. Every histogram map is
 * preallocated: a new key's per-CPU value allocated in a program's atomic context comes from
 * already-populated per-CPU memory, and failed in bursts (6.1 and 6.18; 12.8 KB block values
 * too, after a long test run). A full map is counted (*hist_full).
 */
#define HIST_MAP_BUDGET (32u << 20)
uint32_t hist_map_keys(size_t value_size, int ncpus, uint32_t want);

/* Put -c's cgroup into a CGROUP_ARRAY map; one-line error on failure. */
int cgroup_filter_set(struct bpf_map *map);

/* The kernel's memlock figure of each map, into rep->maps. */
void report_maps_mem(struct layer_report *rep, struct bpf_map *const *maps, int n);
/* Set the note shown beside map `name` in `features`. */
void report_map_note(struct layer_report *rep, const char *name, const char *note);

#endif
