/*
 * queries.c - reads of lark-ipam's view: domains (with their allocations),
 * domain peers (the relays' tables, per domain and cluster) and routes.
 * The same function answers live (lark-ipam) and in the past (larkctl
 * --at, on a replay); it only reads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipam-int.h"

/* Count entries under a prefix. */
static int
count_cb(const char *tail, void *ud) {
  (void)tail;
  (*(uint64_t *)ud)++;
  return 0;
}

static uint64_t
count_under(bus_txn *t, const char *table, const char *d) {
  uint64_t n = 0;
  ipam__scan_domain(t, table, d, count_cb, &n);
  return n;
}

static void
pack_domain(bus_txn *t, msgpack_packer *pk, const dom_rec *d) {
  msgpack_pack_map(pk, 9);
  bus_pack_kv_str(pk, "name", d->name);
  bus_pack_kv_str(pk, "cidr", d->cidr);
  bus_pack_kv_str(pk, "family", d->c.family == 4 ? "IPv4" : "IPv6");
  bus_pack_kv_uint(pk, "capacity", ipam_cidr_usable(&d->c));
  bus_pack_kv_uint(pk, "used", d->used);
  bus_pack_kv_uint(pk, "free", ipam_dom_free(d));
  bus_pack_kv_uint(pk, "waiting", count_under(t, "wants", d->name));
  bus_pack_kv_int(pk, "ts", d->ts);
  bus_pack_kv_str(pk, "actor", d->actor);
}

/* A walk that packs the items of an array, counted in n (b.pk). */
typedef struct qwalk {
  bus_txn *t;
  bus_packbuf b;
  uint32_t n;
  uint64_t local; /* a summary's pods in its cluster */
  const char *domain, *cluster;
} qwalk;

static void
qwalk_init(qwalk *w, bus_txn *t) {
  memset(w, 0, sizeof *w);
  w->t = t;
  bus_packbuf_init(&w->b);
}

/* The array of w's items into pk. */
static int
qwalk_done(qwalk *w, msgpack_packer *pk, int rc) {
  if (!rc) {
    msgpack_pack_array(pk, w->n);
    bus_pack_raw(pk, w->b.sb.data, w->b.sb.size);
  }
  bus_packbuf_destroy(&w->b);
  return rc;
}

static int
list_domain(void *rec, void *ud) {
  const dom_rec *d = rec;
  qwalk *w = ud;
  if (w->domain && w->domain[0] && strcmp(w->domain, d->name))
    return 0;
  pack_domain(w->t, &w->b.pk, d);
  w->n++;
  return 0;
}

/* addrs <d>/be64(off) -> pod: the pod holding it (ud: the transaction). */
static int
list_alloc(const void *k, size_t kl, const void *v, size_t vl,
           msgpack_packer *pk, void *ud) {
  (void)k, (void)kl;
  char pod[IPAM_DNAME_SZ];
  pod_rec p;
  ipam_copy(pod, sizeof pod, v, vl);
  if (ipam_pod_get((bus_txn *)ud, pod, &p))
    return 0;
  msgpack_pack_map(pk, 5);
  bus_pack_kv_str(pk, "pod", p.pod);
  bus_pack_kv_str(pk, "ip", p.vip);
  bus_pack_kv_str(pk, "job", p.job);
  bus_pack_kv_str(pk, "node", p.node);
  bus_pack_kv_str(pk, "state",
                  p.ended    ? "ended"
                  : p.routed ? "routed"
                             : "held");
  return 1;
}

/* wants <d>/be64(seq)<job>: the Job (ud: the length of "<d>/"). */
static int
list_want(const void *k, size_t kl, const void *v, size_t vl,
          msgpack_packer *pk, void *ud) {
  (void)v, (void)vl;
  size_t plen = *(const size_t *)ud + 8;
  if (kl <= plen)
    return 0;
  msgpack_pack_str_with_body(pk, (const char *)k + plen, kl - plen);
  return 1;
}

static int
describe_domain(bus_txn *t, const char *name, msgpack_packer *pk) {
  dom_rec d;
  int rc = ipam_dom_get(t, name, &d);
  if (rc)
    return rc == BUS_ENOT_FOUND ? bus_error(rc, "no domain %s", name) : rc;
  char prefix[IPAM_NAME_SZ + 1];
  size_t plen = (size_t)snprintf(prefix, sizeof prefix, "%s/", name);
  msgpack_pack_map(pk, 3);
  bus_pack_str(pk, "domain");
  pack_domain(t, pk, &d);
  bus_pack_str(pk, "allocations");
  if ((rc = bus_txn_list(t, "addrs", prefix, plen, 0, list_alloc, t, pk)))
    return rc;
  bus_pack_str(pk, "waiting");
  return bus_txn_list(t, "wants", prefix, plen, 0, list_want, &plen, pk);
}

/* ---------------------------------------------------------------- peers */

/* One routed pod as seen from cluster c. */
static void
pack_peer(msgpack_packer *pk, const pod_rec *p, const char *c) {
  bus_ev_route_set e;
  ipam__route_of(p, c, &e);
  bus_ev_route_set_write(pk, &e);
}

/* routes <d>/<pod>: the pod's record, when it is routed; 0 otherwise. */
static int
routed_pod(qwalk *w, const char *pod, pod_rec *p) {
  return ipam_pod_get(w->t, pod, p) == 0 && p->routed;
}

static int
peer_row(const char *pod, void *ud) {
  qwalk *w = ud;
  pod_rec p;
  if (routed_pod(w, pod, &p)) {
    pack_peer(&w->b.pk, &p, w->cluster);
    w->n++;
  }
  return 0;
}

/* clusters <d>/<c>: the routes of (d, c), or a summary row. */
typedef struct cl_walk {
  qwalk *w;
  int summary;
  const char *only; /* one cluster, or NULL */
} cl_walk;

/* A routed pod of w's domain, counted in w->local when it is in w's
 * cluster. */
static int
local_cb(const char *pod, void *ud) {
  qwalk *w = ud;
  pod_rec p;
  if (routed_pod(w, pod, &p) && !strcmp(p.rcluster, w->cluster))
    w->local++;
  return 0;
}

static int
cluster_cb(const char *c, void *ud) {
  cl_walk *cw = ud;
  qwalk *w = cw->w;
  if (cw->only && strcmp(cw->only, c))
    return 0;
  w->cluster = c;
  if (!cw->summary)
    return ipam__scan_domain(w->t, "routes", w->domain, peer_row, w);
  w->local = 0;
  ipam__scan_domain(w->t, "routes", w->domain, local_cb, w);
  uint64_t all = count_under(w->t, "routes", w->domain);
  char name[2 * IPAM_NAME_SZ + 1];
  snprintf(name, sizeof name, "%s.%s", w->domain, c);
  msgpack_pack_map(&w->b.pk, 6);
  bus_pack_kv_str(&w->b.pk, "name", name);
  bus_pack_kv_str(&w->b.pk, "domain", w->domain);
  bus_pack_kv_str(&w->b.pk, "cluster", c);
  bus_pack_kv_uint(&w->b.pk, "pods", all);
  bus_pack_kv_uint(&w->b.pk, "local", w->local);
  bus_pack_kv_uint(&w->b.pk, "hub", all - w->local);
  w->n++;
  return 0;
}

static int
peers_of(qwalk *w, const char *d, const char *only, int summary) {
  w->domain = d;
  cl_walk cw = {w, summary, only};
  return ipam__scan_domain(w->t, "clusters", d, cluster_cb, &cw);
}

static int
each_domain_peers(const void *k, size_t kl, const void *v, size_t vl,
                  void *ud) {
  (void)v, (void)vl;
  char d[IPAM_NAME_SZ];
  ipam_copy(d, sizeof d, k, kl);
  return peers_of(ud, d, NULL, 1);
}

/* "<d>.<c>" or "<d>" into d and c ("" when absent). */
static void
split_name(const char *name, char *d, char *c) {
  const char *dot = strchr(name, '.');
  ipam_copy(d, IPAM_NAME_SZ, name, dot ? (size_t)(dot - name) : strlen(name));
  ipam_copy(c, IPAM_NAME_SZ, dot ? dot + 1 : "", dot ? strlen(dot + 1) : 0);
}

static int
query_peers(bus_txn *t, const char *verb, const char *name, int routes,
            msgpack_packer *pk) {
  char d[IPAM_NAME_SZ], c[IPAM_NAME_SZ];
  split_name(name, d, c);
  qwalk w;
  qwalk_init(&w, t);
  int rc;
  if (!strcmp(verb, "describe") && !routes) {
    if (!d[0] || !c[0])
      return qwalk_done(&w, pk, bus_error(BUS_EINVAL, "name is <domain>.<c>"));
    rc = peers_of(&w, d, c, 0);
    if (!rc && !w.n)
      rc = bus_error(BUS_ENOT_FOUND, "no peers of %s in cluster %s", d, c);
    if (!rc) {
      msgpack_pack_map(pk, 3);
      bus_pack_kv_str(pk, "domain", d);
      bus_pack_kv_str(pk, "cluster", c);
      bus_pack_str(pk, "peers");
    }
    return qwalk_done(&w, pk, rc);
  }
  if (strcmp(verb, "list"))
    return qwalk_done(&w, pk, bus_error(BUS_EINVAL, "verbs: list, describe"));
  if (routes && !d[0])
    return qwalk_done(&w, pk, bus_error(BUS_EINVAL, "name a domain"));
  if (d[0])
    rc = peers_of(&w, d, c[0] ? c : NULL, !routes);
  else
    rc = bus_txn_scan(t, "domains", NULL, 0, each_domain_peers, &w);
  return qwalk_done(&w, pk, rc);
}

int
ipam_query(bus_txn *t, const char *kind, const char *verb,
           const msgpack_object *req, msgpack_packer *pk, void *ud) {
  (void)ud;
  char name[2 * IPAM_NAME_SZ + 2] = "";
  bus_obj_str(req, "name", name, sizeof name);
  if (!strcmp(kind, "domainpeer") || !strcmp(kind, "route"))
    return query_peers(t, verb, name, !strcmp(kind, "route"), pk);
  if (strcmp(kind, "domain"))
    return bus_error(BUS_EINVAL, "kinds: domain, domainpeer, route");
  if (!strcmp(verb, "describe"))
    return describe_domain(t, name, pk);
  if (strcmp(verb, "list"))
    return bus_error(BUS_EINVAL, "verbs: list, describe");
  qwalk w;
  dom_rec d;
  qwalk_init(&w, t);
  w.domain = name;
  return qwalk_done(
      &w, pk, ipam__scan_recs(t, "domains", &d, sizeof d, list_domain, &w));
}

int
ipam_pod_vip(bus_txn *t, const char *pod, char *out, size_t cap) {
  pod_rec p;
  int rc = ipam_pod_get(t, pod, &p);
  if (rc)
    return rc;
  if (!p.held || !p.vip[0])
    return BUS_ENOT_FOUND;
  snprintf(out, cap, "%s", p.vip);
  return 0;
}
