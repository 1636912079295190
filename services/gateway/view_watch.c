/*
 * view_watch.c - gw_watch_next: the changes of a kind after a sequence,
 * from the changes table, so a watch can start (or resume, across a
 * restart of the gateway) after any sequence the view has applied.
 *
 * The sequence given back as looked at is taken from the view's applied
 * sequence read *before* the read transaction opens, so it never claims a
 * sequence the transaction could not see; changes past it that the
 * transaction did see are given too and move it further. A call gives
 * whole sequences only (never half of one event's changes), at most
 * about GW_WATCH_BATCH changes, so one read transaction stays short.
 */
#include <stdio.h>
#include <string.h>

#include "view-int.h"

enum { GW_WATCH_BATCH = 4096 };

typedef struct watcher {
  gw_kind kind;
  const gw_list_opts *o;
  gw_change_fn each;
  void *ud;
  char prefix[32];
  size_t plen;
  uint64_t last; /* the last sequence given */
  int n, rc;
} watcher;

/* changes be64(seq)<plural>/<name> -> rec of {type, object} */
static int
each_change(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  watcher *w = ud;
  gw_rec r;
  if (kl < 8)
    return 0;
  uint64_t seq = bus_get_be64(k);
  if (w->n >= GW_WATCH_BATCH && seq != w->last)
    return 1; /* enough: the rest next call */
  if (kl - 8 <= w->plen || memcmp((const char *)k + 8, w->prefix, w->plen) ||
      gw_rec_parse(v, vl, &r) || !gw_rec_matches(&r, w->o))
    return 0;
  const char *t = strstr(r.json, "\"type\":\"");
  char type[16] = "";
  if (t && r.len > 20)
    sscanf(t + 8, "%15[A-Z]", type);
  w->last = seq;
  w->n++;
  if ((w->rc = w->each(w->ud, seq, type, r.json, r.len)))
    return 1;
  return 0;
}

/* Every current object as ADDED, at the sequence the list was read at. */
typedef struct added {
  watcher *w;
  uint64_t rv;
} added;

static int
each_added(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  added *a = ud;
  watcher *w = a->w;
  gw_rec r;
  gw_buf c = {0};
  if (gw_rec_parse(v, vl, &r) || !gw_rec_matches(&r, w->o))
    return 0;
  static const char open[] = "{\"type\":\"ADDED\",\"object\":";
  int rc = gw_buf_add(&c, open, sizeof open - 1);
  if (!rc)
    rc = gw_buf_add(&c, r.json, r.len);
  if (!rc)
    rc = gw_buf_add(&c, "}", 1);
  if (!rc) {
    w->n++;
    rc = w->each(w->ud, a->rv, "ADDED", c.p, c.len);
  }
  gw_buf_free(&c);
  return (w->rc = rc) != 0;
}

static int
initial(bus_view *v, watcher *w, uint64_t *after) {
  bus_txn *t;
  int rc = bus_view_read(v, &t);
  if (rc)
    return rc;
  added a = {w, gw_meta_u64(t, "seq")};
  rc = bus_txn_scan(t, "objects", w->prefix, w->plen, each_added, &a);
  bus_txn_end(t);
  if (rc < 0 && !w->rc)
    return rc;
  if (w->rc)
    return w->rc;
  *after = a.rv;
  return w->n;
}

/* One pass over the changes after *after; the count given, or an error. */
static int
pass(bus_view *v, watcher *w, uint64_t *after) {
  bus_view_stats st;
  bus_txn *t;
  unsigned char from[9];
  int rc = bus_view_stats_get(v, &st);
  if (rc || (rc = bus_view_read(v, &t)))
    return rc;
  bus_put_be64(from, *after);
  from[8] = 0xff; /* past every change of *after itself */
  w->last = *after;
  rc = bus_txn_scan_after(t, "changes", from, sizeof from, each_change, w);
  bus_txn_end(t);
  if (w->rc)
    return w->rc;
  if (rc < 0)
    return rc;
  if (w->n >= GW_WATCH_BATCH) /* stopped early: up to what was given */
    *after = w->last;
  else
    *after = w->last > st.applied_seq ? w->last : st.applied_seq;
  return w->n;
}

int
gw_watch_next(bus_view *v, gw_kind kind, const gw_list_opts *o, uint64_t *after,
              gw_change_fn each, void *ud, int timeout_ms) {
  gw_list_opts none;
  if ((unsigned)kind >= GW_NKINDS || !after || !each)
    return bus_error(BUS_EINVAL, "watch: a kind, a sequence and a callback");
  if (!o) {
    gw_list_opts_init(&none);
    o = &none;
  }
  watcher w = {.kind = kind, .o = o, .each = each, .ud = ud};
  w.plen =
      (size_t)snprintf(w.prefix, sizeof w.prefix, "%s/", gw_kind_plural(kind));
  if (*after == 0) {
    int rc = initial(v, &w, after);
    if (rc)
      return rc;
  }
  int rc = pass(v, &w, after);
  if (rc)
    return rc;
  rc = bus_view_wait_applied(v, *after + 1, timeout_ms);
  if (rc == BUS_ETIMEOUT)
    return 0;
  if (rc)
    return rc;
  return pass(v, &w, after);
}
