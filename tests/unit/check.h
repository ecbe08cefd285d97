/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The unit tests' one assertion: counts a pass, or says where and why it failed. */
#ifndef IOSTRATA_CHECK_H
#define IOSTRATA_CHECK_H

#include <stdio.h>

static int passed, failed;

#define CHECK(cond, ...) do {						\
	if (cond) {							\
		passed++;						\
	} else {							\
		failed++;						\
		printf("FAIL %s:%d: ", __FILE__, __LINE__);		\
		printf(__VA_ARGS__);					\
		printf("\n");						\
	}								\
} while (0)

#endif
