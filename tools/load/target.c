// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The target every job does I/O on: a temporary file (default), a file (created by us, or an
 * existing one, read-only unless --force), or a block device (--force, never one that is
 * mounted, used by another device, partitioned or holding a filesystem signature).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <linux/magic.h>
#include "blkdev.h"
#include "load.h"
#include "stopsig.h"

static char shown[PATH_MAX];	/* what we print */
static char created[PATH_MAX];	/* a file we made and must remove ("" when none) */
/*
 * The target, open since it was checked (for a device a load writes, held for exclusive use):
 * jobs reopen this very inode through /proc/self/fd, never the path, which may name another
 * file (a symlink to a disk) by then. Closed by exit.
 */
static int target_fd = -1;
static struct stat target_st;	/* what was checked */
static bool writable;

/* The target is fd, which was checked: jobs reopen it. */
static void target_set(int fd)
{
	target_fd = fd;
	if (fstat(fd, &target_st))
		memset(&target_st, 0, sizeof(target_st));
}

/* The file open as fd (O_PATH or not), opened again with flags: the same inode, never the one
 * its path names now. */
static int reopen(int fd, int flags)
{
	char self[64];

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	return open(self, flags);
}

static bool writes(void)
{
	return lo.op == OP_RW && lo.read_pct < 100;
}

const char *target_describe(void)
{
	return shown;
}

/* A file we made is kept (--keep) only once laid out whole: never a half-made one. */
static volatile sig_atomic_t laid_out;

void target_cleanup(void)
{
	if (created[0] && (!lo.keep || !laid_out))
		unlink(created);	/* async-signal-safe */
	created[0] = '\0';
}

/*
 * O_DIRECT needs --bs (and so every offset, a multiple of it) aligned to the target's logical
 * block size: a device's (BLKSSZGET; a 4Kn disk's is 4096), a file's filesystem's (statx
 * STATX_DIOALIGN, where the kernel says it). Else every I/O fails with EINVAL mid-run: said
 * here instead, as the bad option it is. 0, or -2 said.
 */
static int dio_align_check(int fd, const char *name)
{
	unsigned int align = 0;
	struct stat st;
	int lbs;

	if (lo.op != OP_RW || !lo.direct || fstat(fd, &st))
		return 0;
	if (S_ISBLK(st.st_mode)) {
		if (!ioctl(fd, BLKSSZGET, &lbs) && lbs > 0)
			align = (unsigned int)lbs;
	} else {
#ifdef STATX_DIOALIGN
		struct statx stx;

		if (!statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) &&
		    (stx.stx_mask & STATX_DIOALIGN))
			align = stx.stx_dio_offset_align;
#endif
	}
	if (align && lo.bs % align) {
		lerr("--bs %u is not a multiple of %s's logical block size, %u, which O_DIRECT "
		     "needs (or use --buffered)", lo.bs, name, align);
		return -2;
	}
	return 0;
}

/* Fill the file so reads hit allocated blocks, as fio lays out its files. */
static int lay_out(int fd, uint64_t size)
{
	size_t chunk = 1 << 20;
	uint64_t done = 0;
	char *buf = malloc(chunk);
	ssize_t n;
	size_t i;

	if (!buf)
		return -ENOMEM;
	for (i = 0; i < chunk; i++)
		buf[i] = (char)(i * 131 + 7);
	while (done < size && !atomic_load(&load_stop)) {
		n = pwrite(fd, buf, size - done < chunk ? size - done : chunk, (off_t)done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			return -errno;
		}
		done += (uint64_t)n;
	}
	free(buf);
	if (atomic_load(&load_stop))
		return -EINTR;
	return fsync(fd) ? -errno : 0;
}

/*
 * A file of --size made on the filesystem of fd (the file, or its directory): at least 5 % of
 * it stays free (the root disk of a production host). 0, or -1 said.
 */
static int fits(int fd, const char *p)
{
	struct statvfs vfs;

	if (!fstatvfs(fd, &vfs) &&
	    (double)lo.size > ((double)vfs.f_bavail - 0.05 * (double)vfs.f_blocks) *
			      (double)vfs.f_frsize) {
		lerr("--size %llu bytes does not fit in %s's filesystem: %.1f MiB free, of which "
		     "5 %% of the filesystem is kept free", (unsigned long long)lo.size, p,
		     (double)vfs.f_bavail * (double)vfs.f_frsize / 1048576.0);
		return -1;
	}
	return 0;
}

static int create_file(const char *p, bool temp)
{
	char name[PATH_MAX];
	sigset_t all, was;
	int fd, err;

	if (!lo.size)	/* a file it makes: 256 MiB unless --size */
		lo.size = 256 << 20;
	/*
	 * The name is ours to remove once the file is made, and not before: a stop's cleanup
	 * (target_cleanup, from a signal) in between would remove a file someone else made at that
	 * name, which is why the create failed (EEXIST). The stop signals wait for the name to be
	 * settled.
	 */
	snprintf(name, sizeof(name), "%s", p);
	stop_signals_set(&all);
	sigprocmask(SIG_BLOCK, &all, &was);
	fd = temp ? mkstemp(name) : open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	err = errno;
	if (fd >= 0)
		snprintf(created, sizeof(created), "%s", name);
	sigprocmask(SIG_SETMASK, &was, NULL);
	if (fd < 0) {
		lerr("cannot create %s: %s", p, strerror(err));
		return -1;
	}
	snprintf(shown, sizeof(shown), "%s", created);
	if (temp && !lo.keep) {
		/* unlinked before a byte is laid out: a temporary file cannot outlive us, whatever
		 * kills us (SIGKILL, the OOM killer) and however long its lay-out takes */
		unlink(created);
		created[0] = '\0';
	}
	if ((err = dio_align_check(fd, p))) {
		close(fd);
		target_cleanup();
		return err;
	}
	/* a file that would fill its filesystem is refused before a byte is written */
	if (fits(fd, p)) {
		close(fd);
		target_cleanup();
		return -1;
	}
	err = lay_out(fd, lo.size);
	if (err) {
		close(fd);
		if (err == -EINTR)
			lerr("interrupted while laying out %s", shown);
		else
			lerr("cannot lay out %llu bytes in %s: %s", (unsigned long long)lo.size,
			     shown, strerror(-err));
		target_cleanup();	/* half laid out: never kept, --keep or not */
		return -1;
	}
	laid_out = 1;
	if (temp && !lo.keep)
		snprintf(shown + strlen(shown), sizeof(shown) - strlen(shown), " (temporary)");
	target_set(fd);	/* the file made, whatever its name is made to point at later */
	writable = true;
	return 0;
}

/*
 * --check of the file a run would create at p (the temporary file's template too), made by
 * nothing: the refusals create_file would say, as it would say them. Its directory is looked
 * up, and asked whether we may create in it (as open would: ENOENT, ENOTDIR, EACCES, EROFS);
 * the name's length, the fit of --size. For what only the file can say (its filesystem's
 * O_DIRECT alignment, O_DIRECT itself), an unnamed O_TMPFILE in that directory stands in for
 * it: never linked, it is gone when closed (where O_TMPFILE is not had, a run alone says
 * those). The target is then that, or nothing. 0, -1 or -2 said.
 */
static int create_check(const char *p)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(p, '/');
	struct statfs sfs;
	int dfd, fd, err;

	if (!lo.size)
		lo.size = 256 << 20;
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == p ? 1 : (int)(slash - p), p);
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	err = dfd < 0 || faccessat(dfd, ".", W_OK | X_OK, AT_EACCESS) ? errno : 0;
	if (!err && !fstatfs(dfd, &sfs) && sfs.f_namelen > 0 &&
	    strlen(slash ? slash + 1 : p) > (size_t)sfs.f_namelen)
		err = ENAMETOOLONG;
	if (err) {
		if (dfd >= 0)
			close(dfd);
		lerr("cannot create %s: %s", p, strerror(err));
		return -1;
	}
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0 && (err = dio_align_check(fd, p))) {
		close(fd);
		close(dfd);
		return err;
	}
	err = fits(dfd, p);
	close(dfd);
	if (err) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	snprintf(shown, sizeof(shown), "%s", p);
	if (fd >= 0) {
		target_set(fd);
		writable = true;
	}
	return 0;
}

/* An md RAID superblock's magic, 0xa92b4efc, as v1.x stores it (little-endian) */
#define MD_MAGIC	"\xfc\x4e\x2b\xa9"
/* ZFS's uberblock magic, the u64 0x00bab10c, as a little- and a big-endian pool store it */
#define ZFS_MAGIC	"\x0c\xb1\xba\x00\x00\x00\x00\x00"
#define ZFS_MAGIC_BE	"\x00\x00\x00\x00\x00\xba\xb1\x0c"

static bool at(const char *buf, ssize_t n, off_t off, const char *magic, size_t len)
{
	return off >= 0 && off + (off_t)len <= n && !memcmp(buf + off, magic, len);
}

/*
 * Known on-disk signatures: in the first 256 KiB, and in the last 384 KiB of a device of
 * `bytes` (md RAID 0.90 and 1.0 superblocks sit at the end, and ZFS keeps two of its four
 * labels there, the last ending where the size rounded down to 256 KiB does).
 */
static const char *signature(int fd, uint64_t bytes)
{
	static const struct {
		const char *name;
		off_t off;
		const char *magic;
		size_t len;
	} sigs[] = {
		{ "ext2/3/4", 1080, "\x53\xef", 2 },
		{ "xfs", 0, "XFSB", 4 },
		{ "btrfs", 65600, "_BHRfS_M", 8 },
		{ "swap", 4086, "SWAPSPACE2", 10 },
		{ "swap", 4086, "SWAP-SPACE", 10 },
		{ "LVM2", 536, "LVM2 001", 8 },
		{ "LVM2", 0, "LABELONE", 8 },
		{ "LVM2", 512, "LABELONE", 8 },
		{ "LVM2", 1024, "LABELONE", 8 },
		{ "LVM2", 1536, "LABELONE", 8 },
		{ "GPT", 512, "EFI PART", 8 },
		{ "MBR/DOS partition table", 510, "\x55\xaa", 2 },
		{ "LUKS", 0, "LUKS\xba\xbe", 6 },
		{ "LUKS2", 0, "SKUL\xba\xbe", 6 },
		{ "vfat", 54, "FAT", 3 },
		{ "vfat", 82, "FAT32", 5 },
		{ "iso9660", 32769, "CD001", 5 },
		{ "squashfs", 0, "hsqs", 4 },
		{ "f2fs", 1024, "\x10\x20\xf5\xf2", 4 },
		{ "bcache", 4120, "\xc6\x85\x73\xf6\x4e\x1a\x45\xca", 8 },
		{ "md RAID (1.1)", 0, MD_MAGIC, 4 },
		{ "md RAID (1.2)", 4096, MD_MAGIC, 4 },
		{ "Ceph BlueStore", 0, "bluestore block device", 22 },
	};
	static char buf[256 * 1024], tail[384 * 1024];
	ssize_t n = pread(fd, buf, sizeof(buf), 0), m = 0;
	off_t tail_at = 0, o;
	size_t i;

	for (i = 0; n > 0 && i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (at(buf, n, sigs[i].off, sigs[i].magic, sigs[i].len))
			return sigs[i].name;
	/* ZFS label 0: its uberblocks, one per 1 KiB (or larger) slot, from 128 KiB */
	for (o = 128 * 1024; n > 0 && o < n; o += 1024)
		if (at(buf, n, o, ZFS_MAGIC, 8) || at(buf, n, o, ZFS_MAGIC_BE, 8))
			return "ZFS";
	if (bytes >= sizeof(buf) + sizeof(tail)) {
		tail_at = (off_t)(bytes - sizeof(tail));
		m = pread(fd, tail, sizeof(tail), tail_at);
	}
	if (m == (ssize_t)sizeof(tail)) {
		/* md 0.90: 64 KiB-aligned, 64 KiB from the end, in the host's byte order */
		uint32_t md = 0xa92b4efc;
		off_t v090 = (off_t)((bytes & ~(uint64_t)0xffff) - 0x10000) - tail_at;
		/* md 1.0: 8 KiB from the end, 4 KiB-aligned */
		off_t v10 = (off_t)(((bytes >> 9) - 16) & ~(uint64_t)7) * 512 - tail_at;

		if (at(tail, m, v090, (const char *)&md, 4))
			return "md RAID (0.90)";
		if (at(tail, m, v10, MD_MAGIC, 4))
			return "md RAID (1.0)";
		/* ZFS label 3: the last 256 KiB before the size rounded down to 256 KiB; its
		 * uberblocks in its second half */
		off_t l3 = (off_t)((bytes & ~(uint64_t)0x3ffff) - 0x20000) - tail_at;

		for (o = l3 > 0 ? l3 : 0; o + 8 <= m && o < l3 + 0x20000; o += 1024)
			if (at(tail, m, o, ZFS_MAGIC, 8) || at(tail, m, o, ZFS_MAGIC_BE, 8))
				return "ZFS";
	}
	return NULL;
}

/*
 * --device's refusals that need no opening of it: not a block device, no --force, unknown to
 * sysfs, mounted or held, or partitioned. *pfd: the device looked up once (O_PATH: what is
 * checked is what is opened, and what jobs reopen; O_PATH opens no device, so a path that is
 * not one costs nothing), -1 when refused. 0, or -1 said.
 */
static int device_check(int *pfd)
{
	const char *name;
	char why[1200], kname[64];
	struct stat st;
	int fd;

	*pfd = -1;
	fd = open(lo.device, O_PATH | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) || !S_ISBLK(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		lerr("%s is not a block device", lo.device);
		return -1;
	}
	if (!lo.force) {
		close(fd);
		lerr("refusing to use block device %s without --force (its data may be "
		     "overwritten)", lo.device);
		return -1;
	}
	/* by its kernel name: the path may be a link (/dev/disk/by-id/...) */
	if (!(name = blkdev_name(st.st_rdev, kname, sizeof(kname)))) {
		close(fd);
		lerr("%s: not known to sysfs (/sys/dev/block)", lo.device);
		return -1;
	}
	if (blkdev_in_use(name, why, sizeof(why)) || blkdev_has_partitions(name, why, sizeof(why))) {
		close(fd);
		lerr("refusing %s: %s", lo.device, why);
		return -1;
	}
	*pfd = fd;
	return 0;
}

/* What the open device holds: no filesystem's or volume's signature, --size bytes at least. */
static int device_contents_check(int fd, uint64_t *bytes)
{
	const char *sig;

	if (ioctl(fd, BLKGETSIZE64, bytes))
		*bytes = 0;
	sig = signature(fd, *bytes);
	if (sig) {
		lerr("refusing %s: it holds a %s signature (wipe it first if it is really unused)",
		     lo.device, sig);
		return -1;
	}
	if (lo.size > *bytes) {	/* as for a file: the region asked for is not there */
		lerr("%s holds %llu bytes, less than --size %llu", lo.device,
		     (unsigned long long)*bytes, (unsigned long long)lo.size);
		return -1;
	}
	return 0;
}

/*
 * The device looked up (pfd, closed here) opened read-only: held exclusively (O_EXCL) by a load
 * that writes, until it exits, so that no filesystem can be mounted from it, nor md or LVM take
 * it, between the checks and the last write. An exclusive claim writes nothing: --check makes
 * it too, and is refused as a run is. Its jobs' own opens are not exclusive, so they are not
 * refused. The descriptor, or -1 said.
 */
static int device_open(int pfd)
{
	int fd = reopen(pfd, O_RDONLY | O_CLOEXEC | (writes() ? O_EXCL : 0));

	close(pfd);
	if (fd < 0 && errno == EBUSY) {
		lerr("refusing %s: it is in use: the kernel holds it for exclusive use (mounted or "
		     "claimed since it was checked)", lo.device);
		return -1;
	}
	if (fd < 0)
		lerr("cannot open %s: %s", lo.device, strerror(errno));
	return fd;
}

static int open_device(void)
{
	uint64_t bytes = 0;
	int fd, pfd;

	if (device_check(&pfd) || (fd = device_open(pfd)) < 0)
		return -1;
	if (dio_align_check(fd, lo.device)) {
		close(fd);
		return -2;
	}
	if (device_contents_check(fd, &bytes)) {
		close(fd);
		return -1;
	}
	if (!lo.size)
		lo.size = bytes;
	target_set(fd);	/* held (O_EXCL for a load that writes) until exit */
	snprintf(shown, sizeof(shown), "%s", lo.device);
	/* jobs that only read open it read-only: the close of a disk opened to write tells udev
	 * it changed, which then reads it again (blkid), in the middle of what is measured */
	writable = writes();
	return 0;
}

/*
 * An existing file to be written that backs a loop device: refused when that device is in use
 * (a filesystem mounted from it: writing the file would write under it), whatever --force
 * says; else that device is held for exclusive use until the load exits, as --device holds
 * its disk, so nothing mounts it meanwhile. 0, or -1 said.
 */
/*
 * Loop device NAME is bound to this very file. The device is asked (LOOP_GET_STATUS64: the
 * backing inode's device and number), as losetup -j does: the name sysfs shows is no longer
 * the file's once it was unlinked ("... (deleted)", the image still reachable by another hard
 * link), nor read back whole with a newline in it. That name only when /dev/NAME cannot be
 * asked.
 */
static bool loop_backs(const char *name, const struct stat *file)
{
	char p[PATH_MAX], back[PATH_MAX], kname[64];
	struct loop_info64 li;
	struct stat st;
	size_t n;
	FILE *f;
	int fd, r = -1;

	snprintf(p, sizeof(p), "/sys/block/%s/loop/backing_file", name);
	f = fopen(p, "r");
	if (!f)
		return false;	/* not bound to a file */
	n = fgets(back, sizeof(back), f) ? strcspn(back, "\n") : 0;
	fclose(f);
	back[n] = 0;
	snprintf(p, sizeof(p), "/dev/%s", name);
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0) {
		/* only where /dev/NAME is this very device */
		if (!fstat(fd, &st) && S_ISBLK(st.st_mode) &&
		    blkdev_name(st.st_rdev, kname, sizeof(kname)) && !strcmp(kname, name))
			r = ioctl(fd, LOOP_GET_STATUS64, &li);
		close(fd);
	}
	if (!r)
		return li.lo_device == (uint64_t)file->st_dev && li.lo_inode == file->st_ino;
	return n && !stat(back, &st) && st.st_dev == file->st_dev && st.st_ino == file->st_ino;
}

static int loop_backing_check(const struct stat *file)
{
	char why[1200], dev[300];
	struct dirent *de;
	DIR *d = opendir("/sys/block");
	int fd, err = 0;

	while (d && !err && (de = readdir(d))) {
		if (strncmp(de->d_name, "loop", 4) || !loop_backs(de->d_name, file))
			continue;
		if (blkdev_in_use(de->d_name, why, sizeof(why)) ||
		    blkdev_has_partitions(de->d_name, why, sizeof(why))) {
			lerr("refusing to write %s: it backs %s, and %s", lo.file, de->d_name, why);
			err = -1;
			break;
		}
		snprintf(dev, sizeof(dev), "/dev/%s", de->d_name);
		fd = open(dev, O_RDONLY | O_CLOEXEC | O_EXCL);
		if (fd < 0 && errno == EBUSY) {
			lerr("refusing to write %s: it backs %s, which the kernel holds for "
			     "exclusive use (mounted or claimed)", lo.file, de->d_name);
			err = -1;
		}
		/* held until the load exits; a device node that cannot be opened is no holder */
	}
	if (d)
		closedir(d);
	return err;
}

int std_fds_hold(bool *out_closed)
{
	int i;

	*out_closed = false;
	for (i = 0; i <= 2; i++)	/* in order: open() takes the lowest free fd */
		if (fcntl(i, F_GETFD) < 0 && errno == EBADF) {
			*out_closed |= i == 1;
			if (open("/dev/null", i ? O_WRONLY : O_RDONLY) != i)
				return -1;
		}
	return 0;
}

/*
 * The kernel's own interfaces, whose "files" are not storage: writing one sets whatever it
 * controls (an attribute of a device, a cgroup's limits, an EFI variable), reading one may
 * consume it (trace_pipe). Its name, or NULL.
 */
static const char *pseudo_fs(int fd)
{
	static const struct {
		unsigned long magic;
		const char *name;
	} fs[] = {
		{ PROC_SUPER_MAGIC, "procfs" }, { SYSFS_MAGIC, "sysfs" },
		{ DEBUGFS_MAGIC, "debugfs" }, { TRACEFS_MAGIC, "tracefs" },
		{ CGROUP_SUPER_MAGIC, "cgroupfs" }, { CGROUP2_SUPER_MAGIC, "cgroup2" },
		{ SECURITYFS_MAGIC, "securityfs" }, { SELINUX_MAGIC, "selinuxfs" },
		{ SMACK_MAGIC, "smackfs" }, { EFIVARFS_MAGIC, "efivarfs" },
		{ PSTOREFS_MAGIC, "pstore" }, { BPF_FS_MAGIC, "bpffs" },
		{ BINFMTFS_MAGIC, "binfmt_misc" }, { 0x62656570, "configfs" },
	};
	struct statfs sfs;
	size_t i;

	if (fstatfs(fd, &sfs))
		return NULL;
	for (i = 0; i < sizeof(fs) / sizeof(fs[0]); i++)
		if ((unsigned long)sfs.f_type == fs[i].magic)
			return fs[i].name;
	return NULL;
}

/* An existing --file, as fstat shows it (pfd: its O_PATH descriptor): 0, or -1 said. */
static int existing_file_check(int pfd, const struct stat *st)
{
	const char *pseudo;

	if (S_ISBLK(st->st_mode)) {
		lerr("%s is a block device: use --device", lo.file);
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		lerr("%s is not a regular file", lo.file);
		return -1;
	}
	if ((pseudo = pseudo_fs(pfd))) {	/* whatever --force says: it is no disk */
		lerr("refusing %s: it is on %s, a kernel interface, not storage", lo.file, pseudo);
		return -1;
	}
	if (writes() && !lo.force) {
		lerr("refusing to write to existing file %s (it was not created by iostrata-load; "
		     "--force allows it)", lo.file);
		return -1;
	}
	if (writes() && loop_backing_check(st))
		return -1;
	if (!lo.size)
		lo.size = (uint64_t)st->st_size;
	if ((uint64_t)st->st_size < lo.size) {
		lerr("%s holds %lld bytes, less than --size %llu", lo.file, (long long)st->st_size,
		     (unsigned long long)lo.size);
		return -1;
	}
	return 0;
}

/*
 * The file target, --file or the temporary one: checked, and made (check: only checked, with
 * nothing made, create_check standing in for create_file). 0, -1 or -2 said.
 */
static int file_target(bool check)
{
	struct stat st;
	char tmpl[PATH_MAX];
	const char *dir;
	int fd, pfd, err;

	if (!lo.file) {
		dir = getenv("TMPDIR");
		if (!dir || !*dir)
			dir = "/var/tmp";
		snprintf(tmpl, sizeof(tmpl), "%s/iostrata-load.XXXXXX", dir);
		return check ? create_check(tmpl) : create_file(tmpl, true);
	}
	/*
	 * The path is looked up once, O_PATH (nothing opened yet: not a device, nor a FIFO that
	 * would block); the checks are of that inode, and it is what is opened and what jobs
	 * reopen, whatever the path names by then.
	 */
	pfd = open(lo.file, O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		if (errno != ENOENT) {
			lerr("%s: %s", lo.file, strerror(errno));
			return -1;
		}
		/* the name is there, what it points to is not: O_EXCL would say "File exists" */
		if (!lstat(lo.file, &st) && S_ISLNK(st.st_mode)) {
			lerr("refusing %s: it is a dangling symlink, and iostrata-load does not follow "
			     "one to create a file (give the path it should point to)", lo.file);
			return -1;
		}
		return check ? create_check(lo.file) : create_file(lo.file, false);
	}
	if (fstat(pfd, &st)) {
		lerr("%s: %s", lo.file, strerror(errno));
		close(pfd);
		return -1;
	}
	if ((err = existing_file_check(pfd, &st))) {
		close(pfd);
		return err;
	}
	fd = reopen(pfd, O_RDONLY | O_CLOEXEC);
	close(pfd);
	if (fd < 0) {
		lerr("cannot open %s: %s", lo.file, strerror(errno));
		return -1;
	}
	if (dio_align_check(fd, lo.file)) {
		close(fd);
		return -2;
	}
	target_set(fd);
	snprintf(shown, sizeof(shown), "%s", lo.file);
	writable = writes();
	return 0;
}

/*
 * --check: what can be known of the target without making anything or writing: --device's
 * refusals, and what it holds (read), and its size if --size is not given; a file's refusals,
 * those of the file a run would make included. The target is then open (read) as a run's, for
 * the jobs' opens to be tried. 0, -1 said, or -2 said (--bs does not suit it).
 */
int target_check(void)
{
	uint64_t bytes = 0;
	int pfd, fd, r;

	if (lo.op != OP_RW)
		return 0;
	if (!lo.device)
		return file_target(true);
	if (device_check(&pfd) || (fd = device_open(pfd)) < 0)
		return -1;
	r = dio_align_check(fd, lo.device);
	if (!r && device_contents_check(fd, &bytes))
		r = -1;
	if (r) {
		close(fd);
		return r;
	}
	if (!lo.size)
		lo.size = bytes;
	target_set(fd);
	snprintf(shown, sizeof(shown), "%s", lo.device);
	writable = writes();
	return 0;
}

int target_open(void)
{
	if (lo.op != OP_RW) {	/* probes need no file */
		snprintf(shown, sizeof(shown), "(none: %s probe)",
			 lo.op == OP_NOP ? "nop" : lo.op == OP_TIMEOUT ? "timeout" : "poll");
		return 0;
	}
	if (lo.device)
		return open_device();
	return file_target(false);
}

/* The target opened as a job opens it, for writing or not: the descriptor, or -1 said. */
static int job_open(bool write)
{
	int fd = reopen(target_fd, (write ? O_RDWR : O_RDONLY) | (lo.direct ? O_DIRECT : 0) |
				   O_CLOEXEC);

	if (fd < 0 && errno == EINVAL && lo.direct)
		lerr("%s does not support O_DIRECT (use --buffered, or a file on another "
		     "filesystem)", shown);
	else if (fd < 0)
		lerr("cannot open %s: %s", shown, strerror(errno));
	return fd;
}

int target_fd_for_job(void)
{
	struct stat st;
	int fd;

	if (lo.op != OP_RW)
		return -1;
	if ((fd = job_open(writable)) < 0)
		return -2;
	/* the inode checked, as /proc/self/fd guarantees; said, should it ever not be */
	if (fstat(fd, &st) || st.st_dev != target_st.st_dev || st.st_ino != target_st.st_ino ||
	    st.st_rdev != target_st.st_rdev) {
		close(fd);
		lerr("%s is no longer the target that was checked", shown);
		return -2;
	}
	return fd;
}

int target_check_open(void)
{
	int fd, ro = 0, err = 0;
	char path[64];

	if (lo.op != OP_RW || target_fd < 0)	/* no target, or none to stand in for a new file */
		return 0;
	/*
	 * A job's open, but read-only: --check opens nothing for writing (the close of a disk
	 * opened to write tells udev it changed, and it reads the disk again); the permission to
	 * write is asked instead, as the job's open would answer it.
	 */
	if ((fd = job_open(false)) < 0)
		return -1;
	if (writable) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (faccessat(AT_FDCWD, path, W_OK, AT_EACCESS))
			err = errno;
		else if (S_ISBLK(target_st.st_mode) && !ioctl(fd, BLKROGET, &ro) && ro)
			err = EROFS;
	}
	close(fd);
	if (err) {
		lerr("cannot open %s: %s", shown, strerror(err));
		return -1;
	}
	return 0;
}
