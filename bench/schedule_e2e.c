/*
 * bench/schedule_e2e.c - pods bound per second through the broker.
 *
 * Starts a nats-server and a lark-scheduler, registers N nodes through
 * the command path, then submits J Jobs of P pods each (one command each,
 * as `larkctl apply` does) from C clients at once (threads sharing one
 * connection, each waiting for its command's reply before the next, as
 * C users would) and waits until the placement log holds a binding for
 * every pod. Beside it, in the same run, the physical floor
 * of that path: one client appending the same number of job.placed-sized
 * events (P bindings each) to a subject with the broker's version check,
 * one after another, as the placement log must be written.
 *
 * By default it runs twice, each time on a server of its own: the
 * server's lazy sync default, then `jetstream { sync_interval: always }`
 * (as broker-config/single.conf.in sets it), each with its own floor;
 * --sync picks one.
 *
 *   bench_schedule_e2e [--nodes N] [--jobs J] [--pods P] [--clients C]
 *                      [--sync lazy|always|both]
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "bus.h"
#include "natsd.h"

/* The floor: J checked appends of a P-binding event, one after another. */
static double
baseline(bus_conn *c, int jobs, int pods) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  bus_ev_job_placed d = {.pool = BUS_STR("bench"), .job = BUS_STR("base")};
  bus_binding b = {
      .task = BUS_STR("base-w"), .node = BUS_STR("n0000"), .has_gpus = 1};
  bench_placed_pack(&sb, &d, &b, pods);
  uint64_t prev = 0;
  double t0 = bench_now_s();
  for (int j = 0; j < jobs; j++)
    prev = bench_append(c, "lark.ev.placement.bench", "job.placed", prev, &sb);
  double dt = bench_now_s() - t0;
  msgpack_sbuffer_destroy(&sb);
  return (double)jobs * pods / dt;
}

/* The Jobs job<i> for i = first, first + step, ... below jobs. */
typedef struct submitter {
  bus_conn *c;
  int first, step, jobs, pods;
  pthread_t th;
} submitter;

static void *
submit(void *ud) {
  submitter *s = ud;
  for (int i = s->first; i < s->jobs; i += s->step) {
    char name[32];
    snprintf(name, sizeof name, "job%04d", i);
    bench_add_job(s->c, name, s->pods, i % 2 ? "spread" : "pack");
  }
  return NULL;
}

/* Submit every Job from clients threads at once. */
static void
submit_all(bus_conn *c, int clients, int jobs, int pods) {
  submitter *s = calloc((size_t)clients, sizeof *s);
  if (!s)
    bench_die("submit", "out of memory");
  for (int k = 0; k < clients; k++) {
    s[k] = (submitter){c, k, clients, jobs, pods, 0};
    if (pthread_create(&s[k].th, NULL, submit, &s[k]))
      bench_die("submit", "cannot start a client thread");
  }
  for (int k = 0; k < clients; k++)
    pthread_join(s[k].th, NULL);
  free(s);
}

/* The figure and its floor on one server. */
typedef struct result {
  double rate, base;
} result;

/*
 * Start a nats-server (the lazy default, or `jetstream { sync_interval:
 * always }` as broker-config/single.conf.in sets it) and a lark-scheduler
 * on it, apply the nodes, submit the Jobs and wait for every binding; then
 * the scheduler is stopped and the floor measured on the same server.
 * Everything is stopped again.
 */
static result
run(const char *argv0, int always, int nodes, int jobs, int pods, int clients) {
  lt_natsd srv;
  bus_conn *c;
  char dir[256];
  pid_t sched = bench_scheduler_up(argv0, "bench-sched", always, &srv, &c, dir,
                                   sizeof dir);
  bench_add_nodes(c, nodes);
  double t0 = bench_now_s();
  submit_all(c, clients, jobs, pods);
  double submitted = bench_now_s() - t0;
  long want = (long)jobs * pods;
  long got = bench_wait_bindings(c, want, t0 + 120, NULL, NULL);
  double dt = bench_now_s() - t0;
  if (got < want)
    bench_die("timeout", "not every pod was bound within 120 s");
  uint64_t events = 0;
  bus_stream_last_seq(c, "LARK_EVENTS", &events);
  printf("  every command answered after %.2f s, every pod bound after %.2f "
         "s; %llu events in the log\n",
         submitted, dt, (unsigned long long)events);
  /* the floor on a broker the scheduler no longer writes to: it may still
   * be sending the pods' desired states to their nodes */
  bench_stop_service(sched, "lark-scheduler");
  result r = {.rate = (double)want / dt, .base = baseline(c, jobs, pods)};
  bus_conn_close(c);
  lt_natsd_stop(&srv);
  lt_rmtree(dir);
  return r;
}

/* The targets (issue 16): 50,000 pods/s for Jobs of 100 pods, 2,000
 * Jobs/s for Jobs of one. */
static void
print_result(const char *sync, result r, int pods) {
  printf("  %-6s checked appends of the bindings  %10.0f pods/s (floor)\n",
         sync, r.base);
  printf("  %-6s submitted to bound, end to end   %10.0f pods/s   %8.0f "
         "Jobs/s   ratio %.2fx (target %s)\n",
         sync, r.rate, r.rate / pods, r.rate / r.base,
         pods == 1 ? ">= 2000 Jobs/s" : ">= 50000 pods/s at 100 pods a Job");
  fflush(stdout); /* before the next run's children inherit the buffer */
}

int
main(int argc, char **argv) {
  int nodes = 1000, jobs = 100, pods = 100, clients = 1;
  const char *sync = "both";
  const bench_opt opts[] = {
      {"--nodes", .i = &nodes}, {"--jobs", .i = &jobs},
      {"--pods", .i = &pods},   {"--clients", .i = &clients},
      {"--sync", .s = &sync},   {NULL}};
  bench_opts(argc, argv, opts);
  int lazy = !strcmp(sync, "lazy") || !strcmp(sync, "both");
  int always = !strcmp(sync, "always") || !strcmp(sync, "both");
  if (nodes <= 0 || jobs <= 0 || pods <= 0 || clients <= 0 || !(lazy || always))
    bench_die("usage", "bench_schedule_e2e [--nodes N] [--jobs J] [--pods P] "
                       "[--clients C] [--sync lazy|always|both]");
  printf("bench_schedule_e2e: %d pods (%d Jobs x %d) onto %d nodes, %d "
         "client%s\n",
         jobs * pods, jobs, pods, nodes, clients, clients > 1 ? "s" : "");
  fflush(stdout);
  /* lazy first, then always: each on a server of its own, one after the
   * other, so neither shares the machine with the other's broker */
  if (lazy)
    print_result("lazy", run(argv[0], 0, nodes, jobs, pods, clients), pods);
  if (always)
    print_result("always", run(argv[0], 1, nodes, jobs, pods, clients), pods);
  return 0;
}
