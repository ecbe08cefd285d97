// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <grp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include "log.h"
#include "privs.h"

/* A uid or gid field: digits only, below (uid_t)-1 (the kernel's "no id"). */
static bool parse_id(const char *s, unsigned long *out)
{
	char *end;

	if (!*s || strspn(s, "0123456789") != strlen(s))
		return false;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return !errno && *out < 0xffffffffUL;
}

/*
 * The user's uid and gid from /etc/passwd (name:password:uid:gid:...), read by hand: a static
 * binary has no NSS. Fields are split at every ':' (an empty one, such as a blank password, is
 * a field), and a line whose uid or gid is not a number is refused, never read as 0 (root).
 */
int user_lookup_in(const char *passwd, const char *user, uid_t *uid, gid_t *gid)
{
	char line[1024], *f[4], *rest;
	unsigned long num = 0, u, g;
	bool numeric, whole;
	FILE *p;
	int i;

	numeric = parse_id(user, &num);
	p = fopen(passwd, "r");
	for (whole = true; p && fgets(line, sizeof(line), p); ) {
		bool start = whole;

		whole = strchr(line, '\n') != NULL;
		if (!start)		/* the tail of a line longer than the buffer */
			continue;
		line[strcspn(line, "\n")] = '\0';
		rest = line;
		for (i = 0; i < 4; i++)
			f[i] = rest ? strsep(&rest, ":") : NULL;
		if (!f[3] || !rest)	/* fewer than the 7 fields: not an entry */
			continue;
		if (numeric ? !parse_id(f[2], &u) || u != num : strcmp(f[0], user))
			continue;
		fclose(p);
		if (!parse_id(f[2], &u) || !parse_id(f[3], &g)) {
			errorf("user '%s': %s gives no numeric uid and gid ('%s', '%s')", user,
			       passwd, f[2], f[3]);
			return -1;
		}
		*uid = (uid_t)u;
		*gid = (gid_t)g;
		return 0;
	}
	if (p)
		fclose(p);
	if (!numeric) {
		errorf("unknown user '%s' (not in %s)", user, passwd);
		return -1;
	}
	*uid = (uid_t)num;
	*gid = (gid_t)num;
	return 0;
}

int user_lookup(const char *user, uid_t *uid, gid_t *gid)
{
	return user_lookup_in("/etc/passwd", user, uid, gid);
}

static int last_cap(void)
{
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "r");
	int n = 63;

	if (f) {
		if (fscanf(f, "%d", &n) != 1 || n < 0 || n > 63)
			n = 63;
		fclose(f);
	}
	return n;
}

int drop_privileges_keeping(uid_t uid, gid_t gid, int keep)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { 0 }, want[2] = { 0 };
	int cap, last;
	uid_t r, e, s;
	gid_t rg, eg, sg;

	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)) {	/* why: below, at the ids' change */
		errorf("cannot make the process undumpable: %s", strerror(errno));
		return -1;
	}
	last = last_cap();
	if (keep > last)
		keep = -1;
	if (keep >= 0)
		want[keep / 32].effective = want[keep / 32].permitted = 1u << (keep % 32);
	/*
	 * Permitted survives the uid change only so (effective is set again below). Kept whole
	 * until the process is undumpable: the uid change makes it dumpable as fs.suid_dumpable
	 * says, and at 1, with nothing permitted, any process of the new uid could attach to it
	 * in between (it did, in 80 of 100 tries) and stay attached. A permitted set its tracer
	 * lacks refuses the attach.
	 */
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0)) {
		errorf("cannot keep the capabilities across the uid change: %s", strerror(errno));
		return -1;
	}
	/* the bounding set needs CAP_SETPCAP to shrink: before the uid changes */
	for (cap = 0; cap <= last; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) && errno != EINVAL) {
			errorf("cannot drop capability %d from the bounding set: %s", cap,
			       strerror(errno));
			return -1;
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL) {
		errorf("cannot clear the ambient capabilities: %s", strerror(errno));
		return -1;
	}
	/*
	 * A process whose real, effective and saved uids and gids are all a user's is open to
	 * ptrace by that user's processes while it is dumpable, and such a process could take its
	 * BPF fds (pidfd_getfd). No moment here is both. A change of euid or egid makes the
	 * process dumpable as fs.suid_dumpable says (1: to its new user), so the saved uid and gid
	 * keep what they were (not the new ones) until the process is undumpable again, and only
	 * then follow: that changes neither euid, egid nor capabilities, so leaves the flag alone.
	 * (A start as the user itself, with ambient capabilities, was dumpable already: made
	 * undumpable first of all, above.) A moment that had both, however short, let a racer
	 * that read the flag in it pass the capability check a few instructions later, once the
	 * permitted set below was cleared: ptrace reads the credentials twice (the likely way a
	 * racer attached in 1 of 30 drops in CI).
	 */
	if (getresuid(&r, &e, &s) || getresgid(&rg, &eg, &sg) || setgroups(0, NULL) ||
	    setresgid(gid, gid, sg != gid ? sg : eg != gid ? eg : rg) ||
	    setresuid(uid, uid, s != uid ? s : e != uid ? e : r) ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) || setresgid(gid, gid, gid) ||
	    setresuid(uid, uid, uid)) {
		errorf("cannot become uid %u gid %u: %s", (unsigned)uid, (unsigned)gid,
		       strerror(errno));
		return -1;
	}
	/* then permitted down to keep, effective and inheritable cleared */
	if (syscall(SYS_capset, &h, want) || prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		errorf("cannot clear the capabilities: %s", strerror(errno));
		return -1;
	}
	if (syscall(SYS_capget, &h, d) || d[0].effective != want[0].effective ||
	    d[0].permitted != want[0].permitted || d[1].effective != want[1].effective ||
	    d[1].permitted != want[1].permitted || d[0].inheritable || d[1].inheritable ||
	    getresuid(&r, &e, &s) || r != uid || e != uid || s != uid ||
	    getresgid(&rg, &eg, &sg) || rg != gid || eg != gid || sg != gid) {
		errorf("privileges still held after dropping them");
		return -1;
	}
	return 0;
}

uint64_t caps_effective(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { 0 };

	if (syscall(SYS_capget, &h, d))
		return 0;
	return ((uint64_t)d[1].effective << 32) | d[0].effective;
}

const char *privs_missing(uid_t uid, gid_t gid, char *buf, size_t len)
{
	uint64_t eff = caps_effective();
	static const struct { int cap; const char *name; } need[] = {
		{ CAP_SETPCAP, "CAP_SETPCAP" },	/* the bounding set, emptied */
		{ CAP_SETGID, "CAP_SETGID" },	/* setgroups(0), setresgid */
		{ CAP_SETUID, "CAP_SETUID" },	/* setresuid */
	};
	size_t i, used = 0;

	buf[0] = '\0';
	for (i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		if (need[i].cap == CAP_SETUID && uid == getuid() && uid == geteuid())
			continue;
		if (!(eff & (1ULL << need[i].cap)) && used < len)
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
						 need[i].name);
	}
	(void)gid;
	return buf;
}

int drop_privileges(uid_t uid, gid_t gid)
{
	return drop_privileges_keeping(uid, gid, -1);
}

int thread_caps_clear(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { 0 };

	if (syscall(SYS_capset, &h, d) || syscall(SYS_capget, &h, d) || d[0].effective ||
	    d[0].permitted || d[1].effective || d[1].permitted) {
		errorf("cannot clear this thread's capabilities: %s", strerror(errno));
		return -1;
	}
	return 0;
}
