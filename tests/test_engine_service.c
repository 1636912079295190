/*
 * test_engine_service.c - lark-engine as a real process against a real
 * broker with the platform's accounts. The test plays the scheduler
 * (its node, Job, placement and phase events, appended as the
 * lark-scheduler principal) and the nodes (stage.report on their own
 * ingress subjects, under their own credentials, as lark-edge sends
 * them): the stages start in order and each start reaches every node's
 * own stream (made by the engine when missing) with version = the
 * stage.started's seq; a report from a node for a pod not bound there
 * lands nothing; the queries answer; kill -9 of lark-engine under a
 * steady stream of reports loses no step and starts none twice; and the
 * view replays to the same digest.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bed.h"
#include "cmd.h"
#include "events.h"
#include "proc.h"
#include "schedplay.h"
#include "secure.h"
#include "stream.h"
#include "wait.h"

static lt_natsd srv;
static bus_conn *conn, *sched, *nodes[2];
static char dir[256];
static pid_t procs[1];

static pid_t
start_engine(void) {
  char cr[400];
  lark_creds_path(dir, "lark-engine", cr, sizeof cr);
  const char *extra[] = {"--creds", cr, "--log-level", "debug", NULL};
  return lt_must_start("lark-engine", srv.url, dir, "engine", "engine.log",
                       extra);
}

/* A node's connection, as lark-edge opens it: its inbox is its own. */
static bus_conn *
node_conn(const char *node) {
  char creds[512], inbox[64];
  bus_conn_opts o;
  bus_conn *c = NULL;
  lark_creds_path(dir, node, creds, sizeof creds);
  snprintf(inbox, sizeof inbox, "_INBOX_%s", node);
  bus_conn_opts_init(&o);
  o.url = srv.url;
  o.creds = creds;
  o.name = node;
  o.inbox_prefix = inbox;
  cr_assert_eq(bus_conn_open(&c, &o), 0, "%s: %s", node, bus_last_error());
  return c;
}

static void
setup(void) {
  lt_tmpdir(dir, sizeof dir, "engsvc");
  const char *const who[] = {
      "admin", "lark-scheduler", "lark-engine", "n1", "n2", NULL};
  const lark_role roles[] = {LARK_ROLE_ADMIN, LARK_ROLE_SERVICE,
                             LARK_ROLE_SERVICE, LARK_ROLE_NODE, LARK_ROLE_NODE};
  lt_secure_bed_up(&srv, &conn, dir, who, roles);
  cr_assert_eq(lt_connect_as(srv.url, dir, "lark-scheduler", 0, &sched), 0);
  nodes[0] = node_conn("n1");
  nodes[1] = node_conn("n2");
  procs[0] = start_engine();
}

static void
teardown(void) {
  for (int i = 0; i < 2; i++)
    bus_conn_close(nodes[i]);
  bus_conn_close(sched);
  lt_bed_down(&srv, conn, dir, procs, 1);
}

TestSuite(engine_service, .init = setup, .fini = teardown, .timeout = 180);

/* ---------------------------------------------------- the scheduler */

static void
as_scheduler(const char *subject, bus_type type, const void *data) {
  lt_as_scheduler(sched, conn, subject, type, data);
}

/* Job j: a learner (Actor) on n1, samplers (Rollout) 0 on n1, 1 on n2;
 * the nodes offer 8 CPUs. */
static void
job_running(void) {
  lt_sched_rl_job(sched, conn, "j", 8);
}

/* ---------------------------------------------------------- the nodes */

/* Node i (n1, n2) reports pod's stage step done, as lark-edge does. */
static int
report(int i, const char *pod, const char *stage, uint64_t step) {
  char node[16];
  snprintf(node, sizeof node, "n%d", i + 1);
  return lt_stage_report(nodes[i], node, "j", pod, stage, step, 7);
}

typedef struct started {
  int n;
  char stage[64][24];
  uint64_t step[64];
  int count[4][64]; /* per stage index, per step */
} started;

static const char *const names[] = {"rollout", "update_dataset", "train",
                                    "sync_weights"};

static void
on_started(const bus_event *ev, void *ud) {
  started *s = ud;
  const bus_ev_stage_started *e = bus_as_stage_started(ev);
  if (!e)
    return;
  for (int k = 0; k < 4; k++)
    if (bus_str_eq(e->stage, names[k]) && e->step < 64)
      s->count[k][e->step]++;
  if (s->n < 64) {
    bus_str_copy(e->stage, s->stage[s->n], sizeof s->stage[0]);
    s->step[s->n++] = e->step;
  }
}

static void
read_starts(started *s) {
  memset(s, 0, sizeof *s);
  cr_assert_eq(lt_read_stream(conn, "LARK_EVENTS", "lark.ev.engine.j", 1000, 1,
                              on_started, s),
               0);
}

/* Wait (20 s) until n stage.started have landed. */
static int
starts_reach(int n) {
  for (int i = 0; i < 200; i++, lt_sleep_ms(100))
    if (lt_count_events(conn, "LARK_EVENTS", "lark.ev.engine.j",
                        "stage.started", NULL) >= n)
      return 1;
  return 0;
}

/* The node's latest engine.stages: its version, and the step of stage. */
static uint64_t
projection(const char *node, const char *stage, int64_t *step) {
  char stream[64], subject[128];
  snprintf(stream, sizeof stream, "LARK_NODE_%s", node);
  snprintf(subject, sizeof subject, "lark.node.%s.engine.j.stages", node);
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  bus_event ev;
  memset(&ev, 0, sizeof ev);
  uint64_t ver = 0;
  *step = -1;
  bus_ev_engine_stages st;
  if (!bus_last_event(conn, stream, subject, &ev, &z) &&
      !bus_engine_stages_unpack(&ev.data, &z, &st)) {
    const bus_ev_engine_stages *e = &st;
    ver = e ? e->version : 0;
    for (uint32_t i = 0; e && i < e->stages.n; i++)
      if (bus_str_eq(e->stages.v[i].stage, stage))
        *step = (int64_t)e->stages.v[i].step;
  }
  msgpack_zone_destroy(&z);
  return ver;
}

static void
no_done_from(const bus_event *ev, void *ud) {
  (void)ud;
  const bus_ev_stage_done *e = bus_as_stage_done(ev);
  for (uint32_t i = 0; e && i < e->pods.n; i++)
    cr_expect(!bus_str_eq(e->pods.v[i].node, "n2") ||
                  !bus_str_eq(e->pods.v[i].pod, "j-sampler-0"),
              "a report from n2 for a pod bound on n1 landed");
}

static int
log_has(const char *what) {
  char path[400], buf[65536];
  snprintf(path, sizeof path, "%s/engine.log", dir);
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  return strstr(buf, what) != NULL;
}

Test(engine_service, stages_in_order_reach_every_node) {
  job_running();
  cr_assert(starts_reach(1), "rollout 0 never started");
  cr_assert_eq(report(1, "j-sampler-0", "rollout", 0), 0); /* not on n2 */
  cr_assert_eq(report(0, "j-sampler-0", "rollout", 0), 0);
  lt_sleep_ms(500);
  cr_expect_eq(lt_count_events(conn, "LARK_EVENTS", "lark.ev.engine.j",
                               "stage.started", NULL),
               1, "sampler-1 has not reported: rollout 0 still runs");
  cr_assert_eq(report(1, "j-sampler-1", "rollout", 0), 0);
  cr_assert(starts_reach(2));
  cr_assert_eq(report(0, "j-learner-0", "update_dataset", 0), 0);
  cr_assert(starts_reach(3));
  cr_assert_eq(report(0, "j-learner-0", "train", 0), 0);
  cr_assert(starts_reach(4));
  cr_assert_eq(report(0, "j-learner-0", "sync_weights", 0), 0);
  cr_assert_eq(report(0, "j-sampler-0", "sync_weights", 0), 0);
  cr_assert_eq(report(1, "j-sampler-1", "sync_weights", 0), 0);
  cr_assert(starts_reach(5));
  started s;
  read_starts(&s);
  const char *want[] = {"rollout", "update_dataset", "train", "sync_weights",
                        "rollout"};
  cr_assert_eq(s.n, 5);
  for (int i = 0; i < 5; i++) {
    cr_expect_str_eq(s.stage[i], want[i], "start %d", i);
    cr_expect_eq(s.step[i], i == 4 ? 1u : 0u, "start %d", i);
  }
  uint64_t last = lt_last_on(conn, "LARK_EVENTS", "lark.ev.engine.j", NULL, 0);
  for (int n = 0; n < 2; n++) {
    int64_t step = -1;
    uint64_t ver = 0;
    for (int i = 0; i < 100 && (step != 1 || ver != last);
         i++, lt_sleep_ms(100))
      ver = projection(n ? "n2" : "n1", "rollout", &step);
    cr_expect_eq(step, 1, "n%d sees rollout 1", n + 1);
    cr_expect_eq(ver, last, "n%d: version = the stage.started's seq", n + 1);
  }
  lt_read_stream(conn, "LARK_EVENTS", "lark.ev.engine.j", 1000, 1, no_done_from,
                 NULL);
  cr_expect(log_has("not bound on node n2"), "the refusal is logged");
  msgpack_zone z;
  msgpack_zone_init(&z, 65536);
  msgpack_object r;
  cr_assert_eq(lt_command(conn, "stages", "get",
                          json_pack("{s:s}", "name", "j"), &z, &r),
               0, "%s", bus_last_error());
  const msgpack_object *res = bus_obj_get(&r, "result");
  cr_assert(res, "stages.get answers a result");
  const msgpack_object *steps = bus_obj_get(res, "steps");
  cr_expect(steps && steps->type == MSGPACK_OBJECT_ARRAY &&
                steps->via.array.size == 5,
            "stages.get has the five steps");
  cr_expect_eq(bus_obj_int(res, "peers", 0), 3);
  msgpack_zone_destroy(&z);
  lt_expect_replay(conn, "engine", 25, 0);
}

/* Reports for every started stage's latest step, from n1's projection,
 * by each participant's node (duplicates and all). rollout's step. */
static int64_t
drive(void) {
  int64_t step[4];
  for (int k = 0; k < 4; k++)
    projection("n1", names[k], &step[k]);
  if (step[0] >= 0) {
    report(0, "j-sampler-0", "rollout", (uint64_t)step[0]);
    report(1, "j-sampler-1", "rollout", (uint64_t)step[0]);
  }
  for (int k = 1; k < 3; k++)
    if (step[k] >= 0)
      report(0, "j-learner-0", names[k], (uint64_t)step[k]);
  if (step[3] >= 0) {
    report(0, "j-learner-0", "sync_weights", (uint64_t)step[3]);
    report(0, "j-sampler-0", "sync_weights", (uint64_t)step[3]);
    report(1, "j-sampler-1", "sync_weights", (uint64_t)step[3]);
  }
  return step[0];
}

Test(engine_service, kill_9_loses_no_step_and_starts_none_twice) {
  job_running();
  cr_assert(starts_reach(1));
  int killed = 0;
  int64_t rollout = 0;
  for (int i = 0; i < 3000 && rollout < 12; i++) {
    rollout = drive();
    if (!killed && rollout >= 4) {
      lt_kill(procs[0], SIGKILL);
      procs[0] = 0;
      for (int k = 0; k < 20; k++) /* reports go on while it is down */
        drive(), lt_sleep_ms(10);
      procs[0] = start_engine();
      killed = 1;
    }
    lt_sleep_ms(10);
  }
  cr_assert(killed && rollout >= 12, "the run stopped at rollout %lld",
            (long long)rollout);
  started s;
  read_starts(&s);
  for (int k = 0; k < 4; k++)
    for (int n = 0; n < 11; n++)
      cr_expect_eq(s.count[k][n], 1, "%s step %d started %d times", names[k], n,
                   s.count[k][n]);
  lt_expect_replay(conn, "engine", 25, 0);
}

Test(engine_service, the_end_of_a_run_is_purged_from_its_nodes) {
  job_running();
  cr_assert(starts_reach(1));
  int64_t step = -1;
  for (int i = 0; i < 100 && step != 0; i++, lt_sleep_ms(100))
    projection("n2", "rollout", &step);
  cr_assert_eq(step, 0, "n2 sees rollout 0");
  bus_ev_job_phase ph = {.phase = BUS_STR("Succeeded")};
  as_scheduler("lark.ev.job.j", BUS_T_JOB_PHASE, &ph);
  for (int i = 0;
       i < 100 && !lt_count_events(conn, "LARK_EVENTS", "lark.ev.engine.j",
                                   "engine.ended", NULL);
       i++)
    lt_sleep_ms(100);
  cr_expect_eq(lt_count_events(conn, "LARK_EVENTS", "lark.ev.engine.j",
                               "engine.ended", NULL),
               1);
  /* the nodes' engine subjects go a few seconds after the end */
  int gone = 0;
  for (int i = 0; i < 150 && !gone; i++, lt_sleep_ms(100)) {
    uint64_t s1 = lt_last_on(conn, "LARK_NODE_n1",
                             "lark.node.n1.engine.j.stages", NULL, 0);
    uint64_t s2 = lt_last_on(conn, "LARK_NODE_n2",
                             "lark.node.n2.engine.j.peers", NULL, 0);
    gone = !s1 && !s2;
  }
  cr_expect(gone, "the ended run's projections were purged");
  cr_expect(log_has("purge: done"));
  lt_expect_replay(conn, "engine", 25, 0);
}
