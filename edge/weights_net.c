/*
 * weights_net.c - the weights part's network (weights_int.h): with
 * --tls-dir, the server on --weights-listen (default: the node's first
 * address, any port) and the fetchers' TLS context; without it, neither:
 * the node's pods get only what is published here. Also when a Job has
 * left the node, for the sweep.
 */
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "weights_int.h"

int
wt_net_start(edge_weights *ws) {
  const edge_config *c = &ws->a->cfg;
  char addr[WT_ADDR_SZ];
  SSL_CTX *srv;
  if (!c->tls_dir || !*c->tls_dir) {
    edge_logf("info", "-", "weights: no --tls-dir: not serving, not fetching");
    return 0;
  }
  if (!(ws->client = wt_tls_ctx(c->tls_dir, 0)) ||
      !(srv = wt_tls_ctx(c->tls_dir, 1)))
    return bus_error(BUS_EINVAL, "--tls-dir %s: %s", c->tls_dir,
                     bus_last_error());
  if (c->weights_listen && *c->weights_listen)
    snprintf(addr, sizeof addr, "%s", c->weights_listen);
  else {
    char first[64];
    edge_node_first_address(first, sizeof first);
    snprintf(addr, sizeof addr, strchr(first, ':') ? "[%s]:0" : "%s:0", first);
  }
  return wt_srv_start(ws, srv, addr);
}

void
wt_net_stop(edge_weights *ws) {
  wt_srv_stop(ws);
  wt_fetch_stop(ws);
  SSL_CTX_free(ws->client);
  ws->client = NULL;
}

int
wt_job_gone(edge_weights *ws, const char *job) {
  msgpack_sbuffer sb;
  for (edge_proc *p = ws->a->procs; p; p = p->next)
    if (!p->ended && !strcmp(p->job, job))
      return 0;
  msgpack_sbuffer_init(&sb);
  int gone =
      edge_store_engine_get(ws->a->store, job, "weights", &sb) ==
          BUS_ENOT_FOUND &&
      edge_store_engine_get(ws->a->store, job, "peers", &sb) == BUS_ENOT_FOUND;
  msgpack_sbuffer_destroy(&sb);
  return gone;
}
