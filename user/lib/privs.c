// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include "log.h"
#include "privs.h"

int user_lookup(const char *user, uid_t *uid, gid_t *gid)
{
	char line[512], *f[4], *save, *end;
	bool numeric;
	long num;
	FILE *p;
	int i;

	errno = 0;
	num = strtol(user, &end, 10);
	numeric = *user && !*end && !errno && num >= 0 && num < 0x7fffffff;
	p = fopen("/etc/passwd", "r");
	while (p && fgets(line, sizeof(line), p)) {
		save = NULL;
		f[0] = strtok_r(line, ":", &save);
		for (i = 1; i < 4; i++)
			f[i] = f[i - 1] ? strtok_r(NULL, ":", &save) : NULL;
		if (!f[3])
			continue;
		if (numeric ? strtol(f[2], NULL, 10) != num : strcmp(f[0], user))
			continue;
		*uid = (uid_t)strtol(f[2], NULL, 10);
		*gid = (gid_t)strtol(f[3], NULL, 10);
		fclose(p);
		return 0;
	}
	if (p)
		fclose(p);
	if (!numeric) {
		errorf("unknown user '%s' (not in /etc/passwd)", user);
		return -1;
	}
	*uid = (uid_t)num;
	*gid = (gid_t)num;
	return 0;
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

int drop_privileges(uid_t uid, gid_t gid)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { 0 };
	int cap, last = last_cap();

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
	if (setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid)) {
		errorf("cannot become uid %u gid %u: %s", (unsigned)uid, (unsigned)gid,
		       strerror(errno));
		return -1;
	}
	/* a uid change from root empties effective and permitted; say so to the kernel anyway,
	 * inheritable too */
	if (syscall(SYS_capset, &h, d) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		errorf("cannot clear the capabilities: %s", strerror(errno));
		return -1;
	}
	if (syscall(SYS_capget, &h, d) || d[0].effective || d[0].permitted || d[1].effective ||
	    d[1].permitted || getuid() != uid || geteuid() != uid || getegid() != gid) {
		errorf("privileges still held after dropping them");
		return -1;
	}
	return 0;
}
