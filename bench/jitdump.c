// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bench-jitdump ID: one loaded BPF program's line table, for bench/profile.py. Prints a line
 * "ADDR INSN" per line-info record: the kernel address where the JIT put the record's first
 * instruction (subprograms included, each in its own image) and the record's xlated
 * instruction index, which `bpftool prog dump xlated id ID linum` maps to a source line. This
 * is what `bpftool prog dump jited ... linum` would give where bpftool has no disassembler.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

int main(int argc, char **argv)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), nli, njli, lrs, i;
	struct bpf_line_info *li;
	__u64 *jli;
	char *end;
	long id;
	int fd;

	id = argc == 2 ? strtol(argv[1], &end, 10) : 0;
	if (id <= 0 || *end) {
		fprintf(stderr, "usage: bench-jitdump PROG_ID\n");
		return 2;
	}
	fd = bpf_prog_get_fd_by_id((__u32)id);
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len)) {
		fprintf(stderr, "bench-jitdump: program %ld: %s\n", id, strerror(errno));
		return 1;
	}
	nli = info.nr_line_info;
	njli = info.nr_jited_line_info;
	if (!nli || nli != njli || info.line_info_rec_size < sizeof(*li) ||
	    info.jited_line_info_rec_size != sizeof(*jli)) {
		fprintf(stderr, "bench-jitdump: program %ld has no JIT line info\n", id);
		return 1;
	}
	li = calloc(nli, info.line_info_rec_size);
	jli = calloc(njli, sizeof(*jli));
	if (!li || !jli) {
		fprintf(stderr, "bench-jitdump: out of memory\n");
		return 1;
	}
	lrs = info.line_info_rec_size;
	memset(&info, 0, sizeof(info));
	info.nr_line_info = nli;
	info.line_info_rec_size = lrs;
	info.line_info = (__u64)(unsigned long)li;
	info.nr_jited_line_info = njli;
	info.jited_line_info_rec_size = sizeof(*jli);
	info.jited_line_info = (__u64)(unsigned long)jli;
	len = sizeof(info);
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		fprintf(stderr, "bench-jitdump: program %ld: %s\n", id, strerror(errno));
		return 1;
	}
	for (i = 0; i < nli; i++) {
		const struct bpf_line_info *r = (const void *)((char *)li + (size_t)i * lrs);

		printf("%llx %u\n", (unsigned long long)jli[i], r->insn_off);
	}
	free(li);
	free(jli);
	return 0;
}
