/*
 * test_sched_util.h - helpers shared by the scheduler's tests: a
 * resource written as JSON turned into the msgpack object the service
 * would hand over, small node and Job builders, placing a Job that must
 * (or must not) fit, and, for the tests against a real lark-scheduler,
 * reading back its placement log. Header only: it uses Criterion's
 * asserts.
 */
#ifndef LARK_TEST_SCHED_UTIL_H
#define LARK_TEST_SCHED_UTIL_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "model.h"
#include "placement.h"
#include "stream.h"

/* Parse text (JSON) into up->data; 0 on success. Free with
 * msgpack_unpacked_destroy. */
static inline int
ts_msgpack(const char *text, msgpack_unpacked *up) {
  json_error_t jerr;
  json_t *j = json_loads(text, 0, &jerr);
  msgpack_sbuffer sb;
  msgpack_packer pk;
  if (!j)
    return -1;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  lt_pack_json(&pk, j);
  json_decref(j);
  msgpack_unpacked_init(up);
  int rc =
      msgpack_unpack_next(up, sb.data, sb.size, NULL) == MSGPACK_UNPACK_SUCCESS
          ? 0
          : -1;
  /* strings point into the buffer: it lives as long as the zone */
  char *buf = msgpack_sbuffer_release(&sb);
  if (rc == 0 && !msgpack_zone_push_finalizer(up->zone, free, buf))
    rc = -1;
  if (rc)
    free(buf);
  return rc;
}

/* Add a Ready node: cpu cores, memory MiB, gpus, and label zone=<zone>
 * when zone is not NULL. Returns the node in the set. */
static inline sched_node *
ts_node(sched_nodes *s, const char *name, unsigned cpu, unsigned mem,
        unsigned gpu, const char *zone) {
  sched_node n;
  sched_node_init(&n, name);
  snprintf(n.cluster, sizeof n.cluster, "c1");
  n.capacity.cpu_m = (uint64_t)cpu * 1000;
  n.capacity.memory_mib = mem;
  n.capacity.gpu = gpu;
  if (zone)
    sched_node_set_label(&n, "zone", zone);
  if (sched_nodes_put(s, &n))
    return NULL;
  return sched_nodes_find(s, name);
}

/* Add a template: role, replicas, cpu cores, memory MiB, gpus. */
static inline sched_template *
ts_task(sched_job *job, const char *name, sched_role role, unsigned replicas,
        unsigned cpu, unsigned mem, unsigned gpu) {
  sched_template *t = sched_job_add_task(job, name);
  if (!t)
    return NULL;
  t->role = role;
  t->replicas = replicas;
  t->req.cpu_m = (uint64_t)cpu * 1000;
  t->req.memory_mib = mem;
  t->req.gpu = gpu;
  return t;
}

/* A placement test's nodes, Job ("j") and placement, made and freed. */
static inline void
ts_start(sched_nodes *nodes, sched_job *job, sched_placement *p) {
  sched_nodes_init(nodes);
  sched_job_init(job, "j");
  sched_placement_init(p);
}

static inline void
ts_end(sched_nodes *nodes, sched_job *job, sched_placement *p) {
  sched_placement_clear(p);
  sched_job_clear(job);
  sched_nodes_clear(nodes);
}

/*
 * A placement test file's suite: its nodes, Job and placement p as file
 * statics, made before and freed after each test; place_ok() and
 * place_nofit() place that Job on those nodes into p.
 */
#define TS_PLACEMENT_SUITE(suite)                                              \
  static sched_nodes nodes;                                                    \
  static sched_job job;                                                        \
  static sched_placement p;                                                    \
  static void ts_setup(void) {                                                 \
    ts_start(&nodes, &job, &p);                                                \
  }                                                                            \
  static void ts_teardown(void) {                                              \
    ts_end(&nodes, &job, &p);                                                  \
  }                                                                            \
  TestSuite(suite, .init = ts_setup, .fini = ts_teardown)

#define place_ok() ts_place_ok(&nodes, &job, &p)
#define place_nofit() ts_place_nofit(&nodes, &job, &p)

/*
 * p as job.placed of Job j in pool default at generation into pb,
 * unpacked into up, and valid by the schema. Free both after (
 * bus_packbuf_destroy, msgpack_unpacked_destroy).
 */
static inline void
ts_placed(const sched_placement *p, uint64_t generation, bus_packbuf *pb,
          msgpack_unpacked *up) {
  bus_field_err errs[4];
  int n;
  bus_packbuf_init(pb);
  cr_assert_eq(sched_pack_placed(&pb->pk, "default", "j", generation, p), 0);
  msgpack_unpacked_init(up);
  cr_assert_eq(msgpack_unpack_next(up, pb->sb.data, pb->sb.size, NULL),
               MSGPACK_UNPACK_SUCCESS);
  cr_assert_eq(bus_schema_check("job.placed", &up->data, errs, 4, &n), 0,
               "%s: %s", errs[0].path, errs[0].reason);
}

/* Place job and insist it fits. */
static inline void
ts_place_ok(sched_nodes *nodes, const sched_job *job, sched_placement *p) {
  cr_assert_eq(sched_place(nodes, job, NULL, p), 0, "%s", bus_last_error());
  cr_assert_eq(p->ok, 1, "did not fit: %s", p->reason);
}

/* Place job and insist it does not fit (nothing bound, a reason). */
static inline void
ts_place_nofit(sched_nodes *nodes, const sched_job *job, sched_placement *p) {
  cr_assert_eq(sched_place(nodes, job, NULL, p), 0, "%s", bus_last_error());
  cr_assert_eq(p->ok, 0, "fit but should not");
  cr_assert_eq(p->n, 0);
  cr_assert_neq(p->reason[0], 0);
}

/*
 * Pool default's placement log as read back by ts_read_placement: how
 * many job.placed events it holds, and how many of its events sit on top
 * of the one before (prev: that one's sequence). on_placed, when set, is
 * called with each job.placed and ud.
 */
typedef struct ts_placement_log {
  int placed, chained;
  uint64_t last_seq;
  void (*on_placed)(const bus_event *ev, void *ud);
  void *ud;
} ts_placement_log;

static inline void
ts_take_placement(const bus_event *ev, void *arg) {
  ts_placement_log *w = arg;
  if (strcmp(ev->subject, "lark.ev.placement.default"))
    return;
  w->chained += ev->prev == w->last_seq;
  w->last_seq = ev->seq;
  if (strcmp(ev->type, "job.placed"))
    return;
  w->placed++;
  if (w->on_placed)
    w->on_placed(ev, w->ud);
}

/* Read the placement log from c's LARK_EVENTS to its end into w. */
static inline void
ts_read_placement(bus_conn *c, ts_placement_log *w) {
  cr_assert_eq(lt_read_stream(c, "LARK_EVENTS", "lark.ev.placement.>", 500, 1,
                              ts_take_placement, w),
               0, "%s", bus_last_error());
}

#endif
