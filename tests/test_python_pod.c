/*
 * test_python_pod.c - libbus/python/larkbus.py inside a real pod: a broker
 * with the platform's streams, lark-scheduler and one lark-edge node run a
 * Job whose pod is a Python script reporting through LARK_SOCKET, with its
 * lines pipelined (many written before their answers come). Each report
 * lands in LARK_RUNS exactly once and in the order emitted; with the
 * node's agent killed (-9) and restarted mid-stream, every report the
 * socket answered "ok" is there, none twice, still in order.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd_check.h"
#include "natsd.h"
#include "proc.h"
#include "stream.h"

typedef struct platform {
  char dir[256];
  lt_natsd srv;
  bus_conn *c;
  pid_t sched, edge;
} platform;

static platform x;

static pid_t
start_edge(void) {
  char data[512], log[512];
  snprintf(data, sizeof data, "%s/edge", x.dir);
  snprintf(log, sizeof log, "%s/edge.log", x.dir);
  const char *const extra[] = {"--node",           "node-1",      "--capacity",
                               "cpu=4,memory=4Gi", "--heartbeat", "0.5",
                               "--grace",          "1",           NULL};
  pid_t pid = lt_start_service("lark-edge", x.srv.url, data, log, extra);
  cr_assert(pid > 0);
  return pid;
}

static void
setup(void) {
  char data[512], log[512];
  lt_tmpdir(x.dir, sizeof x.dir, "pypod");
  cr_assert_eq(lt_natsd_start(&x.srv, NULL, NULL), 0);
  cr_assert_eq(lt_connect(&x.srv, &x.c), 0);
  cr_assert_eq(lt_streams(x.c, 120000), 0, "%s", bus_last_error());
  setenv("LARK_NODE_TIMEOUT_MS", "20000", 1);
  snprintf(data, sizeof data, "%s/scheduler", x.dir);
  snprintf(log, sizeof log, "%s/scheduler.log", x.dir);
  x.sched = lt_start_service("lark-scheduler", x.srv.url, data, log, NULL);
  cr_assert(x.sched > 0);
  x.edge = start_edge();
}

static void
teardown(void) {
  if (x.edge > 0)
    lt_kill(x.edge, SIGTERM);
  if (x.sched > 0)
    lt_kill(x.sched, SIGTERM);
  bus_conn_close(x.c);
  lt_natsd_stop(&x.srv);
  lt_rmtree(x.dir);
}

TestSuite(python_pod, .init = setup, .fini = teardown, .timeout = 240);

/* Write the pod's script: the module from the source tree, then code. */
static void
script(const char *path, const char *code) {
  const char *src = getenv("LARK_SOURCE_DIR");
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fprintf(f,
          "import sys, time\nsys.path.insert(0, '%s/libbus/python')\n"
          "import larkbus\n%s",
          src ? src : ".", code);
  fclose(f);
}

/* Job name: one pod running `python3 path arg`. */
static void
apply_job(const char *name, const char *path, const char *arg) {
  char json[2048];
  snprintf(json, sizeof json,
           "{\"resource\": {\"apiVersion\": \"rlinf.io/v1alpha1\", \"kind\": "
           "\"Job\", \"metadata\": {\"name\": \"%s\"}, \"spec\": {\"tasks\": "
           "[{\"name\": \"a\", \"role\": \"Actor\", \"replicas\": 1, "
           "\"resources\": {\"cpu\": 1, \"memory\": 64}, \"runtime\": "
           "{\"raw\": {\"entrypoint\": [\"/usr/bin/env\", \"python3\", "
           "\"%s\", \"%s\"]}}}]}}}",
           name, path, arg);
  lt_must_apply(x.c, "job", json);
}

/* Wait up to seconds for path to exist. */
static int
wait_file(const char *path, int seconds) {
  struct stat st;
  for (int i = 0; i < seconds * 10; i++, usleep(100 * 1000))
    if (stat(path, &st) == 0)
      return 1;
  return 0;
}

/* Where steps_of() puts what it reads. */
typedef struct step_list {
  size_t cap, n;
  long *steps;
} step_list;

static void
add_step(const bus_event *ev, void *arg) {
  step_list *k = arg;
  if (k->n < k->cap)
    k->steps[k->n] =
        (long)bus_obj_int(bus_obj_get(&ev->data, "values"), "step", -1);
  k->n++;
}

/* The steps of the reports on lark.run.<job>, in stream order, into
 * steps (at most cap); how many there are in all. */
static size_t
steps_of(const char *job, long *steps, size_t cap) {
  step_list k = {cap, 0, steps};
  cr_assert_eq(lt_read_runs(x.c, job, 5000, 0, add_step, &k), 0, "%s",
               bus_last_error());
  return k.n;
}

/* Wait until lark.run.<job> holds at least want reports and no more come
 * for 2 s; how many it holds then. */
static size_t
steps_settled(const char *job, size_t want, long *steps, size_t cap) {
  size_t n = 0;
  for (int i = 0; i < 1200 && (n = steps_of(job, steps, cap)) < want; i++)
    usleep(100 * 1000);
  for (size_t before = (size_t)-1; before != n;) {
    before = n;
    sleep(2);
    n = steps_of(job, steps, cap);
  }
  return n;
}

Test(python_pod, pipelined_reports_land_once_in_order) {
  enum { N = 3000 };
  char path[512], done[512];
  snprintf(path, sizeof path, "%s/emit.py", x.dir);
  snprintf(done, sizeof done, "%s/emit.done", x.dir);
  script(path, "n = 3000\n"
               "for i in range(n):\n"
               "    larkbus.emit('metric', step=i, loss=0.25)\n"
               "larkbus.flush(120)\n"
               "open(sys.argv[1], 'w').close()\n");
  apply_job("pipe", path, done);
  cr_assert(wait_file(done, 120), "the pod did not flush its reports");
  static long steps[N + 100];
  size_t n = steps_settled("pipe", N, steps, N + 100);
  cr_assert_eq(n, N, "%zu reports for %d", n, N);
  for (size_t i = 0; i < n; i++)
    cr_assert_eq(steps[i], (long)i, "report %zu is step %ld", i, steps[i]);
}

/* The pod emits n steps, flushing every 200; after each flush it writes
 * "since step" (every step in [since, step) answered ok) or "# why" (some
 * of them unconfirmed) to argv[1].acked; argv[1].done at the end. */
static const char *const killed_pod =
    "n, out, since, step = 6000, sys.argv[1], 0, 0\n"
    "acked = open(out + '.acked', 'w')\n"
    "while step < n:\n"
    "    try:\n"
    "        larkbus.emit('metric', step=step)\n"
    "    except larkbus.LarkError as e:\n"
    "        time.sleep(0.05)\n"
    "        continue\n"
    "    step += 1\n"
    "    if step % 200 and step < n:\n"
    "        continue\n"
    "    try:\n"
    "        larkbus.flush(60)\n"
    "        acked.write('%d %d\\n' % (since, step))\n"
    "    except larkbus.LarkError as e:\n"
    "        acked.write('# %s\\n' % e)\n"
    "    acked.flush()\n"
    "    since = step\n"
    "open(out + '.done', 'w').close()\n";

/* Steps acknowledged according to path: ok[step] = 1; how many. */
static int
acked_steps(const char *path, char *ok, int n, int *unsure) {
  FILE *f = fopen(path, "r");
  char line[512];
  int count = 0;
  *unsure = 0;
  if (!f)
    return 0;
  while (fgets(line, sizeof line, f)) {
    int a, b;
    if (line[0] == '#') {
      cr_log_info("the pod: %s", line);
      ++*unsure;
    } else if (sscanf(line, "%d %d", &a, &b) == 2)
      for (int i = a; i < b && i < n; i++, count++)
        ok[i] = 1;
  }
  fclose(f);
  return count;
}

Test(python_pod, agent_killed_mid_stream_loses_and_doubles_nothing) {
  enum { N = 6000 };
  char path[512], out[512], acked[600], done[600];
  snprintf(path, sizeof path, "%s/kill.py", x.dir);
  snprintf(out, sizeof out, "%s/kill", x.dir);
  snprintf(acked, sizeof acked, "%s.acked", out);
  snprintf(done, sizeof done, "%s.done", out);
  script(path, killed_pod);
  apply_job("kill", path, out);
  static char ok[N];
  int unsure = 0, got = 0;
  for (int i = 0; i < 1200 && got < 1000; i++, usleep(20 * 1000))
    got = acked_steps(acked, ok, N, &unsure);
  cr_assert_geq(got, 1000, "the pod did not get going");
  lt_kill(x.edge, SIGKILL); /* mid-stream: its lines in flight unanswered */
  usleep(300 * 1000);
  x.edge = start_edge();
  cr_assert(wait_file(done, 180), "the pod did not finish");
  memset(ok, 0, sizeof ok);
  got = acked_steps(acked, ok, N, &unsure);
  cr_log_info("%d steps acknowledged, %d flushes unsure", got, unsure);
  static long steps[2 * N];
  size_t n = steps_settled("kill", (size_t)got, steps, 2 * N);
  cr_assert_leq(n, 2 * N);
  for (size_t i = 1; i < n; i++)
    cr_assert_gt(steps[i], steps[i - 1], "report %zu: step %ld after %ld", i,
                 steps[i], steps[i - 1]);
  for (size_t i = 0, j = 0; i < N; i++) {
    while (j < n && steps[j] < (long)i)
      j++;
    cr_expect(!ok[i] || (j < n && steps[j] == (long)i),
              "step %zu was acknowledged and is not in LARK_RUNS", i);
  }
}
