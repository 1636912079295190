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
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipam-int.h"
#include "typetab.h"

static const char *const tables[] = {"domains", "addrs",  "pods",  "jobs",
                                     "wants",   "ending", "nodes", "clusters",
                                     "routes",  "rtq",    "rtout", NULL};
/* --------------------------------------------------------- pods' lives */

static int
ending_key(const pod_rec *p, char *key, size_t cap) {
  return snprintf(key, cap, "%s/%s", p->domain, p->pod);
}

/* The pod's run ended: its address is released after the hold. */
static int
end_pod(bus_txn *t, pod_rec *p, int64_t ts, uint64_t seq) {
  char key[IPAM_NAME_SZ + IPAM_DNAME_SZ];
  int n = ending_key(p, key, sizeof key), rc = 0;
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

/* Give the pod's address back now. */
static int
free_addr(bus_txn *t, pod_rec *p) {
  dom_rec d;
  unsigned char key[IPAM_NAME_SZ + 9];
  char ekey[IPAM_NAME_SZ + IPAM_DNAME_SZ];
  if (!p->held)
    return 0;
  int rc = ipam_dom_get(t, p->domain, &d);
  if (rc == 0) {
    if ((rc = bus_txn_del(t, "addrs", key, ipam_addr_key(d.name, p->off, key))))
      return rc;
    d.used -= d.used ? 1 : 0;
    if (p->off < d.low)
      d.low = p->off;
    rc = ipam_dom_put(t, &d);
  } else if (rc == BUS_ENOT_FOUND) {
    rc = 0;
  }
  int n = ending_key(p, ekey, sizeof ekey);
  if (!rc)
    rc = bus_txn_del(t, "ending", ekey, (size_t)n);
  p->held = 0;
  return rc;
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

static int
drop_want(bus_txn *t, job_rec *j) {
  if (!j->want_seq)
    return 0;
  unsigned char key[2 * IPAM_NAME_SZ + 9];
  size_t n = ipam_addr_key(j->domain, j->want_seq, key);
  size_t jl = strlen(j->name);
  memcpy(key + n, j->name, jl);
  j->want_seq = 0;
  return bus_txn_del(t, "wants", key, n + jl);
}

/* ------------------------------------------------------------- domains */

typedef struct overlap_walk {
  const ipam_cidr *c;
  char other[IPAM_NAME_SZ];
} overlap_walk;

static int
overlap_cb(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  overlap_walk *w = ud;
  dom_rec d;
  if (vl != sizeof d)
    return 0;
  memcpy(&d, v, sizeof d);
  if (!ipam_cidr_overlap(&d.c, w->c))
    return 0;
  snprintf(w->other, sizeof w->other, "%s", d.name);
  return 1;
}

static int
apply_created(bus_txn *t, const bus_event *ev) {
  char name[IPAM_NAME_SZ] = "", cidr[IPAM_NAME_SZ] = "", err[200];
  bus_obj_str(bus_obj_get(&ev->data, "metadata"), "name", name, sizeof name);
  bus_obj_str(bus_obj_get(&ev->data, "spec"), "cidr", cidr, sizeof cidr);
  dom_rec d;
  memset(&d, 0, sizeof d);
  if (!bus_name_valid(name, BUS_NAME_MAX) ||
      ipam_cidr_parse(cidr, &d.c, err, sizeof err) ||
      ipam_domain_cidr_check(&d.c, err, sizeof err))
    return bus_error(BUS_EINVAL, "domain %s: bad name or cidr", name);
  dom_rec old;
  int rc = ipam_dom_get(t, name, &old);
  if (rc != BUS_ENOT_FOUND)
    return rc ? rc : bus_error(BUS_EINVAL, "domain %s exists", name);
  overlap_walk w = {&d.c, ""};
  if ((rc = bus_txn_scan(t, "domains", NULL, 0, overlap_cb, &w)))
    return rc < 0
               ? rc
               : bus_error(BUS_EINVAL, "%s overlaps domain %s", cidr, w.other);
  d.layout = IPAM_LAYOUT;
  ipam_copy(d.name, sizeof d.name, name, strlen(name));
  ipam_cidr_format(&d.c, d.cidr, sizeof d.cidr);
  d.low = d.c.first;
  d.seq = ev->seq;
  d.ts = ev->ts;
  ipam_copy(d.actor, sizeof d.actor, ev->actor, strlen(ev->actor));
  return ipam_dom_put(t, &d);
}

/* Forget a deleted domain's addresses, waits, routes. */
static int
forget_pods(bus_txn *t, const char *d, uint64_t seq) {
  keys ks;
  char prefix[IPAM_NAME_SZ + 1];
  snprintf(prefix, sizeof prefix, "%s/", d);
  int rc = ipam__keys_under(t, "addrs", prefix, &ks);
  for (size_t i = 0; !rc && i < ks.n; i++) {
    const void *v;
    size_t vl;
    char pod[IPAM_DNAME_SZ];
    pod_rec p;
    if ((rc = bus_txn_get(t, "addrs", ks.v[i], ks.len[i], &v, &vl)))
      break;
    ipam_copy(pod, sizeof pod, v, vl);
    if (ipam_pod_get(t, pod, &p) == 0 && p.held && !strcmp(p.domain, d)) {
      p.ended = 1;
      if (!(rc = ipam__route_update(t, &p, seq)) && !(rc = free_addr(t, &p)))
        rc = ipam_pod_put(t, &p);
    }
    if (!rc)
      rc = bus_txn_del(t, "addrs", ks.v[i], ks.len[i]);
  }
  ipam__keys_free(&ks);
  return rc;
}

static int
del_under(bus_txn *t, const char *table, const char *prefix) {
  keys ks;
  int rc = ipam__keys_under(t, table, prefix, &ks);
  for (size_t i = 0; !rc && i < ks.n; i++)
    rc = bus_txn_del(t, table, ks.v[i], ks.len[i]);
  ipam__keys_free(&ks);
  return rc;
}

static int
apply_deleted(bus_txn *t, const bus_event *ev) {
  char name[IPAM_NAME_SZ] = "", prefix[IPAM_NAME_SZ + 1];
  dom_rec d;
  bus_obj_str(&ev->data, "domain", name, sizeof name);
  int rc = ipam_dom_get(t, name, &d);
  if (rc)
    return rc == BUS_ENOT_FOUND ? bus_error(BUS_EINVAL, "no domain %s", name)
                                : rc;
  snprintf(prefix, sizeof prefix, "%s/", name);
  if ((rc = forget_pods(t, name, ev->seq)) ||
      (rc = del_under(t, "wants", prefix)) ||
      (rc = del_under(t, "ending", prefix)))
    return rc;
  return bus_txn_del(t, "domains", name, strlen(name));
}

/* ------------------------------------------------- the domain's decisions */

typedef struct grant {
  char pod[IPAM_DNAME_SZ];
  uint64_t off;
} grant;

/* Read and check every address of a domain.allocated; 0 when all fit. */
static int
check_grants(bus_txn *t, const dom_rec *d, const msgpack_object *as, grant *g) {
  for (uint32_t i = 0; i < as->via.array.size; i++) {
    char ip[IPAM_IP_SZ];
    const msgpack_object *a = &as->via.array.ptr[i];
    if (!bus_obj_str(a, "pod", g[i].pod, sizeof g[i].pod) ||
        !bus_obj_str(a, "ip", ip, sizeof ip) ||
        ipam_addr_offset(&d->c, ip, &g[i].off))
      return bus_error(BUS_EINVAL, "address %u is not in %s", i, d->cidr);
    for (uint32_t k = 0; k < i; k++)
      if (g[k].off == g[i].off || !strcmp(g[k].pod, g[i].pod))
        return bus_error(BUS_EINVAL, "%s given twice", ip);
    unsigned char key[IPAM_NAME_SZ + 9];
    const void *v;
    size_t vl;
    int rc = bus_txn_get(t, "addrs", key, ipam_addr_key(d->name, g[i].off, key),
                         &v, &vl);
    if (rc == 0 && (vl != strlen(g[i].pod) || memcmp(v, g[i].pod, vl)))
      return bus_error(BUS_EINVAL, "%s is taken", ip); /* first wins */
    if (rc && rc != BUS_ENOT_FOUND)
      return rc;
  }
  return 0;
}

static int
grant_one(bus_txn *t, dom_rec *d, const char *job, const grant *g,
          uint64_t seq) {
  pod_rec p;
  int rc = ipam_pod_get(t, g->pod, &p);
  if (rc == BUS_ENOT_FOUND) {
    memset(&p, 0, sizeof p);
    p.layout = IPAM_LAYOUT;
    ipam_copy(p.pod, sizeof p.pod, g->pod, strlen(g->pod));
    ipam_copy(p.job, sizeof p.job, job, strlen(job));
    rc = 0;
  }
  if (rc)
    return rc;
  if (p.held && (strcmp(p.domain, d->name) || p.off != g->off)) {
    if ((rc = ipam_dom_put(t, d)) || (rc = free_addr(t, &p)) ||
        (rc = ipam_dom_get(t, d->name, d)))
      return rc;
  }
  if (!p.held) {
    unsigned char key[IPAM_NAME_SZ + 9];
    rc = bus_txn_put(t, "addrs", key, ipam_addr_key(d->name, g->off, key),
                     p.pod, strlen(p.pod));
    d->used++;
  }
  ipam_copy(p.domain, sizeof p.domain, d->name, strlen(d->name));
  p.held = p.has_off = 1;
  p.off = g->off;
  ipam_addr_format(&d->c, g->off, p.vip, sizeof p.vip);
  if (!rc && p.ended) { /* ended before its address came: release it */
    char ekey[IPAM_NAME_SZ + IPAM_DNAME_SZ];
    int n = ending_key(&p, ekey, sizeof ekey);
    rc = bus_txn_put(t, "ending", ekey, (size_t)n, "", 0);
  }
  if (!rc)
    rc = ipam__route_update(t, &p, seq);
  return rc ? rc : ipam_pod_put(t, &p);
}

/* 1 when every pod of the Job's wait now holds an address in d. */
static int
want_met(bus_txn *t, const job_rec *j) {
  unsigned char key[2 * IPAM_NAME_SZ + 9];
  size_t n = ipam_addr_key(j->domain, j->want_seq, key);
  memcpy(key + n, j->name, strlen(j->name));
  const void *v;
  size_t vl;
  if (bus_txn_get(t, "wants", key, n + strlen(j->name), &v, &vl))
    return 1;
  const char *s = v, *end = s + vl;
  while (s < end) {
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    size_t len = nl ? (size_t)(nl - s) : (size_t)(end - s);
    char pod[IPAM_DNAME_SZ];
    pod_rec p;
    ipam_copy(pod, sizeof pod, s, len);
    if (ipam_pod_get(t, pod, &p) || !p.held || strcmp(p.domain, j->domain))
      return 0;
    s += len + 1;
  }
  return 1;
}

static int
apply_allocated(bus_txn *t, const bus_event *ev, const char *dname) {
  char job[IPAM_NAME_SZ] = "";
  dom_rec d;
  int rc = ipam_dom_get(t, dname, &d);
  if (rc)
    return rc == BUS_ENOT_FOUND ? bus_error(BUS_EINVAL, "no domain %s", dname)
                                : rc;
  bus_obj_str(&ev->data, "job", job, sizeof job);
  const msgpack_object *as = bus_obj_get(&ev->data, "addresses");
  if (!as || as->type != MSGPACK_OBJECT_ARRAY ||
      as->via.array.size > IPAM_MAX_PODS)
    return bus_error(BUS_EINVAL, "no addresses");
  grant *g = calloc(as->via.array.size + 1, sizeof *g);
  if (!g)
    return bus_error(BUS_ESTORE, "out of memory");
  rc = check_grants(t, &d, as, g);
  for (uint32_t i = 0; !rc && i < as->via.array.size; i++) {
    rc = grant_one(t, &d, job, &g[i], ev->seq);
    if (!rc && g[i].off == d.low)
      d.low++;
  }
  free(g);
  if (!rc)
    rc = ipam_dom_put(t, &d);
  job_rec j;
  if (!rc && ipam_job_get(t, job, &j) == 0 && !strcmp(j.domain, dname)) {
    j.reason[0] = 0;
    if (want_met(t, &j))
      rc = drop_want(t, &j);
    if (!rc)
      rc = ipam__job_put(t, &j);
  }
  return rc;
}

static int
apply_exhausted(bus_txn *t, const bus_event *ev, const char *dname) {
  char job[IPAM_NAME_SZ] = "";
  job_rec j;
  bus_obj_str(&ev->data, "job", job, sizeof job);
  if (ipam_job_get(t, job, &j) || strcmp(j.domain, dname))
    return 0;
  snprintf(j.reason, sizeof j.reason, "%lld addresses needed, %lld free",
           (long long)bus_obj_int(&ev->data, "needed", 0),
           (long long)bus_obj_int(&ev->data, "free", 0));
  int rc = drop_want(t, &j);
  return rc ? rc : ipam__job_put(t, &j);
}

static int
apply_released(bus_txn *t, const bus_event *ev, const char *dname) {
  const msgpack_object *ps = bus_obj_get(&ev->data, "pods");
  int rc = 0;
  for (uint32_t i = 0;
       !rc && ps && ps->type == MSGPACK_OBJECT_ARRAY && i < ps->via.array.size;
       i++) {
    const msgpack_object *o = &ps->via.array.ptr[i];
    char pod[IPAM_DNAME_SZ];
    pod_rec p;
    if (o->type != MSGPACK_OBJECT_STR)
      continue;
    ipam_copy(pod, sizeof pod, o->via.str.ptr, o->via.str.size);
    if (ipam_pod_get(t, pod, &p) || !p.held || !p.ended ||
        strcmp(p.domain, dname))
      continue; /* back in use since, or never held */
    if (!(rc = free_addr(t, &p)) && !(rc = ipam__route_update(t, &p, ev->seq)))
      rc = ipam_pod_put(t, &p);
  }
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
  if (p.held && strcmp(p.domain, j->domain) && (rc = free_addr(t, &p)))
    return rc;
  if (strcmp(p.domain, j->domain))
    p.has_off = 0;
  ipam_copy(p.job, sizeof p.job, j->name, strlen(j->name));
  ipam_copy(p.domain, sizeof p.domain, j->domain, strlen(j->domain));
  ipam_copy(p.node, sizeof p.node, node, strlen(node));
  if (p.ended) { /* alive again: keeps what it holds */
    char ekey[IPAM_NAME_SZ + IPAM_DNAME_SZ];
    int n = ending_key(&p, ekey, sizeof ekey);
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
  int rc = drop_want(t, &j);
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
  int rc = drop_want(t, &j);
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
  return apply_created(t, ev);
}

static int
on_deleted(bus_txn *t, const bus_event *ev, const char *id) {
  (void)id;
  return apply_deleted(t, ev);
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

/* The types the view applies, sorted by type (typetab.h); id is the
 * <id> of the event's subject lark.ev.<kind>.<id>. */
typedef struct apply_entry {
  const char *type;
  int (*fn)(bus_txn *t, const bus_event *ev, const char *id);
} apply_entry;

static const apply_entry apply_table[] = {
    {"domain.allocated", apply_allocated},
    {"domain.created", on_created},
    {"domain.deleted", on_deleted},
    {"domain.exhausted", apply_exhausted},
    {"domain.released", apply_released},
    {"job.deleted", on_job_deleted},
    {"job.placed", on_placed},
    {"job.stopped", on_job_stopped},
    {"job.submitted", apply_submitted},
    {"job.unplaced", on_unplaced},
    {"node.registered", apply_node},
    {"pod.phase", apply_pod_phase},
};

int
ipam_apply(bus_txn *t, const bus_event *ev, void *ud) {
  (void)ud;
  const apply_entry *e = SVC_TYPE_FIND(apply_table, ev->type);
  return e ? e->fn(t, ev, subject_id(ev->subject)) : 0;
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
