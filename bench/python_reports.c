/*
 * python_reports.c - run reports per second from one Python process through
 * the larkbus module, beside the baseline of the same run: `larkctl emit`,
 * one process per report, as the module ran it before.
 *
 * outside  the module's own NATS connection (many publishes in flight,
 *          flush once every ack is in) to LARK_REPORTS, counted there once
 *          stored, as `larkctl emit` is;
 * pod      the module inside a pod, through LARK_SOCKET: a real
 *          lark-scheduler and lark-edge run a Job whose pod emits the
 *          reports and flushes; counted from the pod's first emit until
 *          every report is in LARK_RUNS (lark.run.<job>), through the
 *          node's store, its sender, the ingress and the scheduler.
 *
 *   bench_python_reports [--reports N] [--larkctl M]
 *                        [--where outside|pod|both]
 *
 * Needs LARK_BIN_DIR (larkctl, lark-scheduler, lark-edge) and
 * LARK_SOURCE_DIR (the module), which ctest sets.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include "bench.h"
#include "natsd.h"
#include "proc.h"

static uint64_t
stored(bus_conn *c, const char *stream) {
  uint64_t seq = 0;
  if (bus_stream_last_seq(c, stream, &seq))
    bench_die(stream, bus_last_error());
  return seq;
}

static void
write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f)
    bench_die(path, strerror(errno));
  fputs(text, f);
  fclose(f);
}

/* The module on its own connection: emit n reports, flush. Seconds from
 * the first emit to flush's return into *inside, with the interpreter's
 * start into *wall. */
static void
outside(bus_conn *c, const char *dir, int n, double *inside, double *wall) {
  char script[512], code[1024], out[4096], err[4096];
  snprintf(script, sizeof script, "%s/bench.py", dir);
  snprintf(code, sizeof code,
           "import time, larkbus\n"
           "t0 = time.monotonic()\n"
           "for i in range(%d):\n"
           "    larkbus.emit('metric', job='bench', step=i, loss=0.25)\n"
           "larkbus.flush(120)\n"
           "print('%%.6f' %% (time.monotonic() - t0))\n",
           n);
  write_file(script, code);
  char *py[] = {(char *)"/usr/bin/env", (char *)"python3", script, NULL};
  uint64_t before = stored(c, "LARK_REPORTS");
  double t0 = bench_now_s();
  if (lt_run(py, out, sizeof out, err, sizeof err) != 0)
    bench_die("python3", err);
  *wall = bench_now_s() - t0;
  *inside = atof(out);
  uint64_t got = stored(c, "LARK_REPORTS") - before;
  if (got != (uint64_t)n) {
    char msg[128];
    snprintf(msg, sizeof msg, "%llu stored of %d", (unsigned long long)got, n);
    bench_die("module", msg);
  }
}

/* larkctl emit, a process per report, one after another: seconds. */
static double
baseline(bus_conn *c, int m) {
  char larkctl[512], out[4096], err[4096];
  if (!lt_bin("larkctl", larkctl, sizeof larkctl))
    bench_die("larkctl", "set LARK_BIN_DIR");
  uint64_t before = stored(c, "LARK_REPORTS");
  double t0 = bench_now_s();
  for (int i = 0; i < m; i++) {
    char data[64];
    snprintf(data, sizeof data, "{\"step\":%d,\"loss\":0.25}", i);
    char *ctl[] = {larkctl,
                   (char *)"emit",
                   (char *)"bench",
                   (char *)"metric",
                   (char *)"--data",
                   data,
                   NULL};
    if (lt_run(ctl, out, sizeof out, err, sizeof err) != 0)
      bench_die("larkctl emit", err);
  }
  double ctl_s = bench_now_s() - t0;
  if (stored(c, "LARK_REPORTS") - before != (uint64_t)m)
    bench_die("larkctl emit", "not every report was stored");
  return ctl_s;
}

/* Job name: one task of one pod running `python3 script` on 1 CPU. */
static void
apply_pod_job(bus_conn *c, const char *name, const char *script) {
  const char *const argv[] = {"/usr/bin/env", "python3", script, NULL};
  bench_job j;
  bench_job_init(&j, name, "w", "Actor", 1, 1, argv);
  bench_apply_job(c, &j);
}

/* The pod's script: n reports through LARK_SOCKET, flush, then the wall
 * times of its first emit and of flush's return into times. */
static void
pod_script(const char *path, const char *pypath, const char *times, int n) {
  char code[4096];
  snprintf(code, sizeof code,
           "import sys, time\n"
           "sys.path.insert(0, '%s')\n"
           "import larkbus\n"
           "t0 = time.time()\n"
           "for i in range(%d):\n"
           "    larkbus.emit('metric', step=i, loss=0.25)\n"
           "larkbus.flush(300)\n"
           "t1 = time.time()\n"
           "with open('%s.tmp', 'w') as f:\n"
           "    f.write('%%.6f %%.6f\\n' %% (t0, t1))\n"
           "import os\n"
           "os.rename('%s.tmp', '%s')\n",
           pypath, n, times, times, times);
  write_file(path, code);
}

/* Wait until LARK_RUNS holds want more than before; the wall time then. */
static double
runs_reach(bus_conn *c, uint64_t want, int timeout_s) {
  double end = bench_now_s() + timeout_s;
  while (stored(c, "LARK_RUNS") < want) {
    if (bench_now_s() > end)
      bench_die("pod", "not every report reached LARK_RUNS in time");
    usleep(2000);
  }
  return (double)bus_wall_ns() / 1e9;
}

/* The scheduler and one edge node beside the broker, and a pod of the
 * module's: seconds from its first emit until every report is in
 * LARK_RUNS into *e2e, and until its flush returned into *acked. */
static void
in_a_pod(bus_conn *c, const lt_natsd *srv, const char *py, int n, double *e2e,
         double *acked) {
  const char *dir = srv->dir;
  char sdata[512], edata[512], slog[512], elog[512], script[512], times[512];
  snprintf(sdata, sizeof sdata, "%s/scheduler", dir);
  snprintf(edata, sizeof edata, "%s/edge", dir);
  snprintf(slog, sizeof slog, "%s/scheduler.log", dir);
  snprintf(elog, sizeof elog, "%s/edge.log", dir);
  snprintf(script, sizeof script, "%s/pod.py", dir);
  snprintf(times, sizeof times, "%s/pod.times", dir);
  pod_script(script, py, times, n);
  const char *node[] = {"--node", "bench-1", "--capacity", "cpu=4,memory=4Gi",
                        NULL};
  pid_t sched = lt_start_service("lark-scheduler", srv->url, sdata, slog, NULL);
  pid_t edge = lt_start_service("lark-edge", srv->url, edata, elog, node);
  if (sched < 0 || edge < 0)
    bench_die("pod", "cannot start lark-scheduler or lark-edge");
  bus_status st;
  for (int i = 0; bus_status_query(c, "scheduler", 500, &st); i++) {
    if (i == 120)
      bench_die("pod", "lark-scheduler does not answer");
    usleep(250000);
  }
  uint64_t before = stored(c, "LARK_RUNS");
  apply_pod_job(c, "podbench", script);
  double done = runs_reach(c, before + (uint64_t)n, 600);
  double t0 = 0, t1 = 0;
  for (int i = 0; i < 1000 && !(t0 > 0); i++) {
    FILE *f = fopen(times, "r");
    if (f) {
      if (fscanf(f, "%lf %lf", &t0, &t1) != 2)
        t0 = 0;
      fclose(f);
    }
    if (!(t0 > 0))
      usleep(10000);
  }
  if (!(t0 > 0))
    bench_die("pod", "the pod did not say when it started");
  if (stored(c, "LARK_RUNS") - before != (uint64_t)n)
    bench_die("pod", "LARK_RUNS holds more reports than were sent");
  *e2e = done - t0;
  *acked = t1 - t0;
  lt_kill(edge, SIGTERM);
  lt_kill(sched, SIGTERM);
}

int
main(int argc, char **argv) {
  int n = 50000, m = 200;
  const char *where = "both";
  const bench_opt opts[] = {{"--reports", .i = &n},
                            {"--larkctl", .i = &m},
                            {"--where", .s = &where},
                            {NULL}};
  bench_opts(argc, argv, opts);
  int out = !strcmp(where, "outside") || !strcmp(where, "both");
  int pod = !strcmp(where, "pod") || !strcmp(where, "both");
  if (!out && !pod)
    bench_die("--where", "outside, pod or both");
  const char *src = getenv("LARK_SOURCE_DIR");
  char pypath[512];
  snprintf(pypath, sizeof pypath, "%s/libbus/python", src ? src : ".");
  lt_natsd srv;
  bus_conn *c;
  if (lt_natsd_start(&srv, NULL, NULL) || lt_connect(&srv, &c))
    bench_die("broker", "cannot start nats-server");
  if (lt_streams(c, 120000))
    bench_die("streams", bus_last_error());
  setenv("LARK_URL", srv.url, 1);
  setenv("PYTHONPATH", pypath, 1);
  unsetenv("LARK_SOCKET");
  unsetenv("LARK_CREDS");
  unsetenv("LARK_DATA");
  double inside = 0, wall = 0, e2e = 0, acked = 0;
  if (out)
    outside(c, srv.dir, n, &inside, &wall);
  if (pod)
    in_a_pod(c, &srv, pypath, n, &e2e, &acked);
  double ctl_s = baseline(c, m);
  if (out)
    printf("python module:  %d reports in %.3f s: %.0f reports/s "
           "(%.0f/s counting interpreter start, %.3f s)\n",
           n, inside, n / inside, n / wall, wall);
  if (pod)
    printf("python in pod:  %d reports in %.3f s: %.0f reports/s "
           "(first emit -> all in LARK_RUNS; flush returned after %.3f s: "
           "%.0f/s)\n",
           n, e2e, n / e2e, acked, n / acked);
  printf("larkctl emit:   %d reports in %.3f s: %.0f reports/s "
         "(a process each)\n",
         m, ctl_s, m / ctl_s);
  if (out)
    printf("ratio:          %.1fx\n", (n / inside) / (m / ctl_s));
  if (pod)
    printf("ratio, pod:     %.1fx\n", (n / e2e) / (m / ctl_s));
  bus_conn_close(c);
  lt_natsd_stop(&srv);
  return 0;
}
