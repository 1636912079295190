/*
 * view_counts.c - what /metrics shows from the view (gw_counts_get), all
 * derived from events so a replay counts the same:
 *
 *   counts t/<type>   be64 events applied of that type
 *          s/<job>    be64 ts of its job.submitted, until placed
 *          b/<pod>    be64 ts of the job.placed that bound it, until the
 *                     pod is first Running
 *          h/sched, h/start   a histogram: GW_HIST_N + 1 bucket counts,
 *                     count, sum in ns (be64 each)
 *
 * Pods by phase and nodes by status are read from the objects when asked
 * (one pass over them; a scrape every few seconds), so they cannot drift
 * from what the API shows.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view-int.h"

enum { HIST_WORDS = GW_HIST_N + 3 }; /* buckets, count, sum */

static int
bump(bus_txn *t, const char *key, size_t klen) {
  const void *v;
  size_t n;
  uint64_t c = 0;
  unsigned char b[8];
  if (!bus_txn_get(t, "counts", key, klen, &v, &n) && n == 8)
    c = bus_get_be64(v);
  bus_put_be64(b, c + 1);
  return bus_txn_put(t, "counts", key, klen, b, 8);
}

static int
observe(bus_txn *t, const char *hist, int64_t ns) {
  static const double bounds[GW_HIST_N] = GW_HIST_BOUNDS;
  uint64_t w[HIST_WORDS] = {0};
  unsigned char b[HIST_WORDS * 8];
  const void *v;
  size_t n;
  if (ns < 0)
    ns = 0;
  if (!bus_txn_get(t, "counts", hist, strlen(hist), &v, &n) && n == sizeof b)
    for (int i = 0; i < HIST_WORDS; i++)
      w[i] = bus_get_be64((const unsigned char *)v + 8 * i);
  int i = 0;
  while (i < GW_HIST_N && (double)ns / 1e9 > bounds[i])
    i++;
  w[i]++;
  w[GW_HIST_N + 1]++;
  w[GW_HIST_N + 2] += (uint64_t)ns;
  for (i = 0; i < HIST_WORDS; i++)
    bus_put_be64(b + 8 * i, w[i]);
  return bus_txn_put(t, "counts", hist, strlen(hist), b, sizeof b);
}

/* key <c>/<name>: put ts, or take it (BUS_ENOT_FOUND when none). */
static int
mark_put(bus_txn *t, char c, const char *name, int64_t ts) {
  char key[GW_KEY_MAX];
  unsigned char b[8];
  int n = snprintf(key, sizeof key, "%c/%s", c, name);
  if (n < 0 || (size_t)n >= sizeof key)
    return 0;
  bus_put_be64(b, (uint64_t)ts);
  return bus_txn_put(t, "counts", key, (size_t)n, b, 8);
}

static int
mark_take(bus_txn *t, char c, const char *name, int64_t *ts) {
  char key[GW_KEY_MAX];
  const void *v;
  size_t vl;
  int n = snprintf(key, sizeof key, "%c/%s", c, name);
  if (n < 0 || (size_t)n >= sizeof key ||
      bus_txn_get(t, "counts", key, (size_t)n, &v, &vl) || vl != 8)
    return BUS_ENOT_FOUND;
  *ts = (int64_t)bus_get_be64(v);
  return bus_txn_del(t, "counts", key, (size_t)n);
}

/* job.placed: the Job's wait observed, each bound pod's start begun. */
static int
placed(bus_txn *t, const bus_event *ev) {
  char job[GW_NAME_SZ], pod[GW_NAME_SZ];
  int64_t sub;
  int rc = 0;
  if (bus_obj_str(&ev->data, "job", job, sizeof job) &&
      !mark_take(t, 's', job, &sub))
    rc = observe(t, "h/sched", ev->ts - sub);
  const msgpack_object *b = bus_obj_get(&ev->data, "bindings");
  for (uint32_t i = 0;
       !rc && b && b->type == MSGPACK_OBJECT_ARRAY && i < b->via.array.size;
       i++)
    if (bus_obj_str(&b->via.array.ptr[i], "pod", pod, sizeof pod))
      rc = mark_put(t, 'b', pod, ev->ts);
  return rc;
}

int
gw_counts_apply(bus_txn *t, const bus_event *ev) {
  char key[GW_KEY_MAX], phase[16];
  int n = snprintf(key, sizeof key, "t/%s", ev->type);
  int rc = n > 0 && (size_t)n < sizeof key ? bump(t, key, (size_t)n) : 0;
  const char *dot = strrchr(ev->subject, '.');
  const char *name = dot ? dot + 1 : "";
  int64_t bound;
  if (rc)
    return rc;
  if (!strcmp(ev->type, "job.submitted"))
    return mark_put(t, 's', name, ev->ts);
  if (!strcmp(ev->type, "job.placed"))
    return placed(t, ev);
  if (!strcmp(ev->type, "pod.phase") &&
      bus_obj_str(&ev->data, "phase", phase, sizeof phase) &&
      !strcmp(phase, "Running") && !mark_take(t, 'b', name, &bound))
    return observe(t, "h/start", ev->ts - bound);
  return 0;
}

/* ------------------------------------------------------------- reading */

typedef struct reading {
  gw_counts *c;
  int rc;
} reading;

static int
add_count(gw_count **v, size_t *n, const char *name, size_t len, uint64_t k) {
  for (size_t i = 0; i < *n; i++)
    if (strlen((*v)[i].name) == len && !memcmp((*v)[i].name, name, len)) {
      (*v)[i].n += k;
      return 0;
    }
  gw_count *p = realloc(*v, (*n + 1) * sizeof *p);
  if (!p)
    return -ENOMEM;
  *v = p;
  if (len >= sizeof p->name)
    len = sizeof p->name - 1;
  memcpy(p[*n].name, name, len);
  p[*n].name[len] = 0;
  p[*n].n = k;
  (*n)++;
  return 0;
}

static int
each_type(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  reading *r = ud;
  if (vl != 8 || kl < 3)
    return 0;
  return r->rc = add_count(&r->c->types, &r->c->ntypes, (const char *)k + 2,
                           kl - 2, bus_get_be64(v));
}

/* The value of a top-level string member of an object's JSON. */
static size_t
member(const gw_rec *r, const char *key, const char **val) {
  char pat[32];
  int n = snprintf(pat, sizeof pat, "\"%s\":\"", key);
  const char *p = memmem(r->json, r->len, pat, (size_t)n);
  if (!p)
    return 0;
  p += n;
  const char *q = memchr(p, '"', r->len - (size_t)(p - r->json));
  *val = p;
  return q ? (size_t)(q - p) : 0;
}

static int
each_pod(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  reading *r = ud;
  gw_rec rec;
  const char *phase;
  size_t n;
  if (gw_rec_parse(v, vl, &rec) || !(n = member(&rec, "phase", &phase)))
    return 0;
  return r->rc = add_count(&r->c->phases, &r->c->nphases, phase, n, 1);
}

static int
each_node(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  reading *r = ud;
  gw_rec rec;
  const char *st;
  size_t n;
  if (gw_rec_parse(v, vl, &rec))
    return 0;
  n = member(&rec, "status", &st);
  if (n == 5 && !memcmp(st, "Ready", 5))
    r->c->nodes_ready++;
  else
    r->c->nodes_notready++;
  return 0;
}

static void
hist_get(bus_txn *t, const char *key, gw_hist *h) {
  const void *v;
  size_t n;
  memset(h, 0, sizeof *h);
  if (bus_txn_get(t, "counts", key, strlen(key), &v, &n) || n != HIST_WORDS * 8)
    return;
  for (int i = 0; i <= GW_HIST_N; i++)
    h->bucket[i] = bus_get_be64((const unsigned char *)v + 8 * i);
  h->count = bus_get_be64((const unsigned char *)v + 8 * (GW_HIST_N + 1));
  h->sum =
      (double)bus_get_be64((const unsigned char *)v + 8 * (GW_HIST_N + 2)) /
      1e9;
}

int
gw_counts_get(bus_view *v, gw_counts *out) {
  bus_view_stats st;
  bus_txn *t;
  memset(out, 0, sizeof *out);
  int rc = bus_view_stats_get(v, &st);
  if (rc || (rc = bus_view_read(v, &t)))
    return rc;
  out->applied_seq = st.applied_seq;
  reading r = {out, 0};
  rc = bus_txn_scan(t, "counts", "t/", 2, each_type, &r);
  if (!rc)
    rc = bus_txn_scan(t, "objects", "pods/", 5, each_pod, &r);
  if (!rc)
    rc = bus_txn_scan(t, "objects", "nodes/", 6, each_node, &r);
  hist_get(t, "h/sched", &out->sched_latency);
  hist_get(t, "h/start", &out->pod_start);
  bus_txn_end(t);
  rc = rc ? rc : r.rc;
  if (rc)
    gw_counts_free(out);
  return rc;
}

void
gw_counts_free(gw_counts *c) {
  free(c->types);
  free(c->phases);
  memset(c, 0, sizeof *c);
}
