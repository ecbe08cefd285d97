/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The kernel functions that link a bio to its io_uring or aio request, from /proc/kallsyms. */
#ifndef IOSTRATA_KSYMS_H
#define IOSTRATA_KSYMS_H

#include <stdint.h>

/* Addresses (0 = absent or hidden by kptr_restrict). */
struct link_syms {
	uint64_t endio_iomap, endio_blkdev, endio_blkdev_async, endio_chain;
	uint64_t kc_uring, kc_uring_iopoll, kc_aio;
};
/* Read once, on first use. */
const struct link_syms *link_syms(void);

/* Why linking is off ("" when the kernel's functions were all found). */
const char *link_problem(void);

/* Every BPF object that links requests: the functions into its .rodata. */
#define LINK_SYMS_RODATA(ro, s) do {						\
	(ro)->endio_iomap = (s)->endio_iomap;					\
	(ro)->endio_blkdev = (s)->endio_blkdev;					\
	(ro)->endio_blkdev_async = (s)->endio_blkdev_async;			\
	(ro)->endio_chain = (s)->endio_chain;					\
	(ro)->kc_uring = (s)->kc_uring;						\
	(ro)->kc_uring_iopoll = (s)->kc_uring_iopoll;				\
	(ro)->kc_aio = (s)->kc_aio;						\
} while (0)

#endif
