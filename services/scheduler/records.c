/*
 * records.c - the scheduler's records in its LMDB view.
 *
 * A record is its struct's bytes, zeroed before it is filled, so equal
 * states are equal bytes (the digest compares them). The first byte is
 * the layout version; another version means the view predates this
 * binary and must be rebuilt (`larkctl replay scheduler`).
 */
#include <string.h>

#include "scheduler.h"

void
sched_copy(char *dst, size_t cap, const char *src, size_t n) {
  if (n >= cap)
    n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = 0;
}

static int
get_rec(bus_txn *t, const char *table, const char *name, void *r, size_t size) {
  const void *v;
  size_t len;
  int rc = bus_txn_get(t, table, name, strlen(name), &v, &len);
  if (rc)
    return rc;
  if (len != size || ((const uint8_t *)v)[0] != SCHED_REC_VERSION)
    return bus_error(BUS_ECORRUPT,
                     "%s/%s: record of another layout; rebuild the view "
                     "with larkctl replay scheduler",
                     table, name);
  memcpy(r, v, size);
  return 0;
}

static int
put_rec(bus_txn *t, const char *table, const char *name, const void *r,
        size_t size) {
  return bus_txn_put(t, table, name, strlen(name), r, size);
}

int
sched_job_get(bus_txn *t, const char *name, job_rec *r) {
  return get_rec(t, "jobs", name, r, sizeof *r);
}

int
sched_job_put(bus_txn *t, const job_rec *r) {
  return put_rec(t, "jobs", r->name, r, sizeof *r);
}

int
sched_task_get(bus_txn *t, const char *name, task_rec *r) {
  return get_rec(t, "tasks", name, r, sizeof *r);
}

int
sched_task_put(bus_txn *t, const task_rec *r) {
  return put_rec(t, "tasks", r->name, r, sizeof *r);
}

int
sched_pod_get(bus_txn *t, const char *name, pod_rec *r) {
  return get_rec(t, "pods", name, r, sizeof *r);
}

int
sched_pod_put(bus_txn *t, const pod_rec *r) {
  return put_rec(t, "pods", r->name, r, sizeof *r);
}

int
sched_noderec_get(bus_txn *t, const char *name, node_rec *r) {
  return get_rec(t, "nodes", name, r, sizeof *r);
}

int
sched_noderec_put(bus_txn *t, const node_rec *r) {
  return put_rec(t, "nodes", r->name, r, sizeof *r);
}

int
sched_spec_get(bus_txn *t, const char *table, const char *name,
               const void **data, size_t *len) {
  return bus_txn_get(t, table, name, strlen(name), data, len);
}

int
sched_job_load(bus_txn *t, const char *name, sched_job *job) {
  const void *data;
  size_t len;
  int rc = sched_spec_get(t, "specs", name, &data, &len);
  if (rc)
    return rc;
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object o;
  bus_field_err err;
  int n = 0;
  if (msgpack_unpack(data, len, NULL, &z, &o) < 0)
    rc = bus_error(BUS_ECORRUPT, "specs/%s: not msgpack", name);
  else
    rc = sched_job_from_msgpack(&o, job, &err, 1, &n);
  msgpack_zone_destroy(&z);
  return rc;
}

typedef struct each_pod {
  const char *job;
  sched_pod_cb cb;
  void *ud;
  bus_txn *t;
} each_pod;

static int
visit_pod(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  each_pod *e = ud;
  pod_rec p;
  if (vl != sizeof p)
    return BUS_ECORRUPT;
  memcpy(&p, v, sizeof p);
  if (strcmp(p.job, e->job))
    return 0; /* another Job's pod sharing the prefix */
  return e->cb(e->t, &p, e->ud);
}

/*
 * The callback may write pods: LMDB cursors stay valid across puts in the
 * same transaction, and we hand it a copy of the record.
 */
int
sched_each_pod(bus_txn *t, const char *job, sched_pod_cb cb, void *ud) {
  char prefix[SCHED_NAME_SZ + 1];
  snprintf(prefix, sizeof prefix, "%s-", job);
  each_pod e = {job, cb, ud, t};
  return bus_txn_scan(t, "pods", prefix, strlen(prefix), visit_pod, &e);
}

static const char *const tables[] = {"jobs",     "specs", "tasks",     "pods",
                                     "why",      "nodes", "nodespecs", "queue",
                                     "outgoing", "todo",  NULL};

void
sched_view_def(bus_view_def *def) {
  memset(def, 0, sizeof *def);
  def->name = "scheduler";
  def->tables = tables;
  def->apply = sched_apply;
  def->decide = sched_decide;
  def->stream = "LARK_EVENTS";
  def->filter = "lark.ev.>";
}
