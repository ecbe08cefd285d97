/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Kernel differences, in one place: flavours of structs whose fields were renamed or removed.
 * Accessors pick the field that exists on the running kernel with bpf_core_field_exists, never
 * by version number (see block_handlers.bpf.h).
 */
#ifndef IOSTRATA_COMPAT_BPF_H
#define IOSTRATA_COMPAT_BPF_H

/* v5.17 (f3fa33acca9f "block: remove the ->rq_disk field in struct request") */
struct request___old {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

/* v5.12 (309dca309fc3 "block: store a block_device pointer in struct bio") */
struct bio___old {
	struct gendisk *bi_disk;
} __attribute__((preserve_access_index));

#endif /* IOSTRATA_COMPAT_BPF_H */
