// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Test helper for the VM (no dmsetup there): dmdelay NAME DEVICE SECTORS DELAY_MS creates a
 * device-mapper "delay" target over DEVICE, through the DM ioctls.
 */
#include <fcntl.h>
#include <linux/dm-ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static void init(struct dm_ioctl *io, size_t size, const char *name)
{
	memset(io, 0, size);
	io->version[0] = DM_VERSION_MAJOR;
	io->data_size = (unsigned)size;
	io->data_start = sizeof(*io);
	snprintf(io->name, sizeof(io->name), "%s", name);
}

int main(int argc, char **argv)
{
	union { struct dm_ioctl io; char buf[16384]; } u;
	struct dm_target_spec *t = (void *)(u.buf + sizeof(struct dm_ioctl));
	int fd;

	if (argc != 5) {
		fprintf(stderr, "usage: dmdelay NAME DEVICE SECTORS DELAY_MS\n");
		return 2;
	}
	fd = open("/dev/mapper/control", O_RDWR);
	if (fd < 0) {
		perror("/dev/mapper/control");
		return 1;
	}
	init(&u.io, sizeof(u), argv[1]);
	if (ioctl(fd, DM_DEV_CREATE, &u.io)) {
		perror("DM_DEV_CREATE");
		return 1;
	}
	init(&u.io, sizeof(u), argv[1]);
	u.io.target_count = 1;
	t->sector_start = 0;
	t->length = strtoull(argv[3], NULL, 10);
	snprintf(t->target_type, sizeof(t->target_type), "delay");
	snprintf((char *)(t + 1), 256, "%s 0 %s", argv[2], argv[4]);
	t->next = 0;
	if (ioctl(fd, DM_TABLE_LOAD, &u.io)) {
		perror("DM_TABLE_LOAD");
		return 1;
	}
	init(&u.io, sizeof(u), argv[1]);
	if (ioctl(fd, DM_DEV_SUSPEND, &u.io)) {	/* without DM_SUSPEND_FLAG: resume */
		perror("DM_DEV_SUSPEND");
		return 1;
	}
	printf("dm-%u\n", (unsigned)(u.io.dev & 0xff));
	return 0;
}
