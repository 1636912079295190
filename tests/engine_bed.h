/*
 * engine_bed.h - what the tests of the node's RL engine side share
 * (tests/test_edge_engine*.c): they play lark-engine, writing its
 * projections to the node's stream as it would, and the scheduler,
 * writing pod.desired (job j, task j-a, tests/support/bed.h), and read
 * what the node sends on its ingress. Pods run Python scripts with
 * larkbus.Run. Header-only: each test file is one executable.
 */
#ifndef LARK_TEST_ENGINE_BED_H
#define LARK_TEST_ENGINE_BED_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bed.h"
#include "events.h"
#include "files.h"
#include "natsd.h"
#include "proc.h"
#include "store.h"

static lt_natsd srv;
static bus_conn *conn;
static bus_consumer *ingress;
static char dir[256];
static pid_t edge_pid;
static uint64_t version = 100;

/* A stage's latest started step, for stages(). */
typedef struct eb_stage {
  const char *stage;
  uint64_t step, weights;
} eb_stage;

static void
eb_append(const char *what, const char *type, msgpack_sbuffer *sb) {
  char id[33], subject[256];
  bus_event ev;
  lt_event(&ev, id, type, "lark-engine", bus_wall_ns(), 0, sb);
  snprintf(subject, sizeof subject, "lark.node.n1.engine.j.%s", what);
  cr_assert_eq(bus_append(conn, subject, &ev, 0, NULL, NULL), 0, "%s",
               bus_last_error());
  msgpack_sbuffer_destroy(sb);
}

/* engine.stages of job j at version v (0: the next), as lark-engine
 * writes it: the n stages started, loaders (NULL-terminated, may be
 * NULL), ended. */
static void
eb_stages(uint64_t v, const eb_stage *st, int n, const char *const *loaders,
          int ended) {
  bus_stage_state s[4];
  bus_str l[8];
  uint32_t nl = 0;
  for (int i = 0; i < n; i++)
    s[i] = (bus_stage_state){.stage = bus_str_of(st[i].stage),
                             .step = st[i].step,
                             .has_weights = 1,
                             .weights = st[i].weights,
                             .has_ts = 1,
                             .ts = bus_wall_ns()};
  for (; loaders && loaders[nl]; nl++)
    l[nl] = bus_str_of(loaders[nl]);
  bus_ev_engine_stages d = {.job = BUS_STR("j"),
                            .has_version = 1,
                            .version = v ? v : ++version,
                            .has_mode = 1,
                            .mode = BUS_STR("sequential"),
                            .has_stages = 1,
                            .stages = {s, (uint32_t)n},
                            .has_loaders = nl > 0,
                            .loaders = {l, nl},
                            .has_ended = ended,
                            .ended = ended};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  cr_assert_eq(bus_engine_stages_pack(&sb, &d), 0, "%s", bus_last_error());
  eb_append("stages", "engine.stages", &sb);
}

/* engine.peers of job j: pods p (NULL-terminated), each of task j-a on
 * n1 at address 10.0.0.<i+1>. */
static void
eb_peers(const char *const *pods) {
  bus_peer p[8];
  char addr[8][32];
  uint32_t n = 0;
  for (; pods[n]; n++) {
    snprintf(addr[n], sizeof addr[n], "10.0.0.%u", n + 1);
    p[n] = (bus_peer){.pod = bus_str_of(pods[n]),
                      .task = BUS_STR("j-a"),
                      .has_role = 1,
                      .role = BUS_STR("Rollout"),
                      .node = BUS_STR("n1"),
                      .has_cluster = 1,
                      .cluster = BUS_STR("local"),
                      .has_address = 1,
                      .address = bus_str_of(addr[n]),
                      .has_attempt = 1,
                      .attempt = 0,
                      .has_phase = 1,
                      .phase = BUS_STR("Running")};
  }
  bus_ev_engine_peers d = {.job = BUS_STR("j"),
                           .has_version = 1,
                           .version = ++version,
                           .has_peers = 1,
                           .peers = {p, n}};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  cr_assert_eq(bus_engine_peers_pack(&sb, &d), 0, "%s", bus_last_error());
  eb_append("peers", "engine.peers", &sb);
}

/* Whether the node's store holds job j's what, within seconds (want 1)
 * or no longer holds it (want 0). The store is LMDB: the test opens it
 * beside the running agent. */
static int
eb_stored(const char *what, int want, int seconds) {
  char path[512];
  snprintf(path, sizeof path, "%s/n1/store", dir);
  for (int i = 0; i < seconds * 10; i++, usleep(100 * 1000)) {
    edge_store *s = NULL;
    if (edge_store_open(&s, path))
      continue;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    int has = edge_store_engine_get(s, "j", what, &sb) == 0;
    msgpack_sbuffer_destroy(&sb);
    edge_store_close(s);
    if (has == want)
      return 1;
  }
  return 0;
}

/* ---------------------------------------------------------- the pods */

/*
 * Pod pod (job j, task j-a) running a Python script with larkbus.Run as
 * run, body its statements (4-space indent free, one per line): call(f)
 * appends f()'s answer, or {"error": why} for a LarkError, to the list
 * dir/<pod>.json gets at the end; mark(k) makes dir/<pod>.<k>; raw(line)
 * sends a line on a connection of its own and returns the answer;
 * raw_lines(data, n) sends data at once and returns n answer lines as
 * text; raw_drop(line) sends a line and closes before its answer.
 */
static void
eb_pod(const char *pod, uint32_t attempt, const char *body) {
  char path[512], cmd[700];
  snprintf(path, sizeof path, "%s/%s-%u.py", dir, pod, attempt);
  cr_assert_eq(lt_write_file(
                   path,
                   "import json, os, socket, sys\n"
                   "sys.path.insert(0, '%s/libbus/python')\n"
                   "import larkbus\n"
                   "run = larkbus.Run()\n"
                   "out = []\n"
                   "open('%s/%s.pid', 'a').write('%%d\\n' %% os.getpid())\n"
                   "def mark(k):\n"
                   "    open('%s/%s.' + k, 'w').close()\n"
                   "def call(f):\n"
                   "    try:\n"
                   "        out.append(f())\n"
                   "    except larkbus.LarkError as e:\n"
                   "        out.append({'error': str(e)})\n"
                   "def raw(line):\n"
                   "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
                   "    s.connect(os.environ['LARK_SOCKET'])\n"
                   "    s.sendall(line.encode() + b'\\n')\n"
                   "    r = b''\n"
                   "    while not r.endswith(b'\\n'):\n"
                   "        r += s.recv(65536)\n"
                   "    s.close()\n"
                   "    return json.loads(r)\n"
                   "def raw_lines(data, n):\n"
                   "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
                   "    s.connect(os.environ['LARK_SOCKET'])\n"
                   "    s.sendall(data.encode())\n"
                   "    r = b''\n"
                   "    while r.count(b'\\n') < n:\n"
                   "        c = s.recv(65536)\n"
                   "        if not c:\n"
                   "            break\n"
                   "        r += c\n"
                   "    s.close()\n"
                   "    return r.decode().splitlines()\n"
                   "def raw_drop(line):\n"
                   "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
                   "    s.connect(os.environ['LARK_SOCKET'])\n"
                   "    s.sendall(line.encode() + b'\\n')\n"
                   "    s.close()\n"
                   "%s\n"
                   "json.dump(out, open('%s/%s.tmp', 'w'))\n"
                   "os.rename('%s/%s.tmp', '%s/%s.json')\n",
                   getenv("LARK_SOURCE_DIR"), dir, pod, dir, pod, body, dir,
                   pod, dir, pod, dir, pod),
               0);
  snprintf(cmd, sizeof cmd, "exec python3 %s", path);
  const char *const argv[] = {"sh", "-c", cmd, NULL};
  lt_pod_desire(conn, "n1", pod, attempt, "Running", "raw", argv, NULL);
}

/* Every pod process a script recorded in dir/<pod>.pid, killed with its
 * group (pods outlive their agent). */
static void
eb_kill_pods(const char *pod) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.pid", dir, pod);
  lt_kill_groups(path);
}

/* Whether dir/<pod>.<k> exists within seconds. */
static int
eb_marked(const char *pod, const char *k, int seconds) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.%s", dir, pod, k);
  for (int i = 0; i < seconds * 10; i++, usleep(100 * 1000))
    if (access(path, F_OK) == 0)
      return 1;
  return 0;
}

/* The pod's answers (eb_pod), within seconds: NULL (said) when none. */
static json_t *
eb_results(const char *pod, int seconds) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.json", dir, pod);
  for (int i = 0; i < seconds * 10; i++, usleep(100 * 1000)) {
    json_t *o = json_load_file(path, 0, NULL);
    if (o) {
      char *t = json_dumps(o, JSON_COMPACT);
      cr_log_info("%s: %s", pod, t);
      free(t);
      return o;
    }
  }
  cr_log_error("%s never wrote its answers", pod);
  lt_log_tail(dir, "n1.log", 20);
  return NULL;
}

#define ANS(out, i) json_array_get(out, i)
#define STR(o, k) json_string_value(json_object_get(o, k))
#define INT(o, k) json_integer_value(json_object_get(o, k))

/* ------------------------------------------------------ the ingress */

/* A stage.report the node sent. */
typedef struct eb_report {
  char pod[128], job[64], stage[32];
  uint64_t attempt, step, weights;
  double reward;
} eb_report;

static eb_report reports[256];
static int nreports;

static void
eb_take(const bus_event *ev, void *ud) {
  (void)ud;
  const bus_ev_stage_report *r = bus_as_stage_report(ev);
  if (!r || nreports == 256)
    return;
  eb_report *e = &reports[nreports++];
  memset(e, 0, sizeof *e);
  bus_str_copy(r->pod, e->pod, sizeof e->pod);
  bus_str_copy(r->job, e->job, sizeof e->job);
  bus_str_copy(r->stage, e->stage, sizeof e->stage);
  e->attempt = r->attempt, e->step = r->step, e->weights = r->weights;
  for (uint32_t i = 0; r->has_metrics && i < r->metrics.n; i++)
    if (bus_str_eq(r->metrics.v[i].key, "reward"))
      e->reward = r->metrics.v[i].kind == BUS_V_FLOAT
                      ? r->metrics.v[i].as.f
                      : (double)r->metrics.v[i].as.i;
}

/* Reads the ingress for ms. */
static void
eb_drain(int ms) {
  lt_drain(ingress, 128, ms, eb_take, NULL);
}

/* How many reports of pod for (stage, step) came, reading the ingress
 * until there are want or seconds passed. */
static int
eb_reports(const char *pod, const char *stage, uint64_t step, int want,
           int seconds) {
  int n = 0;
  for (int i = 0; i <= seconds * 4; i++) {
    n = 0;
    for (int k = 0; k < nreports; k++)
      n += !strcmp(reports[k].pod, pod) && !strcmp(reports[k].stage, stage) &&
           reports[k].step == step;
    if (n >= want && i)
      break;
    eb_drain(250);
  }
  return n;
}

/* The first report of pod for (stage, step), or NULL. */
static const eb_report *
eb_report_of(const char *pod, const char *stage, uint64_t step) {
  for (int k = 0; k < nreports; k++)
    if (!strcmp(reports[k].pod, pod) && !strcmp(reports[k].stage, stage) &&
        reports[k].step == step)
      return &reports[k];
  return NULL;
}

#endif
