/*
 * domains.c - lark-ipam's view follows its Domains: domain.created (a
 * CIDR that overlaps no other domain's), domain.deleted (its pods
 * forgotten, its rows dropped), and the domain's own decisions:
 * domain.allocated takes addresses for a placed Job's pods, only when
 * every one it carries is usable and free (or already that pod's), else
 * the event is refused whole; domain.exhausted records why a Job waits;
 * domain.released gives an ended pod's address back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipam-int.h"

/* ------------------------------------------------------------- domains */

int
ipam__apply_created(bus_txn *t, const bus_event *ev, const void *data,
                    void *ud) {
  (void)ud;
  const bus_ev_domain_created *e = data;
  char name[IPAM_NAME_SZ], cidr[IPAM_NAME_SZ], err[200];
  bus_str_copy(e->metadata.name, name, sizeof name);
  bus_str_copy(e->spec.cidr, cidr, sizeof cidr);
  dom_rec d, other;
  memset(&d, 0, sizeof d);
  if (!bus_name_valid(name, BUS_NAME_MAX) ||
      ipam_cidr_parse(cidr, &d.c, err, sizeof err) ||
      ipam_domain_cidr_check(&d.c, err, sizeof err))
    return bus_error(BUS_EINVAL, "domain %s: bad name or cidr", name);
  dom_rec old;
  int rc = ipam_dom_get(t, name, &old);
  if (rc != BUS_ENOT_FOUND)
    return rc ? rc : bus_error(BUS_EINVAL, "domain %s exists", name);
  if ((rc = ipam__overlapping(t, &d.c, NULL, &other)))
    return rc < 0 ? rc
                  : bus_error(BUS_EINVAL, "%s overlaps domain %s", cidr,
                              other.name);
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
      if (!(rc = ipam__route_update(t, &p, seq)) &&
          !(rc = ipam__free_addr(t, &p)))
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

int
ipam__apply_deleted(bus_txn *t, const bus_event *ev, const void *data,
                    void *ud) {
  (void)ud;
  const bus_ev_domain_deleted *e = data;
  char name[IPAM_NAME_SZ], prefix[IPAM_NAME_SZ + 1];
  dom_rec d;
  bus_str_copy(e->domain, name, sizeof name);
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
check_grants(bus_txn *t, const dom_rec *d, const bus_address_list *as,
             grant *g) {
  for (uint32_t i = 0; i < as->n; i++) {
    char ip[IPAM_IP_SZ];
    bus_str_copy(as->v[i].pod, g[i].pod, sizeof g[i].pod);
    bus_str_copy(as->v[i].ip, ip, sizeof ip);
    if (ipam_addr_offset(&d->c, ip, &g[i].off))
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
    if ((rc = ipam_dom_put(t, d)) || (rc = ipam__free_addr(t, &p)) ||
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
    int n = ipam__ending_key(&p, ekey, sizeof ekey);
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

int
ipam__apply_allocated(bus_txn *t, const bus_event *ev, const void *data,
                      void *ud) {
  (void)ud;
  const bus_ev_domain_allocated *e = data;
  const char *dname = ipam__subject_id(ev->subject);
  char job[IPAM_NAME_SZ];
  dom_rec d;
  int rc = ipam_dom_get(t, dname, &d);
  if (rc)
    return rc == BUS_ENOT_FOUND ? bus_error(BUS_EINVAL, "no domain %s", dname)
                                : rc;
  bus_str_copy(e->job, job, sizeof job);
  if (e->addresses.n > IPAM_MAX_PODS)
    return bus_error(BUS_EINVAL, "no addresses");
  grant *g = calloc(e->addresses.n + 1, sizeof *g);
  if (!g)
    return bus_error(BUS_ESTORE, "out of memory");
  rc = check_grants(t, &d, &e->addresses, g);
  for (uint32_t i = 0; !rc && i < e->addresses.n; i++) {
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
      rc = ipam__drop_want(t, &j);
    if (!rc)
      rc = ipam__job_put(t, &j);
  }
  return rc;
}

int
ipam__apply_exhausted(bus_txn *t, const bus_event *ev, const void *data,
                      void *ud) {
  (void)ud;
  const bus_ev_domain_exhausted *e = data;
  char job[IPAM_NAME_SZ];
  job_rec j;
  bus_str_copy(e->job, job, sizeof job);
  if (ipam_job_get(t, job, &j) ||
      strcmp(j.domain, ipam__subject_id(ev->subject)))
    return 0;
  snprintf(j.reason, sizeof j.reason, "%lld addresses needed, %lld free",
           (long long)(e->has_needed ? e->needed : 0),
           (long long)(e->has_free ? e->free : 0));
  int rc = ipam__drop_want(t, &j);
  return rc ? rc : ipam__job_put(t, &j);
}

int
ipam__apply_released(bus_txn *t, const bus_event *ev, const void *data,
                     void *ud) {
  (void)ud;
  const bus_ev_domain_released *e = data;
  const char *dname = ipam__subject_id(ev->subject);
  int rc = 0;
  for (uint32_t i = 0; !rc && i < e->pods.n; i++) {
    char pod[IPAM_DNAME_SZ];
    pod_rec p;
    bus_str_copy(e->pods.v[i], pod, sizeof pod);
    if (ipam_pod_get(t, pod, &p) || !p.held || !p.ended ||
        strcmp(p.domain, dname))
      continue; /* back in use since, or never held */
    if (!(rc = ipam__free_addr(t, &p)) &&
        !(rc = ipam__route_update(t, &p, ev->seq)))
      rc = ipam_pod_put(t, &p);
  }
  return rc;
}
