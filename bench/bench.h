/*
 * bench.h - what every benchmark shares (bench.c, the larkbench library):
 * a monotonic clock, a quantile of timings, a fatal error line naming
 * the benchmark, its flags from a table, a connection, brokers with the
 * server's lazy sync or `sync_interval: always`, events built the same way,
 * Nodes and Jobs applied through the command path, a service next to the
 * benchmark (its binary, or its loop on a thread of ours), a sample event of a
 * chosen size, and the rate the NATS CLI's own benchmark reports.
 */
#ifndef LARK_BENCH_H
#define LARK_BENCH_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>

#include "bus.h"
#include "natsd.h"

double bench_now_s(void);
/* The load averages as /proc/loadavg has them ("1.02 0.98 0.91 ..."), for
 * the line of a figure measured on a shared machine; "?" when unread. */
void bench_load(char *out, size_t cap);
/* The p-th quantile (0..1) of the n values of v, which it sorts. */
double bench_pct(double *v, int n, double p);

/* Print "<benchmark>: what: detail" and exit 1. */
void bench_die(const char *what, const char *detail) __attribute__((noreturn));

/*
 * A flag taking a value, "--jobs 20", into an int, a long or a string
 * (the one member that is set). bench_opts reads argv[1..] as such pairs
 * against a table ending in {NULL}; it returns -1 when a flag is not in
 * it or has no value (that pair is passed over), else 0.
 */
typedef struct bench_opt {
  const char *flag;
  int *i;
  long *l;
  const char **s;
} bench_opt;
int bench_opts(int argc, char **argv, const bench_opt *opts);

/* A connection named name, waiting js_wait_ms for JetStream's API (0:
 * libbus's default); the benchmark dies when it fails. */
bus_conn *bench_connect(const char *url, const char *name, int js_wait_ms);
/* bench_connect as "bench", then the platform's streams made. */
bus_conn *bench_connect_streams(const char *url, int js_wait_ms);

/*
 * Start a nats-server with extra arguments (may be NULL): the server's
 * lazy default, or when always `jetstream { sync_interval: always }`, as
 * broker-config/single.conf.in sets it, written as dir/always.conf. The
 * benchmark dies when it does not start.
 */
void bench_natsd_start(lt_natsd *s, const char *dir, int always,
                       const char *const *extra);

/*
 * A directory named for tag (into dir), a broker in it
 * (bench_natsd_start, always as there) with the platform's streams, a
 * connection to it (*c), and a lark-scheduler on it that answers: its
 * pid. The benchmark dies when any of it fails.
 */
pid_t bench_scheduler_up(const char *argv0, const char *tag, int always,
                         lt_natsd *srv, bus_conn **c, char *dir, size_t cap);

/*
 * Start a lazy and an always broker (bench_natsd_start) in a directory
 * named for tag and call measure on them in the order lazy, always,
 * always, lazy, so that load drift on a shared machine hits both alike;
 * round is 1 or 2. Both are stopped and the directory removed after.
 */
typedef void bench_measure_fn(const char *url, int round, int always, void *ud);
void bench_lazy_always(const char *tag, bench_measure_fn *measure, void *ud);

/* The table of a lazy-beside-always benchmark: its head and a row of two
 * rates and their ratio ("n/a" when either is missing). */
void bench_ratio_head(const char *what);
void bench_ratio_row(const char *what, double lazy, double always);

/*
 * An event of type by actor around data, with a fresh id (into id) and
 * the wall clock as ts; the caller may change any field after.
 */
void bench_event_init(bus_event *ev, char id[33], const char *type,
                      const char *actor, const msgpack_sbuffer *data);
/* A checked append (prev: the subject's last sequence, 0 for none) of
 * such an event by "bench"; the new sequence. Dies when refused. */
uint64_t bench_append(bus_conn *c, const char *subject, const char *type,
                      uint64_t prev, const msgpack_sbuffer *data);

/* Event data {text: "xxx..."} with text_len (at most 4096) x's. */
void bench_sample_data(msgpack_sbuffer *data, size_t text_len);
/* A sample.created event with a fresh id (into id) around that data. */
void bench_sample_event(bus_event *ev, msgpack_sbuffer *data, char id[33],
                        size_t text_len);

/* Run a `nats bench ...` command line; msgs/s from its "stats:" line, 0
 * when the CLI is missing or says nothing usable. */
double bench_nats_cli_rate(const char *cmd);

/*
 * A Job of one task the way the benchmarks submit it: task name of role
 * with replicas pods, running entrypoint (NULL-terminated, at most 4;
 * NULL: `true`), sized 1 CPU and 256 MiB when sized. Fields may be set
 * after (spec.strategy, spec.domain); pack res with bus_job_res_write.
 * It points into itself: not copied once made.
 */
typedef struct bench_job {
  bus_job_res res;
  bus_task task;
  bus_str argv[4];
} bench_job;
void bench_job_init(bench_job *j, const char *name, const char *task,
                    const char *role, int replicas, int sized,
                    const char *const *entrypoint);

/* job.placed data d with pods bindings, each a copy of b with pod
 * "<task>-<i>", into out (cleared first). */
void bench_placed_pack(msgpack_sbuffer *out, bus_ev_job_placed *d,
                       const bus_binding *b, int pods);

/* A command request that must succeed (the benchmark dies otherwise);
 * asked again while nobody serves it yet (30 s: a service starting). */
void bench_call(bus_conn *c, const char *subject, const msgpack_sbuffer *sb);
/* Apply Node name (cluster c1, 64 CPUs, 256 GiB) through the scheduler. */
void bench_add_node(bus_conn *c, const char *name);
/* Apply Nodes n0000, n0001, ... (count of them) as bench_add_node. */
void bench_add_nodes(bus_conn *c, int count);
/* Apply Job j through the scheduler. */
void bench_apply_job(bus_conn *c, const bench_job *j);
/* Apply Job name: one Rollout task of pods replicas (1 CPU, 256 MiB,
 * runs `true`) with strategy spread or pack. */
void bench_add_job(bus_conn *c, const char *name, int pods,
                   const char *strategy);
/* Apply Jobs job0000, job0001, ... (jobs of them) as bench_add_job, with
 * strategy, or pack and spread in turn when it is NULL. */
void bench_add_jobs(bus_conn *c, int jobs, int pods, const char *strategy);

/*
 * Follow the placement log (lark.ev.placement.default; one reader, as a
 * consumer per poll would load the broker measured) until it holds want
 * bindings or deadline (bench_now_s) passes; each (may be NULL) gets the
 * n-th binding with its job.placed event. The count of bindings read.
 */
typedef void bench_binding_fn(const bus_event *placed,
                              const msgpack_object *binding, long n, void *ud);
long bench_wait_bindings(bus_conn *c, long want, double deadline,
                         bench_binding_fn *each, void *ud);

/*
 * Start service binary name from the benchmark's own folder (argv0's)
 * with --url url --data <dir>/view, its stderr into <dir>/<name>.log.
 * Returns its pid (-1 when fork failed).
 */
pid_t bench_start_service(const char *argv0, const char *name, const char *url,
                          const char *dir);
/*
 * Wait until the service whose status name is name ("scheduler" for
 * lark-scheduler) answers its status request: it serves its commands
 * then. Dies after 60 s.
 */
void bench_wait_up(bus_conn *c, const char *name);
/*
 * Stop a service bench_start_service started: SIGTERM, then SIGKILL if it
 * has not ended 15 s later (said on stderr, with name: a service that
 * does not stop is worth knowing, and a benchmark must not hang on it).
 */
void bench_stop_service(pid_t pid, const char *name);

/* CPU seconds (user + system) process pid has used so far; 0 when it
 * cannot be read. */
double bench_cpu_s(pid_t pid);

/*
 * A service loop in this process, on a thread of its own, as the binary
 * runs it: set c, v and opts (after bus_service_opts_init), then start;
 * stop sets the stop flag and joins. rc is bus_service_run's.
 */
typedef struct bench_loop {
  bus_conn *c;
  bus_view *v;
  bus_service_opts opts;
  atomic_int stop;
  int rc;
  pthread_t th;
} bench_loop;
void bench_loop_start(bench_loop *l);
void bench_loop_stop(bench_loop *l);

#endif
