/*
 * apply.c - the bindings view of lark-logs: apply, dispatched from a table
 * indexed by event type (bus_apply_dispatch), each handler reading its
 * event's generated struct, and the view's definition.
 *
 * apply is pure and reads only the event and the view, so a replay from
 * sequence 1 builds the same tables as the live service (the digest
 * proves it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logs-int.h"

static const char *const tables[] = {T_PODS, T_JOBS, NULL};

static int
apply_binding(bus_txn *t, const char *job, const bus_binding *o) {
  logs_binding b;
  memset(&b, 0, sizeof b);
  bus_str_copy(o->pod, b.pod, sizeof b.pod);
  bus_str_copy(o->task, b.task, sizeof b.task);
  bus_str_copy(o->node, b.node, sizeof b.node);
  if (!b.pod[0])
    return bus_error(BUS_EFIELD, "a binding without pod, task or node");
  snprintf(b.job, sizeof b.job, "%s", job);
  snprintf(b.phase, sizeof b.phase, "Pending");
  b.attempt = o->has_attempt ? (uint32_t)o->attempt : 0;
  b.bound = 1;
  char key[LOGS_NAME_SZ + LOGS_DNAME_SZ + 2];
  int klen = logs__index_key(key, sizeof key, job, b.pod);
  int rc = logs__binding_put(t, &b);
  if (!rc && klen > 0)
    rc = bus_txn_put(t, T_JOBS, key, (size_t)klen, "", 0);
  return rc;
}

static int
apply_placed(bus_txn *t, const bus_ev_job_placed *p) {
  char job[LOGS_NAME_SZ] = "";
  bus_str_copy(p->job, job, sizeof job);
  for (uint32_t i = 0; i < p->bindings.n; i++) {
    int rc = apply_binding(t, job, &p->bindings.v[i]);
    if (rc)
      return rc;
  }
  return 0;
}

/* The pod names indexed under "<job>/", collected before any change. */
typedef struct podlist {
  char (*names)[LOGS_DNAME_SZ];
  size_t n, cap, plen;
} podlist;

static int
collect_pod(const void *key, size_t klen, const void *val, size_t vlen,
            void *ud) {
  (void)val, (void)vlen;
  podlist *l = ud;
  if (bus_grow(&l->names, l->n, &l->cap, sizeof *l->names, 16))
    return BUS_ESTORE;
  bus_str tail = {(const char *)key + l->plen, (uint32_t)(klen - l->plen)};
  bus_str_copy(tail, l->names[l->n++], LOGS_DNAME_SZ);
  return 0;
}

/*
 * Visit the pods of job still bound to it: unbind (forget = 0) or delete
 * them and their index entries (forget = 1).
 */
static int
release_job(bus_txn *t, const char *job, int forget) {
  char prefix[LOGS_NAME_SZ + 2];
  snprintf(prefix, sizeof prefix, "%s/", job);
  podlist l = {.plen = strlen(prefix)};
  int rc = bus_txn_scan(t, T_JOBS, prefix, l.plen, collect_pod, &l);
  for (size_t i = 0; !rc && i < l.n; i++) {
    logs_binding b;
    char key[LOGS_NAME_SZ + LOGS_DNAME_SZ + 2];
    int klen = logs__index_key(key, sizeof key, job, l.names[i]);
    int got = logs_binding_get(t, l.names[i], &b);
    if (got == 0 && !strcmp(b.job, job)) {
      b.bound = 0;
      rc = forget ? bus_txn_del(t, T_PODS, b.pod, strlen(b.pod))
                  : logs__binding_put(t, &b);
    } else if (got && got != BUS_ENOT_FOUND) {
      rc = got;
    }
    if (!rc && forget && klen > 0)
      rc = bus_txn_del(t, T_JOBS, key, (size_t)klen);
  }
  free(l.names);
  return rc;
}

static int
apply_pod_phase(bus_txn *t, const char *pod, const bus_ev_pod_phase *ph) {
  logs_binding b;
  char node[LOGS_NAME_SZ] = "";
  bus_str_copy(ph->node, node, sizeof node);
  if (logs_binding_get(t, pod, &b) || strcmp(b.node, node))
    return 0; /* not a pod we know on that node: nothing to track */
  uint32_t attempt = ph->has_attempt ? (uint32_t)ph->attempt : 0;
  if (attempt > b.attempt)
    b.attempt = attempt;
  memset(b.phase, 0, sizeof b.phase);
  bus_str_copy(ph->phase, b.phase, sizeof b.phase);
  return logs__binding_put(t, &b);
}

/* The rest of the event's subject after prefix, or NULL when it came on
 * another: job.placed and job.unplaced count on the placement log only,
 * pod.phase on a pod's subject, job.deleted on a Job's. */
static const char *
subject_rest(const bus_event *ev, const char *prefix) {
  size_t n = strlen(prefix);
  return strncmp(ev->subject, prefix, n) ? NULL : ev->subject + n;
}

static int
on_placed(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  if (!subject_rest(ev, "lark.ev.placement."))
    return 0;
  return apply_placed(t, data);
}

static int
on_unplaced(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  const bus_ev_job_unplaced *u = data;
  char job[LOGS_NAME_SZ] = "";
  if (!subject_rest(ev, "lark.ev.placement."))
    return 0;
  bus_str_copy(u->job, job, sizeof job);
  return release_job(t, job, 0);
}

static int
on_pod_phase(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  const char *pod = subject_rest(ev, "lark.ev.pod.");
  return pod ? apply_pod_phase(t, pod, data) : 0;
}

static int
on_job_deleted(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)data, (void)ud;
  const char *job = subject_rest(ev, "lark.ev.job.");
  return job && strlen(job) < LOGS_NAME_SZ ? release_job(t, job, 1) : 0;
}

static const bus_apply_table apply_table = {
    .on = {
        [BUS_T_JOB_DELETED] = on_job_deleted,
        [BUS_T_JOB_PLACED] = on_placed,
        [BUS_T_JOB_UNPLACED] = on_unplaced,
        [BUS_T_POD_PHASE] = on_pod_phase,
    }};

static int
logs_apply(bus_txn *t, const bus_event *ev, void *ud) {
  if (!ev->subject || !ev->type)
    return 0;
  return bus_apply_dispatch(&apply_table, t, ev, ud);
}

void
logs_view_def(bus_view_def *def) {
  memset(def, 0, sizeof *def);
  def->name = "logs";
  def->tables = tables;
  def->apply = logs_apply;
  def->stream = "LARK_EVENTS";
  def->filter = "lark.ev.>";
}
