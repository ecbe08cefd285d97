// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * slowfs: a FUSE filesystem holding one file, "disk", whose every read and write takes at
 * least a set time. A loop device over it is a block device with a known minimum latency:
 * each request the loop driver issues becomes one FUSE read or write that sleeps DELAY_US, or
 * for a flush an fsync that sleeps FSYNC_US (default 0).
 *
 *   slowfs MOUNTPOINT DELAY_US SIZE_MIB [FSYNC_US [MARK [HOLD]]]   (in the foreground until
 *   unmounted)
 *
 * MARK: a file each fsync creates as it starts (a test then knows a flush is in flight).
 * HOLD: while this file exists, an fsync waits for its removal instead of sleeping FSYNC_US,
 * FSYNC_US then bounding the wait: a test ends the flush when it is ready, not on a timer.
 *
 * Files are opened in FUSE direct_io mode: no page cache, so every request reaches us.
 */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long delay_us, fsync_us;
static const char *fsync_mark, *fsync_hold;
static off_t disk_size;

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void delay(void)
{
	sleep_us(delay_us);
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	memset(st, 0, sizeof(*st));
	if (!strcmp(path, "/")) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	if (strcmp(path, "/disk"))
		return -ENOENT;
	st->st_mode = S_IFREG | 0600;
	st->st_nlink = 1;
	st->st_size = disk_size;
	return 0;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	if (strcmp(path, "/"))
		return -ENOENT;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, "disk", NULL, 0, 0);
	return 0;
}

static int fs_open(const char *path, struct fuse_file_info *fi)
{
	if (strcmp(path, "/disk"))
		return -ENOENT;
	fi->direct_io = 1;
	return 0;
}

static int fs_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	if (off >= disk_size)
		return 0;
	if ((off_t)size > disk_size - off)
		size = (size_t)(disk_size - off);
	delay();
	memset(buf, 0, size);
	return (int)size;
}

static int fs_write(const char *path, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	if (off + (off_t)size > disk_size)
		return -ENOSPC;
	delay();
	return (int)size;
}

static int fs_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	long waited;
	int fd;

	if (fsync_mark && (fd = open(fsync_mark, O_WRONLY | O_CREAT, 0600)) >= 0)
		close(fd);
	if (!fsync_hold) {
		sleep_us(fsync_us);
		return 0;
	}
	for (waited = 0; waited < fsync_us && !access(fsync_hold, F_OK); waited += 1000)
		sleep_us(1000);
	return 0;
}

static const struct fuse_operations ops = {
	.getattr = fs_getattr,
	.readdir = fs_readdir,
	.open = fs_open,
	.read = fs_read,
	.write = fs_write,
	.fsync = fs_fsync,
};

int main(int argc, char **argv)
{
	char *fargv[] = { argv[0], "-f", "-s", NULL, NULL };

	if (argc < 4 || argc > 7) {
		fprintf(stderr, "usage: slowfs MOUNTPOINT DELAY_US SIZE_MIB [FSYNC_US [MARK [HOLD]]]\n");
		return 2;
	}
	delay_us = atol(argv[2]);
	fsync_us = argc >= 5 ? atol(argv[4]) : 0;
	fsync_mark = argc >= 6 ? argv[5] : NULL;
	fsync_hold = argc == 7 ? argv[6] : NULL;
	disk_size = (off_t)atol(argv[3]) << 20;
	fargv[3] = argv[1];
	return fuse_main(4, fargv, &ops, NULL);
}
