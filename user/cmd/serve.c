// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * iostrata serve: the tracing session as a Prometheus exporter. Each interval is folded into
 * cumulative counts kept here (out/prom.c); GET /metrics renders them (a scrape never touches
 * a BPF map). Once the programs are attached the process becomes --user with no capabilities:
 * the maps it reads through the fds it holds need none.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <bpf/libbpf.h>
#include "cli.h"
#include "cmd.h"
#include "gzparts.h"
#include "http.h"
#include "log.h"
#include "privs.h"
#include "prom.h"
#include "sysinfo.h"
#include "trace_opts.h"

#define LISTEN_DEFAULT "127.0.0.1:9750"

struct serve_args {
	struct trace_opts t;
	const char *listen, *user;
	const char *listen_arg, *user_arg;	/* as given, once each */
	struct prom_opts prom;
	bool bpf_refused;	/* testing: act as if bpf() needed CAP_BPF on held fds */
};

/* What the session's thread and the HTTP thread share. */
struct serve {
	pthread_mutex_t lock;		/* prom */
	pthread_barrier_t started;	/* the HTTP thread is running, without capabilities */
	struct prom *prom;
	struct http_server *http;
	int bpo;
	bool http_failed;		/* set by the HTTP thread, atomically */
	bool caps_kept;			/* the HTTP thread could not drop its capabilities
					 * (written before the barrier, read after it) */
	bool drop_caps;			/* the process kept CAP_BPF: the HTTP thread drops it */
	/* the HTTP thread's own */
	struct http_blob *rendered, *index;
	uint64_t rendered_at;		/* prom_intervals() it was rendered at */
	/* rendered as a gzip head (gzparts.h), made at the first scrape taking gzip */
	struct http_blob *rendered_gz;
	struct gz_head gz;
	uint64_t scrape_ns, scrapes;
	uint64_t start_ns;		/* CLOCK_REALTIME */
};

static const char usage_head[] =
"Usage: iostrata serve [OPTIONS]\n"
"\n"
"Traces like iostrata and serves the histograms in the Prometheus text format on\n"
"GET /metrics: iostrata_latency_seconds{layer,stage,device,op,...}, drops and\n"
"unmeasured counts, cumulative since start. After attaching it runs as --user\n"
"with no capabilities. Stops on SIGTERM or SIGINT (or --duration).\n"
"\n"
"      --listen=ADDR:PORT  where to serve (default " LISTEN_DEFAULT "; [::1]:PORT)\n"
"      --user=USER       the user it becomes after attaching (default nobody;\n"
"                        root keeps every privilege)\n"
"      --buckets-per-octave=N  le buckets: 1, 2, 4 (default) or 8 per octave\n"
"      --max-series=N    latency label sets before the rest are folded into\n"
"                        \"other\" (default 1000)\n"
"      --expire=SEC      drop a latency label set no I/O came to for SEC, freeing\n"
"                        its room under --max-series; back later, it counts from 0\n"
"                        again (default 3600; never: keep every one)\n"
"      --interval=SEC    how often the kernel's histograms are drained (default 1)\n"
"      --bpf-refused     testing: act as if the kernel refused bpf() to a process\n"
"                        without CAP_BPF (before Linux 5.19, with\n"
"                        kernel.unprivileged_bpf_disabled set)\n";

static const char usage_labels[] =
"  -P, --per-process     a comm label: the process name (never a pid)\n"
"  -O, --per-opcode      an opcode label: io_uring opcode / aio command\n";

static const char usage_tail[] =
"\n"
"Examples:\n"
"  iostrata serve                          every layer, on 127.0.0.1:9750\n"
"  iostrata serve --listen 0.0.0.0:9750 -O  for a Prometheus elsewhere\n";

static void usage(FILE *f)
{
	fputs(usage_head, f);
	fputs(trace_opts_help_what, f);
	fputs(usage_labels, f);
	fputs(trace_opts_help_knobs, f);
	usage_layers(f);
	fputs(usage_tail, f);
}

enum { OPT_LISTEN = TOPT_NEXT, OPT_USER, OPT_BPO, OPT_MAX_SERIES, OPT_INTERVAL,
       OPT_BPF_REFUSED, OPT_EXPIRE };

static const struct option long_opts[] = {
	TRACE_OPTS_LONG,
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "user", required_argument, NULL, OPT_USER },
	{ "buckets-per-octave", required_argument, NULL, OPT_BPO },
	{ "max-series", required_argument, NULL, OPT_MAX_SERIES },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "expire", required_argument, NULL, OPT_EXPIRE },
	{ "bpf-refused", no_argument, NULL, OPT_BPF_REFUSED },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ 0 },
};

/* 0 ok, 1 exit 0 (help/version), -1 usage error (said) */
static int parse_args(int argc, char **argv, struct serve_args *a)
{
	long v;
	int o;

	while ((o = trace_getopt(&a->t, argc, argv, "hV", long_opts)) != -1) {
		switch (o) {
		case -2: return -1;
		case OPT_LISTEN:
			if (opt_once("--listen", a->listen_arg, optarg, "used") ||
			    http_addr_check(optarg))
				return -1;
			a->listen = a->listen_arg = optarg;
			break;
		case OPT_USER:
			if (opt_once("--user", a->user_arg, optarg, "used"))
				return -1;
			if (!*optarg) {
				errorf("bad --user '': expected a user name or uid");
				return -1;
			}
			a->user = a->user_arg = optarg;
			break;
		case OPT_BPO:
			if (parse_long("--buckets-per-octave", optarg, 1, 8, &v))
				return -1;
			if (v & (v - 1)) {
				errorf("bad --buckets-per-octave '%s': expected 1, 2, 4 or 8", optarg);
				return -1;
			}
			a->prom.buckets_per_octave = (int)v;
			break;
		case OPT_MAX_SERIES:
			if (parse_long("--max-series", optarg, 1, PROM_MAX_SERIES_LIMIT, &v))
				return -1;
			a->prom.max_series = (uint32_t)v;
			break;
		case OPT_INTERVAL:
			if (parse_seconds("interval", optarg, &a->t.lim.interval_s))
				return -1;
			break;
		case OPT_EXPIRE: {
			double sec;

			if (!strcmp(optarg, "never")) {
				a->prom.expire_ns = 0;
				break;
			}
			if (parse_seconds("--expire", optarg, &sec))
				return -1;
			a->prom.expire_ns = (uint64_t)(sec * 1e9);
			break;
		}
		case OPT_BPF_REFUSED:
			a->bpf_refused = true;
			break;
		default:	/* -h, -V, ':' or '?' */
			return trace_opt_rest(&a->t, o, argv, usage);
		}
	}
	if (optind < argc) {
		errorf("serve takes no argument '%s' (see iostrata serve --help)", argv[optind]);
		return -1;
	}
	/* the labels every series has where its layer has them: device and op */
	a->t.cfg.per_disk = a->t.cfg.per_op = true;
	a->prom.comm = a->t.cfg.per_process;
	a->prom.opcode = a->t.cfg.per_opcode;
	a->prom.cgroup = a->t.cfg.per_cgroup;
	return trace_opts_finish(&a->t);
}

/* ---- the HTTP thread */

static const char index_html[] =
"<!DOCTYPE html>\n<html><head><title>iostrata</title></head><body>\n"
"<h1>iostrata</h1>\n<p>I/O latency, layer by layer: <a href=\"/metrics\">metrics</a>.</p>\n"
"</body></html>\n";

/* The process's own figures, as Prometheus' client libraries name them. */
static void process_metrics(const struct serve *sv, struct sbuf *b)
{
	long rss_pages = 0, vm_pages = 0, fds = -1;
	struct rlimit rl = { 0 };
	struct rusage ru;
	struct dirent *de;
	FILE *f;
	DIR *d;

	if ((f = fopen("/proc/self/statm", "r"))) {
		if (fscanf(f, "%ld %ld", &vm_pages, &rss_pages) != 2)
			vm_pages = rss_pages = 0;
		fclose(f);
	}
	if ((d = opendir("/proc/self/fd"))) {
		while ((de = readdir(d)))
			fds += de->d_name[0] != '.';
		closedir(d);	/* its own fd was counted: fds started at -1 */
	}
	getrlimit(RLIMIT_NOFILE, &rl);
	getrusage(RUSAGE_SELF, &ru);
	prom_family(b, "process_cpu_seconds_total", "counter", "User and system CPU time spent");
	sbuf_puts(b, "process_cpu_seconds_total ");
	prom_seconds(b, (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ULL +
			(uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ULL);
	sbuf_puts(b, "\n");
	prom_family(b, "process_resident_memory_bytes", "gauge", "Resident memory size");
	sbuf_printf(b, "process_resident_memory_bytes %ld\n", rss_pages * sysconf(_SC_PAGESIZE));
	prom_family(b, "process_virtual_memory_bytes", "gauge", "Virtual memory size");
	sbuf_printf(b, "process_virtual_memory_bytes %ld\n", vm_pages * sysconf(_SC_PAGESIZE));
	prom_family(b, "process_open_fds", "gauge", "Open file descriptors");
	sbuf_printf(b, "process_open_fds %ld\n", fds);
	prom_family(b, "process_max_fds", "gauge", "The limit of open file descriptors");
	sbuf_printf(b, "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
	prom_family(b, "process_start_time_seconds", "gauge", "Start time, Unix time");
	sbuf_puts(b, "process_start_time_seconds ");
	prom_seconds(b, sv->start_ns - sv->start_ns % 1000000000ULL);
	sbuf_puts(b, "\n");
}

/* What changes with every scrape: small, rendered each time. */
static void live_metrics(const struct serve *sv, struct sbuf *b)
{
	const struct http_stats *st = http_stats(sv->http);
	static const char *const classes[] = { "2xx", "4xx", "5xx" };
	int i;

	prom_family(b, "iostrata_build_info", "gauge", "iostrata's version, libbpf's, and the "
		    "buckets per octave of iostrata_latency_seconds");
	sbuf_printf(b, "iostrata_build_info{version=\"%s\",libbpf=\"%s\","
		    "buckets_per_octave=\"%d\"} 1\n", IOSTRATA_VERSION, libbpf_version_string(),
		    sv->bpo);
	prom_family(b, "iostrata_scrape_duration_seconds", "summary",
		    "Time taken to render /metrics, by the scrapes before this one");
	sbuf_puts(b, "iostrata_scrape_duration_seconds_sum ");
	prom_seconds(b, sv->scrape_ns);
	sbuf_printf(b, "\niostrata_scrape_duration_seconds_count %llu\n",
		    (unsigned long long)sv->scrapes);
	prom_family(b, "iostrata_http_responses_total", "counter",
		    "HTTP responses sent before this one, by status class");
	for (i = 0; i < 3; i++)
		sbuf_printf(b, "iostrata_http_responses_total{code=\"%s\"} %llu\n", classes[i],
			    (unsigned long long)st->status[i == 0 ? 2 : i + 3]);
	prom_family(b, "iostrata_http_timeouts_total", "counter",
		    "HTTP connections closed because a deadline passed (request or response), "
		    "or given up to a waiting client with no request after 250 ms");
	sbuf_printf(b, "iostrata_http_timeouts_total %llu\n", (unsigned long long)st->timeouts);
	process_metrics(sv, b);
}

static void handle(const char *path, struct http_reply *r, void *arg)
{
	struct serve *sv = arg;
	struct sbuf b = { 0 };
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC);

	if (!strcmp(path, "/")) {
		r->status = 200;
		r->type = "text/html; charset=utf-8";
		r->body[0] = http_blob_get(sv->index);
		return;
	}
	if (strcmp(path, "/metrics")) {
		r->status = 404;
		return;
	}
	/* the counts are rendered once per interval, whoever scrapes */
	pthread_mutex_lock(&sv->lock);
	if (!sv->rendered || sv->rendered_at != prom_intervals(sv->prom)) {
		http_blob_put(sv->rendered);
		http_blob_put(sv->rendered_gz);
		sv->rendered_gz = NULL;
		prom_render(sv->prom, &b);
		sv->rendered = http_blob_new(&b);
		sv->rendered_at = prom_intervals(sv->prom);
	}
	pthread_mutex_unlock(&sv->lock);
	sbuf_free(&b);
	r->vary = true;
	/* gzip (Prometheus asks for it): the counts compressed once an interval, outside the
	 * lock (the HTTP thread alone touches rendered*), the live part at each scrape */
	if (r->gzip_ok && sv->rendered && !sv->rendered_gz) {
		if (!gz_head(sv->rendered->data, sv->rendered->len, &b, &sv->gz))
			sv->rendered_gz = http_blob_new(&b);
		sbuf_free(&b);
	}
	live_metrics(sv, &b);
	if (r->gzip_ok && sv->rendered_gz) {
		struct sbuf z = { 0 };

		if (!gz_tail(&sv->gz, b.p ? b.p : "", b.len, &z)) {
			sbuf_free(&b);
			b = z;
			r->encoding = "gzip";
		} else {
			sbuf_free(&z);
		}
	}
	r->body[0] = http_blob_get(r->encoding ? sv->rendered_gz : sv->rendered);
	r->body[1] = http_blob_new(&b);
	sbuf_free(&b);
	if (!r->body[0] || !r->body[1]) {
		http_blob_put(r->body[0]);
		http_blob_put(r->body[1]);
		r->body[0] = r->body[1] = NULL;
		r->status = 500;
		return;
	}
	r->status = 200;
	r->type = "text/plain; version=0.0.4; charset=utf-8";
	sv->scrape_ns += clock_ns(CLOCK_MONOTONIC) - t0;
	sv->scrapes++;
}

static void *http_thread(void *arg)
{
	struct serve *sv = arg;

	/* the network-facing thread needs no capability, even where the session keeps one; its
	 * starter waits for that (what "serving" promises), and gives up if it failed */
	sv->caps_kept = sv->drop_caps && thread_caps_clear();
	pthread_barrier_wait(&sv->started);
	if (sv->caps_kept)
		return NULL;
	if (http_run(sv->http, handle, sv)) {
		__atomic_store_n(&sv->http_failed, true, __ATOMIC_RELAXED);
		kill(getpid(), SIGTERM);	/* the session stops too */
	}
	return NULL;
}

/* ---- the session's thread */

static int add_interval(const struct interval *iv, void *arg)
{
	struct serve *sv = arg;
	int err;

	pthread_mutex_lock(&sv->lock);
	err = prom_add(sv->prom, iv);
	pthread_mutex_unlock(&sv->lock);
	if (err) {
		errorf("out of memory adding an interval to the metrics");
		return 1;
	}
	return __atomic_load_n(&sv->http_failed, __ATOMIC_RELAXED) ? 1 : 0;
}

/* Signals go to the session's thread (its sleep ends at once); the HTTP thread has none. */
static int start_http(struct serve *sv, pthread_t *th)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_barrier_init(&sv->started, NULL, 2);
	if (!err) {
		err = pthread_create(th, NULL, http_thread, sv);
		if (!err)
			pthread_barrier_wait(&sv->started);	/* its capabilities are gone */
		pthread_barrier_destroy(&sv->started);	/* glibc: once both have left it */
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		errorf("cannot start the HTTP thread: %s", strerror(err));
	if (!err && sv->caps_kept) {	/* it said why, and ended */
		pthread_join(*th, NULL);
		return -1;
	}
	return err ? -1 : 0;
}

/*
 * Could s's maps be read as uid/gid with no capability? Asked of the kernel, in a child that
 * drops everything and tries: kernels before 5.19 with kernel.unprivileged_bpf_disabled set
 * refuse bpf() to such a process even on the fds it holds. 0 yes, -errno the child's answer.
 */
static int reads_unprivileged(const struct session *s, uid_t uid, gid_t gid)
{
	int st = 0, err;
	pid_t p, w;

	/* SIGCHLD ignored (inherited so across exec) would reap the child unseen */
	signal(SIGCHLD, SIG_DFL);
	p = fork();
	if (p < 0)
		return -errno;
	if (p == 0) {
		/* the parent says what fails: the same drop fails there too (once said twice) */
		log_mute(true);
		err = drop_privileges(uid, gid) ? -EACCES : session_readable(s);
		_exit(err == -EPERM ? 1 : err ? 2 : 0);
	}
	while ((w = waitpid(p, &st, 0)) < 0 && errno == EINTR)
		;
	if (w != p)
		return -ECHILD;		/* no answer: the full drop, then the read after it, decide */
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : WIFEXITED(st) &&
	       WEXITSTATUS(st) == 1 ? -EPERM : -EACCES;
}

/*
 * Become --user: no capabilities at all where the kernel lets the maps be read so; else the
 * session's thread keeps CAP_BPF alone (the HTTP thread, started after, gives it up), rather
 * than serving as root or failing at the first interval.
 */
static int become(const struct session *s, const struct serve_args *a, uid_t uid, gid_t gid,
		  bool *keep)
{
	int err;

	*keep = false;
	if (uid == 0) {
		vlog("--user %s: keeping every privilege", a->user);
		return 0;
	}
	err = a->bpf_refused ? -EPERM : reads_unprivileged(s, uid, gid);
	if (err == -EPERM)
		*keep = true;
	if (drop_privileges_keeping(uid, gid, *keep ? CAP_BPF : -1))
		return -1;
	err = session_readable(s);
	if (err) {
		errorf("cannot read the maps as uid %u: %s", (unsigned)uid, strerror(-err));
		return -1;
	}
	if (*keep)
		warnf("this kernel refuses bpf() to a process without CAP_BPF "
		      "(kernel.unprivileged_bpf_disabled, before Linux 5.19): running as uid %u gid "
		      "%u with CAP_BPF alone, in the thread that reads the maps; the HTTP thread has "
		      "no capability", (unsigned)uid, (unsigned)gid);
	else
		vlog("running as uid %u gid %u, no capabilities", (unsigned)uid, (unsigned)gid);
	return 0;
}

int cmd_serve(int argc, char **argv)
{
	struct serve_args a = { .t = TRACE_OPTS_DEFAULT, .listen = LISTEN_DEFAULT,
				.user = "nobody", .prom = { .buckets_per_octave = 4,
				.max_series = PROM_MAX_SERIES_DEFAULT,
				.expire_ns = PROM_EXPIRE_DEFAULT_NS } };
	struct serve sv = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct session *s = NULL;
	struct sbuf idx = { 0 };
	char need[64];
	uid_t uid;
	gid_t gid;
	pthread_t th;
	int r;

	/*
	 * Undumpable from the start, as the drop leaves it: a start as the --user itself with
	 * ambient capabilities (a unit's User=) is dumpable from its exec, and only the capability
	 * sets stood between its user's other processes and ptrace until the drop.
	 */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	r = parse_args(argc, argv, &a);
	if (r)
		return r > 0 ? 0 : 2;
	if (user_lookup(a.user, &uid, &gid))
		return 2;
	log_init("iostrata", log_json(), a.t.verbose);
	if (!privileged()) {
		errorf("must be run as root (loading BPF needs CAP_BPF and CAP_PERFMON)");
		return 1;
	}
	/* becoming --user after attaching needs these: said now, not once everything is up */
	if (uid && *privs_missing(uid, gid, need, sizeof(need))) {
		errorf("cannot become --user %s once attached: this process lacks %s (run it as "
		       "root, or give it those capabilities too)", a.user, need);
		return 1;
	}
	sv.bpo = a.prom.buckets_per_octave;
	sv.start_ns = clock_ns(CLOCK_REALTIME);
	sbuf_puts(&idx, index_html);
	sv.prom = prom_new(&a.prom);
	sv.index = http_blob_new(&idx);
	if (!sv.prom || !sv.index) {
		errorf("out of memory");
		r = 1;
		goto out;
	}
	/* the socket first: a port in use is said before anything is loaded */
	r = 1;
	if (http_listen(a.listen, &sv.http))
		goto out;
	session_signals();
	signal(SIGHUP, SIG_IGN);	/* nothing to reopen: a daemon's HUP must not end it */
	if (session_open(&a.t.cfg, false, &s, NULL, NULL))
		goto out;
	if (become(s, &a, uid, gid, &sv.drop_caps) || start_http(&sv, &th))
		goto out;	/* session_close() detaches every program */
	/* ready once the first interval has started: every I/O from here is counted */
	r = session_begin(s);
	if (!r) {
		printf("serving http://%s/metrics\n", a.listen);
		fflush(stdout);
		r = session_run(s, &a.t.lim, add_interval, &sv);
	}
	http_stop(sv.http);
	pthread_join(th, NULL);
	if (sv.http_failed)
		r = 1;
out:
	session_close(s);
	http_close(sv.http);
	http_blob_put(sv.rendered);
	http_blob_put(sv.rendered_gz);
	http_blob_put(sv.index);
	prom_free(sv.prom);
	return r;
}
