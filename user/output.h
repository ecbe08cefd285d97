/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef IOSTRATA_OUTPUT_H
#define IOSTRATA_OUTPUT_H

#include <stdio.h>
#include "layer.h"

void output_text(const struct interval *iv, FILE *f);
/* One NDJSON line; -1 when it could not be written whole. */
int output_json(const struct interval *iv, FILE *f);
const char *output_unmeasured_why(const struct rec *r);
/* `iostrata features` */
int features_print(const struct layer_report *reps, const char *const *names, int n,
		   bool verified, FILE *f);

#endif
