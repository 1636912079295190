/*
 * weights_get.c - fetching a version from another node (weights_int.h).
 * Not yet: a node answers its pods from what it holds.
 */
#include <stdio.h>

#include "weights_int.h"

int
wt_net_start(edge_weights *ws) {
  const char *l = ws->a->cfg.weights_listen;
  snprintf(ws->address, sizeof ws->address, "%s", l ? l : "");
  return 0;
}

void
wt_net_stop(edge_weights *ws) {
  (void)ws;
}

int
wt_job_gone(edge_weights *ws, const char *job) {
  (void)ws, (void)job;
  return 0;
}

void
wt_fetch_kick(edge_weights *ws, const char *job) {
  (void)ws, (void)job;
}

void
wt_fetch_reap(edge_weights *ws) {
  (void)ws;
}
