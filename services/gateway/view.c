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

int
gw_view_prepare(const char *dir) {
  bus_view_def def;
  gw_view_def(&def);
  return gw_embed_prepare(dir, &def);
}
