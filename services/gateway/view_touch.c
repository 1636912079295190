/*
 * view_touch.c - which objects an event touches (docs/design.md, "The
 * gateway's view"): the set apply renders again. It is bounded by what
 * the event is about: a pod's event touches that pod, its Task and Job
 * (and, as the pod is rendered, its nodes), never the Job's other pods;
 * only events about a whole Job (submitted, stopped, resumed, deleted,
 * placed, unplaced, addressed) touch all its pods.
 *
 * Members are found both in the embedded views (what exists now) and in
 * the gateway's index (what was rendered before, so an object the owner
 * dropped is seen and written as DELETED).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dag.h"
#include "ipam.h"
#include "scheduler.h"
#include "view-int.h"

int
gw_touch_add(gw_touched *s, gw_kind k, const char *name) {
  if (!name || !*name || strlen(name) >= GW_NAME_SZ)
    return 0;
  for (size_t i = 0; i < s->n && k == GW_NODES; i++) /* few; pods' nodes */
    if (s->v[i].kind == k && !strcmp(s->v[i].name, name))
      return 0;
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 16;
    gw_touch *v = realloc(s->v, cap * sizeof *v);
    if (!v)
      return -ENOMEM;
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n].kind = k;
  snprintf(s->v[s->n].name, GW_NAME_SZ, "%s", name);
  s->n++;
  return 0;
}

void
gw_touched_free(gw_touched *s) {
  free(s->v);
  s->v = NULL;
  s->n = s->cap = 0;
}

/* The last token of ev's subject after prefix, or NULL. */
static const char *
after(const bus_event *ev, const char *prefix) {
  size_t n = strlen(prefix);
  return strncmp(ev->subject, prefix, n) ? NULL : ev->subject + n;
}

typedef struct walk {
  gw_touched *s;
  const char *job;
  int rc;
} walk;

static int
on_sched_pod(bus_txn *t, pod_rec *p, void *ud) {
  (void)t;
  walk *w = ud;
  return w->rc = gw_touch_add(w->s, GW_PODS, p->name);
}

static int
on_sched_task(void *rec, void *ud) {
  task_rec *r = rec;
  walk *w = ud;
  if (strcmp(r->job, w->job))
    return 0;
  return w->rc = gw_touch_add(w->s, GW_TASKS, r->name);
}

/* idx j/<job>/<plural>/<name>: what the gateway rendered of the Job. */
static int
idx_member(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  walk *w = ud;
  char key[GW_KEY_MAX + 1];
  size_t skip = strlen(w->job) + 3;
  if (kl <= skip || kl - skip > GW_KEY_MAX)
    return 0;
  memcpy(key, (const char *)k + skip, kl - skip);
  key[kl - skip] = 0;
  char *slash = strchr(key, '/');
  if (!slash)
    return 0;
  *slash = 0;
  int kind = gw_kind_parse(key);
  return kind < 0 ? 0 : (w->rc = gw_touch_add(w->s, kind, slash + 1));
}

/* Every task and pod of job, as the scheduler has them and as the
 * gateway rendered them. */
static int
job_members(bus_txn *t, bus_txn *st, const char *job, gw_touched *s) {
  walk w = {s, job, 0};
  char prefix[GW_KEY_MAX];
  int n = snprintf(prefix, sizeof prefix, "%s-", job);
  int rc = sched_each_pod(st, job, on_sched_pod, &w);
  if (!rc)
    rc = sched_each_rec(st, "tasks", prefix, sizeof(task_rec), 0, on_sched_task,
                        &w);
  n = snprintf(prefix, sizeof prefix, "j/%s/", job);
  if (!rc && n > 0 && (size_t)n < sizeof prefix)
    rc = bus_txn_scan(t, "idx", prefix, (size_t)n, idx_member, &w);
  rc = rc ? rc : w.rc;
  return rc == BUS_ENOT_FOUND ? 0 : rc;
}

/* The Workflow that claimed job (dag's jobs table), into wf[cap]. */
const char *
gw_job_workflow(bus_txn *dt, const char *job, char *wf, size_t cap) {
  const void *v;
  size_t n;
  msgpack_unpacked u;
  wf[0] = 0;
  if (bus_txn_get(dt, "jobs", job, strlen(job), &v, &n))
    return NULL;
  msgpack_unpacked_init(&u);
  if (msgpack_unpack_next(&u, v, n, NULL) == MSGPACK_UNPACK_SUCCESS)
    bus_obj_str(&u.data, "wf", wf, cap);
  msgpack_unpacked_destroy(&u);
  return wf[0] ? wf : NULL;
}

static int
pod_event(bus_txn *rt[GW_NEMB], const bus_event *ev, const char *pod,
          gw_touched *s) {
  pod_rec p;
  char job[GW_NAME_SZ] = "";
  int rc = gw_touch_add(s, GW_PODS, pod);
  bus_obj_str(&ev->data, "job", job, sizeof job);
  if (!rc && !sched_pod_get(rt[GW_EMB_SCHED], pod, &p)) {
    snprintf(job, sizeof job, "%s", p.job);
    rc = gw_touch_add(s, GW_TASKS, p.task);
  }
  return rc ? rc : gw_touch_add(s, GW_JOBS, job);
}

/* The Job and its Domain (whose waiting list a placement or a delete
 * moves). */
static int
job_and_domain(bus_txn *st, const char *job, gw_touched *s) {
  job_rec j;
  int rc = gw_touch_add(s, GW_JOBS, job);
  if (!rc && !sched_job_get(st, job, &j) && j.domain[0])
    rc = gw_touch_add(s, GW_DOMAINS, j.domain);
  return rc;
}

static int
job_event(bus_txn *t, bus_txn *rt[GW_NEMB], const bus_event *ev,
          const char *job, gw_touched *s) {
  static const char *const whole[] = {"job.submitted", "job.deleted",
                                      "job.resumed", "job.stopped", NULL};
  char wf[GW_NAME_SZ];
  int rc = job_and_domain(rt[GW_EMB_SCHED], job, s);
  if (!rc && gw_job_workflow(rt[GW_EMB_DAG], job, wf, sizeof wf))
    rc = gw_touch_add(s, GW_WORKFLOWS, wf);
  for (int i = 0; !rc && whole[i]; i++)
    if (!strcmp(ev->type, whole[i]))
      return job_members(t, rt[GW_EMB_SCHED], job, s);
  return rc;
}

/* A Workflow and the Jobs it names (dag's describe, and the index). */
static int
workflow_event(bus_txn *t, bus_txn *dt, const char *wf, gw_touched *s) {
  bus_packbuf req, out;
  msgpack_unpacked u;
  int rc = gw_touch_add(s, GW_WORKFLOWS, wf);
  bus_packbuf_init(&req);
  bus_packbuf_init(&out);
  msgpack_unpacked_init(&u);
  msgpack_pack_map(&req.pk, 1);
  bus_pack_kv_str(&req.pk, "name", wf);
  msgpack_unpack_next(&u, req.sb.data, req.sb.size, NULL);
  if (!rc && !dag_query(dt, "workflow", "describe", &u.data, &out.pk, NULL)) {
    msgpack_unpacked d;
    msgpack_unpacked_init(&d);
    const msgpack_object *jobs = NULL;
    if (msgpack_unpack_next(&d, out.sb.data, out.sb.size, NULL) ==
        MSGPACK_UNPACK_SUCCESS)
      jobs = bus_obj_get(&d.data, "jobs");
    for (uint32_t i = 0; !rc && jobs && jobs->type == MSGPACK_OBJECT_ARRAY &&
                         i < jobs->via.array.size;
         i++) {
      char name[GW_NAME_SZ];
      if (bus_obj_str(&jobs->via.array.ptr[i], "name", name, sizeof name))
        rc = gw_touch_add(s, GW_JOBS, name);
    }
    msgpack_unpacked_destroy(&d);
  }
  walk w = {s, wf, 0};
  char prefix[GW_KEY_MAX];
  int n = snprintf(prefix, sizeof prefix, "w/%s/", wf);
  if (!rc && n > 0 && (size_t)n < sizeof prefix)
    rc = bus_txn_scan(t, "idx", prefix, (size_t)n, idx_member, &w);
  msgpack_unpacked_destroy(&u);
  bus_packbuf_destroy(&req);
  bus_packbuf_destroy(&out);
  return rc ? rc : w.rc;
}

/* objects domains/<name>: every Domain rendered before. */
static int
old_domain(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  char name[GW_NAME_SZ];
  size_t skip = strlen("domains/");
  if (kl - skip >= sizeof name)
    return 0;
  memcpy(name, (const char *)k + skip, kl - skip);
  name[kl - skip] = 0;
  return gw_touch_add(ud, GW_DOMAINS, name);
}

/* lark.ev.ipam.domains: a Domain created or deleted; there are few. */
static int
domains_event(bus_txn *t, const bus_event *ev, gw_touched *s) {
  char name[GW_NAME_SZ];
  const msgpack_object *md = bus_obj_get(&ev->data, "metadata");
  if (bus_obj_str(&ev->data, "domain", name, sizeof name) ||
      (md && bus_obj_str(md, "name", name, sizeof name)))
    return gw_touch_add(s, GW_DOMAINS, name);
  return bus_txn_scan(t, "objects", "domains/", 8, old_domain, s);
}

static int
domain_event(bus_txn *t, bus_txn *rt[GW_NEMB], const bus_event *ev,
             const char *d, gw_touched *s) {
  char job[GW_NAME_SZ];
  int rc = gw_touch_add(s, GW_DOMAINS, d);
  const msgpack_object *pods = bus_obj_get(&ev->data, "pods");
  for (uint32_t i = 0; !rc && pods && pods->type == MSGPACK_OBJECT_ARRAY &&
                       i < pods->via.array.size;
       i++) {
    const msgpack_object *p = &pods->via.array.ptr[i];
    if (p->type == MSGPACK_OBJECT_STR && p->via.str.size < GW_NAME_SZ) {
      char name[GW_NAME_SZ];
      memcpy(name, p->via.str.ptr, p->via.str.size);
      name[p->via.str.size] = 0;
      rc = gw_touch_add(s, GW_PODS, name);
    }
  }
  if (!rc && bus_obj_str(&ev->data, "job", job, sizeof job)) {
    rc = gw_touch_add(s, GW_JOBS, job);
    if (!rc && !strcmp(ev->type, "domain.allocated"))
      rc = job_members(t, rt[GW_EMB_SCHED], job, s);
  }
  return rc;
}

/* cert.revoked: the serial kept, the counter moved. */
static int
revoked(bus_txn *t, const bus_event *ev) {
  char serial[80];
  if (strcmp(ev->type, "cert.revoked") ||
      !bus_obj_str(&ev->data, "serial", serial, sizeof serial))
    return 0;
  int rc = bus_txn_put(t, "revoked", serial, strlen(serial), "", 0);
  return rc ? rc
            : gw_meta_put_u64(t, "revocations",
                              gw_meta_u64(t, "revocations") + 1);
}

int
gw_touches(bus_txn *t, bus_txn *rt[GW_NEMB], const bus_event *ev,
           gw_touched *s) {
  const char *n;
  char job[GW_NAME_SZ];
  if ((n = after(ev, "lark.ev.pod.")))
    return pod_event(rt, ev, n, s);
  if ((n = after(ev, "lark.ev.task."))) {
    int rc = gw_touch_add(s, GW_TASKS, n);
    if (!rc && bus_obj_str(&ev->data, "job", job, sizeof job))
      rc = gw_touch_add(s, GW_JOBS, job);
    return rc;
  }
  if ((n = after(ev, "lark.ev.job.")))
    return job_event(t, rt, ev, n, s);
  if (after(ev, "lark.ev.placement.")) {
    if (!bus_obj_str(&ev->data, "job", job, sizeof job))
      return 0;
    int rc = job_and_domain(rt[GW_EMB_SCHED], job, s);
    return rc ? rc : job_members(t, rt[GW_EMB_SCHED], job, s);
  }
  if ((n = after(ev, "lark.ev.node.")))
    return gw_touch_add(s, GW_NODES, n);
  if ((n = after(ev, "lark.ev.workflow.")))
    return workflow_event(t, rt[GW_EMB_DAG], n, s);
  if (!strcmp(ev->subject, "lark.ev.ipam.domains"))
    return domains_event(t, ev, s);
  if ((n = after(ev, "lark.ev.domain.")))
    return domain_event(t, rt, ev, n, s);
  if (after(ev, "lark.ev.cert."))
    return revoked(t, ev);
  return 0;
}
