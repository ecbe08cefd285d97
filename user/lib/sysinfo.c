// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* What the running kernel offers, read from its BTF and sysfs, never from its version. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>
#include <sys/mount.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "log.h"
#include "sysinfo.h"

uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The number after "key: " in /proc/self/fdinfo/FD (key with its colon), 0 when absent. */
static unsigned long long fdinfo_field(int fd, const char *key)
{
	char path[64], line[256];
	unsigned long long v = 0;
	size_t klen = strlen(key);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && sscanf(line + klen, " %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

uint64_t map_memlock(int fd)
{
	return fdinfo_field(fd, "memlock:");
}

uint32_t map_id(int fd)
{
	return (uint32_t)fdinfo_field(fd, "map_id:");
}

static struct btf *btf;
static bool btf_tried;

struct btf *vmlinux_btf(void)
{
	if (!btf_tried) {
		btf_tried = true;
		btf = btf__load_vmlinux_btf();
		if (!btf)
			btf = NULL;
	}
	return btf;
}

bool kernel_direct_reads(void)
{
	return vmlinux_btf() && btf__find_by_name_kind(btf, "bpf_rdonly_cast", BTF_KIND_FUNC) > 0;
}

/* The function prototype of tracepoint tp's BTF: (void *__data, args...); NULL if none. */
static const struct btf_type *tp_proto(const char *tp)
{
	const struct btf_type *t;
	char name[128];
	int id;

	if (!vmlinux_btf())
		return NULL;
	/* every tracepoint has a "btf_trace_<name>" typedef: pointer to func proto (ctx, args...) */
	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	id = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF);
	if (id < 0)
		return NULL;
	t = btf__type_by_id(btf, id);
	t = btf__type_by_id(btf, t->type);
	if (!t || !btf_is_ptr(t))
		return NULL;
	t = btf__type_by_id(btf, t->type);
	return t && btf_is_func_proto(t) ? t : NULL;
}

int tp_nargs(const char *tp)
{
	const struct btf_type *t = tp_proto(tp);

	return t ? btf_vlen(t) - 1 : -1;
}

bool tp_arg_is_struct_ptr(const char *tp, int i, const char *name)
{
	const struct btf_type *t = tp_proto(tp);

	if (!t || i < 0 || i + 1 >= btf_vlen(t))
		return false;
	t = btf__type_by_id(btf, btf_params(t)[i + 1].type);
	if (!t || !btf_is_ptr(t))
		return false;
	t = btf__type_by_id(btf, t->type);
	while (t && btf_is_mod(t))
		t = btf__type_by_id(btf, t->type);
	return t && btf_is_struct(t) && !strcmp(btf__name_by_offset(btf, t->name_off), name);
}

/*
 * The id of enum `name` in the kernel's BTF (< 0: none), found once. A search walks every type
 * (126,573 on 6.18: ~16 us), and the labels asked for one per record, for its op, each of its
 * request flags, its io_uring opcode: 9 ms of the stop's 130 went to naming the io_uring
 * requests still in flight (-O -P -C, qd 32), and as much of each interval's drain.
 */
static int enum_id(const char *name)
{
	static struct {
		char name[32];
		int id;
	} known[8];
	static int nknown;
	int i, id;

	for (i = 0; i < nknown; i++)
		if (!strcmp(known[i].name, name))
			return known[i].id;
	id = btf__find_by_name_kind(btf, name, BTF_KIND_ENUM);
	if (nknown < (int)(sizeof(known) / sizeof(known[0])) &&
	    strlen(name) < sizeof(known[0].name)) {
		snprintf(known[nknown].name, sizeof(known[nknown].name), "%s", name);
		known[nknown++].id = id;
	}
	return id;
}

/*
 * The member of the first enum found among `enums` whose value is `val` (name == NULL) or whose
 * name is `name`; NULL when there is none.
 */
static const struct btf_enum *enum_member(const char *const *enums, const char *name,
					  long long val)
{
	const struct btf_enum *m;
	const struct btf_type *t;
	int id, i;

	if (!vmlinux_btf())
		return NULL;
	for (; *enums; enums++) {
		id = enum_id(*enums);
		if (id < 0)
			continue;
		t = btf__type_by_id(btf, id);
		for (i = 0, m = btf_enum(t); i < btf_vlen(t); i++, m++)
			if (name ? !strcmp(btf__name_by_offset(btf, m->name_off), name)
				 : m->val == val)
				return m;
	}
	return NULL;
}

static const char *enum_name(const char *const *enums, long long val)
{
	const struct btf_enum *m = enum_member(enums, NULL, val);

	return m ? btf__name_by_offset(btf, m->name_off) : NULL;
}

static long long enum_value(const char *const *enums, const char *name)
{
	const struct btf_enum *m = enum_member(enums, name, 0);

	return m ? m->val : -1;
}

static void lower_after(const char *s, const char *prefix, char *buf, size_t len)
{
	size_t n = strlen(prefix), i;

	if (!strncmp(s, prefix, n))
		s += n;
	for (i = 0; s[i] && i + 1 < len; i++)
		buf[i] = (char)tolower((unsigned char)s[i]);
	buf[i] = '\0';
}

/* v6.0 renamed enum req_opf to req_op */
static const char *const op_enums[] = { "req_op", "req_opf", NULL };
static const char *const flag_enums[] = { "req_flag_bits", NULL };

const char *btf_enum_name(const char *enum_type, const char *prefix, unsigned int val,
			  char *buf, size_t len)
{
	const char *const enums[] = { enum_type, NULL };
	const char *n = enum_name(enums, val);

	if (n)
		lower_after(n, prefix, buf, len);
	else
		snprintf(buf, len, "%u", val);
	return buf;
}

const char *process_comm(uint32_t pid, char *buf, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	if (sysfs_line(path, buf, len))
		snprintf(buf, len, "?");	/* the process has exited */
	return buf;
}

const char *thread_comm(uint32_t pid, uint32_t tid, char *buf, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", pid, tid);
	if (!tid || sysfs_line(path, buf, len))
		process_comm(pid, buf, len);	/* the thread has gone: its process's name */
	return buf;
}

const char *op_name(unsigned int op, char *buf, size_t len)
{
	const char *n = enum_name(op_enums, op);

	if (n)
		lower_after(n, "REQ_OP_", buf, len);
	else
		snprintf(buf, len, "op%u", op);
	return buf;
}

/* Flags shown with -F: the ones that change how the block layer treats a request. */
static const char *const shown_flags[] = {
	"__REQ_SYNC", "__REQ_META", "__REQ_PRIO", "__REQ_FUA", "__REQ_PREFLUSH",
	"__REQ_RAHEAD", "__REQ_BACKGROUND", NULL,
};

/* Flag bits sit above the 8 op bits (REQ_OP_BITS, since v4.10): key.flags = cmd_flags >> 8. */
#define REQ_OP_BITS 8

uint32_t req_flags_mask(void)
{
	uint32_t mask = 0;
	long long v;
	int i;

	for (i = 0; shown_flags[i]; i++) {
		v = enum_value(flag_enums, shown_flags[i]);
		if (v >= REQ_OP_BITS && v < REQ_OP_BITS + 32)
			mask |= 1u << (v - REQ_OP_BITS);
	}
	return mask;
}

uint32_t req_flush_flags(void)
{
	static const char *const names[] = { "__REQ_PREFLUSH", "__REQ_FUA" };
	uint32_t bits = 0;
	long long v;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		v = enum_value(flag_enums, names[i]);
		if (v >= REQ_OP_BITS && v < 32)
			bits |= 1u << v;
	}
	return bits;
}

/* The value of enumerator `name` in any enum of the kernel's BTF, named or not; -1: none. */
static long long enumerator_value(const char *name)
{
	const struct btf_enum *m;
	const struct btf_type *t;
	__u32 id, n;
	int i;

	if (!vmlinux_btf())
		return -1;
	n = btf__type_cnt(btf);
	for (id = 1; id < n; id++) {
		t = btf__type_by_id(btf, id);
		if (!btf_is_enum(t))
			continue;
		for (i = 0, m = btf_enum(t); i < btf_vlen(t); i++, m++)
			if (!strcmp(btf__name_by_offset(btf, m->name_off), name))
				return m->val;
	}
	return -1;
}

uint32_t rq_flush_seq_flag(void)
{
	long long v = enumerator_value("__RQF_FLUSH_SEQ");

	/*
	 * An enumerator since v6.11 (of an unnamed enum until v6.15, enum rqf_flags since);
	 * before, #define RQF_FLUSH_SEQ (1 << 4) from v4.x on, and no __RQF_ enumerator at all.
	 */
	if (v >= 0)
		return v < 32 ? 1u << v : 0;
	return enumerator_value("__RQF_STARTED") < 0 ? 1u << 4 : 0;
}

const char *req_flags_str(uint32_t flags, char *buf, size_t len)
{
	char name[32];
	const char *n;
	size_t used = 0;
	int bit;

	buf[0] = '\0';
	for (bit = 0; bit < 32; bit++) {
		if (!(flags & (1u << bit)))
			continue;
		n = enum_name(flag_enums, bit + REQ_OP_BITS);
		if (n)
			lower_after(n, "__REQ_", name, sizeof(name));
		else
			snprintf(name, sizeof(name), "bit%d", bit + REQ_OP_BITS);
		used += snprintf(buf + used, used < len ? len - used : 0, "%s%s",
				 used ? "|" : "", name);
	}
	return buf;
}

#define MINORBITS 20

int sysfs_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	char *nl;

	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	return 0;
}

static int dev_of(const char *name, uint32_t *dev)
{
	unsigned int maj, min;
	char path[512], line[64];

	snprintf(path, sizeof(path), "/sys/class/block/%s/dev", name);
	if (sysfs_line(path, line, sizeof(line)) || sscanf(line, "%u:%u", &maj, &min) != 2)
		return -1;
	*dev = (maj << MINORBITS) | min;
	return 0;
}

int disk_resolve(const char *name, uint32_t *dev)
{
	char path[512];

	if (!strncmp(name, "/dev/", 5))
		name += 5;
	if (!*name || strchr(name, '/') || dev_of(name, dev)) {
		errorf("unknown disk '%s' (not in /sys/class/block)", name);
		return -1;
	}
	snprintf(path, sizeof(path), "/sys/class/block/%s/partition", name);
	if (!access(path, F_OK)) {
		char whole[PATH_MAX], *base;

		/* a partition's sysfs directory sits in its disk's: .../block/loop2/loop2p1 */
		snprintf(path, sizeof(path), "/sys/class/block/%s/..", name);
		base = realpath(path, whole) ? strrchr(whole, '/') : NULL;
		if (base && base[1])
			errorf("'%s' is a partition: -d takes the whole disk it belongs to, %s", name,
			       base + 1);
		else
			errorf("'%s' is a partition: -d takes the whole disk it belongs to", name);
		return -1;
	}
	return 0;
}

size_t disk_below(const char *name, char *buf, size_t len)
{
	char path[512];
	struct dirent **de = NULL;
	size_t used = 0;
	int n, i;

	if (len)
		buf[0] = '\0';
	if (!strncmp(name, "/dev/", 5))
		name += 5;
	snprintf(path, sizeof(path), "/sys/class/block/%s/slaves", name);
	n = scandir(path, &de, NULL, alphasort);	/* by name: sysfs lists in hash order */
	for (i = 0; i < n; i++) {
		if (de[i]->d_name[0] != '.' && used < len)
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? " " : "",
						 de[i]->d_name);
		free(de[i]);
	}
	free(de);
	return used;
}

int disk_has_requests(const char *name)
{
	char path[512], below[256];
	size_t used;

	if (!strncmp(name, "/dev/", 5))
		name += 5;
	snprintf(path, sizeof(path), "/sys/class/block/%s/mq", name);
	if (!access(path, F_OK))
		return 0;
	used = disk_below(name, below, sizeof(below));
	errorf("'%s' is bio-based (device-mapper, md, zram): it builds no block requests, so -d "
	       "would time none; %s%s", name, used ? "its I/O shows on the disks below it: " :
	       "no disk is below it", used ? below : "");
	return -1;
}

struct disk_ent {
	uint32_t dev;
	char name[32];
};
static struct disk_ent *disks;
static size_t ndisks;

/*
 * The disks in /sys/block now, and the ones seen before that are gone (a loop device detached
 * before its last interval was printed keeps its name, not "7:20"): a name is replaced only by
 * the disk now holding its dev.
 */
static bool disks_push(size_t *cap, const struct disk_ent *e)
{
	struct disk_ent *n;

	if (ndisks == *cap) {
		n = realloc(disks, (*cap ? *cap * 2 : 16) * sizeof(*disks));
		if (!n)
			return false;
		disks = n;
		*cap = *cap ? *cap * 2 : 16;
	}
	disks[ndisks++] = *e;
	return true;
}

static void disks_scan(void)
{
	struct disk_ent *old = disks, e;
	size_t nold = ndisks, i, j, cap;
	struct dirent *de;
	DIR *d;

	d = opendir("/sys/block");
	if (!d)
		return;
	disks = NULL;
	ndisks = 0;
	cap = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || dev_of(de->d_name, &e.dev))
			continue;
		snprintf(e.name, sizeof(e.name), "%.31s", de->d_name);
		if (!disks_push(&cap, &e))
			break;
	}
	closedir(d);
	for (i = 0; i < nold; i++) {
		for (j = 0; j < ndisks && disks[j].dev != old[i].dev; j++)
			;
		if (j == ndisks && !disks_push(&cap, &old[i]))
			break;
	}
	free(old);
}

void disks_note(void)
{
	disks_scan();
}

const char *disk_name(uint32_t dev, char *buf, size_t len)
{
	int pass;
	size_t i;

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < ndisks; i++) {
			if (disks[i].dev == dev) {
				snprintf(buf, len, "%s", disks[i].name);
				return buf;
			}
		}
		if (!pass)
			disks_scan();	/* a disk that appeared since the last scan */
	}
	snprintf(buf, len, "%u:%u", dev >> MINORBITS, dev & ((1u << MINORBITS) - 1));
	return buf;
}

long disk_inflight(uint32_t dev)
{
	char path[64];
	long r, w;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/inflight", dev >> MINORBITS,
		 dev & ((1u << MINORBITS) - 1));
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fscanf(f, "%ld %ld", &r, &w);
	fclose(f);
	return n == 2 ? r + w : -1;
}

int64_t disk_completed(uint32_t dev)
{
	unsigned long long f[15] = { 0 };
	char path[64], line[512];
	int n;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/stat", dev >> MINORBITS,
		 dev & ((1u << MINORBITS) - 1));
	if (sysfs_line(path, line, sizeof(line)))
		return -1;
	/* Documentation/block/stat.rst: 1 reads, 5 writes, 12 discards, 15 flushes completed;
	 * the last two are absent on older kernels */
	n = sscanf(line, "%llu %*u %*u %*u %llu %*u %*u %*u %*u %*u %*u %llu %*u %*u %llu", &f[0],
		   &f[4], &f[11], &f[14]);
	if (n < 2)
		return -1;
	return (int64_t)(f[0] + f[4] + f[11] + f[14]);
}

bool disks_idle(void)
{
	char path[320], buf[64];
	struct dirent *d;
	bool idle = true;
	long r, w;
	DIR *dir = opendir("/sys/block");
	FILE *f;

	if (!dir)
		return false;
	while (idle && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/inflight", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(buf, sizeof(buf), f) || sscanf(buf, "%ld %ld", &r, &w) != 2 || r || w)
			idle = false;
		fclose(f);
	}
	closedir(dir);
	return idle;
}

/*
 * A host without tracefs mounted: this thread mounts it in a mount namespace of its own, a
 * slave of the host's (what the host mounts is seen here, nothing mounted here is seen there),
 * and goes back to the host's once attached, the namespace and its tracefs gone with it. It was
 * mounted on the host's tree and unmounted (MNT_DETACH) once attached: another iostrata that
 * found it mounted, still attaching, lost it ("failed to determine tracepoint ... perf event
 * ID"), and a syscall or aio layer not asked for by name was dropped without a word.
 */
static int host_mnt_ns = -1;

bool tracefs_ready(bool *mounted)
{
	*mounted = false;
	if (!access(TRACEFS "/events/syscalls", F_OK))
		return true;
	if (!access(TRACEFS "/events", F_OK))
		return false;		/* mounted, without the syscall events */
	host_mnt_ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (host_mnt_ns < 0)
		return false;
	if (unshare(CLONE_NEWNS)) {
		vlog("cannot mount tracefs in a mount namespace of its own: %s", strerror(errno));
		close(host_mnt_ns);
		host_mnt_ns = -1;
		return false;
	}
	*mounted = true;	/* in a namespace of its own, left in tracefs_release */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) ||
	    mount("tracefs", TRACEFS, "tracefs", 0, NULL)) {
		vlog("cannot mount tracefs at " TRACEFS ": %s", strerror(errno));
		return false;
	}
	vlog("mounted tracefs at " TRACEFS ", in a mount namespace of its own while attaching");
	return !access(TRACEFS "/events/syscalls", F_OK);
}

void tracefs_release(bool mounted)
{
	if (!mounted || host_mnt_ns < 0)
		return;
	if (setns(host_mnt_ns, CLONE_NEWNS))
		vlog("could not go back to the host's mount namespace: %s", strerror(errno));
	close(host_mnt_ns);
	host_mnt_ns = -1;
}

bool syscall_tp_exists(const char *name)
{
	char path[160];

	snprintf(path, sizeof(path), TRACEFS "/events/syscalls/%s", name);
	return !access(path, F_OK);
}

int disk_count(void)
{
	struct dirent *de;
	DIR *d = opendir("/sys/block");
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static unsigned int sysfs_uint(const char *path)
{
	char line[32];

	return sysfs_line(path, line, sizeof(line)) ? 0 : (unsigned int)strtoul(line, NULL, 10);
}

unsigned int hw_queues(uint32_t dev, unsigned int *depth)
{
	unsigned int n = 0, tags, d;
	struct dirent *de, *q;
	char path[640];		/* two names of up to 255 bytes */
	uint32_t dv;
	DIR *b, *mq;

	*depth = 0;
	b = opendir("/sys/block");
	if (!b)
		return 0;
	while ((de = readdir(b))) {
		if (de->d_name[0] == '.' || (dev && (dev_of(de->d_name, &dv) || dv != dev)))
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/mq", de->d_name);
		mq = opendir(path);
		if (!mq)
			continue;
		while ((q = readdir(mq))) {
			if (!isdigit((unsigned char)q->d_name[0]))
				continue;
			n++;
			snprintf(path, sizeof(path), "/sys/block/%s/mq/%s/nr_tags", de->d_name,
				 q->d_name);
			tags = sysfs_uint(path);
			d = 2 * (tags < 128 ? tags : 128);
			if (tags > d)
				d = tags;
			if (d > *depth)
				*depth = d;
		}
		closedir(mq);
		snprintf(path, sizeof(path), "/sys/block/%s/queue/nr_requests", de->d_name);
		d = sysfs_uint(path);
		if (d > *depth)
			*depth = d;
	}
	closedir(b);
	return n;
}
