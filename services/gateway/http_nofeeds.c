/*
 * http_nofeeds.c - what lark-gateway answers while it is built without
 * the feeds and metrics (feeds.c, metrics.c not in the tree yet): the
 * audit tail, logs and /metrics say so (404), everything else works.
 * CMakeLists.txt builds this file only while one of them is absent, with
 * GW_NO_FEEDS or GW_NO_METRICS saying which.
 */
#include "gateway.h"

#ifdef GW_NO_FEEDS
int
gw_events_open(bus_conn *c, const gw_events_query *q, gw_feed **out) {
  (void)c, (void)q;
  *out = NULL;
  return bus_error(BUS_ENOT_FOUND, "this lark-gateway has no audit feed");
}

int
gw_logs_open(bus_conn *c, const gw_logs_query *q, gw_feed **out) {
  (void)c, (void)q;
  *out = NULL;
  return bus_error(BUS_ENOT_FOUND, "this lark-gateway has no logs feed");
}

int
gw_feed_next(gw_feed *f, gw_rec_fn each, void *ud, int timeout_ms) {
  (void)f, (void)each, (void)ud, (void)timeout_ms;
  return GW_FEED_END;
}

void
gw_feed_close(gw_feed *f) {
  (void)f;
}

#endif

#ifdef GW_NO_METRICS
int
gw_metrics_render(bus_conn *c, bus_view *v, int timeout_ms, gw_buf *out) {
  (void)c, (void)v, (void)timeout_ms, (void)out;
  return bus_error(BUS_ENOT_FOUND, "this lark-gateway has no metrics");
}
#endif
