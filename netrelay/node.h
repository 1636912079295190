/*
 * node.h - lark-relay node: the relay of one node of a cluster (part of
 * larkrelay).
 *
 * The relay follows its cluster's routes (LARK_ROUTES rows
 * lark.route.<domain>.<cluster>.<pod>) and, for every pod on its node
 * that has a virtual address, its real address and its Domain's prefix,
 * captures the pod's connections to that prefix (capture.h). Each
 * captured connection is routed once, by its original destination:
 * - a row via local: straight to the target pod's real address, spliced
 *   on the relay's loop (splice.h);
 * - a row via hub: a direct-tcpip channel on the relay's session to the
 *   hub for that Domain (sshc.h);
 * - no row in the pod's Domain: reset.
 * It keeps one session to the hub per Domain it holds a certificate for
 * (<certs>/<domain>.key and <certs>/<domain>-cert.pub; the directory is
 * looked at again every 10 s), and serves the channels the hub opens for
 * pods of its cluster. A pod whose row goes away loses its capture.
 *
 * With weights_host set it also takes its cluster's lark-edge fetchers'
 * weights requests (wlisten.h) and carries each through the first hub
 * session that is up (any Domain's: the hub judges by the certificate's
 * cluster and the Job rule), and delivers the weights channels the hub
 * opens to it (sshc.h).
 *
 * Threads: relay_node_run runs a libuv loop in the caller's thread
 * (captures, local splices, decisions); the route follower and each hub
 * session run in threads of their own. The follower wakes the loop with
 * uv_async_send; captured sockets reach a session through its queue.
 * Log lines (one per decision) come from all of these threads.
 */
#ifndef LARK_RELAY_NODE_H
#define LARK_RELAY_NODE_H

#include <signal.h>

#include "hub.h"

typedef struct relay_node_opts {
  const char *cluster; /* this relay's cluster */
  const char *node;    /* this relay's node */
  const char *hub_host;
  int hub_port;
  const char *hub_key;      /* the hub's host public key file */
  const char *certs;        /* directory of Domain certificates */
  const char *url;          /* NATS URL(s) */
  const char *creds;        /* may be NULL */
  int capture_port;         /* default RELAY_CAPTURE_PORT */
  const char *weights_host; /* --weights-listen (wlisten.h); NULL: none */
  int weights_port;
  relay_log_fn log; /* may be NULL */
  void *log_ud;
} relay_node_opts;

void relay_node_opts_init(relay_node_opts *o);

/*
 * Run until *stop becomes nonzero (checked every 100 ms), then remove
 * the captures' nftables tables, close the listeners, reset the
 * connections in flight and return 0. A negative code when it cannot
 * start (options, broker), with detail in bus_last_error(). The broker
 * need not be up: the route follower keeps trying.
 */
int relay_node_run(const relay_node_opts *o, volatile sig_atomic_t *stop);

/* `lark-relay node ...` (argv[1] == "node"); returns the exit code. */
int relay_cmd_node(int argc, char **argv);

#endif
