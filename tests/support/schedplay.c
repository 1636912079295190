/*
 * schedplay.c - see schedplay.h.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "schedplay.h"
#include "stream.h"

void
lt_as_scheduler(bus_conn *w, bus_conn *r, const char *subject, bus_type type,
                const void *data) {
  char id[33];
  bus_event_new_id(id);
  bus_event ev = {.t = type,
                  .typed = data,
                  .id = id,
                  .ts = bus_wall_ns(),
                  .actor = "lark-scheduler",
                  .cause = "",
                  .prev = lt_last_on(r, "LARK_EVENTS", subject, NULL, 0)};
  cr_assert_eq(bus_append(w, subject, &ev, BUS_APPEND_CHECK, NULL, NULL), 0,
               "%s", bus_last_error());
}

void
lt_sched_node(bus_conn *w, bus_conn *r, const char *name, const char *addr,
              uint64_t cpu) {
  bus_str addrs[1] = {bus_str_of(addr)};
  bus_node_res n = {.apiVersion = BUS_STR("rlinf.io/v1alpha1"),
                    .kind = BUS_STR("Node"),
                    .metadata = {.name = bus_str_of(name)},
                    .spec = {.cluster = BUS_STR("c1"),
                             .has_addresses = 1,
                             .addresses = {addrs, 1},
                             .capacity = {.has_cpu = cpu > 0, .cpu = cpu}}};
  char subject[128];
  snprintf(subject, sizeof subject, "lark.ev.node.%s", name);
  lt_as_scheduler(w, r, subject, BUS_T_NODE_REGISTERED, &n);
}

void
lt_sched_rl_job(bus_conn *w, bus_conn *r, const char *job, uint64_t cpu) {
  char subject[128], pod[3][96], task[2][80];
  lt_sched_node(w, r, "n1", "127.0.0.1", cpu);
  lt_sched_node(w, r, "n2", "127.0.0.2", cpu);
  bus_task tasks[2] = {{.name = BUS_STR("learner"), .role = BUS_STR("Actor")},
                       {.name = BUS_STR("sampler"),
                        .role = BUS_STR("Rollout"),
                        .has_replicas = 1,
                        .replicas = 2}};
  bus_job_res j = {.apiVersion = BUS_STR("rlinf.io/v1alpha1"),
                   .kind = BUS_STR("Job"),
                   .metadata = {.name = bus_str_of(job)},
                   .spec = {.tasks = {tasks, 2}}};
  snprintf(subject, sizeof subject, "lark.ev.job.%s", job);
  lt_as_scheduler(w, r, subject, BUS_T_JOB_SUBMITTED, &j);
  snprintf(task[0], sizeof task[0], "%s-learner", job);
  snprintf(task[1], sizeof task[1], "%s-sampler", job);
  snprintf(pod[0], sizeof pod[0], "%s-learner-0", job);
  snprintf(pod[1], sizeof pod[1], "%s-sampler-0", job);
  snprintf(pod[2], sizeof pod[2], "%s-sampler-1", job);
  bus_binding b[3] = {{.pod = bus_str_of(pod[0]),
                       .task = bus_str_of(task[0]),
                       .node = BUS_STR("n1")},
                      {.pod = bus_str_of(pod[1]),
                       .task = bus_str_of(task[1]),
                       .node = BUS_STR("n1")},
                      {.pod = bus_str_of(pod[2]),
                       .task = bus_str_of(task[1]),
                       .node = BUS_STR("n2")}};
  bus_ev_job_placed p = {
      .pool = BUS_STR("default"), .job = bus_str_of(job), .bindings = {b, 3}};
  lt_as_scheduler(w, r, "lark.ev.placement.default", BUS_T_JOB_PLACED, &p);
  bus_ev_job_phase ph = {.phase = BUS_STR("Running")};
  lt_as_scheduler(w, r, subject, BUS_T_JOB_PHASE, &ph);
}

int
lt_stage_report(bus_conn *c, const char *node, const char *job, const char *pod,
                const char *stage, uint64_t step, int64_t reward) {
  char subject[256], id[33];
  snprintf(subject, sizeof subject, "lark.in.%s.engine.stage.%s", node, pod);
  bus_value m = {.key = BUS_STR("reward"), .kind = BUS_V_INT, .as.i = reward};
  bus_ev_stage_report r = {.pod = bus_str_of(pod),
                           .job = bus_str_of(job),
                           .stage = bus_str_of(stage),
                           .step = step,
                           .has_metrics = 1,
                           .metrics = {&m, 1}};
  bus_event_new_id(id);
  bus_event ev = {.t = BUS_T_STAGE_REPORT,
                  .typed = &r,
                  .id = id,
                  .ts = bus_wall_ns(),
                  .actor = node,
                  .cause = ""};
  int rc = bus_append(c, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL);
  if (rc)
    cr_log_error("%s: %s", subject, bus_last_error());
  return rc;
}
