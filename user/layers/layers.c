// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Every layer this build has, in the order their records are printed. */
#include "layer.h"

extern const struct layer block_layer, uring_layer, aio_layer, syscall_layer;

const struct layer *const layers[NLAYERS] = {
	[LAYER_BLOCK] = &block_layer,
	[LAYER_URING] = &uring_layer,
	[LAYER_AIO] = &aio_layer,
	[LAYER_SYSCALL] = &syscall_layer,
};
