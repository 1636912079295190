/*
 * decide.c - what lark-ipam decides after each batch and on each tick:
 * per domain, at most one event on lark.ev.domain.<d> per version of that
 * subject (two would carry the same prev and the second would conflict):
 * domain.released for the pods whose hold is over, else domain.allocated
 * (or domain.exhausted) for the oldest placed Job waiting; then the route
 * messages apply queued, to LARK_ROUTES.
 *
 * Every decision is built from the view alone and its id is derived from
 * the domain and the version it was decided on, so a second lark-ipam
 * deciding the same thing writes the same id (the broker drops it) and a
 * different decision on the same version loses the broker's prev check
 * (or, on R3, apply's). The clock is read here only (now): the hold.
 * decide's memory in _effects:
 *   "a:<d>:<seq>"  an event emitted on top of version <seq> of the domain
 *   "r"            the last rtout key sent (bus_txn_sendq)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipam-int.h"

#define ACTOR "lark-ipam"

typedef struct dpass {
  bus_txn *t;
  const dom_rec *d;
  char subject[BUS_SUBJECT_MAX];
  uint64_t ver;
  int64_t now, hold;
  bus_decider by;
} dpass;

/* ------------------------------------------------------------ releases */

typedef struct rel_walk {
  dpass *p;
  char **pods;
  size_t n;
} rel_walk;

static int
due(const char *pod, void *ud) {
  rel_walk *w = ud;
  pod_rec r;
  if (ipam_pod_get(w->p->t, pod, &r) || !r.held || !r.ended ||
      r.ended_ts > w->p->now - w->p->hold)
    return 0;
  if (!(w->pods[w->n] = strdup(pod)))
    return bus_error(BUS_ESTORE, "out of memory");
  return ++w->n == IPAM_MAX_PODS;
}

/* 1 when a domain.released was emitted. */
static int
release(dpass *p) {
  rel_walk w = {p, calloc(IPAM_MAX_PODS, sizeof(char *)), 0};
  bus_str *pods = calloc(IPAM_MAX_PODS, sizeof *pods);
  int rc = w.pods && pods
               ? ipam__scan_domain(p->t, "ending", p->d->name, due, &w)
               : bus_error(BUS_ESTORE, "out of memory");
  if (rc >= 0 && w.n) {
    for (size_t i = 0; i < w.n; i++)
      pods[i] = bus_str_of(w.pods[i]);
    bus_ev_domain_released e = {.domain = bus_str_of(p->d->name),
                                .pods = {pods, (uint32_t)w.n}};
    char src[BUS_SUBJECT_MAX + 64];
    snprintf(src, sizeof src, "released:%s:%llu", p->d->name,
             (unsigned long long)p->ver);
    rc = bus_txn_emit_decided(p->t, &p->by, p->subject, BUS_T_DOMAIN_RELEASED,
                              &e, src, p->ver, BUS_APPEND_CHECK);
    rc = rc ? rc : 1;
  }
  for (size_t i = 0; i < w.n; i++)
    free(w.pods[i]);
  free(w.pods);
  free(pods);
  return rc < 0 ? rc : rc == 1;
}

/* --------------------------------------------------------- allocations */

typedef struct want {
  size_t plen; /* "<d>/" */
  char job[IPAM_NAME_SZ];
  char *pods[IPAM_MAX_PODS];
  size_t n;
} want;

static int
first_want(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  want *w = ud;
  size_t plen = w->plen + 8;
  if (kl <= plen)
    return 0;
  ipam_copy(w->job, sizeof w->job, (const char *)k + plen, kl - plen);
  const char *s = v, *end = s + vl;
  while (s < end && w->n < IPAM_MAX_PODS) {
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    size_t len = nl ? (size_t)(nl - s) : (size_t)(end - s);
    if (!(w->pods[w->n] = malloc(len + 1)))
      return bus_error(BUS_ESTORE, "out of memory");
    ipam_copy(w->pods[w->n++], len + 1, s, len);
    s += len + 1;
  }
  return 1;
}

/* The decision on the oldest wait: its id names the domain, the version
 * and the Job ("allocated:<d>:<seq>:<job>"). */
static int
emit_want(dpass *p, const want *w, bus_type bt, const void *data,
          const char *what) {
  char src[BUS_SUBJECT_MAX + 128];
  snprintf(src, sizeof src, "%s:%s:%llu:%s", what, p->d->name,
           (unsigned long long)p->ver, w->job);
  return bus_txn_emit_decided(p->t, &p->by, p->subject, bt, data, src, p->ver,
                              BUS_APPEND_CHECK);
}

static int
emit_exhausted(dpass *p, const want *w, uint64_t needed) {
  bus_ev_domain_exhausted e = {.domain = bus_str_of(p->d->name),
                               .job = bus_str_of(w->job),
                               .has_needed = 1,
                               .needed = needed,
                               .has_free = 1,
                               .free = ipam_dom_free(p->d)};
  return emit_want(p, w, BUS_T_DOMAIN_EXHAUSTED, &e, "exhausted");
}

static int
emit_allocated(dpass *p, const want *w, const uint64_t *offs) {
  job_rec j;
  bus_address *as = calloc(w->n + 1, sizeof *as);
  char(*ips)[IPAM_IP_SZ] = calloc(w->n + 1, sizeof *ips);
  if (!as || !ips) {
    free(as);
    free(ips);
    return bus_error(BUS_ESTORE, "out of memory");
  }
  for (size_t i = 0; i < w->n; i++) {
    ipam_addr_format(&p->d->c, offs[i], ips[i], sizeof ips[i]);
    as[i] = (bus_address){bus_str_of(w->pods[i]), bus_str_of(ips[i])};
  }
  bus_ev_domain_allocated e = {
      .domain = bus_str_of(p->d->name),
      .job = bus_str_of(w->job),
      .has_generation = 1,
      .generation = ipam_job_get(p->t, w->job, &j) == 0 ? j.generation : 0,
      .addresses = {as, (uint32_t)w->n}};
  int rc = emit_want(p, w, BUS_T_DOMAIN_ALLOCATED, &e, "allocated");
  free(as);
  free(ips);
  return rc;
}

/*
 * The pods of w that hold an address in the domain keep it; the others
 * get one (their old one back when still free). All or none.
 */
static int
allocate(dpass *p, want *w) {
  uint64_t *offs = calloc(w->n + 1, sizeof *offs);
  uint64_t *sticky = calloc(w->n + 1, sizeof *sticky);
  size_t *idx = calloc(w->n + 1, sizeof *idx), need = 0;
  int rc = offs && sticky && idx ? 0 : bus_error(BUS_ESTORE, "out of memory");
  for (size_t i = 0; !rc && i < w->n; i++) {
    pod_rec r;
    int have = ipam_pod_get(p->t, w->pods[i], &r) == 0 &&
               !strcmp(r.domain, p->d->name);
    if (have && r.held) {
      offs[i] = r.off;
      continue;
    }
    sticky[need] = have && r.has_off ? r.off : IPAM_NONE;
    idx[need++] = i;
  }
  uint64_t *got = rc ? NULL : calloc(need + 1, sizeof *got);
  if (!rc && !got)
    rc = bus_error(BUS_ESTORE, "out of memory");
  ipam_lookup l = {p->t, p->d->name};
  if (!rc)
    rc = ipam_pick(&p->d->c, p->d->low, ipam_dom_free(p->d), need, sticky,
                   ipam_view_next, &l, got);
  if (rc == 1)
    rc = emit_exhausted(p, w, need);
  else if (rc == 0) {
    for (size_t k = 0; k < need; k++)
      offs[idx[k]] = got[k];
    rc = emit_allocated(p, w, offs);
  }
  free(got);
  free(offs);
  free(sticky);
  free(idx);
  return rc;
}

/* 1 when an allocation (or exhaustion) was emitted. */
static int
serve_want(dpass *p) {
  want *w = calloc(1, sizeof *w);
  if (!w)
    return bus_error(BUS_ESTORE, "out of memory");
  char prefix[IPAM_NAME_SZ + 1];
  snprintf(prefix, sizeof prefix, "%s/", p->d->name);
  w->plen = strlen(prefix);
  int rc = bus_txn_scan(p->t, "wants", prefix, strlen(prefix), first_want, w);
  if (rc == 1)
    rc = w->n ? allocate(p, w) : 0;
  for (size_t i = 0; i < w->n; i++)
    free(w->pods[i]);
  int emitted = rc == 0 && w->n;
  free(w);
  return rc < 0 ? rc : emitted;
}

static int
one_domain(void *rec, void *ud) {
  dpass *p = ud;
  bus_version ver;
  p->d = rec;
  int rc = bus_subj_domain_allocated(p->subject, sizeof p->subject, p->d->name);
  if (!rc)
    rc = bus_txn_version(p->t, p->subject, &ver);
  if (rc)
    return rc;
  p->ver = ver.seq;
  char mark[IPAM_NAME_SZ + 32];
  snprintf(mark, sizeof mark, "a:%s:%llu", p->d->name,
           (unsigned long long)ver.seq);
  if (bus_txn_marked(p->t, mark, strlen(mark)) == 1)
    return 0; /* ours is on its way */
  rc = release(p);
  if (rc == 0)
    rc = serve_want(p);
  if (rc == 1)
    rc = bus_txn_mark(p->t, mark, strlen(mark));
  return rc;
}

/* --------------------------------------------------------------- routes */

/* The route.set of pod in (d, c) into e, its strings in r and dr; 1 when
 * the pod is no longer routed there (its tombstone follows). The message
 * carries the domain's cidr, and realIP once the pod has one. */
static int
route_set(bus_txn *t, const char *d, const char *c, const char *pod, pod_rec *r,
          dom_rec *dr, bus_ev_route_set *e) {
  if (ipam_pod_get(t, pod, r) || !r->routed || strcmp(r->domain, d))
    return 1;
  ipam__route_of(r, c, e);
  e->has_realIP = r->local_ip[0] != 0;
  e->has_cidr = !ipam_dom_get(t, d, dr) && dr->cidr[0];
  e->cidr = bus_str_of(e->has_cidr ? dr->cidr : "");
  return 0;
}

typedef struct rt_walk {
  bus_txn *t;
  bus_sendq out; /* rtout, sent in order */
  bus_decider by;
} rt_walk;

static int
send_route(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  rt_walk *w = ud;
  char tail[4 * IPAM_DNAME_SZ], d[IPAM_NAME_SZ], c[IPAM_NAME_SZ];
  if (kl <= 8 || kl > 8 + 4 * IPAM_DNAME_SZ || vl != 1)
    return 0;
  bus_sendq_sent(&w->out, k, kl);
  ipam_copy(tail, sizeof tail, (const char *)k + 8, kl - 8);
  char *dot1 = strchr(tail, '.'), *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
  if (!dot2)
    return 0;
  ipam_copy(d, sizeof d, tail, (size_t)(dot1 - tail));
  ipam_copy(c, sizeof c, dot1 + 1, (size_t)(dot2 - dot1 - 1));
  const char *pod = dot2 + 1;
  int del = *(const char *)v == 'D';
  bus_ev_route_deleted gone = {bus_str_of(d), bus_str_of(c), bus_str_of(pod)};
  bus_ev_route_set set;
  pod_rec r;
  dom_rec dr;
  if (!del && route_set(w->t, d, c, pod, &r, &dr, &set))
    return 0;
  char subject[sizeof tail + 16], src[sizeof tail + 48];
  snprintf(src, sizeof src, "route:%s:%llu", tail,
           (unsigned long long)bus_get_be64(k));
  int rc = bus_subj_route_set(subject, sizeof subject, d, c, pod);
  return rc ? rc
            : bus_txn_emit_decided(w->t, &w->by, subject,
                                   del ? BUS_T_ROUTE_DELETED : BUS_T_ROUTE_SET,
                                   del ? (const void *)&gone : &set, src, 0,
                                   BUS_APPEND_NOCHECK);
}

static int
decide_routes(bus_txn *t, const bus_decider *by) {
  rt_walk *w = calloc(1, sizeof *w);
  if (!w)
    return bus_error(BUS_ESTORE, "out of memory");
  w->t = t;
  w->by = *by;
  int rc = bus_txn_sendq(t, "rtout", "r", &w->out, send_route, w);
  free(w);
  return rc;
}

int
ipam_decide(bus_txn *t, const bus_event *cause, int64_t now, void *ud) {
  if (cause)
    return 0; /* decided on the whole view, once a batch and on ticks */
  const ipam_opts *o = ud;
  bus_decider by = {.actor = ACTOR, .cause = "", .ts = now};
  dpass p = {.t = t, .now = now, .hold = o ? o->hold_ns : 0, .by = by};
  dom_rec d;
  int rc = ipam__scan_recs(t, "domains", &d, sizeof d, one_domain, &p);
  return rc ? rc : decide_routes(t, &by);
}
