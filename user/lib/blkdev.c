// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Is a block device in use (blkdev.h)? */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/loop.h>
#include "blkdev.h"

/* /sys/class/block/NAME/dev ("253:0") as a dev_t; false when NAME is not a block device. */
static bool dev_of_name(const char *name, dev_t *dev)
{
	char p[PATH_MAX];
	unsigned int ma, mi;
	FILE *f;
	int n;

	snprintf(p, sizeof(p), "/sys/class/block/%s/dev", name);
	f = fopen(p, "r");
	if (!f)
		return false;
	n = fscanf(f, "%u:%u", &ma, &mi);
	fclose(f);
	if (n != 2)
		return false;
	*dev = makedev(ma, mi);
	return true;
}

const char *blkdev_name(dev_t dev, char *buf, size_t len)
{
	char p[64], target[PATH_MAX], *slash;
	ssize_t n;

	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u", major(dev), minor(dev));
	n = readlink(p, target, sizeof(target) - 1);
	if (n <= 0)
		return NULL;
	target[n] = '\0';
	slash = strrchr(target, '/');
	snprintf(buf, len, "%s", slash ? slash + 1 : target);
	return buf;
}

const char *blkdev_mq_disk(dev_t dev, char *buf, size_t len)
{
	char p[96], disk[PATH_MAX], *slash;
	struct stat st;
	size_t n;

	if (!major(dev))	/* tmpfs, btrfs, overlayfs, NFS: an anonymous device */
		return NULL;
	/* a partition's sysfs directory sits in its disk's and has a "partition" file */
	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/partition", major(dev), minor(dev));
	if (access(p, F_OK))
		snprintf(p, sizeof(p), "/sys/dev/block/%u:%u", major(dev), minor(dev));
	else
		snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/..", major(dev), minor(dev));
	if (!realpath(p, disk))
		return NULL;
	n = strlen(disk);
	if (n + sizeof("/mq") > sizeof(disk))
		return NULL;
	memcpy(disk + n, "/mq", sizeof("/mq"));
	if (stat(disk, &st) || !S_ISDIR(st.st_mode))
		return NULL;
	disk[n] = '\0';
	slash = strrchr(disk, '/');
	snprintf(buf, len, "%s", slash ? slash + 1 : disk);
	return buf;
}

static bool mounted(dev_t dev, char *mnt, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096], at[1024];
	unsigned int ma, mi;
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*d %*d %u:%u %*s %1023s", &ma, &mi, at) == 3 &&
		    ma == major(dev) && mi == minor(dev)) {
			snprintf(mnt, len, "%s", at);
			found = true;
		}
	fclose(f);
	return found;
}

/* Swap areas do not show in mountinfo. */
static bool swapping(dev_t dev)
{
	FILE *f = fopen("/proc/swaps", "r");
	char line[4096], name[1024];
	struct stat st;
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%1023s", name) == 1 && !stat(name, &st) &&
			S_ISBLK(st.st_mode) && st.st_rdev == dev;
	fclose(f);
	return found;
}

/* The first entry of /sys/class/block/NAME/holders, or false. */
static bool held(const char *name, char *holder, size_t len)
{
	char p[PATH_MAX];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(p, sizeof(p), "/sys/class/block/%s/holders", name);
	if (!(d = opendir(p)))
		return false;
	while (!found && (de = readdir(d)))
		if (de->d_name[0] != '.') {
			snprintf(holder, len, "%s", de->d_name);
			found = true;
		}
	closedir(d);
	return found;
}

/*
 * Loop device NAME's backing file is the block device dev. The device is asked
 * (LOOP_GET_STATUS64: lo_rdevice, the backing inode's device number), as losetup -j does: the
 * name sysfs shows for it is no longer a name of it once that node was removed ("... (deleted)",
 * the loop device still over the disk), nor read back whole with a newline in it, nor the same
 * disk once another node took the name. That name only when /dev/NAME cannot be asked.
 */
static bool loop_backs(const char *name, dev_t dev)
{
	char p[PATH_MAX], file[PATH_MAX];
	struct loop_info64 li;
	struct stat st;
	dev_t self;
	size_t n;
	FILE *f;
	int fd, r = -1;

	snprintf(p, sizeof(p), "/sys/class/block/%s/loop/backing_file", name);
	if (!(f = fopen(p, "r")))
		return false;	/* not bound to a file */
	n = fgets(file, sizeof(file), f) ? strcspn(file, "\n") : 0;
	fclose(f);
	file[n] = '\0';
	snprintf(p, sizeof(p), "/dev/%s", name);
	if (dev_of_name(name, &self) && (fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) >= 0) {
		/* only where /dev/NAME is this very device */
		if (!fstat(fd, &st) && S_ISBLK(st.st_mode) && st.st_rdev == self)
			r = ioctl(fd, LOOP_GET_STATUS64, &li);
		close(fd);
	}
	/* lo_rdevice is the kernel's encoding of a dev_t, which major() and minor() read */
	if (!r)
		return li.lo_rdevice && major((dev_t)li.lo_rdevice) == major(dev) &&
		       minor((dev_t)li.lo_rdevice) == minor(dev);
	return n && !stat(file, &st) && S_ISBLK(st.st_mode) && st.st_rdev == dev;
}

/* A loop device whose backing file is the block device dev (loop registers no holder), or
 * false: its name in loop. */
static bool loop_backed_by(dev_t dev, char *loop, size_t len)
{
	struct dirent *de;
	bool found = false;
	DIR *d;

	if (!(d = opendir("/sys/class/block")))
		return false;
	while (!found && (de = readdir(d))) {
		if (strncmp(de->d_name, "loop", 4) || !loop_backs(de->d_name, dev))
			continue;
		snprintf(loop, len, "%s", de->d_name);
		found = true;
	}
	closedir(d);
	return found;
}

/*
 * Claimed for exclusive use by the kernel (an O_EXCL open fails with EBUSY): a filesystem
 * mounted from it (btrfs too, whose mountinfo line names an anonymous device, never the disk),
 * a swap area, an md or dm member, or a process holding it with O_EXCL. Only where /dev/NAME is
 * this very device.
 */
static bool claimed(const char *name, dev_t dev)
{
	char p[PATH_MAX];
	struct stat st;
	int fd;

	snprintf(p, sizeof(p), "/dev/%s", name);
	if (stat(p, &st) || !S_ISBLK(st.st_mode) || st.st_rdev != dev)
		return false;
	fd = open(p, O_RDONLY | O_EXCL | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return false;
	}
	return errno == EBUSY;
}

/* One device: who = "it" for the device asked about, "partition vda1" for one of its parts. */
static bool one_in_use(const char *name, const char *who, char *why, size_t len)
{
	char what[1024];
	dev_t dev;

	if (dev_of_name(name, &dev) && mounted(dev, what, sizeof(what))) {
		snprintf(why, len, "%s is mounted on %s", who, what);
		return true;
	}
	if (dev_of_name(name, &dev) && swapping(dev)) {
		snprintf(why, len, "%s is an active swap area", who);
		return true;
	}
	if (held(name, what, sizeof(what))) {
		snprintf(why, len, "%s is in use by %s", who, what);
		return true;
	}
	if (dev_of_name(name, &dev) && loop_backed_by(dev, what, sizeof(what))) {
		snprintf(why, len, "%s is in use by %s (its backing file)", who, what);
		return true;
	}
	if (dev_of_name(name, &dev) && claimed(name, dev)) {
		snprintf(why, len, "%s is in use: the kernel holds it for exclusive use (a mounted "
			 "filesystem, or a process that opened it with O_EXCL)", who);
		return true;
	}
	return false;
}

/* The partitions of disk NAME are the subdirectories of its sysfs directory with a
 * "partition" file; fn is called on each until it returns true. */
static bool each_partition(const char *name, bool (*fn)(const char *part, char *why, size_t len),
			   char *why, size_t len)
{
	char p[PATH_MAX], q[PATH_MAX + 300];
	struct dirent *de;
	bool found = false;
	DIR *d;

	snprintf(p, sizeof(p), "/sys/class/block/%s", name);
	if (!(d = opendir(p)))
		return false;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(q, sizeof(q), "%s/%s/partition", p, de->d_name);
		if (!access(q, F_OK))
			found = fn(de->d_name, why, len);
	}
	closedir(d);
	return found;
}

static bool part_in_use(const char *part, char *why, size_t len)
{
	char who[300];

	snprintf(who, sizeof(who), "partition %s", part);
	return one_in_use(part, who, why, len);
}

static bool part_named(const char *part, char *why, size_t len)
{
	snprintf(why, len, "it holds partition %s", part);
	return true;
}

bool blkdev_in_use(const char *name, char *why, size_t len)
{
	return one_in_use(name, "it", why, len) || each_partition(name, part_in_use, why, len);
}

bool blkdev_has_partitions(const char *name, char *why, size_t len)
{
	return each_partition(name, part_named, why, len);
}
