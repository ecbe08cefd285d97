/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * cgroup v2 ids (what bpf_get_current_cgroup_id() returns where I/O is submitted) to paths, in
 * user space: the cgroup2 hierarchy is walked once at start and again when an id not seen
 * before turns up (for one a walk did not find, at most every CGROUP_RESCAN_NS). A path once
 * seen is kept, so a cgroup removed while traced keeps its last path; one never seen is shown
 * as "cgroup:ID". Never a global: the session owns one and hands it to the layers.
 */
#ifndef IOSTRATA_CGROUPS_H
#define IOSTRATA_CGROUPS_H

#include <stddef.h>
#include <stdint.h>

#define CGROUP_RESCAN_NS	(100ULL * 1000 * 1000)
#define CGROUP_NAMES_MAX	65536	/* paths kept; more are shown by id */
/* A cgroup label's room: Kubernetes container paths run to ~230 bytes. A longer path is cut,
 * and says so and by which id: "<its start>...(cgroup:ID)". */
#define CGROUP_LABEL_LEN	512

struct cgroup_names;

/* NULL when out of memory; without a cgroup2 mount every id is shown as "cgroup:ID". */
struct cgroup_names *cgroup_names_new(void);
void cgroup_names_free(struct cgroup_names *c);
/* id's path below the cgroup2 mount ("/", "/system.slice/foo.service"), or "cgroup:ID"; one
 * longer than buf is cut as CGROUP_LABEL_LEN says. */
const char *cgroup_name(struct cgroup_names *c, uint64_t id, char *buf, size_t len);

/* The cgroup2 mount point, from /proc/self/mountinfo ("... - cgroup2 cgroup2 rw"); "" if
 * none is mounted. */
void cgroup2_mount(char *buf, size_t len);

#endif
