/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Giving up root once the tracing programs are attached (serve's --user). */
#ifndef IOSTRATA_PRIVS_H
#define IOSTRATA_PRIVS_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

/* The uid and gid of NAME (from /etc/passwd: no NSS in a static binary) or of a number (its
 * passwd group when it has an entry, else the same number). -1 with one line said. */
int user_lookup(const char *user, uid_t *uid, gid_t *gid);
/* The same from another passwd file (tests). */
int user_lookup_in(const char *passwd, const char *user, uid_t *uid, gid_t *gid);

/*
 * Become uid/gid with no supplementary groups and no capabilities at all: effective,
 * permitted, inheritable, ambient and the bounding set emptied, and no_new_privs set, so
 * nothing this process runs can get them back. Per thread: call it before starting threads.
 * -1 with one line said (the process must then stop: it is half dropped).
 */
int drop_privileges(uid_t uid, gid_t gid);
/*
 * The same, but the calling thread keeps capability `keep` (effective and permitted; < 0: none):
 * for kernels that refuse the bpf() system call, even on file descriptors already held, to a
 * process without CAP_BPF (kernel.unprivileged_bpf_disabled before Linux 5.19).
 */
int drop_privileges_keeping(uid_t uid, gid_t gid, int keep);
/* This process's effective capabilities, bit n for capability n (0 when unknown). */
uint64_t caps_effective(void);
/*
 * What drop_privileges() needs to become uid/gid from here and this process lacks (effective):
 * "CAP_SETUID, CAP_SETPCAP" in buf, "" when nothing. To be asked before the work worth
 * dropping privileges after (attaching), so that the lack is said before, not after it.
 */
const char *privs_missing(uid_t uid, gid_t gid, char *buf, size_t len);
/* Empty the calling thread's capabilities (a thread that needs none, where another keeps one). */
int thread_caps_clear(void);

#endif
