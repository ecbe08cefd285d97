# iostrata: `make` builds bin/iostrata (static, x86_64); `make run`, `make test`, `make bench`.
# Quiet by default; V=1 shows every command.

# the kernel's name for the build machine's architecture (__TARGET_ARCH_x86, _arm64, ...)
ARCH      ?= $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/i.86/x86/' -e 's/aarch64/arm64/' \
			-e 's/riscv64/riscv/' -e 's/ppc64.*/powerpc/' -e 's/s390x/s390/' \
			-e 's/loongarch64/loongarch/')
CLANG     ?= clang-19
BPFTOOL   ?= $(shell command -v bpftool 2>/dev/null || echo /usr/sbin/bpftool)
CC        ?= cc
PYTHON    ?= /usr/bin/python3
BUILD     := build
BIN       := bin

CFLAGS    ?= -O2 -g
CFLAGS    += -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Werror=implicit-function-declaration
# CI builds with WERROR=1: a warning fails the build there
ifeq ($(WERROR),1)
CFLAGS    += -Werror
BPFWERROR := -Werror
endif
CPPFLAGS  += -I$(BUILD) -Ibpf -Iuser -Iuser/lib -Iuser/out -Iuser/layers -Iuser/cmd -D_GNU_SOURCE
LDFLAGS   += -static
LDLIBS    += -lbpf -lelf -lz -lm
BPFCFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Ivmlinux -Ibpf \
             -Wall -Wno-unused-function $(BPFWERROR)

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-9s %s\n' "$(1)" "$(2)";
endif

BPF_SRCS  := $(wildcard bpf/*.bpf.c)
SKELS     := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))
USER_SRCS := $(wildcard user/*.c user/*/*.c)
USER_OBJS := $(patsubst user/%.c,$(BUILD)/user/%.o,$(USER_SRCS))
TEST_BINS := $(BIN)/test_hist $(BIN)/test_stats $(BIN)/test_privs $(BIN)/test_http $(BIN)/test_utf8 \
             $(BIN)/test_cgroups $(BIN)/slowfs $(BIN)/reaper
BENCH_BINS := $(BIN)/bench-floor $(BIN)/bench-jitdump $(BIN)/bench-unseen
LOAD_SRCS  := $(wildcard tools/load/*.c)
LOAD_OBJS  := $(patsubst tools/load/%.c,$(BUILD)/load/%.o,$(LOAD_SRCS)) \
              $(BUILD)/user/lib/json.o $(BUILD)/user/lib/histfmt.o $(BUILD)/user/lib/cli.o \
              $(BUILD)/user/lib/blkdev.o $(BUILD)/user/lib/stopsig.o $(BUILD)/user/lib/utf8.o

.PHONY: all deps run test test-vm test-unit test-root bench bench-load bench-layers bench-overhead bench-helpers bench-spill bench-profile check-exact check-unseen bench-report sample-report interfaces soak vmlinux clean
.DELETE_ON_ERROR:
.SECONDARY:

all: $(BIN)/iostrata $(BIN)/iostrata-load $(TEST_BINS) $(BENCH_BINS)

# Installs missing Debian packages as root; otherwise names them and stops.
deps:
	$(Q)scripts/deps.sh

$(BUILD)/.deps-ok: scripts/deps.sh | $(BUILD)
	$(Q)scripts/deps.sh
	$(Q)touch $@

$(BUILD) $(BUILD)/user $(BUILD)/bpf $(BUILD)/load $(BIN):
	$(Q)mkdir -p $@

# BPF: compile, link (bpftool gen object strips DWARF and checks BTF), then a skeleton.
$(BUILD)/bpf/%.tmp.o: bpf/%.bpf.c $(BUILD)/.deps-ok | $(BUILD)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPFCFLAGS) -MMD -MP -MF $(@:.o=.d) -c $< -o $@

$(BUILD)/bpf/%.tmp.o: bench/%.bpf.c $(BUILD)/.deps-ok | $(BUILD)/bpf
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPFCFLAGS) -MMD -MP -MF $(@:.o=.d) -c $< -o $@

$(BUILD)/bpf/%.bpf.o: $(BUILD)/bpf/%.tmp.o
	$(call msg,GEN-OBJ,$@)
	$(Q)$(BPFTOOL) gen object $@ $<

$(BUILD)/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $*_bpf > $@

# User space: every object waits for the skeletons; dep files track headers from there on.
$(BUILD)/user/%.o: user/%.c $(SKELS) $(BUILD)/.deps-ok | $(BUILD)/user
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BIN)/iostrata: $(USER_OBJS) | $(BIN)
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# The calibration load generator: static too, with liburing and libaio.
$(BUILD)/load/%.o: tools/load/%.c $(BUILD)/.deps-ok | $(BUILD)/load
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) -Itools/load $(CFLAGS) -MMD -MP -c $< -o $@

$(BIN)/iostrata-load: $(LOAD_OBJS) | $(BIN)
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS) $^ -luring -laio -lpthread -lm -o $@

$(BIN)/test_hist: tests/unit/test_hist.c tests/unit/check.h bpf/hist.h user/lib/histfmt.c user/lib/histfmt.h $(BUILD)/.deps-ok | $(BIN)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) tests/unit/test_hist.c user/lib/histfmt.c -lm -o $@

$(BIN)/test_stats: tests/unit/test_stats.c tests/unit/check.h bpf/hist.h user/lib/stats.c user/lib/stats.h user/lib/histfmt.c user/lib/histfmt.h $(BUILD)/.deps-ok | $(BIN)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) tests/unit/test_stats.c user/lib/stats.c user/lib/histfmt.c -lm -o $@

$(BIN)/test_privs: tests/unit/test_privs.c tests/unit/check.h user/lib/privs.c user/lib/privs.h user/lib/log.h $(BUILD)/.deps-ok | $(BIN)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) tests/unit/test_privs.c user/lib/privs.c -o $@

$(BIN)/test_cgroups: tests/unit/test_cgroups.c tests/unit/check.h user/lib/cgroups.c user/lib/cgroups.h $(BUILD)/.deps-ok | $(BIN)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) tests/unit/test_cgroups.c user/lib/cgroups.c -o $@

$(BIN)/test_http: tests/unit/test_http.c tests/unit/check.h user/lib/http.c user/lib/http.h user/lib/sbuf.c user/lib/sbuf.h user/lib/log.h user/lib/utf8.c user/lib/utf8.h $(BUILD)/.deps-ok | $(BIN)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) tests/unit/test_http.c user/lib/http.c user/lib/sbuf.c user/lib/utf8.c -lpthread -o $@

$(BIN)/bench-floor: bench/floor.c $(BUILD)/floor.skel.h $(BUILD)/helpers.skel.h | $(BIN)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $< $(LDLIBS) -o $@

$(BIN)/bench-unseen: bench/unseen.c $(BUILD)/unseen.skel.h | $(BIN)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $< $(LDLIBS) -o $@

$(BIN)/bench-jitdump: bench/jitdump.c $(BUILD)/.deps-ok | $(BIN)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $< $(LDLIBS) -o $@

# Applications that reap in ways the tracer must not misreport (lazy io_uring, user-space aio).
$(BIN)/reaper: tests/helpers/reaper.c $(BUILD)/.deps-ok | $(BIN)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) $< -luring -o $@

# A FUSE filesystem whose file has a known latency: the tests' known-latency device.
$(BIN)/test_utf8: tests/unit/test_utf8.c tests/unit/check.h user/lib/utf8.c user/lib/utf8.h user/lib/utf8_width.h $(BUILD)/.deps-ok | $(BIN)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) tests/unit/test_utf8.c user/lib/utf8.c -o $@

$(BIN)/slowfs: tests/helpers/slowfs.c $(BUILD)/.deps-ok | $(BIN)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $$(pkg-config --cflags fuse3) $< $$(pkg-config --libs fuse3) -o $@

-include $(wildcard $(BUILD)/bpf/*.d $(BUILD)/user/*.d $(BUILD)/user/*/*.d $(BUILD)/load/*.d)

# Trace this host, every available layer, until Ctrl-C (or RUN_ARGS, e.g. RUN_ARGS="--duration 10").
RUN_ARGS ?=
run: all
	$(BIN)/iostrata $(RUN_ARGS)

# Unit tests need no root; the live-kernel tests skip, with the reason, when not run as root.
test: all
	$(PYTHON) -m pytest -ra --durations=15 tests

test-unit: all
	$(PYTHON) -m pytest -ra tests -m "not root"

bench: all
	$(PYTHON) bench/block.py $(BENCH_ARGS)

# Debian's 6.1 kernel under QEMU (known-latency null_blk, dm-delay, every layer), then the
# host's known-latency checks (calibrate, FUSE device, io_uring TIMEOUT / aio POLL).
test-vm: all
	$(PYTHON) -m pytest -ra -s tests/test_vm61.py tests/test_calibrate.py tests/test_known_latency.py

# BASELINE=path/to/iostrata (e.g. from scripts/build-baseline.sh REV DIR) adds that binary's rows
# to bench-layers / bench-overhead, measured in the same rounds as bin/iostrata's.
BASELINE ?=

# BPF ns per I/O of every layer with bio linking on, under io_uring O_DIRECT.
bench-layers: all
	$(PYTHON) bench/layers.py $(if $(BASELINE),--baseline '$(BASELINE)') $(BENCH_ARGS)

# The overhead tables in docs/overhead.md, on a tmpfs loop device and on a file on the root disk:
# no tracer, iostrata block / all layers, bpftrace, libbpf-tools' biolatency and biolatency -Q.
bench-overhead: all
	$(Q)sh scripts/deps.sh bpftrace libbpf-tools
	$(PYTHON) bench/layers.py --doc $(if $(BASELINE),--baseline '$(BASELINE)') $(BENCH_ARGS)

# What each building block of a program costs here (a clock read, a map lookup, a helper call),
# one program per block beside fio on a tmpfs loop device: the table in docs/benchmarks.md.
bench-helpers: all
	$(PYTHON) bench/helpers.py $(BENCH_ARGS)

# What a histogram key in the shared spill map costs against one in the per-CPU map (uring -P).
bench-spill: all
	$(PYTHON) bench/spill.py $(BENCH_ARGS)

# Where the BPF programs spend their time, per source line: perf samples mapped through each
# program's JIT line table (bench/profile.py; BENCH_ARGS="--target loop", "-- -l block", ...).
bench-profile: all
	$(Q)sh scripts/deps.sh linux-perf
	$(PYTHON) bench/profile.py $(BENCH_ARGS)

# Block counts against /sys/block/DEV/stat on the disk under /var/tmp (the host's disk, so not
# part of make test, which does the same on a loop device): 60 s of fio randrw qd 32.
check-exact: all
	$(PYTHON) bench/exact.py $(BENCH_ARGS)

# Which block completions reach no BPF program on this host (drops.complete_unseen), and on top
# of which tasks they ran: tracefs and a tp_btf program count the same event over one window.
check-unseen: all
	$(PYTHON) bench/unseen.py $(BENCH_ARGS)

# iostrata serve for 10 minutes (SOAK_ARGS="--seconds 120" for less) under the fastest load here,
# a scrape a second: memory and fds flat, counts exact; writes docs/soak.md. Not in make test.
SOAK_ARGS ?=
soak: all
	$(PYTHON) bench/soak.py $(SOAK_ARGS)
# iostrata report on a synthetic hour (1 s intervals, 4 layers, 20 label sets): seconds and
# HTML size against issue 12's goals (2 s, 5 MB). Prints figures; not part of make test.
bench-report: all
	$(PYTHON) bench/report.py $(BENCH_ARGS)

# docs/sample: a recording of iostrata-load's known latency mix, its report and a screenshot.
sample-report: all
	$(Q)sh scripts/deps.sh
	scripts/sample-report.sh

# iostrata-load against fio, side by side on one file: IOPS and CPU per I/O.
bench-load: all
	$(PYTHON) bench/load.py $(BENCH_ARGS)

# docs/interfaces.md: every engine at qd 1/32/128 on this machine.
interfaces: all
	$(PYTHON) bench/interfaces.py $(BENCH_ARGS)

vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/vmlinux.h

clean:
	rm -rf $(BUILD) $(BIN)

# Opt-in: bin/iostrata-asan, the same sources under AddressSanitizer and UBSan (dynamic: the
# sanitizers do not link statically). For fuzzing the readers (report, compare) by hand; not
# part of all.
ASAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
ASAN_OBJS  := $(patsubst user/%.c,$(BUILD)/asan/%.o,$(USER_SRCS))
.PHONY: asan
asan: $(BIN)/iostrata-asan

$(BUILD)/asan/%.o: user/%.c $(SKELS) $(BUILD)/.deps-ok
	$(call msg,CC-ASAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(filter-out -O2,$(CFLAGS)) $(ASAN_FLAGS) -MMD -MP -c $< -o $@

$(BIN)/iostrata-asan: $(ASAN_OBJS) | $(BIN)
	$(call msg,LD,$@)
	$(Q)$(CC) $(ASAN_FLAGS) $^ $(LDLIBS) -o $@
-include $(wildcard $(BUILD)/asan/*.d $(BUILD)/asan/*/*.d)
