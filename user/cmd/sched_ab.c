// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iostrata sched-ab -d DISK A B [OPTIONS] -- LOAD...: is scheduler B faster or slower than A on
 * DISK under LOAD, and how sure? Rounds in ABBA order (drift cancels), each one: switch the
 * scheduler, wait for the queue to drain, trace DISK's block layer while LOAD runs, record
 * the round; then compare every A round with every B round, and A's rounds with each other
 * (the A/A control: a change called there is noise). The disk's scheduler, its tunables and
 * every queue attribute a switch resets are put back on every exit path.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include "blkdev.h"
#include "cli.h"
#include "cmp_opts.h"
#include "cmd.h"
#include "compare.h"
#include "iosched.h"
#include "json.h"
#include "log.h"
#include "recorder.h"
#include "spawn.h"
#include "stopsig.h"
#include "sysinfo.h"
#include "trace_opts.h"

#define MAX_ROUNDS	100	/* per side */
#define MIN_ROUND_S	1.0	/* seconds: intervals of a tenth of it, 0.1 s and up */
#define DRAIN_WAIT_S	10	/* for the queue to empty before a round */
#define STOP_GRACE_MS	2000	/* between SIGTERM and SIGKILL to the load */

struct sab {
	/* the command line */
	const char *disk_arg, *spec_arg[2], *dir_arg;
	struct sched_spec spec[2];
	long rounds;
	double round_s;
	bool force, allow_mounted, json;
	int verbose;
	struct cmp_opts co;
	struct cmp_gates gates;
	char **load;		/* LOAD's argv, NULL-terminated */
	int argc;
	char **argv;
	/* the run */
	char disk[32];
	int lock_fd;		/* the disk's queue/scheduler, flock()ed until exit */
	char ident[64];		/* which disk it is: "diskseq N", else "dev MAJ:MIN" */
	struct trace_config cfg;
	struct run_limits lim;
	char dir[PATH_MAX];
	bool made[3];		/* A, B and DIR made by this run (removed again if left empty) */
	struct iosched_state *orig;
	struct iosched_state *now;	/* as the round's spec left it */
	char orig_text[1024];
	struct child child;
	int left;		/* processes the round's load left running when it ended, killed */
	bool left_gone;		/* and they were gone within a few seconds */
	bool stuck;		/* some of the load still ran a few seconds after its stop's kill */
	bool recorded;		/* a round's recording was made (DIR is not left empty) */
	bool unsettled;		/* the disk was still busy SESSION_SETTLE_S after the load */
	bool contained;		/* the round's load ran in a cgroup of its own */
	bool said_uncontained;
	int round;		/* the one running, from 0 */
	uint64_t requests[2 * MAX_ROUNDS];	/* seen: block total, measured or not */
	int64_t completed[2 * MAX_ROUNDS];	/* the disk's own count over the round, -1 unknown */
	double seconds[2 * MAX_ROUNDS];
};

static const char usage_text[] =
"Usage: iostrata sched-ab -d DISK A B [OPTIONS] -- LOAD...\n"
"\n"
"Is I/O scheduler B faster or slower than A on DISK under LOAD, and how sure?\n"
"A and B: NAME[:TUNABLE=VALUE,...], e.g. mq-deadline, none, bfq:low_latency=0,\n"
"kyber:read_lat_nsec=500000. Runs LOAD in 2 x --rounds rounds in ABBA order\n"
"(A B B A A B B A ...), tracing the block layer of DISK (every request on it)\n"
"and recording each round to DIR/A or DIR/B; then compares all A rounds with\n"
"all B rounds, and A's rounds with each other (the A/A control: if it calls any\n"
"quantile changed, the verdicts are marked UNRELIABLE). The scheduler, its\n"
"tunables and the queue settings a switch resets are restored on every exit\n"
"(success, error, the load failing, and every signal whose default would end\n"
"it: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGALRM, ...). LOAD is any\n"
"command, or iostrata-load's options when it starts with '-'.\n"
"\n"
"  -d, --disk=DISK       the disk: blk-mq, and not in use (mounted, swap,\n"
"                        stacked) unless --allow-mounted\n"
"      --rounds=N        rounds of each side (default 4, so 8 rounds; even\n"
"                        numbers balance drift)\n"
"      --round-secs=SEC  seconds of LOAD a round (default 10, at least 1);\n"
"                        intervals of 1 s, or a tenth of a shorter round\n"
"  -o, --output=DIR      where the rounds go (default: a new directory\n"
"                        ./sched-ab-YYYYmmdd-HHMMSS); DIR/A and DIR/B are what\n"
"                        `iostrata compare DIR/A DIR/B` reads later\n"
"      --force           reuse DIR: an earlier run's round files there go first\n"
"      --allow-mounted   switch the scheduler of a disk in use: your call\n"
"      --threshold=PCT   the smallest change called, in percent (default 5)\n"
"      --seed=N          of the bootstrap resampling (default 1)\n"
"      --gate=L:S:Q      exit 3 when layer L's stage S is slower in B at\n"
"                        quantile Q (block:total:p99); may be repeated\n"
"      --fail-probe=TP   testing: act as if the kernel lacked tracepoint TP\n"
"  -j, --json            one JSON document on stdout\n"
"  -v, --verbose         why data was not enough, and the layers' diagnostics\n"
"  -h, --help            show this help\n"
"  -V, --version         show the version\n"
"\n"
"Exit status: 0, 3 when a --gate regressed, 4 when a --gate was given but the\n"
"verdicts are UNRELIABLE, its quantile had not enough data, events the tracer\n"
"lost could change its verdict, or its interval does not exclude a slowdown\n"
"beyond the limit (a gate passes only then), 1 on an error or a signal, 2 for\n"
"bad input (a scheduler DISK does not offer included).\n"
"\n"
"Example: is none faster than mq-deadline for 4 KiB random reads on sdb?\n"
"  iostrata sched-ab -d sdb mq-deadline none -- --device /dev/sdb --force --rw randread\n";

static void usage(FILE *f)
{
	fputs(usage_text, f);
}

enum { OPT_ROUNDS = COPT_NEXT, OPT_ROUND_SECS, OPT_FORCE, OPT_ALLOW_MOUNTED, OPT_FAIL_PROBE };

static const struct option long_opts[] = {
	{ "disk", required_argument, NULL, 'd' },
	{ "rounds", required_argument, NULL, OPT_ROUNDS },
	{ "round-secs", required_argument, NULL, OPT_ROUND_SECS },
	{ "output", required_argument, NULL, 'o' },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "allow-mounted", no_argument, NULL, OPT_ALLOW_MOUNTED },
	{ "fail-probe", required_argument, NULL, OPT_FAIL_PROBE },
	CMP_OPTS_LONG,
	{ "json", no_argument, NULL, 'j' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ 0 },
};

/*
 * Gates are checked before the rounds run: sched-ab traces the block layer, so a gate names
 * one of its stages. 0, or -1 said.
 */
static int gates_traced(const struct cmp_gates *g)
{
	const struct layer *l;
	int i, id, st;

	for (i = 0; i < g->n; i++) {
		l = layer_by_name(g->g[i].layer, &id);
		for (st = 0; l && id == LAYER_BLOCK && st < l->nstages; st++)
			if (l->stages[st].name && !strcmp(l->stages[st].name, g->g[i].stage))
				break;
		if (!l || id != LAYER_BLOCK || st == l->nstages) {
			errorf("--gate %s:%s:%s: sched-ab traces the block layer, whose stages are "
			       "wait, device and total", g->g[i].layer, g->g[i].stage,
			       cmp_q_name[g->g[i].q]);
			return -1;
		}
	}
	return 0;
}

/* 0 ok, 1 exit 0 (help, version), -1 usage error (said) */
static int parse_args(int argc, char **argv, struct sab *a)
{
	char why[512], msg[256];
	int o, i, dashdash = -1;

	/* LOAD starts after "--": getopt must not read its options as ours */
	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			dashdash = i;
			break;
		}
	if (dashdash < 0)
		dashdash = argc;
	opterr = 0;
	optind = 1;
	while ((o = getopt_long(dashdash, argv, ":d:o:jvhV", long_opts, NULL)) != -1) {
		i = cmp_opt(&a->co, &a->gates, o, optarg);	/* --threshold, --gate, --seed */
		if (i < 0)
			return -1;
		if (i)
			continue;
		switch (o) {
		case 'd':
			if (opt_once("-d", a->disk_arg, optarg, "tested"))
				return -1;
			a->disk_arg = optarg;
			break;
		case 'o':
			if (opt_path("-o", a->dir_arg, optarg, "written"))
				return -1;
			a->dir_arg = optarg;
			break;
		case 'j': a->json = true; break;
		case 'v': a->verbose++; break;
		case OPT_FORCE: a->force = true; break;
		case OPT_ALLOW_MOUNTED: a->allow_mounted = true; break;
		case OPT_ROUNDS:
			if (parse_long("--rounds", optarg, 1, MAX_ROUNDS, &a->rounds))
				return -1;
			break;
		case OPT_FAIL_PROBE:
			if (parse_fail_probe(&a->cfg, optarg))
				return -1;
			break;
		case OPT_ROUND_SECS:
			if (parse_seconds("--round-secs", optarg, &a->round_s))
				return -1;
			/* its intervals (a tenth of it) must be ones the tracer can take, and its
			 * requests enough to say anything: below a second, neither holds */
			if (a->round_s < MIN_ROUND_S) {
				errorf("bad --round-secs '%s': a round is at least %g s", optarg,
				       MIN_ROUND_S);
				return -1;
			}
			break;
		case 'h':
			usage(stdout);
			return 1;
		case 'V':
			printf("iostrata %s\n", IOSTRATA_VERSION);
			return 1;
		default:
			errorf("%s", cli_getopt_problem(o, argv, long_opts, msg, sizeof(msg)));
			return -1;
		}
	}
	if (dashdash == argc) {
		errorf("no LOAD: give the command to run after '--' (see iostrata sched-ab --help)");
		return -1;
	}
	if (dashdash - optind != 2) {
		errorf("expected two scheduler specs, A and B, before '--' (got %d; see iostrata "
		       "sched-ab --help)", dashdash - optind);
		return -1;
	}
	if (!a->disk_arg) {
		errorf("no disk: -d DISK names the disk whose scheduler is compared");
		return -1;
	}
	if (gates_traced(&a->gates))
		return -1;
	for (i = 0; i < 2; i++) {
		a->spec_arg[i] = argv[optind + i];
		if (sched_spec_parse(a->spec_arg[i], &a->spec[i], why, sizeof(why))) {
			errorf("%s", why);
			return -1;
		}
	}
	if (dashdash + 1 == argc) {
		errorf("no LOAD after '--': give the command to run");
		return -1;
	}
	a->load = argv + dashdash + 1;
	return 0;
}

/*
 * iostrata-load's options in LOAD, and a --device's refusals, checked (its --check) before the
 * disk or a directory is touched: not found in round 1, once the scheduler was switched. 0; -2
 * (said) when it refuses them, a usage error; -1 (said) when it could not say.
 */
static int load_check(const struct sab *a, const char *bin)
{
	static const char prefix[] = "iostrata-load: error: ";
	char line[1024], **v;
	int n, st, code;

	/* its own --check (or one getopt takes for it) would end every round at once */
	for (n = 1; a->load[n]; n++)
		if (strlen(a->load[n]) >= 4 && !strncmp(a->load[n], "--check", strlen(a->load[n]))) {
			errorf("LOAD: %s makes iostrata-load check its options and exit: it would run "
			       "no load (sched-ab checks them itself)", a->load[n]);
			return -2;
		}
	v = calloc((size_t)n + 2, sizeof(*v));
	if (!v) {
		errorf("out of memory");
		return -1;
	}
	v[0] = (char *)bin;
	v[1] = (char *)"--check";
	memcpy(v + 2, a->load + 1, (size_t)(n - 1) * sizeof(*v));
	st = run_for_status(v, line, sizeof(line));
	free(v);
	if (st < 0) {
		errorf("checking LOAD: %s", line);
		return -1;
	}
	code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	/* --check prints nothing when it passes: what it printed is its --help or --version */
	if (!code && line[0]) {
		errorf("LOAD: iostrata-load printed its help or version, not a load (%s)", line);
		return -2;
	}
	if (!code)
		return 0;
	if ((code == 1 || code == 2) && line[0]) {	/* a refusal, as a run would say it */
		char *help = strstr(line, "(see --help)");

		if (help && !help[strlen("(see --help)")])	/* whose --help: iostrata-load's */
			snprintf(help, sizeof(line) - (size_t)(help - line),
				 "(see iostrata-load --help)");
		errorf("LOAD: %s", strncmp(line, prefix, sizeof(prefix) - 1) ? line :
		       line + sizeof(prefix) - 1);
		return -2;
	}
	if (WIFSIGNALED(st))
		errorf("checking LOAD: %s --check was killed by %s", bin,
		       strsignal(WTERMSIG(st)));
	else
		errorf("checking LOAD: %s --check ended with status %d%s%s", bin, code,
		       line[0] ? ": " : "", line);
	return -1;
}

/*
 * LOAD's argv: as given, or iostrata-load with them when they start with '-'; then it runs
 * past the round (the round stops it), not iostrata-load's default 10 s: a --runtime of ours
 * goes first, so that one of the user's, however abbreviated (--run=5s), comes later and wins,
 * and --ios alone ends it sooner as ever. 0; -2 (said) when LOAD cannot run, a usage error; -1
 * (said) otherwise.
 */
static int load_argv(struct sab *a)
{
	static char runtime[32];
	const char *bin;
	char **v;
	int n;

	if (a->load[0][0] != '-') {
		/* a command that cannot run is said before the disk or a directory is touched */
		char path[PATH_MAX];

		if (!path_lookup(a->load[0], path, sizeof(path))) {
			errorf("cannot run '%s': no such executable%s", a->load[0],
			       strchr(a->load[0], '/') ? "" : " in PATH");
			return -2;
		}
		/* iostrata-load named as a command: its options checked all the same */
		bin = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
		return strcmp(bin, "iostrata-load") ? 0 : load_check(a, path);
	}
	bin = load_binary();
	if (!bin) {
		errorf("LOAD starts with '%s', iostrata-load's options, but iostrata-load is neither "
		       "beside this binary nor in PATH", a->load[0]);
		return -1;
	}
	for (n = 0; a->load[n]; n++)
		;
	v = calloc((size_t)n + 3, sizeof(*v));
	if (!v) {
		errorf("out of memory");
		return -1;
	}
	snprintf(runtime, sizeof(runtime), "--runtime=%.0fs", ceil(a->round_s) + 60);
	v[0] = (char *)bin;
	v[1] = runtime;
	memcpy(v + 2, a->load, (size_t)n * sizeof(*v));
	a->load = v;
	return load_check(a, bin);
}

/* Round i (from 0) of A B B A A B B A ...: 0 for A, 1 for B. */
static int side_of(int i)
{
	return (i / 2) % 2 ? 1 - i % 2 : i % 2;
}

static char side_name(int side)
{
	return side ? 'B' : 'A';
}

/* Round i's recording (ext "ndjson") or the load's output (ext "log"). */
static void round_path(const struct sab *a, int i, const char *ext, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%c/round-%02d.%s", a->dir, side_name(side_of(i)), i + 1, ext);
}

/* The load's output goes to a file of its own: ours stays readable, its stays whole. */
static int log_open(const struct sab *a, const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (a->force ? O_TRUNC : O_EXCL), 0644);

	if (fd < 0)
		errorf("cannot create %s: %s%s", path, strerror(errno),
		       errno == EEXIST ? " (--force overwrites)" : "");
	return fd;
}

/* The last line the load wrote, for the error that says it failed. */
static void log_last_line(const char *path, char *buf, size_t len)
{
	char line[512];
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	while (f && fgets(line, sizeof(line), f))
		if (line[strspn(line, " \t\n")]) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(buf, len, "%s", line);
		}
	if (f)
		fclose(f);
}

/* ---- the disk */

/*
 * Which disk the name stands for: "diskseq N" (Linux 5.15+: a number the kernel gives each
 * disk it creates and each medium it attaches, a loop device's file among them: never the
 * same for another disk under the same name), else "dev MAJ:MIN" (which a disk re-created
 * under its name may have again). "" when neither can be read (the disk gone).
 */
static void disk_ident(const char *disk, char *buf, size_t len)
{
	static const char *const attr[] = { "diskseq", "dev" };
	char path[300], v[40];
	FILE *f = NULL;
	int i;

	buf[0] = '\0';
	for (i = 0; i < 2 && !f; i++) {
		snprintf(path, sizeof(path), "/sys/block/%s/%s", disk, attr[i]);
		f = fopen(path, "r");
	}
	if (!f)
		return;
	if (fgets(v, sizeof(v), f)) {
		v[strcspn(v, "\n")] = '\0';
		if (v[0])
			snprintf(buf, len, "%s %s", attr[i - 1], v);
	}
	fclose(f);
}

/*
 * One sched-ab on a disk at a time. A second one would take the first's scheduler of the
 * moment for the original and put that back when it ends, after the first had put back the
 * real one; and each would run its rounds under the other's switches. The lock is flock() on
 * the disk's own queue/scheduler: nothing to create or leave behind, released however the
 * process ends, and not inherited by LOAD (O_CLOEXEC). 0, or -1 said.
 */
static int lock_disk(struct sab *a)
{
	char path[300];

	snprintf(path, sizeof(path), "/sys/block/%s/queue/scheduler", a->disk);
	a->lock_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (a->lock_fd < 0 || flock(a->lock_fd, LOCK_EX | LOCK_NB)) {
		if (errno == EWOULDBLOCK)
			errorf("refusing %s: another iostrata sched-ab is running on it (it holds %s "
			       "locked)", a->disk, path);
		else
			errorf("cannot lock %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * 0; -2 (said) when -d names no disk or A or B a scheduler it does not offer, usage errors
 * (bad input, said before anything is changed); -1 (said) when the disk cannot be used
 */
static int check_disk(struct sab *a)
{
	char list[256], active[IOSCHED_NAME], why[1200];
	uint32_t dev;
	int i;

	if (disk_resolve(a->disk_arg, &a->cfg.dev))
		return -2;
	dev = a->cfg.dev;
	disk_name(dev, a->disk, sizeof(a->disk));
	disk_ident(a->disk, a->ident, sizeof(a->ident));
	i = iosched_offered(a->disk, list, sizeof(list), active, sizeof(active), why,
			    sizeof(why));
	if (i) {
		errorf("%s", why);
		return i;
	}
	for (i = 0; i < 2; i++)
		if (!iosched_in_list(list, a->spec[i].name)) {
			errorf("%s offers no scheduler '%s' (it offers: %s); a scheduler built as a "
			       "module is loaded with `modprobe %s-iosched`", a->disk,
			       a->spec[i].name, list, a->spec[i].name);
			return -2;
		}
	if (!a->allow_mounted && blkdev_in_use(a->disk, why, sizeof(why))) {
		errorf("refusing %s: %s (switching the scheduler of a disk in use is your call: "
		       "--allow-mounted)", a->disk, why);
		return -1;
	}
	return lock_disk(a);
}

enum { DISK_SAME, DISK_GONE, DISK_OTHER };

/*
 * Is the disk still the one checked at the start: not removed (hot-unplugged, a loop device
 * deleted), nor removed and another made under its name (a loop device's file detached and
 * another attached, a disk replaced), whose settings are not ours to change?
 */
static int disk_now(const struct sab *a, char *ident, size_t len)
{
	char path[300];

	snprintf(path, sizeof(path), "/sys/block/%s/queue", a->disk);
	disk_ident(a->disk, ident, len);
	if ((access(path, F_OK) && errno == ENOENT) || !ident[0])
		return DISK_GONE;
	return strcmp(ident, a->ident) ? DISK_OTHER : DISK_SAME;
}

/* Not the disk checked at the start (gone, or another under its name): 1 said, else 0. */
static int disk_lost(const struct sab *a)
{
	char now[64];

	switch (disk_now(a, now, sizeof(now))) {
	case DISK_GONE:
		errorf("%s is gone (removed during the run): nothing to put back; it was %s",
		       a->disk, a->orig_text);
		return 1;
	case DISK_OTHER:
		errorf("%s was replaced during the run (%s at the start, %s now: another disk, or "
		       "another file on the loop device): its settings are left alone; it was %s",
		       a->disk, a->ident, now, a->orig_text);
		return 1;
	}
	return 0;
}

/* The queue empty (inflight 0 0), so that no request of the last round is counted in this
 * one; -1 said, or on a signal (the caller says it). */
static int drain_wait(const struct sab *a)
{
	uint64_t end = clock_ns(CLOCK_MONOTONIC) + DRAIN_WAIT_S * 1000000000ULL;
	long n;

	while ((n = disk_inflight(a->cfg.dev))) {
		if (n < 0) {
			errorf("cannot read /sys/block/%s/inflight", a->disk);
			return -1;
		}
		if (session_stopping())
			return -1;
		if (clock_ns(CLOCK_MONOTONIC) > end) {
			errorf("%s still has %ld requests in flight after %d s: something else is "
			       "using it", a->disk, n, DRAIN_WAIT_S);
			return -1;
		}
		usleep(10000);
	}
	return 0;
}

/* ---- a round */

/* The meta record says which round of which side this is. */
static void round_meta(struct jw *w, const void *arg)
{
	const struct sab *a = arg;
	int side = side_of(a->round), i;
	char order[2 * MAX_ROUNDS + 1];

	for (i = 0; i < 2 * a->rounds; i++)
		order[i] = side_name(side_of(i));
	order[i] = '\0';
	jw_obj(w, "sched_ab");
	jw_u64(w, "round", (uint64_t)a->round + 1);
	jw_u64(w, "rounds", (uint64_t)(2 * a->rounds));
	jw_str(w, "order", order);
	jw_str(w, "side", side ? "B" : "A");
	jw_str(w, "spec", a->spec_arg[side]);
	jw_str(w, "a", a->spec_arg[0]);
	jw_str(w, "b", a->spec_arg[1]);
	jw_str(w, "original", a->orig_text);
	jw_str(w, "scheduler", a->now->sched);
	jw_obj(w, "tunables");	/* as they read in the round: the spec's over the defaults */
	for (i = 0; i < a->now->ntun; i++)
		jw_str(w, a->now->tun[i].name, a->now->tun[i].val);
	jw_end_obj(w);
	jw_end_obj(w);
}

/*
 * The end of a round: the load is told to stop while tracing still runs, and tracing ends when
 * the load has (its pidfd), so that every request it issued, those in flight when it was told
 * included, is in the round. SIGTERM to its group at the round's end, SIGKILL a grace later.
 * The timer's SIGALRM is the kernel's (SI_KERNEL, which no other process can send): any other
 * SIGALRM (kill -ALRM) is a stop like SIGTERM, at any time. It ended the round early as if its
 * time were up, or between rounds was ignored.
 */
static volatile sig_atomic_t round_pgid, round_alarms, round_pidfd;

static void on_round_end(int sig, siginfo_t *si, void *uc)
{
	struct itimerval grace = { .it_value = { STOP_GRACE_MS / 1000,
						 STOP_GRACE_MS % 1000 * 1000 } };
	struct pollfd p = { .fd = round_pidfd, .events = POLLIN };

	if (si->si_code != SI_KERNEL) {
		session_stop(sig);
		return;
	}
	if (round_pgid <= 0)
		return;
	/*
	 * The load ended already (its exit seen, tracing settling the disk): the round is one it
	 * ended, whose status is checked. Counted as the timer's, a load failing within the last
	 * ~100 ms of a round (the settling) was taken for a good round.
	 */
	if (!round_alarms && round_pidfd > 0 && poll(&p, 1, 0) > 0)
		return;
	kill(-round_pgid, round_alarms++ ? SIGKILL : SIGTERM);
	if (round_alarms == 1)
		setitimer(ITIMER_REAL, &grace, NULL);
}

static void round_timer(pid_t pgid, int pidfd, double secs)
{
	struct sigaction sa = { .sa_sigaction = on_round_end, .sa_flags = SA_RESTART | SA_SIGINFO };
	struct itimerval t = { .it_value = { (time_t)secs,
					     (suseconds_t)((secs - (time_t)secs) * 1e6) } };

	if (!t.it_value.tv_sec && !t.it_value.tv_usec)
		t.it_value.tv_usec = 1;
	round_alarms = 0;
	round_pgid = pgid;
	round_pidfd = pidfd;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &t, NULL);
}

static void round_timer_off(void)
{
	struct itimerval off = { 0 };

	setitimer(ITIMER_REAL, &off, NULL);
	round_pgid = 0;
}

/* A round under way: its files, its tracing session, the disk's count when it began. */
struct round {
	struct sab *a;
	struct recorder *rc;
	struct session *s;
	int logfd;
	int64_t done0;
	char path[PATH_MAX + 32], logpath[PATH_MAX + 32];
	struct layer_report reps[NLAYERS];
};

/* The sink: the interval to the round's recording, its requests counted. */
static int round_interval(const struct interval *iv, void *arg)
{
	struct round *r = arg;
	struct sab *a = r->a;
	size_t i;
	int j;

	for (i = 0; i < iv->recs.n; i++)
		if (!strcmp(iv->recs.v[i].stage, "total"))
			a->requests[a->round] += iv->recs.v[i].h.count + iv->recs.v[i].h.unmeasured;
	/* completed with no program running (docs/trust.md): requests too, not measured */
	for (j = 0; j < iv->ndrops; j++)
		if (!strcmp(iv->drops[j].name, "complete_unseen"))
			a->requests[a->round] += iv->drops[j].n;
	a->seconds[a->round] += iv->interval_ns / 1e9;
	return recorder_interval(r->rc, iv);
}

/* A round that never ran leaves nothing: tracing detached, its files removed. */
static void round_abandon(struct round *r)
{
	session_close(r->s);
	if (r->rc)
		recorder_discard(r->rc);
	if (r->logfd >= 0) {
		close(r->logfd);
		unlink(r->logpath);
	}
}

/*
 * The disk set to the round's spec and drained, its files made, tracing attached, then LOAD
 * started. 0, or 1 with one line said and nothing of the round left.
 */
static int round_start(struct sab *a, struct round *r)
{
	struct rec_meta m = { .cfg = &a->cfg, .lim = &a->lim, .argc = a->argc, .argv = a->argv,
			      .reps = r->reps, .extra = round_meta, .extra_arg = a };
	const struct sched_spec *sp = &a->spec[side_of(a->round)];
	char why[1200] = "";

	/* another disk under the name since the last round: not switched (run() says it) */
	if (disk_now(a, why, sizeof(why)) != DISK_SAME)
		return 1;
	if (iosched_apply(a->disk, sp, why, sizeof(why)) ||
	    iosched_save(a->disk, a->now, why, sizeof(why))) {
		errorf("%s", why);
		return 1;
	}
	if (drain_wait(a))
		return 1;
	round_path(a, a->round, "log", r->logpath, sizeof(r->logpath));
	round_path(a, a->round, "ndjson", r->path, sizeof(r->path));
	if ((r->logfd = log_open(a, r->logpath)) < 0 ||
	    !(r->rc = recorder_create(r->path, a->force, false)) ||
	    session_open(&a->cfg, false, &r->s, r->reps, NULL))
		goto fail;
	m.s = r->s;
	if (recorder_meta(r->rc, &m))
		goto fail;
	/* the first interval starts (what the layers saw while attaching put aside), then the
	 * load: started before, its first I/O would be dropped with the rest */
	if (session_begin(r->s))
		goto fail;
	r->done0 = disk_completed(a->cfg.dev);	/* attached, the disk idle: the round starts */
	if (child_start(a->load, r->logfd, &a->child, why, sizeof(why))) {
		errorf("%s", why);
		goto fail;
	}
	close(r->logfd);
	r->logfd = -1;
	a->contained = a->child.cg_fd >= 0;
	if (!a->contained && !a->said_uncontained) {
		warnf("the load runs without a cgroup of its own (%s): what it starts outside its "
		      "process group (setsid, a daemon) is not stopped with it", a->child.cg_path);
		a->said_uncontained = true;
	}
	return 0;
fail:
	round_abandon(r);
	return 1;
}

/*
 * Some of the round's load still ran 5 s after the kill at its stop (a process in D state, which
 * no signal ends until it wakes), its cgroup left behind: one warning, as the load's end says
 * it ("killed, but some still ran after 5 s"), where that is not said. A signal or an error in
 * the round said nothing of it.
 */
static void stuck_said(const struct sab *a)
{
	warnf("round %d: the load was stopped and killed, but some of it still ran after 5 s "
	      "(in %s)", a->round + 1, a->child.cg_path);
}

/* The round's line, and what the disk's own count says about it. */
static void round_said(const struct sab *a, const struct round *r, bool early)
{
	int side = side_of(a->round);

	/* the kernel's count: the same unless something queued I/O around the round's edges */
	if (a->completed[a->round] >= 0 && (uint64_t)a->completed[a->round] != a->requests[a->round])
		warnf("round %d: %llu requests traced, but %s completed %lld in the round (requests "
		      "queued before it began or done after it ended)", a->round + 1,
		      (unsigned long long)a->requests[a->round], a->disk,
		      (long long)a->completed[a->round]);
	if (early)
		warnf("round %d: the load ended by itself after %.1f s: the round is that long",
		      a->round + 1, a->seconds[a->round]);
	if (a->left > 0)
		warnf("round %d: the load left %d process%s running when it ended (in the "
		      "background, or a session of %s own): %s", a->round + 1, a->left,
		      a->left == 1 ? "" : "es", a->left == 1 ? "its" : "their", a->left_gone ?
		      "killed then" : "killed, but some still ran after 5 s");
	if (a->stuck && (a->left <= 0 || a->left_gone))	/* not said by the line above */
		stuck_said(a);
	if (a->unsettled)
		warnf("round %d: %s was still completing requests %d s after the load ended (%s, "
		      "or someone else's I/O): the round ends there, without what came after",
		      a->round + 1, a->disk, SESSION_SETTLE_S, a->contained ? "its writeback" :
		      "its writeback, what it started outside its process group");
	if (!a->json)
		printf("round %2d/%ld  %c  %-24s %6.1f s %10llu requests  %s\n", a->round + 1,
		       2 * a->rounds, side_name(side), a->spec_arg[side], a->seconds[a->round],
		       (unsigned long long)a->requests[a->round], r->path + strlen(a->dir) + 1);
	fflush(stdout);
}

/*
 * The load's process has ended, by itself or told to: what it left running (in the background,
 * or in a session of its own) is killed now, before tracing waits for the disk to go quiet, so
 * that the round ends with the load and nothing of it runs into the next round or outlives the
 * run.
 */
static void load_ended(void *arg)
{
	struct sab *a = arg;
	uint64_t end = clock_ns(CLOCK_MONOTONIC) + STOP_GRACE_MS * 1000000ULL;

	/* its process group is told to stop too, if the round's end has not (a second SIGTERM
	 * would cut iostrata-load's summary short), and has the grace to */
	if (!round_alarms)
		kill(-a->child.pid, SIGTERM);
	while (child_group_running(&a->child) > 0 && !session_stopping() &&
	       clock_ns(CLOCK_MONOTONIC) < end)
		usleep(5000);
	a->left = child_end_rest(&a->child, &a->left_gone);
}

/* Run round a->round: 0, or 1 with one line said (the caller restores). */
static int round_run(struct sab *a)
{
	struct round r = { .a = a, .logfd = -1 };
	int side = side_of(a->round), err;
	char why[1200], st[64];
	const char *reason;
	int64_t done1;
	bool early, quiet, gone;

	if (round_start(a, &r))
		return 1;
	a->recorded = true;
	/* without a pidfd (before Linux 5.3) tracing ends with the round, before the load */
	a->lim.stop_fd = a->child.pidfd > 0 ? a->child.pidfd : 0;
	a->lim.duration_s = a->lim.stop_fd ? 0 : a->round_s;
	a->lim.fd_ended = load_ended;
	a->lim.fd_ended_arg = a;
	a->left = 0;
	round_timer(a->child.pid, a->child.pidfd, a->round_s);
	err = session_run(r.s, &a->lim, round_interval, &r);
	done1 = disk_completed(a->cfg.dev);
	a->completed[a->round] = r.done0 >= 0 && done1 >= 0 ? done1 - r.done0 : -1;
	round_timer_off();
	early = !round_alarms && !session_stopping();
	child_stop(&a->child, STOP_GRACE_MS, &gone);
	a->stuck = !gone || (a->left > 0 && !a->left_gone);
	quiet = session_disk_settled(r.s);
	session_close(r.s);	/* detached before anything else is said or done */
	/* a switch not ours in the round (an admin, a tuning daemon): its figures, and its meta
	 * record's scheduler, are not the spec's; the run stops rather than compare them */
	if (!err && !session_stopping() && disk_now(a, why, sizeof(why)) != DISK_SAME) {
		err = 1;	/* run() says it */
	} else if (!err && !session_stopping() && iosched_check(a->now, why, sizeof(why))) {
		errorf("%s was changed during round %d, not by sched-ab (%s): the round did not run "
		       "under %c (%s) alone; stopped, the original is put back", a->disk,
		       a->round + 1, why, side_name(side), a->spec_arg[side]);
		err = 1;
	}
	if (session_stopping())
		reason = "signal";
	else if (err)
		reason = "error";
	else if (early)
		reason = "load-ended";
	else
		reason = "duration";
	err |= recorder_close(r.rc, reason);
	/* no round's line then, to say what outlived the kill (a signal, an error): said here */
	if (err || session_stopping()) {
		if (a->stuck)
			stuck_said(a);
		return 1;
	}
	if (early && !child_ok(&a->child)) {
		if (a->stuck)
			stuck_said(a);
		log_last_line(r.logpath, why, sizeof(why));
		errorf("the load %s in round %d (%c: %s)%s%s; its output: %s",
		       child_status(&a->child, st, sizeof(st)), a->round + 1, side_name(side),
		       a->spec_arg[side], *why ? ": " : "", why, r.logpath);
		return 1;
	}
	a->unsettled = !quiet;
	round_said(a, &r, early);
	return 0;
}

/* ---- the output directory */

/* 0 (*made: by us), or -1 said. */
static int make_dir(const char *path, bool existing_ok, bool *made)
{
	struct stat st;

	if (!mkdir(path, 0755)) {
		*made = true;
		return 0;
	}
	if (errno == EEXIST && existing_ok && !stat(path, &st) && S_ISDIR(st.st_mode))
		return 0;
	errorf("cannot create directory %s: %s", path,
	       errno == EEXIST ? (existing_ok ? "it exists and is not a directory" : "it exists")
			       : strerror(errno));
	return -1;
}

/* round-NN.ndjson or round-NN.log: a file of a sched-ab round */
static bool round_file(const char *name)
{
	size_t digits;

	if (strncmp(name, "round-", 6))
		return false;
	digits = strspn(name + 6, "0123456789");
	return digits && (!strcmp(name + 6 + digits, ".ndjson") || !strcmp(name + 6 + digits, ".log"));
}

/*
 * The round files of an earlier run in DIR/A or DIR/B. With --force (remove) they go, all of
 * them, so that the side holds this run's alone (an earlier run of more rounds left its later
 * rounds beside these, and compare DIR/A DIR/B mixed the two runs); only round files are
 * removed. Without it the side is refused before any round: this run's round of the same name
 * would fail only when it came, after rounds that had run. 0, or -1 said.
 */
static int earlier_rounds(const char *side_dir, bool remove)
{
	char path[PATH_MAX + 300];
	struct dirent *de;
	DIR *d = opendir(side_dir);
	int err = 0;

	if (!d)
		return 0;
	while (!err && (de = readdir(d))) {
		if (!round_file(de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", side_dir, de->d_name);
		if (!remove) {
			errorf("%s holds an earlier run's round (%s): --force replaces its rounds, "
			       "or choose another -o", side_dir, de->d_name);
			err = -1;
		} else if (unlink(path) && errno != ENOENT) {
			errorf("cannot remove %s (an earlier run's round): %s", path,
			       strerror(errno));
			err = -1;
		}
	}
	closedir(d);
	return err;
}

static int make_dirs(struct sab *a)
{
	char sub[PATH_MAX + 8];
	time_t now = time(NULL);
	struct tm tm;
	int i;

	if (a->dir_arg) {
		snprintf(a->dir, sizeof(a->dir), "%s", a->dir_arg);
	} else {
		localtime_r(&now, &tm);
		strftime(a->dir, sizeof(a->dir), "sched-ab-%Y%m%d-%H%M%S", &tm);
	}
	if (make_dir(a->dir, a->dir_arg != NULL, &a->made[2]))
		return -1;
	for (i = 0; i < 2; i++) {
		snprintf(sub, sizeof(sub), "%s/%c", a->dir, side_name(i));
		if (make_dir(sub, true, &a->made[i]) || earlier_rounds(sub, a->force))
			return -1;
	}
	return 0;
}

/* A run that recorded nothing (round 1 never ran) leaves no empty directories of ours. */
static void unmake_dirs(const struct sab *a)
{
	char sub[PATH_MAX + 8];
	int i;

	for (i = 0; i < 2; i++) {
		snprintf(sub, sizeof(sub), "%s/%c", a->dir, side_name(i));
		if (a->made[i])
			rmdir(sub);	/* ENOTEMPTY: a round's files are there, kept */
	}
	if (a->made[2])
		rmdir(a->dir);
}

/* ---- the comparison */

struct verdicts {
	struct cmp_result *ab, *aa;
	char aa_why[512];	/* why there is no A/A result */
	int aa_changes, aa_compared;
	bool reliable;
	char reason[768];
	int regressed;		/* 3 when a gate regressed, else 0 */
};

/*
 * Which half of the A/A control the nth A round (0-based) is in: 0, 1, 1, 0, 0, 1, 1, 0... A's
 * rounds in ABBA order are 1, 4, 5, 8...: halves {1, 8} and {4, 5} sit at the same mean
 * position, so steady drift cancels in the control as in the comparison (alternate rounds,
 * {1, 5} against {4, 8}, put one half later: benign drift made the control call changes).
 */
static int aa_half(int nth)
{
	return ((nth + 1) / 2) % 2;
}

/* Every A round in one set and every B round in another; A's rounds in two more (aa_half). */
static int compare_rounds(struct sab *a, struct verdicts *v)
{
	struct cmp_set *set[4] = { cmp_set_new(), cmp_set_new(), cmp_set_new(), cmp_set_new() };
	char path[PATH_MAX + 32];
	int i, nth_a = 0, err = -1;

	for (i = 0; i < 4; i++)
		if (!set[i]) {
			errorf("out of memory");
			goto out;
		}
	for (i = 0; i < 2 * a->rounds; i++) {
		int side = side_of(i);

		round_path(a, i, "ndjson", path, sizeof(path));
		if (cmp_set_add_file(set[side], path) ||
		    (!side && cmp_set_add_file(set[2 + aa_half(nth_a++)], path)))
			goto out;
	}
	if (!(v->ab = cmp_run(set[0], set[1], &a->co)))
		goto out;
	log_mute(true);		/* a control that cannot be run is a reason, not an error */
	v->aa = cmp_set_files(set[3]) ? cmp_run(set[2], set[3], &a->co) : NULL;
	log_mute(false);
	if (!v->aa)
		snprintf(v->aa_why, sizeof(v->aa_why), "%s", cmp_set_files(set[3]) ?
			 log_muted_error() : "A has one round: nothing to split (--rounds 2 or more)");
	err = 0;
out:
	for (i = 0; i < 4; i++)
		cmp_set_free(set[i]);
	return err;
}

/*
 * Reliable: the control judged at least half as many quantiles as the comparison did (it has
 * half the rounds a side) and called none changed. Events the tracer lost are no reason: each
 * interval holds whatever values they had, and a verdict they could change is withheld.
 * compare's intervals are simultaneous at alpha over the table, so a single change between A
 * and A already says the noise is beyond what they allow for (a rate of alpha over the
 * quantiles, as before, let a control of 12 quantiles call none and one of 40 call two).
 */
static void judge(struct verdicts *v)
{
	int ab_compared = 0;

	cmp_changes(v->ab, &ab_compared);
	if (v->aa)
		v->aa_changes = cmp_changes(v->aa, &v->aa_compared);
	if (!v->aa)
		snprintf(v->reason, sizeof(v->reason), "the A/A control could not be run (%s): "
			 "the machine's noise is unknown", v->aa_why);
	else if (!v->aa_compared)
		snprintf(v->reason, sizeof(v->reason), "the A/A control had enough data for no "
			 "quantile: the machine's noise is unknown; use more or longer rounds");
	else if (v->aa_changes)
		snprintf(v->reason, sizeof(v->reason), "A/A called %d of %d quantiles changed: the "
			 "machine's noise exceeds the threshold; use more rounds or a larger "
			 "--threshold", v->aa_changes, v->aa_compared);
	else if (2 * v->aa_compared < ab_compared)
		snprintf(v->reason, sizeof(v->reason), "the A/A control had enough data for %d "
			 "quantiles, the comparison judged %d: its silence covers too little; use "
			 "more or longer rounds", v->aa_compared, ab_compared);
	else
		v->reliable = true;
}

/* "1, 8" for the A rounds of half h (aa_half), 1-based in the whole order. */
static void half_rounds(const struct sab *a, int h, char *buf, size_t len)
{
	size_t used = 0;
	int i, nth = 0;

	buf[0] = '\0';
	for (i = 0; i < 2 * a->rounds && used < len; i++)
		if (!side_of(i) && aa_half(nth++) == h)
			used += (size_t)snprintf(buf + used, len - used, "%s%d", used ? ", " : "",
						 i + 1);
}

static void print_text(const struct sab *a, struct verdicts *v)
{
	char h0[256], h1[256];

	printf("\nB (%s) against A (%s): the block layer of %s, %ld rounds of each\n",
	       a->spec_arg[1], a->spec_arg[0], a->disk, a->rounds);
	cmp_print_text(v->ab, stdout);
	if (a->verbose)
		cmp_print_why(v->ab, stdout);
	half_rounds(a, 0, h0, sizeof(h0));
	half_rounds(a, 1, h1, sizeof(h1));
	if (v->aa)
		printf("\nA/A control: A's rounds %s against %s, compared the same way: %d of %d "
		       "quantiles called a change (%.1f%%; alpha %.0f%%)\n", h0, h1,
		       v->aa_changes, v->aa_compared,
		       v->aa_compared ? 100.0 * v->aa_changes / v->aa_compared : 0.0,
		       100 * a->co.alpha);
	else
		printf("\nA/A control: not run: %s\n", v->aa_why);
	if (v->reliable)
		printf("verdicts: reliable (the A/A control called no change)\n");
	else
		printf("verdicts: UNRELIABLE: %s\n", v->reason);
	/* on verdicts the control calls unreliable a gate neither passes nor fails: exit 4 */
	v->regressed = cmp_gates_say(&a->gates, v->ab, v->reliable, NULL);
	printf("%s: original restored: %s\n", a->disk, a->orig_text);
}

static int print_json(const struct sab *a, struct verdicts *v)
{
	char path[PATH_MAX + 32];
	struct jw w;
	int i, err;

	jw_init(&w);
	jw_obj(&w, NULL);
	jw_str(&w, "type", "sched_ab");
	jw_str(&w, "disk", a->disk);
	jw_str(&w, "a", a->spec_arg[0]);
	jw_str(&w, "b", a->spec_arg[1]);
	jw_str(&w, "original", a->orig_text);
	jw_bool(&w, "restored", true);
	jw_str(&w, "dir", a->dir);
	jw_arr(&w, "rounds");
	for (i = 0; i < 2 * a->rounds; i++) {
		round_path(a, i, "ndjson", path, sizeof(path));
		jw_obj(&w, NULL);
		jw_u64(&w, "round", (uint64_t)i + 1);
		jw_str(&w, "side", side_of(i) ? "B" : "A");
		jw_str(&w, "file", path);
		jw_f64(&w, "seconds", a->seconds[i]);
		jw_u64(&w, "requests", a->requests[i]);
		if (a->completed[i] >= 0)
			jw_u64(&w, "disk_completed", (uint64_t)a->completed[i]);
		jw_end_obj(&w);
	}
	jw_end_arr(&w);
	jw_obj(&w, "compare");
	cmp_write_json(v->ab, &w);
	jw_end_obj(&w);
	jw_obj(&w, "aa");
	jw_str(&w, "split", "A rounds 1, 8, 9, 16... against 4, 5, 12, 13...");
	if (v->aa) {
		jw_u64(&w, "changes", (uint64_t)v->aa_changes);
		jw_u64(&w, "compared", (uint64_t)v->aa_compared);
	} else {
		jw_str(&w, "not_run", v->aa_why);
	}
	jw_end_obj(&w);
	jw_bool(&w, "reliable", v->reliable);
	if (!v->reliable)
		jw_str(&w, "reason", v->reason);
	v->regressed = cmp_gates_say(&a->gates, v->ab, v->reliable, &w);
	jw_end_obj(&w);
	err = w.oom ? -1 : jw_flush_line(&w, stdout);
	jw_free(&w);
	return err;
}

/* ---- the command */

/*
 * A stop asked for by a signal, said in one line: 1; 0 when none was. After the rounds (the
 * disk already put back, the comparison under way) too: the run was asked to stop, so it does
 * not end as one that ran its course (exit 0, or a gate's 3 or 4); the rounds stay in DIR.
 */
static int said_stopped(const struct sab *a, bool rounds_done, const char *when)
{
	int sig = session_stop_signal();
	char name[32];

	if (!sig)
		return 0;
	stop_signal_name(sig, name, sizeof(name));
	if (rounds_done)
		errorf("stopped by %s after the last round, %s: %s restored to %s; the rounds are "
		       "in %s (iostrata compare %s/A %s/B)", name, when, a->disk, a->orig_text,
		       a->dir, a->dir, a->dir);
	else if (!a->round)
		errorf("stopped by %s before round 1 of %ld: %s restored to %s", name,
		       2 * a->rounds, a->disk, a->orig_text);
	else
		errorf("stopped by %s in round %d of %ld: the load was stopped, tracing detached, "
		       "%s restored to %s", name, a->round, 2 * a->rounds, a->disk, a->orig_text);
	return 1;
}

/* The rounds, with the disk as it was put back whatever happens. 0, or 1 said. */
static int run(struct sab *a)
{
	char why[1200];
	int err = 0;

	for (a->round = 0; a->round < 2 * a->rounds && !err; a->round++) {
		if (session_stopping())
			break;
		err = round_run(a);
	}
	if (!a->recorded)
		unmake_dirs(a);
	if (disk_lost(a))
		return 1;
	if (iosched_restore(a->orig, why, sizeof(why))) {
		errorf("%s; it was %s", why, a->orig_text);
		return 1;
	}
	/* every round ran: a signal since came after the last one */
	if (said_stopped(a, !err && a->round == 2 * a->rounds, "before the rounds were compared"))
		return 1;
	return err;
}

int cmd_sched_ab(int argc, char **argv)
{
	struct sab a = { .rounds = 4, .round_s = 10, .argc = argc, .argv = argv,
			 .cfg = TRACE_CONFIG_DEFAULT, .co = CMP_OPTS_DEFAULT };
	struct verdicts v = { 0 };
	char why[1200];
	bool cut = false;
	int r, i, bad;

	log_init("iostrata", log_json(), 0);
	r = parse_args(argc, argv, &a);
	if (r)
		return r > 0 ? 0 : 2;
	log_init("iostrata", a.json, a.verbose);
	/* ABBA balances drift over pairs of rounds: AB alone (or ABBA AB) runs B later */
	if (a.rounds % 2)
		warnf("--rounds %ld is odd: B's rounds then run later than A's on average, so drift "
		      "over the run is not balanced between them (an even number balances it)",
		      a.rounds);
	if (!privileged()) {
		errorf("must be run as root (switching schedulers and loading BPF need it)");
		return 1;
	}
	r = check_disk(&a);
	if (!r)
		r = load_argv(&a);
	if (r)
		return r == -2 ? 2 : 1;
	a.cfg.layers = 1u << LAYER_BLOCK;
	a.cfg.per_op = true;
	a.lim.interval_s = a.round_s >= 10 ? 1 : a.round_s / 10;
	a.orig = malloc(sizeof(*a.orig));
	a.now = malloc(sizeof(*a.now));
	if (!a.orig || !a.now) {
		errorf("out of memory");
		free(a.orig);
		free(a.now);
		return 1;
	}
	/* from here a signal stops the run, and the disk is put back */
	session_signals();
	if (iosched_save(a.disk, a.orig, why, sizeof(why))) {
		errorf("%s", why);
		free(a.orig);
		free(a.now);
		return 1;
	}
	iosched_describe(a.orig, a.orig_text, sizeof(a.orig_text));
	/* both specs tried first: a bad tunable is said before anything is created or run */
	for (i = 0, bad = 0; i < 2 && !bad; i++)
		bad = iosched_apply(a.disk, &a.spec[i], why, sizeof(why));
	if (bad || make_dirs(&a)) {
		if (bad)
			errorf("%s", why);
		unmake_dirs(&a);
		r = iosched_restore(a.orig, why, sizeof(why));
		if (r)
			errorf("%s; it was %s", why, a.orig_text);
		free(a.orig);
		free(a.now);
		return bad == -2 && !r ? 2 : 1;	/* 2: the spec is what is wrong */
	}
	if (!a.json) {
		printf("sched-ab on %s: A = %s, B = %s; %ld rounds of each, %.1f s, in ABBA order\n",
		       a.disk, a.spec_arg[0], a.spec_arg[1], a.rounds, a.round_s);
		printf("%s: original %s (restored on exit)\n", a.disk, a.orig_text);
		printf("recording to %s/\n", a.dir);
		fflush(stdout);
	}
	child_sweep();	/* a killed run's load, still reading, would be in round 1 */
	r = run(&a);
	free(a.orig);
	free(a.now);
	if (r)
		return 1;
	if (compare_rounds(&a, &v)) {
		cmp_result_free(v.ab);
		return 1;
	}
	judge(&v);
	/* the gates were checked against what sched-ab traces; a stage with no data is said */
	if (cmp_gates_check(&a.gates, v.ab)) {
		cmp_result_free(v.ab);
		cmp_result_free(v.aa);
		return 1;
	}
	/* a signal in the comparison, or while its result was written, stops the run too */
	r = said_stopped(&a, true, "while comparing the rounds");
	if (!r) {
		errno = 0;
		r = a.json ? print_json(&a, &v) :
			     (print_text(&a, &v), fflush(stdout) || ferror(stdout) ? -1 : 0);
		/* a stop that cut the result short (stdout full, stopout.h) is said as the stop */
		cut = r && errno == ECANCELED;
		r = cut ? 0 : sink_written(r) > 0;
	}
	if (!r)
		r = said_stopped(&a, true, cut ? "its result cut short (stdout full)" :
				 "while its result was written");
	cmp_result_free(v.ab);
	cmp_result_free(v.aa);
	return r ? 1 : v.regressed;
}
