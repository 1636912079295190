/*
 * bench/gateway_events.c - the events that make bench_gateway_get's pods
 * (gateway_get.h), as lark-scheduler writes them: fed to an in-process
 * view (gateway_get.c) or appended to a broker (gateway_get_http.c), and
 * the count of pods in a list's JSON that both halves check. It calls
 * neither half: both build on it.
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "bus.h"
#include "gateway_get.h"

uint64_t
bench_gw_append(void *ud, const char *subject, const char *type, uint64_t prev,
                const msgpack_sbuffer *data) {
  return bench_append(ud, subject, type, prev, data);
}

static void
node(const char *name, bench_gw_sink *sink, void *ud) {
  char subject[64];
  bus_ev_node_registered n = {.apiVersion = BUS_STR("rlinf.io/v1alpha1"),
                              .kind = BUS_STR("Node"),
                              .metadata.name = bus_str_of(name),
                              .spec = {.cluster = BUS_STR("c1"),
                                       .capacity = {.has_cpu = 1,
                                                    .cpu = 4096,
                                                    .has_memory = 1,
                                                    .memory = 1 << 24}}};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  if (bus_node_registered_pack(&sb, &n))
    bench_die("node.registered", bus_last_error());
  snprintf(subject, sizeof subject, "lark.ev.node.%s", name);
  sink(ud, subject, "node.registered", 0, &sb);
  msgpack_sbuffer_destroy(&sb);
}

/* Job j<i>: one task "w" of pods pods, placed on node n<i>. */
static void
job(int i, int pods, uint64_t *placement, bench_gw_sink *sink, void *ud) {
  char name[32], subject[64], task[40], nname[32];
  snprintf(name, sizeof name, "j%d", i);
  snprintf(nname, sizeof nname, "n%d", i);
  snprintf(subject, sizeof subject, "lark.ev.job.%s", name);
  snprintf(task, sizeof task, "%s-w", name);
  bench_job j;
  bench_job_init(&j, name, "w", "Actor", pods, 1, NULL);
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  if (bus_job_submitted_pack(&sb, &j.res))
    bench_die("job.submitted", bus_last_error());
  sink(ud, subject, "job.submitted", 0, &sb);
  bus_ev_job_placed d = {.pool = BUS_STR("default"),
                         .job = bus_str_of(name),
                         .has_generation = 1,
                         .generation = 1};
  bus_binding b = {.task = bus_str_of(task), .node = bus_str_of(nname)};
  bench_placed_pack(&sb, &d, &b, pods);
  *placement =
      sink(ud, "lark.ev.placement.default", "job.placed", *placement, &sb);
  msgpack_sbuffer_destroy(&sb);
}

void
bench_gw_events(int jobs, int pods, bench_gw_sink *sink, void *ud) {
  uint64_t placement = 0;
  for (int i = 0; i < jobs; i++) {
    char n[32];
    snprintf(n, sizeof n, "n%d", i);
    node(n, sink, ud);
  }
  for (int i = 0; i < jobs; i++)
    job(i, pods, &placement, sink, ud);
}

size_t
bench_gw_items(const char *json) {
  size_t n = 0;
  for (const char *p = json; (p = strstr(p, "\"kind\":\"Pod\"")); p++)
    n++;
  return n;
}
