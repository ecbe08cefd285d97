/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Kernel differences, in one place. Each accessor picks the field that exists on the running
 * kernel through CO-RE (bpf_core_field_exists); never a version number.
 */
#ifndef IOSTRATA_COMPAT_BPF_H
#define IOSTRATA_COMPAT_BPF_H

#include <bpf/bpf_core_read.h>

/* v5.17 (f3fa33acca9f "block: remove the ->rq_disk field in struct request") */
struct request___old {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

/* v5.12 (309dca309fc3 "block: store a block_device pointer in struct bio") */
struct bio___old {
	struct gendisk *bi_disk;
} __attribute__((preserve_access_index));

static __always_inline struct gendisk *rq_disk(struct request *rq)
{
	struct request___old *old = (void *)rq;

	if (bpf_core_field_exists(old->rq_disk))
		return BPF_CORE_READ(old, rq_disk);
	return BPF_CORE_READ(rq, q, disk);
}

static __always_inline struct gendisk *bio_disk(struct bio *bio)
{
	struct bio___old *old = (void *)bio;

	if (bpf_core_field_exists(old->bi_disk))
		return BPF_CORE_READ(old, bi_disk);
	return BPF_CORE_READ(bio, bi_bdev, bd_disk);
}

/* The kernel's internal dev_t encoding (MINORBITS = 20), as /sys/class/block/X/dev decodes. */
static __always_inline __u32 disk_dev(struct gendisk *disk)
{
	__u32 major = BPF_CORE_READ(disk, major);
	__u32 minor = BPF_CORE_READ(disk, first_minor);

	return (major << 20) | minor;
}

#endif /* IOSTRATA_COMPAT_BPF_H */
