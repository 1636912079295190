/*
 * engine_barrier.c - the RL engine's stage barrier: W workers on N
 * simulated nodes (fleet.c: each node its own connection and its own
 * stream read through the pinned consumer lark-edge uses), a real
 * lark-engine and broker. The benchmark plays the scheduler (nodes, a Job
 * whose one task rolls out with W pods spread over the nodes, placed and
 * Running) and the workers: per step all W stage.reports are appended to
 * the nodes' ingress, the last one alone once the engine has taken the
 * others (a straggler); the figure is the time from the last report's
 * publish to the moment every node has the engine.stages with the next
 * step, split where its stage.done and the stage.started land (seen by a
 * core subscription on the Job's subject). Beside it, per step, in the same
 * run: the same N writes to the nodes' streams appended directly (JetStream,
 * acked) and a core-NATS fan-out of N messages to N subscribers, each from the
 * first publish to the last node's receipt.
 *
 *   bench_engine_barrier [--nodes 100] [--workers 1000] [--steps 50]
 */
#include <signal.h>
#include <stdatomic.h>

#include "bench.h"
#include "fleet.h"

#define NODES_MAX 1024
#define JOB "rl"

static int nodes = 100, workers = 1000, steps = 50;

/* Per node: the newest step it saw of each kind, and when. */
enum { ENGINE = 0, DIRECT = 1, CORE = 2 };
static _Atomic int64_t seen[3][NODES_MAX], seen_ns[3][NODES_MAX];

static void
mark(int kind, int node, int64_t step, int64_t now) {
  if (node < 0 || node >= nodes || step <= atomic_load(&seen[kind][node]))
    return;
  atomic_store(&seen_ns[kind][node], now);
  atomic_store(&seen[kind][node], step);
}

/* A node's engine.stages (job rl: the engine's; job base: the direct
 * baseline's): its rollout step. */
static void
got(const bus_event *ev, int64_t now, void *ud) {
  (void)ud;
  int node = -1;
  bus_ev_engine_stages e;
  msgpack_zone z;
  if (!ev || strcmp(ev->type, "engine.stages") ||
      sscanf(ev->subject, "lark.node.n%d.", &node) != 1)
    return;
  msgpack_zone_init(&z, 2048);
  if (!bus_engine_stages_unpack(&ev->data, &z, &e))
    for (uint32_t i = 0; i < e.stages.n; i++)
      if (bus_str_eq(e.stages.v[i].stage, "rollout"))
        mark(bus_str_eq(e.job, JOB) ? ENGINE : DIRECT, node,
             (int64_t)e.stages.v[i].step, now);
  msgpack_zone_destroy(&z);
}

/* When the engine's own events of a step landed (a core subscription on
 * its subject): the last stage.done and the stage.started. */
static _Atomic int64_t done_ns, started_ns, started_step = -1, done_pods;

static void
on_engine(bus_conn *c, const char *subject, const char *reply, const void *data,
          size_t len, void *ud) {
  (void)c, (void)subject, (void)reply, (void)ud;
  int64_t now = bus_wall_ns();
  msgpack_zone z;
  bus_event ev;
  msgpack_zone_init(&z, 4096);
  memset(&ev, 0, sizeof ev);
  if (!bus_event_decode_typed(data, len, &ev, &z) && ev.typed) {
    if (ev.t == BUS_T_STAGE_DONE) {
      atomic_store(&done_ns, now);
      atomic_fetch_add(&done_pods,
                       ((const bus_ev_stage_done *)ev.typed)->pods.n);
    }
    if (ev.t == BUS_T_STAGE_STARTED) {
      atomic_store(&started_ns, now);
      atomic_store(&started_step,
                   (int64_t)((const bus_ev_stage_started *)ev.typed)->step);
    }
  }
  msgpack_zone_destroy(&z);
}

/* Wait (10 s) until every node saw step of kind; the last one's time. */
static int64_t
all_saw(int kind, int64_t step) {
  int64_t until = bus_mono_ms() + 10000, last = 0;
  for (int i = 0; i < nodes; i++) {
    while (atomic_load(&seen[kind][i]) < step)
      if (bus_mono_ms() > until)
        bench_die("a node never saw its step", kind ? "baseline" : "engine");
      else
        usleep(100);
    int64_t t = atomic_load(&seen_ns[kind][i]);
    last = t > last ? t : last;
  }
  return last;
}

/* --------------------------------------------------------- the setup */

static void
as_scheduler(bus_conn *c, const char *subject, bus_type type, const void *d) {
  char id[33];
  uint64_t prev = 0;
  bus_last_event_seq(c, "LARK_EVENTS", subject, &prev);
  bus_event_new_id(id);
  bus_event ev = {.t = type,
                  .typed = d,
                  .id = id,
                  .ts = bus_wall_ns(),
                  .actor = "lark-scheduler",
                  .cause = "",
                  .prev = prev};
  if (bus_append(c, subject, &ev, BUS_APPEND_CHECK, NULL, NULL))
    bench_die("append", bus_last_error());
}

static void
add_nodes(bus_conn *c) {
  char name[32], subject[64];
  const char *names[NODES_MAX];
  static char store[NODES_MAX][32];
  for (int i = 0; i < nodes; i++) {
    fleet_node_name(i, name, sizeof name);
    snprintf(store[i], sizeof store[i], "%s", name);
    names[i] = store[i];
    bus_str addr = BUS_STR("127.0.0.1");
    bus_node_res r = {.apiVersion = BUS_STR("rlinf.io/v1alpha1"),
                      .kind = BUS_STR("Node"),
                      .metadata = {.name = bus_str_of(name)},
                      .spec = {.cluster = BUS_STR("c1"),
                               .has_addresses = 1,
                               .addresses = {&addr, 1},
                               .capacity = {.has_cpu = 1, .cpu = 64}}};
    snprintf(subject, sizeof subject, "lark.ev.node.%s", name);
    as_scheduler(c, subject, BUS_T_NODE_REGISTERED, &r);
  }
  if (bus_node_streams_ensure(c, names, (size_t)nodes, NULL))
    bench_die("node streams", bus_last_error());
}

static void
add_job(bus_conn *c) {
  bus_str part = BUS_STR("sampler");
  bus_task task = {.name = part,
                   .role = BUS_STR("Rollout"),
                   .has_replicas = 1,
                   .replicas = (uint64_t)workers};
  bus_job_res r = {.apiVersion = BUS_STR("rlinf.io/v1alpha1"),
                   .kind = BUS_STR("Job"),
                   .metadata = {.name = BUS_STR(JOB)},
                   .spec = {.tasks = {&task, 1},
                            .has_engine = 1,
                            .engine = {.has_stages = 1,
                                       .stages = {.has_rollout = 1,
                                                  .rollout = {&part, 1}}}}};
  as_scheduler(c, "lark.ev.job." JOB, BUS_T_JOB_SUBMITTED, &r);
  bus_binding *b = calloc((size_t)workers, sizeof *b);
  char(*pods)[32] = calloc((size_t)workers, sizeof *pods);
  char(*nds)[32] = calloc((size_t)workers, sizeof *nds);
  if (!b || !pods || !nds)
    bench_die("setup", "out of memory");
  for (int i = 0; i < workers; i++) {
    snprintf(pods[i], sizeof pods[i], JOB "-sampler-%d", i);
    fleet_node_name(i % nodes, nds[i], sizeof nds[i]);
    b[i] = (bus_binding){.pod = bus_str_of(pods[i]),
                         .task = BUS_STR(JOB "-sampler"),
                         .node = bus_str_of(nds[i])};
  }
  bus_ev_job_placed p = {.pool = BUS_STR("default"),
                         .job = BUS_STR(JOB),
                         .bindings = {b, (uint32_t)workers}};
  as_scheduler(c, "lark.ev.placement.default", BUS_T_JOB_PLACED, &p);
  bus_ev_job_phase ph = {.phase = BUS_STR("Running")};
  as_scheduler(c, "lark.ev.job." JOB, BUS_T_JOB_PHASE, &ph);
  free(b), free(pods), free(nds);
}

/* --------------------------------------------------------- the steps */

static void
report(bus_conn *c, int i, int64_t step, int wait) {
  char subject[128], pod[32], node[32], id[33];
  snprintf(pod, sizeof pod, JOB "-sampler-%d", i);
  fleet_node_name(i % nodes, node, sizeof node);
  snprintf(subject, sizeof subject, "lark.in.%s.engine.stage.%s", node, pod);
  bus_ev_stage_report r = {.pod = bus_str_of(pod),
                           .job = BUS_STR(JOB),
                           .stage = BUS_STR("rollout"),
                           .step = (uint64_t)step};
  bus_event_new_id(id);
  bus_event ev = {.t = BUS_T_STAGE_REPORT,
                  .typed = &r,
                  .id = id,
                  .ts = bus_wall_ns(),
                  .actor = node,
                  .cause = ""};
  int rc = wait ? bus_append(c, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL)
                : bus_append_async(c, subject, &ev, BUS_APPEND_NOCHECK);
  if (rc)
    bench_die("report", bus_last_error());
}

/* Its parts: last report -> last stage.done -> stage.started -> nodes. */
static int64_t *part[3];

/* One step through the engine: its latency (last report -> all nodes). */
static int64_t
engine_step(bus_conn *c, int64_t step, int s) {
  for (int i = 0; i < workers - 1; i++)
    report(c, i, step, 0);
  if (bus_append_flush(c, 10000, NULL))
    bench_die("reports", bus_last_error());
  /* the straggler: the others' reports are in when it reports */
  int64_t want = (step + 1) * workers - 1;
  for (int i = 0; i < 10000 && atomic_load(&done_pods) < want; i++)
    usleep(1000);
  int64_t t0 = bus_wall_ns();
  report(c, workers - 1, step, 1);
  int64_t last = all_saw(ENGINE, step + 1);
  for (int i = 0; i < 1000 && atomic_load(&started_step) < step + 1; i++)
    usleep(1000); /* the core subscription may trail the node streams */
  int64_t d = atomic_load(&done_ns), st = atomic_load(&started_ns);
  part[0][s] = d - t0, part[1][s] = st - d, part[2][s] = last - st;
  return last - t0;
}

/* The floor: the same N writes appended to the node streams directly. */
static int64_t
direct_round(bus_conn *c, int64_t round) {
  char subject[128], node[32], id[33];
  bus_stage_state st = {.stage = BUS_STR("rollout"), .step = (uint64_t)round};
  bus_ev_engine_stages e = {.job = BUS_STR("base"),
                            .has_version = 1,
                            .version = (uint64_t)round,
                            .has_stages = 1,
                            .stages = {&st, 1}};
  int64_t t0 = bus_wall_ns();
  for (int i = 0; i < nodes; i++) {
    fleet_node_name(i, node, sizeof node);
    snprintf(subject, sizeof subject, "lark.node.%s.engine.base.stages", node);
    bus_event_new_id(id);
    bus_event ev = {.t = BUS_T_ENGINE_STAGES,
                    .typed = &e,
                    .id = id,
                    .ts = bus_wall_ns(),
                    .actor = "bench",
                    .cause = ""};
    if (bus_append_async(c, subject, &ev, BUS_APPEND_NOCHECK))
      bench_die("direct", bus_last_error());
  }
  if (bus_append_flush(c, 10000, NULL))
    bench_die("direct", bus_last_error());
  return all_saw(DIRECT, round) - t0;
}

static void
on_fan(bus_conn *c, const char *subject, const char *reply, const void *data,
       size_t len, void *ud) {
  (void)c, (void)subject, (void)reply;
  int64_t round = 0;
  if (len >= sizeof round)
    memcpy(&round, data, sizeof round);
  mark(CORE, (int)(intptr_t)ud, round, bus_wall_ns());
}

/* The floor of a fan-out: N core-NATS messages to N subscribers. */
static int64_t
core_round(bus_conn *c, int64_t round) {
  char subject[64], buf[200];
  memset(buf, 'x', sizeof buf);
  memcpy(buf, &round, sizeof round);
  int64_t t0 = bus_wall_ns();
  for (int i = 0; i < nodes; i++) {
    snprintf(subject, sizeof subject, "bench.fan.%d", i);
    bus_conn_publish(c, subject, buf, sizeof buf);
  }
  return all_saw(CORE, round) - t0;
}

static bus_conn **
fan_start(const char *url) {
  bus_conn **subs = calloc((size_t)nodes, sizeof *subs);
  char subject[64], name[32];
  for (int i = 0; subs && i < nodes; i++) {
    snprintf(name, sizeof name, "fan%d", i);
    subs[i] = bench_connect(url, name, 0);
    snprintf(subject, sizeof subject, "bench.fan.%d", i);
    bus_serve *s;
    if (bus_conn_serve(subs[i], subject, NULL, on_fan, (void *)(intptr_t)i, &s))
      bench_die("subscribe", bus_last_error());
  }
  usleep(200 * 1000);
  return subs;
}

/* ------------------------------------------------------------ report */

static int
cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static void
row(const char *what, int64_t *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_i64);
  printf("  %-44s p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms\n", what,
         (double)v[n / 2] / 1e6, (double)v[(n * 99) / 100] / 1e6,
         (double)v[n - 1] / 1e6);
}

static void
load(const char *when) {
  char buf[128] = "";
  FILE *f = fopen("/proc/loadavg", "r");
  if (f && fgets(buf, sizeof buf, f))
    printf("load %s: %s", when, buf);
  if (f)
    fclose(f);
}

int
main(int argc, char **argv) {
  const bench_opt opts[] = {{"--nodes", &nodes, NULL, NULL},
                            {"--workers", &workers, NULL, NULL},
                            {"--steps", &steps, NULL, NULL},
                            {NULL, NULL, NULL, NULL}};
  if (bench_opts(argc, argv, opts) || nodes < 1 || nodes > NODES_MAX ||
      workers < nodes || workers > 1024 || steps < 1)
    bench_die("usage", "[--nodes N<=1024] [--workers W<=1024] [--steps S]");
  char dir[] = "/tmp/bench-engine-XXXXXX";
  if (!mkdtemp(dir))
    bench_die("mkdtemp", strerror(errno));
  for (int k = 0; k < 3; k++)
    for (int i = 0; i < NODES_MAX; i++)
      atomic_store(&seen[k][i], -1);
  lt_natsd srv;
  bench_natsd_start(&srv, dir, 0, NULL);
  bus_conn *c = bench_connect_streams(srv.url, 0);
  load("before");
  add_nodes(c);
  int failed = 0;
  fleet *f = fleet_start(srv.url, nodes, got, NULL, &failed);
  if (failed)
    bench_die("fleet", "a node could not open its consumer");
  bus_conn **subs = fan_start(srv.url);
  bus_serve *own;
  if (bus_conn_serve(c, "lark.ev.engine." JOB, NULL, on_engine, NULL, &own))
    bench_die("subscribe", bus_last_error());
  pid_t engine = bench_start_service(argv[0], "lark-engine", srv.url, dir);
  add_job(c);
  all_saw(ENGINE, 0); /* rollout 0 reached every node */
  int64_t *lat[3];
  for (int k = 0; k < 3; k++)
    if (!(lat[k] = calloc((size_t)steps, sizeof *lat[k])) ||
        !(part[k] = calloc((size_t)steps, sizeof *part[k])))
      bench_die("setup", "out of memory");
  for (int s = 0; s < steps; s++) {
    lat[ENGINE][s] = engine_step(c, s, s);
    lat[DIRECT][s] = direct_round(c, s + 1);
    lat[CORE][s] = core_round(c, s + 1);
  }
  printf("engine barrier: %d workers on %d nodes, %d steps\n", workers, nodes,
         steps);
  row("last stage.report -> every node's engine.stages", lat[ENGINE], steps);
  row("  of which: last report -> its stage.done", part[0], steps);
  row("  of which: stage.done -> stage.started", part[1], steps);
  row("  of which: stage.started -> every node", part[2], steps);
  row("floor: N node-stream appends (acked) -> nodes", lat[DIRECT], steps);
  row("floor: core-NATS fan-out of N messages", lat[CORE], steps);
  fflush(stdout); /* the figures, whatever the teardown does */
  load("after");
  bench_stop_service(engine, "lark-engine");
  fleet_stop(f);
  for (int i = 0; i < nodes; i++)
    bus_conn_close(subs[i]);
  free(subs);
  for (int k = 0; k < 3; k++)
    free(lat[k]), free(part[k]);
  bus_conn_close(c);
  lt_natsd_stop(&srv);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd) == 0 ? 0 : 1;
}
