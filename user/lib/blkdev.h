/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Is a block device in use? Shared by iostrata-load (which writes a whole device) and
 * iostrata sched-ab (which changes a disk's scheduler): both refuse a device that holds data
 * someone is using. Read from /proc/self/mountinfo, /proc/swaps and sysfs, and by an O_EXCL
 * open that is closed at once.
 */
#ifndef IOSTRATA_BLKDEV_H
#define IOSTRATA_BLKDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The kernel's name of block device dev ("vda1", from /sys/dev/block/M:m); NULL if none. */
const char *blkdev_name(dev_t dev, char *buf, size_t len);
/*
 * The blk-mq disk block device dev is (a whole disk) or is a partition of ("vda"), NULL when it
 * is neither (no such device, or a bio-based one: dm, md, zram, whose requests, if any, are
 * another disk's). calibrate's test of whether a directory's I/O must reach the block layer.
 */
const char *blkdev_mq_disk(dev_t dev, char *buf, size_t len);
/*
 * NAME (a disk or a partition, as in /sys/class/block) or, for a disk, any of its partitions:
 * mounted, an active swap area, held by a device stacked on it (dm, md, bcache) or a loop
 * device over it, or claimed for exclusive use (an O_EXCL open of /dev/NAME fails: a btrfs
 * mount, whose mountinfo names no disk). true with the first reason found in why ("partition
 * vda1 is mounted on /").
 */
bool blkdev_in_use(const char *name, char *why, size_t len);
/* Does disk NAME hold partitions? true with the first in why ("it holds partition vda1"). */
bool blkdev_has_partitions(const char *name, char *why, size_t len);

#endif
