/*
 * bench/pod_reports.c - nodes' pod reports per second through a real
 * lark-scheduler, for Jobs of many pods.
 *
 * Starts a nats-server and a lark-scheduler, registers N nodes through
 * the command path, submits J Jobs of P pods each and waits for every
 * binding. Then, as the nodes, it sends every pod's report Running and
 * then Succeeded on the pod's ingress subject (as lark-edge does), and
 * waits until every Job's phase is Succeeded in the log: the scheduler
 * has then taken each report (its ingress: one checked pod.phase append
 * each) and applied each pod.phase to its view, where a Job's and its
 * Tasks' phases are derived from its pods. The figure is reports per
 * second, end to end, with the scheduler's CPU seconds per 1,000 reports.
 * Beside it, in the same run, the floor of that path: the same number of
 * checked appends of a pod.phase-sized event, one after another, as the
 * ingress writes them.
 *
 *   bench_pod_reports [--nodes N] [--jobs J] [--pods P]
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bus.h"
#include "natsd.h"

/* A bound pod: its name and its node's. */
typedef struct bound {
  char pod[64], node[32];
} bound;

static void
take_binding(const bus_event *placed, const msgpack_object *b, long n,
             void *ud) {
  (void)placed;
  bound *all = ud;
  bus_obj_str(b, "pod", all[n].pod, sizeof all[n].pod);
  bus_obj_str(b, "node", all[n].node, sizeof all[n].node);
}

/* Every pod's report of phase, sent without waiting, then flushed. */
static void
report_all(bus_conn *c, const bound *all, long n, const char *phase) {
  for (long i = 0; i < n; i++) {
    char subject[BUS_SUBJECT_MAX], id[33];
    snprintf(subject, sizeof subject, "lark.in.%s.sched.pod.%s", all[i].node,
             all[i].pod);
    bus_ev_pod_report r = {.pod = bus_str_of(all[i].pod),
                           .phase = bus_str_of(phase),
                           .has_attempt = 1,
                           .attempt = 0,
                           .has_exitCode = !strcmp(phase, "Succeeded"),
                           .exitCode = 0};
    bus_event ev = {.v = BUS_SCHEMA_VERSION,
                    .t = BUS_T_POD_REPORT,
                    .type = "pod.report",
                    .typed = &r,
                    .id = id,
                    .ts = bus_wall_ns(),
                    .actor = all[i].node,
                    .cause = ""};
    bus_event_new_id(id);
    if (bus_append_async(c, subject, &ev, BUS_APPEND_NOCHECK) < 0)
      bench_die("report", bus_last_error());
  }
  uint64_t failed = 0;
  if (bus_append_flush(c, 120000, &failed) < 0 || failed)
    bench_die("flush", bus_last_error());
}

/* 1 when Job name's last event is job.phase Succeeded. */
static int
succeeded(bus_conn *c, const char *name) {
  char subject[BUS_SUBJECT_MAX], phase[32] = "";
  msgpack_zone z;
  bus_event ev;
  msgpack_zone_init(&z, 1024);
  memset(&ev, 0, sizeof ev);
  bus_subj_job_phase(subject, sizeof subject, name);
  if (bus_last_event(c, "LARK_EVENTS", subject, &ev, &z) == 0 && ev.type &&
      !strcmp(ev.type, "job.phase"))
    bus_obj_str(&ev.data, "phase", phase, sizeof phase);
  msgpack_zone_destroy(&z);
  return !strcmp(phase, "Succeeded");
}

static void
wait_succeeded(bus_conn *c, int jobs, double deadline) {
  for (int i = 0; i < jobs; i++) {
    char name[32];
    snprintf(name, sizeof name, "job%04d", i);
    while (!succeeded(c, name)) {
      if (bench_now_s() > deadline)
        bench_die("timeout", "a Job did not succeed within 300 s");
      bus_sleep_ms(20);
    }
  }
}

/* The floor: n checked appends of a pod.phase-sized event, one after
 * another, two on each of n / 2 subjects. */
static double
baseline(bus_conn *c, long n) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  bench_sample_data(&sb, 60);
  double t0 = bench_now_s();
  for (long i = 0; i < n / 2; i++) {
    char subject[64];
    snprintf(subject, sizeof subject, "lark.ev.sample.base-%ld", i);
    uint64_t s = bench_append(c, subject, "sample.created", 0, &sb);
    bench_append(c, subject, "sample.updated", s, &sb);
  }
  double dt = bench_now_s() - t0;
  msgpack_sbuffer_destroy(&sb);
  return (double)(n / 2 * 2) / dt;
}

int
main(int argc, char **argv) {
  int nodes = 100, jobs = 2, pods = 1000;
  const bench_opt opts[] = {{"--nodes", .i = &nodes},
                            {"--jobs", .i = &jobs},
                            {"--pods", .i = &pods},
                            {NULL}};
  bench_opts(argc, argv, opts);
  if (nodes <= 0 || jobs <= 0 || pods <= 0 || (long)pods > 64L * nodes)
    bench_die("usage", "bench_pod_reports [--nodes N] [--jobs J] [--pods P] "
                       "(a node takes 64 pods)");
  long n = (long)jobs * pods;
  printf("bench_pod_reports: %d Jobs x %d pods on %d nodes, %ld reports\n",
         jobs, pods, nodes, 2 * n);
  fflush(stdout);
  lt_natsd srv;
  bus_conn *c;
  char dir[256];
  pid_t sched = bench_scheduler_up(argv[0], "bench-reports", 0, &srv, &c, dir,
                                   sizeof dir);
  bench_add_nodes(c, nodes);
  bench_add_jobs(c, jobs, pods, "spread");
  bound *all = calloc((size_t)n, sizeof *all);
  if (!all)
    bench_die("bindings", "out of memory");
  if (bench_wait_bindings(c, n, bench_now_s() + 120, take_binding, all) < n)
    bench_die("timeout", "not every pod was bound within 120 s");
  bus_sleep_ms(1000); /* the desired states out, the scheduler idle */
  double cpu0 = bench_cpu_s(sched), t0 = bench_now_s();
  report_all(c, all, n, "Running");
  report_all(c, all, n, "Succeeded");
  double sent = bench_now_s() - t0;
  wait_succeeded(c, jobs, t0 + 300);
  double dt = bench_now_s() - t0, cpu = bench_cpu_s(sched) - cpu0;
  bench_stop_service(sched, "lark-scheduler");
  double base = baseline(c, 2 * n);
  printf("  checked appends, one after another   %9.0f /s (floor)\n", base);
  printf("  reports to every Job Succeeded       %9.0f /s   ratio %.2fx  "
         "(all sent after %.2f s, done after %.2f s; scheduler CPU %.2f s, "
         "%.3f s per 1,000 reports)\n",
         2 * n / dt, 2 * n / dt / base, sent, dt, cpu, cpu / (2 * n / 1000.0));
  free(all);
  bus_conn_close(c);
  lt_natsd_stop(&srv);
  lt_rmtree(dir);
  return 0;
}
