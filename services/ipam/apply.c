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

/* Every pod of the Job ended (stopped, deleted, unplaced). */
static int
end_job(bus_txn *t, const char *job, int64_t ts, uint64_t seq) {
  char prefix[IPAM_NAME_SZ + 1];
  keys ks;
  snprintf(prefix, sizeof prefix, "%s-", job);
  int rc = ipam__keys_under(t, "pods", prefix, &ks);
  for (size_t i = 0; !rc && i < ks.n; i++) {
    pod_rec p;
    rc = ipam_pod_get(t, ks.v[i], &p);
    if (!rc && !strcmp(p.job, job) && !p.ended)
      rc = end_pod(t, &p, ts, seq);
  }
  ipam__keys_free(&ks);
  return rc;
}

/* ----------------------------------------------------------------- Jobs */

static int
apply_submitted(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  const bus_ev_job_submitted *e = data;
  const char *name = ipam__subject_id(ev->subject);
  char domain[IPAM_NAME_SZ];
  bus_str_copy(e->spec.domain, domain, sizeof domain);
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
bind_pod(bus_txn *t, const job_rec *j, const bus_binding *b, uint64_t seq,
         msgpack_sbuffer *list) {
  char pod[IPAM_DNAME_SZ], node[IPAM_NAME_SZ];
  bus_str_copy(b->pod, pod, sizeof pod);
  bus_str_copy(b->node, node, sizeof node);
  if (!bus_name_valid(pod, BUS_DERIVED_NAME_MAX))
    return 0;
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
apply_placed(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  const bus_ev_job_placed *e = data;
  char name[IPAM_NAME_SZ];
  job_rec j;
  bus_str_copy(e->job, name, sizeof name);
  if (ipam_job_get(t, name, &j))
    return 0; /* not a domain Job (or unknown) */
  if (e->has_generation && e->generation != j.generation)
    return 0;
  msgpack_sbuffer list;
  msgpack_sbuffer_init(&list);
  int rc = ipam__drop_want(t, &j);
  for (uint32_t i = 0; !rc && i < e->bindings.n; i++)
    rc = bind_pod(t, &j, &e->bindings.v[i], ev->seq, &list);
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
apply_pod_phase(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  const bus_ev_pod_phase *e = data;
  char phase[32], node[IPAM_NAME_SZ], ip[IPAM_IP_SZ];
  pod_rec p;
  if (ipam_pod_get(t, ipam__subject_id(ev->subject), &p))
    return 0;
  bus_str_copy(e->phase, phase, sizeof phase);
  bus_str_copy(e->node, node, sizeof node);
  if (strcmp(node, p.node) || p.ended)
    return 0; /* from a node it has left, or after it ended */
  if (terminal(phase))
    return end_pod(t, &p, ev->ts, ev->seq);
  bus_str_copy(e->localIP, ip, sizeof ip);
  if (!e->has_localIP || !strcmp(ip, p.local_ip))
    return 0;
  ipam_copy(p.local_ip, sizeof p.local_ip, ip, strlen(ip));
  int rc = ipam__route_update(t, &p, ev->seq);
  return rc ? rc : ipam_pod_put(t, &p);
}

static int
apply_node(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  const bus_ev_node_registered *e = data;
  const char *name = ipam__subject_id(ev->subject);
  char cluster[IPAM_NAME_SZ];
  bus_str_copy(e->spec.cluster, cluster, sizeof cluster);
  if (!cluster[0])
    return 0;
  return bus_txn_put(t, "nodes", name, strlen(name), cluster, strlen(cluster));
}

/* ------------------------------------------------------------- dispatch */

static int
on_unplaced(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  char job[IPAM_NAME_SZ];
  bus_str_copy(((const bus_ev_job_unplaced *)data)->job, job, sizeof job);
  return apply_job_end(t, ev, job, 0);
}

/* job.stopped keeps the Job's row, job.deleted drops it. */
static int
on_job_gone(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)data, (void)ud;
  return apply_job_end(t, ev, ipam__subject_id(ev->subject),
                       ev->t == BUS_T_JOB_DELETED);
}

/* The types the view applies, indexed by the event's type (BUS_T_*). */
static const bus_apply_table apply_table = {
    .on = {
        [BUS_T_DOMAIN_ALLOCATED] = ipam__apply_allocated,
        [BUS_T_DOMAIN_CREATED] = ipam__apply_created,
        [BUS_T_DOMAIN_DELETED] = ipam__apply_deleted,
        [BUS_T_DOMAIN_EXHAUSTED] = ipam__apply_exhausted,
        [BUS_T_DOMAIN_RELEASED] = ipam__apply_released,
        [BUS_T_JOB_DELETED] = on_job_gone,
        [BUS_T_JOB_PLACED] = apply_placed,
        [BUS_T_JOB_STOPPED] = on_job_gone,
        [BUS_T_JOB_SUBMITTED] = apply_submitted,
        [BUS_T_JOB_UNPLACED] = on_unplaced,
        [BUS_T_NODE_REGISTERED] = apply_node,
        [BUS_T_POD_PHASE] = apply_pod_phase,
    }};

int
ipam_apply(bus_txn *t, const bus_event *ev, void *ud) {
  return bus_apply_dispatch(&apply_table, t, ev, ud);
}

void
ipam_view_def(bus_view_def *def) {
  *def = (bus_view_def){.name = "ipam",
                        .tables = tables,
                        .apply = ipam_apply,
                        .decide = ipam_decide,
                        .stream = "LARK_EVENTS",
                        .filter = "lark.ev.>"};
}
