/*
 * apply.c - lark-ipam's apply, dispatched by event type. Its view follows
 * the events: Domains are created and deleted, Jobs that name a domain are
 * submitted, placed, unplaced, stopped and deleted, Pods report, Nodes
 * register, and the domain's own decisions (allocated, exhausted, released)
 * land.
 *
 * apply is pure: no clock, no broker. An address is taken only through
 * domain.allocated, and only when every address the event carries is
 * usable and free (or already that pod's): the event is refused whole
 * otherwise, so whatever two allocators wrote, the first in stream order
 * wins and no address is ever held by two pods. `used` counts the rows
 * of `addrs` of the domain; `low` is only lowered by a release and raised
 * past what an allocation took, so every usable offset below it is taken.
 * Routes follow the pods (routes.c).
 *
 * This file holds the pods' lives, the Jobs, Pods and Nodes, and the
 * dispatch; the domain events (created, deleted, and the domain's own
 * decisions) are domains.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipam-int.h"

static const char *const tables[] = {"domains", "addrs",  "pods",  "jobs",
                                     "wants",   "ending", "nodes", "clusters",
                                     "routes",  "rtq",    "rtout", NULL};
/* --------------------------------------------------------- pods' lives */

/* The pod's run ended: its address is released after the hold. */
static int
end_pod(bus_txn *t, pod_rec *p, int64_t ts, uint64_t seq) {
  char key[IPAM_NAME_SZ + IPAM_DNAME_SZ];
  int n = ipam__ending_key(p, key, sizeof key), rc = 0;
  if (!p->ended) {
    p->ended = 1;
    p->ended_ts = ts;
  }
  if (p->held)
    rc = bus_txn_put(t, "ending", key, (size_t)n, "", 0);
  if (!rc)
    rc = ipam__route_update(t, p, seq);
  return rc ? rc : ipam_pod_put(t, p);
}

typedef struct job_walk {
  bus_txn *t;
  const char *job;
  int64_t ts;
  uint64_t seq;
} job_walk;

static int
end_job_pod(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  job_walk *w = ud;
  pod_rec p;
  if (vl != sizeof p)
    return 0;
  memcpy(&p, v, sizeof p);
  if (strcmp(p.job, w->job) || p.ended)
    return 0;
  return end_pod(w->t, &p, w->ts, w->seq);
}

/* Every pod of the Job ended (stopped, deleted, unplaced). */
static int
end_job(bus_txn *t, const char *job, int64_t ts, uint64_t seq) {
  char prefix[IPAM_NAME_SZ + 1];
  keys ks;
  snprintf(prefix, sizeof prefix, "%s-", job);
  int rc = ipam__keys_under(t, "pods", prefix, &ks);
  job_walk w = {t, job, ts, seq};
  for (size_t i = 0; !rc && i < ks.n; i++) {
    const void *v;
    size_t vl;
    if ((rc = bus_txn_get(t, "pods", ks.v[i], ks.len[i], &v, &vl)) == 0)
      rc = end_job_pod(NULL, 0, v, vl, &w);
  }
  ipam__keys_free(&ks);
  return rc;
}

/* ----------------------------------------------------------------- Jobs */

static int
apply_submitted(bus_txn *t, const bus_event *ev, const char *name) {
  char domain[IPAM_NAME_SZ] = "";
  bus_obj_str(bus_obj_get(&ev->data, "spec"), "domain", domain, sizeof domain);
  if (!domain[0] || !bus_name_valid(domain, BUS_NAME_MAX))
    return bus_txn_del(t, "jobs", name, strlen(name));
  bus_version ver;
  int rc = bus_txn_version(t, ev->subject, &ver);
  if (rc)
    return rc;
  job_rec j;
  memset(&j, 0, sizeof j);
  j.layout = IPAM_LAYOUT;
  ipam_copy(j.name, sizeof j.name, name, strlen(name));
  ipam_copy(j.domain, sizeof j.domain, domain, strlen(domain));
  j.generation = ver.generation;
  return ipam__job_put(t, &j);
}

/* One binding of a placed domain Job: the pod joins the Job's wait. */
static int
bind_pod(bus_txn *t, const job_rec *j, const msgpack_object *b, uint64_t seq,
         msgpack_sbuffer *list) {
  char pod[IPAM_DNAME_SZ], node[IPAM_NAME_SZ] = "";
  if (!bus_obj_str(b, "pod", pod, sizeof pod) ||
      !bus_name_valid(pod, BUS_DERIVED_NAME_MAX))
    return 0;
  bus_obj_str(b, "node", node, sizeof node);
  pod_rec p;
  int rc = ipam_pod_get(t, pod, &p);
  if (rc == BUS_ENOT_FOUND) {
    memset(&p, 0, sizeof p);
    p.layout = IPAM_LAYOUT;
    ipam_copy(p.pod, sizeof p.pod, pod, strlen(pod));
    rc = 0;
  }
  if (rc)
    return rc;
  if (p.held && strcmp(p.domain, j->domain) && (rc = ipam__free_addr(t, &p)))
    return rc;
  if (strcmp(p.domain, j->domain))
    p.has_off = 0;
  ipam_copy(p.job, sizeof p.job, j->name, strlen(j->name));
  ipam_copy(p.domain, sizeof p.domain, j->domain, strlen(j->domain));
  ipam_copy(p.node, sizeof p.node, node, strlen(node));
  if (p.ended) { /* alive again: keeps what it holds */
    char ekey[IPAM_NAME_SZ + IPAM_DNAME_SZ];
    int n = ipam__ending_key(&p, ekey, sizeof ekey);
    p.ended = 0;
    p.ended_ts = 0;
    p.local_ip[0] = 0;
    if ((rc = bus_txn_del(t, "ending", ekey, (size_t)n)))
      return rc;
  }
  if (list->size)
    msgpack_sbuffer_write(list, "\n", 1);
  msgpack_sbuffer_write(list, pod, strlen(pod));
  if ((rc = ipam__route_update(t, &p, seq)))
    return rc;
  return ipam_pod_put(t, &p);
}

static int
apply_placed(bus_txn *t, const bus_event *ev) {
  char name[IPAM_NAME_SZ] = "";
  job_rec j;
  bus_obj_str(&ev->data, "job", name, sizeof name);
  if (ipam_job_get(t, name, &j))
    return 0; /* not a domain Job (or unknown) */
  if ((uint64_t)bus_obj_int(&ev->data, "generation", (int64_t)j.generation) !=
      j.generation)
    return 0;
  const msgpack_object *bs = bus_obj_get(&ev->data, "bindings");
  msgpack_sbuffer list;
  msgpack_sbuffer_init(&list);
  int rc = ipam__drop_want(t, &j);
  for (uint32_t i = 0;
       !rc && bs && bs->type == MSGPACK_OBJECT_ARRAY && i < bs->via.array.size;
       i++)
    rc = bind_pod(t, &j, &bs->via.array.ptr[i], ev->seq, &list);
  if (!rc && list.size) {
    unsigned char key[2 * IPAM_NAME_SZ + 9];
    size_t n = ipam_addr_key(j.domain, ev->seq, key);
    memcpy(key + n, j.name, strlen(j.name));
    rc = bus_txn_put(t, "wants", key, n + strlen(j.name), list.data, list.size);
    j.want_seq = ev->seq;
  }
  msgpack_sbuffer_destroy(&list);
  j.reason[0] = 0;
  return rc ? rc : ipam__job_put(t, &j);
}

/* job.unplaced, job.stopped, job.deleted: the Job's pods end. */
static int
apply_job_end(bus_txn *t, const bus_event *ev, const char *name, int gone) {
  job_rec j;
  if (ipam_job_get(t, name, &j))
    return 0;
  int rc = ipam__drop_want(t, &j);
  if (!rc)
    rc = end_job(t, name, ev->ts, ev->seq);
  if (!rc)
    rc = gone ? bus_txn_del(t, "jobs", name, strlen(name))
              : ipam__job_put(t, &j);
  return rc;
}

/* ------------------------------------------------------------ pods, nodes */

static int
terminal(const char *phase) {
  return !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed") ||
         !strcmp(phase, "Stopped");
}

static int
apply_pod_phase(bus_txn *t, const bus_event *ev, const char *name) {
  char phase[32] = "", node[IPAM_NAME_SZ] = "";
  pod_rec p;
  if (ipam_pod_get(t, name, &p))
    return 0;
  bus_obj_str(&ev->data, "phase", phase, sizeof phase);
  bus_obj_str(&ev->data, "node", node, sizeof node);
  if (strcmp(node, p.node) || p.ended)
    return 0; /* from a node it has left, or after it ended */
  if (terminal(phase))
    return end_pod(t, &p, ev->ts, ev->seq);
  char ip[IPAM_IP_SZ] = "";
  if (!bus_obj_str(&ev->data, "localIP", ip, sizeof ip) ||
      !strcmp(ip, p.local_ip))
    return 0;
  ipam_copy(p.local_ip, sizeof p.local_ip, ip, strlen(ip));
  int rc = ipam__route_update(t, &p, ev->seq);
  return rc ? rc : ipam_pod_put(t, &p);
}

static int
apply_node(bus_txn *t, const bus_event *ev, const char *name) {
  char cluster[IPAM_NAME_SZ] = "";
  bus_obj_str(bus_obj_get(&ev->data, "spec"), "cluster", cluster,
              sizeof cluster);
  if (!cluster[0])
    return 0;
  return bus_txn_put(t, "nodes", name, strlen(name), cluster, strlen(cluster));
}

/* ------------------------------------------------------------- dispatch */

/* The <id> of lark.ev.<kind>.<id>. */
static const char *
subject_id(const char *subject) {
  const char *p = strlen(subject) > 8 ? strchr(subject + 8, '.') : NULL;
  return p ? p + 1 : "";
}

static int
on_created(bus_txn *t, const bus_event *ev, const char *id) {
  (void)id;
  return ipam__apply_created(t, ev);
}

static int
on_deleted(bus_txn *t, const bus_event *ev, const char *id) {
  (void)id;
  return ipam__apply_deleted(t, ev);
}

static int
on_placed(bus_txn *t, const bus_event *ev, const char *id) {
  (void)id;
  return apply_placed(t, ev);
}

static int
on_unplaced(bus_txn *t, const bus_event *ev, const char *id) {
  (void)id;
  char job[IPAM_NAME_SZ] = "";
  bus_obj_str(&ev->data, "job", job, sizeof job);
  return apply_job_end(t, ev, job, 0);
}

static int
on_job_stopped(bus_txn *t, const bus_event *ev, const char *id) {
  return apply_job_end(t, ev, id, 0);
}

static int
on_job_deleted(bus_txn *t, const bus_event *ev, const char *id) {
  return apply_job_end(t, ev, id, 1);
}

/* The event's type (libbus sets it, for an event built by hand too). */
static bus_type
type_of(const bus_event *ev) {
  return bus_type_name(ev->t) ? ev->t : BUS_T_UNKNOWN;
}

/* The types the view applies, indexed by the event's type (BUS_T_*); id
 * is the <id> of the event's subject lark.ev.<kind>.<id>. */
typedef int (*apply_fn)(bus_txn *t, const bus_event *ev, const char *id);

static const apply_fn apply_table[BUS_T__COUNT] = {
    [BUS_T_DOMAIN_ALLOCATED] = ipam__apply_allocated,
    [BUS_T_DOMAIN_CREATED] = on_created,
    [BUS_T_DOMAIN_DELETED] = on_deleted,
    [BUS_T_DOMAIN_EXHAUSTED] = ipam__apply_exhausted,
    [BUS_T_DOMAIN_RELEASED] = ipam__apply_released,
    [BUS_T_JOB_DELETED] = on_job_deleted,
    [BUS_T_JOB_PLACED] = on_placed,
    [BUS_T_JOB_STOPPED] = on_job_stopped,
    [BUS_T_JOB_SUBMITTED] = apply_submitted,
    [BUS_T_JOB_UNPLACED] = on_unplaced,
    [BUS_T_NODE_REGISTERED] = apply_node,
    [BUS_T_POD_PHASE] = apply_pod_phase,
};

int
ipam_apply(bus_txn *t, const bus_event *ev, void *ud) {
  (void)ud;
  apply_fn fn = apply_table[type_of(ev)];
  return fn ? fn(t, ev, subject_id(ev->subject)) : 0;
}

void
ipam_view_def(bus_view_def *def) {
  memset(def, 0, sizeof *def);
  def->name = "ipam";
  def->tables = tables;
  def->apply = ipam_apply;
  def->decide = ipam_decide;
  def->stream = "LARK_EVENTS";
  def->filter = "lark.ev.>";
}
