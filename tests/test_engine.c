/*
 * test_engine.c - lark-engine's rules on a real view without a broker
 * (support/engine_sim.c lands what decide emits as the broker would):
 * the sequential order of the four stages, pipeline never past
 * maxStaleness over many steps with reports in random orders, a pod's
 * duplicates counted once, a retried pod joining at the current step,
 * Succeeded pods excused, explicit stages against the role defaults, the
 * loaders' weights rule in sync_weights, the end of a run, the node
 * projections (version = the deciding event's seq) and the ingress's
 * checks; each ends with a replay of the log into a fresh view giving the
 * same digest.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bed.h"
#include "engine_sim.h"
#include "engine-ingress.h"

static esim S;

#define STARTS_MAX 4096
static struct start {
  int stage;
  uint64_t step, syncs, weights;
} starts[STARTS_MAX];
static int nstarts;

static void
on_event(const bus_event *ev, void *ud) {
  (void)ud;
  if (ev->t != BUS_T_STAGE_STARTED)
    return;
  bus_ev_stage_started e;
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  cr_assert_eq(bus_stage_started_unpack(&ev->data, &z, &e), 0);
  cr_assert_lt(nstarts, STARTS_MAX);
  starts[nstarts++] =
      (struct start){eng_stage_of(e.stage), e.step, e.syncs, e.weights};
  msgpack_zone_destroy(&z);
}

static void
setup(void) {
  esim_open(&S, "engview");
  S.on_event = on_event;
  nstarts = 0;
}

static void
teardown(void) {
  cr_expect(esim_replay_same(&S), "a replay gives the same view");
  esim_close(&S);
}

TestSuite(engine, .init = setup, .fini = teardown, .timeout = 120);

/* ----------------------------------------------------------- events */

typedef struct tspec {
  const char *name, *role;
  int replicas;
} tspec;

static void
submit(const char *job, const char *mode, int stale, const tspec *ts, int n,
       const bus_engine_stages *stages) {
  bus_task tasks[8];
  memset(tasks, 0, sizeof tasks);
  for (int i = 0; i < n; i++)
    tasks[i] = (bus_task){.name = bus_str_of(ts[i].name),
                          .role = bus_str_of(ts[i].role),
                          .has_replicas = 1,
                          .replicas = (uint64_t)ts[i].replicas};
  bus_job_res r = {.apiVersion = BUS_STR("rlinf.io/v1alpha1"),
                   .kind = BUS_STR("Job"),
                   .metadata = {.name = bus_str_of(job)},
                   .spec = {.tasks = {tasks, (uint32_t)n},
                            .has_engine = mode != NULL,
                            .engine = {.has_mode = mode != NULL,
                                       .mode = bus_str_of(mode),
                                       .has_maxStaleness = stale >= 0,
                                       .maxStaleness = (uint64_t)stale,
                                       .has_stages = stages != NULL}}};
  if (stages)
    r.spec.engine.stages = *stages;
  char subject[128];
  snprintf(subject, sizeof subject, "lark.ev.job.%s", job);
  esim_feed(&S, subject, BUS_T_JOB_SUBMITTED, &r);
}

static void
node(const char *name, const char *addr) {
  bus_str addrs[1] = {bus_str_of(addr)};
  bus_node_res r = {.apiVersion = BUS_STR("rlinf.io/v1alpha1"),
                    .kind = BUS_STR("Node"),
                    .metadata = {.name = bus_str_of(name)},
                    .spec = {.cluster = BUS_STR("c0"),
                             .has_addresses = 1,
                             .addresses = {addrs, 1}}};
  char subject[128];
  snprintf(subject, sizeof subject, "lark.ev.node.%s", name);
  esim_feed(&S, subject, BUS_T_NODE_REGISTERED, &r);
}

/* Bind pod (job-task-i) on node at attempt. */
static void
place(const char *job, const char *task, int i, const char *nd, int attempt) {
  char pod[128], tk[128];
  snprintf(pod, sizeof pod, "%s-%s-%d", job, task, i);
  snprintf(tk, sizeof tk, "%s-%s", job, task);
  bus_binding b = {.pod = bus_str_of(pod),
                   .task = bus_str_of(tk),
                   .node = bus_str_of(nd),
                   .has_attempt = 1,
                   .attempt = (uint64_t)attempt};
  bus_ev_job_placed e = {
      .pool = BUS_STR("default"), .job = bus_str_of(job), .bindings = {&b, 1}};
  esim_feed(&S, "lark.ev.placement.default", BUS_T_JOB_PLACED, &e);
  esim_settle(&S);
}

static void
job_phase(const char *job, const char *phase) {
  char subject[128];
  snprintf(subject, sizeof subject, "lark.ev.job.%s", job);
  bus_ev_job_phase e = {.phase = bus_str_of(phase)};
  esim_feed(&S, subject, BUS_T_JOB_PHASE, &e);
  esim_settle(&S);
}

static void
pod_phase(const char *pod, const char *phase, const char *nd, int attempt) {
  char subject[160];
  snprintf(subject, sizeof subject, "lark.ev.pod.%s", pod);
  bus_ev_pod_phase e = {.phase = bus_str_of(phase),
                        .node = bus_str_of(nd),
                        .has_attempt = 1,
                        .attempt = (uint64_t)attempt};
  esim_feed(&S, subject, BUS_T_POD_PHASE, &e);
  esim_settle(&S);
}

/* One stage.done of pods (names), as the ingress appends it. */
static void
done(const char *job, const char *stage, uint64_t step, const char **pods,
     int n, uint64_t weights) {
  bus_stage_done d[16];
  bus_value reward = {
      .key = BUS_STR("reward"), .kind = BUS_V_FLOAT, .as.f = 1.5};
  cr_assert_leq(n, 16);
  for (int i = 0; i < n; i++)
    d[i] = (bus_stage_done){.pod = bus_str_of(pods[i]),
                            .node = BUS_STR("n1"),
                            .has_weights = 1,
                            .weights = weights,
                            .has_metrics = 1,
                            .metrics = {&reward, 1}};
  bus_ev_stage_done e = {.job = bus_str_of(job),
                         .stage = bus_str_of(stage),
                         .step = step,
                         .pods = {d, (uint32_t)n}};
  char subject[128];
  snprintf(subject, sizeof subject, "lark.ev.engine.%s", job);
  esim_feed(&S, subject, BUS_T_STAGE_DONE, &e);
  esim_settle(&S);
}

static eng_job
job_of(const char *name) {
  eng_job j;
  bus_txn *t;
  cr_assert_eq(bus_view_read(S.v, &t), 0);
  cr_assert_eq(eng_job_get(t, name, &j), 0);
  bus_txn_end(t);
  return j;
}

static void
expect_start(int i, int stage, uint64_t step) {
  cr_assert_gt(nstarts, i, "start %d missing (%d so far)", i, nstarts);
  cr_expect_eq(starts[i].stage, stage, "start %d: stage %d, want %d", i,
               starts[i].stage, stage);
  cr_expect_eq(starts[i].step, step, "start %d: step %llu, want %llu", i,
               (unsigned long long)starts[i].step, (unsigned long long)step);
}

/* The usual Job: a learner (Actor, 1) and samplers (Rollout, 2). */
static const tspec rl[] = {{"learner", "Actor", 1}, {"sampler", "Rollout", 2}};
static const char *learner[] = {"j-learner-0"};
static const char *samplers[] = {"j-sampler-0", "j-sampler-1"};
static const char *all3[] = {"j-learner-0", "j-sampler-0", "j-sampler-1"};

static void
running_job(const char *mode, int stale) {
  node("n1", "10.0.0.1");
  node("n2", "10.0.0.2");
  submit("j", mode, stale, rl, 2, NULL);
  place("j", "learner", 0, "n1", 0);
  place("j", "sampler", 0, "n1", 0);
  place("j", "sampler", 1, "n2", 0);
  job_phase("j", "Running");
}

/* The projection on subject, decoded: its field as an integer. */
static int64_t
proj_int(const char *subject, const char *key) {
  const esim_proj *p = esim_proj_get(&S, subject);
  cr_assert(p, "no projection on %s", subject);
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object o;
  cr_assert(msgpack_unpack(p->data.data, p->data.size, NULL, &z, &o) >= 0);
  int64_t v = bus_obj_int(&o, key, -1);
  const msgpack_object *b = bus_obj_get(&o, key);
  if (b && b->type == MSGPACK_OBJECT_BOOLEAN)
    v = b->via.boolean;
  msgpack_zone_destroy(&z);
  return v;
}

/* The seq of the log's last event of type. */
static uint64_t
last_seq(bus_type type) {
  for (size_t i = S.nlog; i-- > 0;)
    if (S.log[i].type == type)
      return S.log[i].seq;
  return 0;
}

static void
one_cycle(uint64_t n) {
  done("j", "rollout", n, samplers, 2, 0);
  done("j", "update_dataset", n, learner, 1, 0);
  done("j", "train", n, learner, 1, 0);
  done("j", "sync_weights", n, all3, 3, 0);
}

Test(engine, sequential_order_and_projections) {
  running_job(NULL, -1);
  one_cycle(0);
  one_cycle(1);
  int want[] = {ENG_ROLLOUT, ENG_UPDATE, ENG_TRAIN, ENG_SYNC};
  for (int i = 0; i < 9; i++)
    expect_start(i, want[i % 4], (uint64_t)i / 4);
  cr_expect_eq(nstarts, 9);
  uint64_t seq = last_seq(BUS_T_STAGE_STARTED);
  cr_expect_eq(proj_int("lark.node.n1.engine.j.stages", "version"),
               (int64_t)seq, "version = the stage.started's seq");
  cr_expect_eq(proj_int("lark.node.n2.engine.j.stages", "version"),
               (int64_t)seq);
  cr_expect(esim_proj_get(&S, "lark.node.n2.engine.j.peers"));
  cr_expect_eq(proj_int("lark.node.n1.engine.j.stages", "ended"), 0);
}

/* The participants of stage's running step that have not reported. */
static int
undone(const eng_job *j, int s, const char **out) {
  static const char *pods[] = {"j-learner-0", "j-sampler-0", "j-sampler-1"};
  static const int task[] = {0, 1, 1};
  int n = 0;
  bus_txn *t;
  cr_assert_eq(bus_view_read(S.v, &t), 0);
  for (int i = 0; i < 3; i++)
    if (eng_takes_part(j, task[i], s) && !eng_pod_done(t, j, s, pods[i]))
      out[n++] = pods[i];
  bus_txn_end(t);
  return n;
}

static int
index_of(int stage, uint64_t step) {
  int at = -1;
  for (int i = 0; i < nstarts; i++)
    if (starts[i].stage == stage && starts[i].step == step) {
      cr_expect_eq(at, -1, "%d/%llu started twice", stage,
                   (unsigned long long)step);
      at = i;
    }
  return at;
}

Test(engine, pipeline_never_past_max_staleness) {
  running_job("pipeline", 1);
  srand(14);
  while (job_of("j").st[ENG_ROLLOUT].step < 20) {
    eng_job j = job_of("j");
    const char *cand[8];
    int stage[8], n = 0;
    for (int i = 0; i < j.nloop; i++) {
      int s = j.loop[i];
      const char *u[3];
      int k = j.st[s].step >= 0 && !j.st[s].complete ? undone(&j, s, u) : 0;
      for (int x = 0; x < k; x++, n++)
        cand[n] = u[x], stage[n] = s;
    }
    cr_assert_gt(n, 0, "nothing to report: the loop is stuck");
    int pick = rand() % n;
    done("j", eng_stage_names[stage[pick]], (uint64_t)j.st[stage[pick]].step,
         &cand[pick], 1, 0);
  }
  for (int i = 0; i < nstarts; i++)
    if (starts[i].stage == ENG_ROLLOUT)
      cr_expect_leq((int64_t)starts[i].step - (int64_t)starts[i].syncs, 1,
                    "rollout %llu started with %llu syncs",
                    (unsigned long long)starts[i].step,
                    (unsigned long long)starts[i].syncs);
  for (uint64_t n = 0; n < 15; n++) {
    int r = index_of(ENG_ROLLOUT, n), u = index_of(ENG_UPDATE, n);
    int tr = index_of(ENG_TRAIN, n), sy = index_of(ENG_SYNC, n);
    cr_expect(r >= 0 && r < u && u < tr && tr < sy, "step %llu out of order",
              (unsigned long long)n);
    if (n)
      cr_expect_gt(u, index_of(ENG_SYNC, n - 1));
  }
  eng_job j = job_of("j");
  cr_expect(!eng_takes_part(&j, 1, ENG_SYNC), "pipeline: samplers not in sync");
}

Test(engine, duplicates_count_once) {
  running_job(NULL, -1);
  const char *twice[] = {"j-sampler-0", "j-sampler-0"};
  done("j", "rollout", 0, twice, 2, 0);
  done("j", "rollout", 0, twice, 1, 0);
  cr_expect_eq(nstarts, 1, "one pod's reports do not complete rollout");
  cr_expect_eq(job_of("j").st[ENG_ROLLOUT].complete, 0);
  done("j", "rollout", 0, samplers + 1, 1, 0);
  expect_start(1, ENG_UPDATE, 0);
  done("j", "rollout", 0, samplers, 2, 0); /* late: ignored */
  cr_expect_eq(nstarts, 2);
}

Test(engine, retried_pod_joins_at_the_current_step) {
  running_job(NULL, -1);
  one_cycle(0);
  /* sampler-1 reports rollout 1, then fails; its report counts */
  done("j", "rollout", 1, samplers + 1, 1, 0);
  pod_phase("j-sampler-1", "Failed", "n2", 0);
  place("j", "sampler", 1, "n1", 1); /* retried on n1 */
  done("j", "rollout", 1, samplers, 1, 0);
  expect_start(5, ENG_UPDATE, 1);
  done("j", "update_dataset", 1, learner, 1, 0);
  done("j", "train", 1, learner, 1, 0);
  /* it fails again before sync_weights 1 and its new attempt reports */
  pod_phase("j-sampler-1", "Failed", "n1", 1);
  place("j", "sampler", 1, "n2", 2);
  done("j", "sync_weights", 1, all3, 3, 0);
  expect_start(8, ENG_ROLLOUT, 2);
  int64_t ver = proj_int("lark.node.n2.engine.j.peers", "version");
  cr_expect_gt(ver, 0);
}

Test(engine, succeeded_pods_are_excused) {
  running_job(NULL, -1);
  done("j", "rollout", 0, samplers, 1, 0);
  pod_phase("j-sampler-1", "Succeeded", "n2", 0);
  expect_start(1, ENG_UPDATE, 0);
  done("j", "update_dataset", 0, learner, 1, 0);
  done("j", "train", 0, learner, 1, 0);
  const char *two[] = {"j-learner-0", "j-sampler-0"};
  done("j", "sync_weights", 0, two, 2, 0);
  expect_start(4, ENG_ROLLOUT, 1);
}

Test(engine, explicit_stages_against_role_defaults) {
  node("n1", "10.0.0.1");
  const bus_str smp[] = {BUS_STR("sampler")}, lrn[] = {BUS_STR("learner")};
  const bus_str both[] = {BUS_STR("learner"), BUS_STR("sampler")};
  bus_engine_stages st = {.has_rollout = 1,
                          .rollout = {smp, 1},
                          .has_train = 1,
                          .train = {lrn, 1},
                          .has_sync_weights = 1,
                          .sync_weights = {both, 2}};
  submit("j", "sequential", -1, rl, 2, &st);
  eng_job j = job_of("j");
  cr_expect_eq(j.nloop, 3);
  cr_expect(j.loop[0] == ENG_ROLLOUT && j.loop[1] == ENG_TRAIN &&
            j.loop[2] == ENG_SYNC);
  cr_expect(eng_takes_part(&j, 0, ENG_SYNC) && !eng_loads(&j, 0));
  cr_expect(eng_takes_part(&j, 1, ENG_SYNC) && eng_loads(&j, 1));
  cr_expect(!eng_takes_part(&j, 1, ENG_TRAIN));
  place("j", "learner", 0, "n1", 0);
  place("j", "sampler", 0, "n1", 0);
  place("j", "sampler", 1, "n1", 0);
  job_phase("j", "Running");
  done("j", "rollout", 0, samplers, 2, 0);
  done("j", "train", 0, learner, 1, 0);
  done("j", "sync_weights", 0, all3, 3, 0);
  expect_start(0, ENG_ROLLOUT, 0);
  expect_start(1, ENG_TRAIN, 0);
  expect_start(2, ENG_SYNC, 0);
  expect_start(3, ENG_ROLLOUT, 1);
  /* role defaults: the four, Actor in update_dataset, Rollout not */
  submit("k", NULL, -1, rl, 2, NULL);
  eng_job k = job_of("k");
  cr_expect_eq(k.nloop, 4);
  cr_expect(eng_takes_part(&k, 0, ENG_UPDATE) && !eng_takes_part(&k, 1, 1));
  cr_expect(eng_takes_part(&k, 1, ENG_SYNC) && eng_loads(&k, 1));
}

static void
published(uint64_t version) {
  bus_ev_weights_published e = {
      .job = BUS_STR("j"),
      .version = version,
      .size = 1024,
      .sha256 = BUS_STR("0123456789abcdef0123456789abcdef0123456789abcdef"
                        "0123456789abcdef"),
      .pod = BUS_STR("j-learner-0"),
      .node = BUS_STR("n1"),
      .address = BUS_STR("10.0.0.1:7000")};
  esim_feed(&S, "lark.ev.engine.j", BUS_T_WEIGHTS_PUBLISHED, &e);
  esim_settle(&S);
}

/* The ingress's verdict on a stage.report from node. */
static int
verdict(const char *nd, const char *pod, const char *stage, uint64_t step,
        uint64_t weights, char *why) {
  eng_route r;
  char subject[200];
  snprintf(subject, sizeof subject, "lark.in.%s.engine.stage.%s", nd, pod);
  cr_assert_eq(eng_route_parse(subject, &r), 0);
  bus_ev_stage_report rep = {.pod = bus_str_of(pod),
                             .job = BUS_STR("j"),
                             .stage = bus_str_of(stage),
                             .step = step,
                             .has_weights = 1,
                             .weights = weights};
  eng_verdict v;
  bus_txn *t;
  cr_assert_eq(bus_view_read(S.v, &t), 0);
  cr_assert_eq(eng_check_stage(t, &r, &rep, &v), 0);
  bus_txn_end(t);
  if (why)
    strcpy(why, v.why);
  return v.v;
}

Test(engine, loaders_weights_rule_and_ingress_checks) {
  running_job(NULL, -1);
  char why[256];
  cr_expect_eq(verdict("n1", "j-sampler-0", "rollout", 0, 0, NULL), ENG_ACCEPT);
  cr_expect_eq(verdict("n2", "j-sampler-0", "rollout", 0, 0, why), ENG_NOT_YET,
               "sampler-0 is bound on n1, not n2");
  cr_expect(strstr(why, "not bound on node n2"), "%s", why);
  cr_expect_eq(verdict("n1", "j-sampler-0", "rollout", 1, 0, NULL), ENG_NOT_YET,
               "step 1 has not started");
  cr_expect_eq(verdict("n1", "j-sampler-0", "train", 0, 0, NULL), ENG_REFUSE,
               "a sampler takes no part in train");
  cr_expect_eq(verdict("n1", "j-sampler-1", "rollout", 0, 0, NULL), ENG_NOT_YET,
               "sampler-1 is bound on n2");
  done("j", "rollout", 0, samplers, 1, 0);
  cr_expect_eq(verdict("n1", "j-sampler-0", "rollout", 0, 0, NULL),
               ENG_DUPLICATE);
  done("j", "rollout", 0, samplers + 1, 1, 0);
  done("j", "update_dataset", 0, learner, 1, 0);
  published(3);
  done("j", "train", 0, learner, 1, 0);
  expect_start(3, ENG_SYNC, 0);
  cr_expect_eq(starts[3].weights, 3, "sync_weights carries the newest");
  cr_expect_eq(verdict("n1", "j-sampler-0", "sync_weights", 0, 2, why),
               ENG_REFUSE, "a loader below the stage's weights");
  cr_expect(strstr(why, "needs 3"), "%s", why);
  cr_expect_eq(verdict("n1", "j-sampler-0", "sync_weights", 0, 3, NULL),
               ENG_ACCEPT);
  cr_expect_eq(verdict("n1", "j-learner-0", "sync_weights", 0, 0, NULL),
               ENG_ACCEPT, "the publisher needs no version");
  cr_expect_eq(verdict("n1", "j-sampler-0", "rollout", 0, 0, NULL),
               ENG_DUPLICATE, "an older step's report");
  cr_expect_eq(proj_int("lark.node.n2.engine.j.weights", "version"),
               (int64_t)last_seq(BUS_T_WEIGHTS_PUBLISHED));
}

Test(engine, the_run_ends_and_resumes) {
  running_job(NULL, -1);
  one_cycle(0);
  job_phase("j", "Stopped");
  cr_expect(last_seq(BUS_T_ENGINE_ENDED) > 0, "engine.ended");
  cr_expect(job_of("j").ended);
  cr_expect_eq(proj_int("lark.node.n1.engine.j.stages", "ended"), 1);
  int before = nstarts;
  cr_expect_eq(verdict("n1", "j-sampler-0", "rollout", 1, 0, NULL),
               ENG_DUPLICATE, "a report after the end is ignored");
  esim_feed(&S, "lark.ev.job.j", BUS_T_JOB_RESUMED, &(bus_ev_job_resumed){0});
  job_phase("j", "Pending");
  job_phase("j", "Running");
  cr_expect_eq(nstarts, before + 1);
  expect_start(before, ENG_ROLLOUT, 0);
  cr_expect_eq(job_of("j").run, 1);
  one_cycle(0);
  expect_start(before + 4, ENG_ROLLOUT, 1);
}

static void
held(const char *event, uint64_t version, const char *nd) {
  bus_ev_weights_cached e = {
      .job = BUS_STR("j"),
      .version = version,
      .has_sha256 = 1,
      .sha256 = BUS_STR("0123456789abcdef0123456789abcdef0123456789abcdef"
                        "0123456789abcdef"),
      .node = bus_str_of(nd),
      .has_address = 1,
      .address = BUS_STR("10.0.0.2:7000")};
  esim_feed(&S, "lark.ev.engine.j",
            strcmp(event, "cached") ? BUS_T_WEIGHTS_DROPPED
                                    : BUS_T_WEIGHTS_CACHED,
            &e);
  esim_settle(&S);
}

/* The newest version's sources in n1's engine.weights, "n1,n2". */
static void
sources(char *out, size_t cap, uint32_t *nversions, uint64_t *newest) {
  const esim_proj *p = esim_proj_get(&S, "lark.node.n1.engine.j.weights");
  cr_assert(p);
  msgpack_zone z;
  msgpack_zone_init(&z, 8192);
  msgpack_object o;
  bus_ev_engine_weights w;
  cr_assert(msgpack_unpack(p->data.data, p->data.size, NULL, &z, &o) >= 0);
  cr_assert_eq(bus_engine_weights_unpack(&o, &z, &w), 0);
  out[0] = 0;
  *nversions = w.versions.n;
  *newest = w.versions.n ? w.versions.v[0].version : 0;
  for (uint32_t i = 0; w.versions.n && i < w.versions.v[0].sources.n; i++) {
    bus_str s = w.versions.v[0].sources.v[i].node;
    snprintf(out + strlen(out), cap - strlen(out), "%s%.*s", i ? "," : "",
             (int)s.len, s.ptr);
  }
  msgpack_zone_destroy(&z);
}

Test(engine, weights_versions_and_their_sources) {
  running_job(NULL, -1);
  char src[128];
  uint32_t n;
  uint64_t newest;
  published(1);
  held("cached", 1, "n2");
  sources(src, sizeof src, &n, &newest);
  cr_expect_str_eq(src, "n1,n2", "the publisher first, then who cached it");
  held("dropped", 1, "n2");
  sources(src, sizeof src, &n, &newest);
  cr_expect_str_eq(src, "n1");
  for (uint64_t v = 2; v <= 20; v++)
    published(v);
  published(7); /* versions grow: ignored */
  sources(src, sizeof src, &n, &newest);
  cr_expect_eq(n, 16, "at most 16 versions");
  cr_expect_eq(newest, 20, "newest first");
  cr_expect_eq(job_of("j").weights, 20);
}

/* The address n1's engine.peers gives pod. */
static void
peer_address(const char *pod, char *out, size_t cap) {
  const esim_proj *p = esim_proj_get(&S, "lark.node.n1.engine.j.peers");
  cr_assert(p);
  msgpack_zone z;
  msgpack_zone_init(&z, 8192);
  msgpack_object o;
  bus_ev_engine_peers e;
  cr_assert(msgpack_unpack(p->data.data, p->data.size, NULL, &z, &o) >= 0);
  cr_assert_eq(bus_engine_peers_unpack(&o, &z, &e), 0);
  out[0] = 0;
  for (uint32_t i = 0; i < e.peers.n; i++)
    if (bus_str_eq(e.peers.v[i].pod, pod))
      bus_str_copy(e.peers.v[i].address, out, cap);
  msgpack_zone_destroy(&z);
}

Test(engine, peers_address_virtual_then_local_then_node) {
  running_job(NULL, -1);
  char addr[64];
  peer_address("j-sampler-1", addr, sizeof addr);
  cr_expect_str_eq(addr, "10.0.0.2", "its node's first address");
  bus_ev_pod_phase ph = {.phase = BUS_STR("Running"),
                         .node = BUS_STR("n2"),
                         .has_attempt = 1,
                         .has_localIP = 1,
                         .localIP = BUS_STR("192.168.7.9")};
  esim_feed(&S, "lark.ev.pod.j-sampler-1", BUS_T_POD_PHASE, &ph);
  esim_settle(&S);
  peer_address("j-sampler-1", addr, sizeof addr);
  cr_expect_str_eq(addr, "192.168.7.9", "its reported localIP");
  bus_address a = {.pod = BUS_STR("j-sampler-1"), .ip = BUS_STR("10.9.0.3")};
  bus_ev_domain_allocated d = {
      .domain = BUS_STR("d"), .job = BUS_STR("j"), .addresses = {&a, 1}};
  esim_feed(&S, "lark.ev.domain.d", BUS_T_DOMAIN_ALLOCATED, &d);
  esim_settle(&S);
  peer_address("j-sampler-1", addr, sizeof addr);
  cr_expect_str_eq(addr, "10.9.0.3", "its Domain address");
}
