/*
 * view.c - the gateway view's definition and apply (gateway.h).
 *
 * apply, for each event: feed it to the embedded views (view_embed.c:
 * one write transaction on each per batch, committed by the def's commit
 * hook just before the gateway's own), note its time (for ?at=) and the
 * counters (view_counts.c), then render again every object it touched
 * (view_touch.c, view_render.c) through those transactions. apply reads
 * no clock and renders from views applied to the same sequence, so a
 * replay gives the same tables as the live view.
 */
#include <string.h>

#include "view-int.h"

static const char *const tables[] = {"objects", "history", "changes",
                                     "idx",     "times",   "revoked",
                                     "meta",    "counts",  NULL};

static const char *const plurals[GW_NKINDS] = {"nodes", "workflows", "jobs",
                                               "tasks", "pods",      "domains"};
static const char *const kinds[GW_NKINDS] = {"Node", "Workflow", "Job",
                                             "Task", "Pod",      "Domain"};

int
gw_kind_parse(const char *plural) {
  for (int k = 0; plural && k < GW_NKINDS; k++)
    if (!strcmp(plural, plurals[k]))
      return k;
  return -1;
}

const char *
gw_kind_plural(gw_kind k) {
  return (unsigned)k < GW_NKINDS ? plurals[k] : "";
}

const char *
gw_kind_name(gw_kind k) {
  return (unsigned)k < GW_NKINDS ? kinds[k] : "";
}

size_t
gw_obj_key(char *key, size_t cap, gw_kind k, const char *name) {
  int n = snprintf(key, cap, "%s/%s", gw_kind_plural(k), name);
  return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

uint64_t
gw_meta_u64(bus_txn *t, const char *k) {
  const void *v;
  size_t n;
  if (bus_txn_get(t, "meta", k, strlen(k), &v, &n) || n != 8)
    return 0;
  return bus_get_be64(v);
}

int
gw_meta_put_u64(bus_txn *t, const char *k, uint64_t v) {
  unsigned char b[8];
  bus_put_be64(b, v);
  return bus_txn_put(t, "meta", k, strlen(k), b, 8);
}

int
gw_rec_parse(const void *val, size_t vlen, gw_rec *r) {
  const char *p = val, *end = p + vlen;
  if (vlen < 11)
    return BUS_ECORRUPT;
  r->rv = bus_get_be64(val);
  p += 8;
  const char **f[3] = {&r->job, &r->node, &r->wf};
  for (int i = 0; i < 3; i++) {
    const char *z = memchr(p, 0, (size_t)(end - p));
    if (!z)
      return BUS_ECORRUPT;
    *f[i] = p;
    p = z + 1;
  }
  r->json = p;
  r->len = (size_t)(end - p);
  return 0;
}

int
gw_rec_matches(const gw_rec *r, const gw_list_opts *o) {
  return (!o->job || !strcmp(o->job, r->job)) &&
         (!o->node || !strcmp(o->node, r->node)) &&
         (!o->workflow || !strcmp(o->workflow, r->wf));
}

/* times: be64(ts)be64(seq), ts never below the last one. */
static int
note_time(bus_txn *t, const bus_event *ev) {
  uint64_t ts = ev->ts > 0 ? (uint64_t)ev->ts : 0;
  uint64_t max = gw_meta_u64(t, "maxts");
  if (ts < max)
    ts = max;
  unsigned char key[16];
  bus_put_be64(key, ts);
  bus_put_be64(key + 8, ev->seq);
  int rc = bus_txn_put(t, "times", key, sizeof key, "", 0);
  if (!rc && ts != max)
    rc = gw_meta_put_u64(t, "maxts", ts);
  if (!rc)
    rc = gw_meta_put_u64(t, "seq", ev->seq);
  return rc;
}

static int
gw_apply(bus_txn *t, const bus_event *ev, void *ud) {
  (void)ud;
  gw_embed *e;
  bus_txn *rt[GW_NEMB];
  gw_touched s = {0};
  int rc = gw_embed_of(t, &e);
  if (!rc)
    rc = gw_embed_feed(e, ev);
  if (!rc)
    rc = note_time(t, ev);
  if (!rc)
    rc = gw_counts_apply(t, ev);
  if (rc)
    return rc;
  gw_embed_txns(e, rt);
  rc = gw_touches(t, rt, ev, &s);
  if (!rc)
    rc = gw_render_all(t, rt, ev, &s);
  gw_touched_free(&s);
  return rc;
}

void
gw_view_def(bus_view_def *def) {
  *def = (bus_view_def){.name = "gateway",
                        .tables = tables,
                        .apply = gw_apply,
                        .stream = "LARK_EVENTS",
                        .filter = "lark.ev.>",
                        /* objects' history: ~1.5 KB per changed object */
                        .map_size = (size_t)64 << 30};
  gw_embed_hooks(def);
}

void
gw_list_opts_init(gw_list_opts *o) {
  memset(o, 0, sizeof *o);
}
