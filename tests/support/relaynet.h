/*
 * relaynet.h - the pod network's two-cluster topology, as root, in
 * network namespaces of its own: shared by tests/test_netrelay.c and
 * bench/relay.c.
 *
 *   core (the caller's own new namespace: nats-server, lark-relay hub)
 *    |- 10.99.1.0/30 - n1 (cluster c1): pods a1, a2 (domain d1)
 *    '- 10.99.2.0/30 - n2 (cluster c2): pods b1 (d1), b2 (d2)
 *
 * relaynet_start first moves the calling thread into a namespace it
 * makes ("core"; threads and processes started afterwards inherit it),
 * so every address, route and veth lives in namespaces of its own, none
 * has a route out of the machine, and several users run side by side.
 * Each pod is a namespace joined to its node by a veth (podnet.h); what
 * listens in a pod is the caller's business (podnet_listen on pod->ns).
 * Route rows are appended to LARK_ROUTES as lark-ipam writes them, for
 * both clusters' views; certificates come from ssh-keygen with a CA of
 * its own, each naming its relay's cluster (cluster@larkbus). The hub
 * and the two `lark-relay node`s are the real binary, found with lt_bin
 * (LARK_BIN_DIR); each relay takes weights requests on its node's
 * address, port RELAYNET_WEIGHTS_PORT (the namespaces are the test's
 * own, so a fixed port is free).
 *
 * Functions returning int give 0, or -1 with a line in rn->err. Not
 * thread-safe: one thread drives a relaynet.
 */
#ifndef LARK_TEST_RELAYNET_H
#define LARK_TEST_RELAYNET_H

#include <stdarg.h>
#include <sys/types.h>

#include "bus.h"
#include "natsd.h"
#include "podnet.h"

typedef struct rn_pod {
  const char *tag;      /* a1, a2, b1, b2 */
  const char *domain;   /* d1, d2 */
  const char *vip;      /* virtual address */
  const char *cidr;     /* its Domain's prefix */
  int node;             /* 1 or 2 */
  const char *host_end; /* the node's end of its veth */
  const char *real;     /* its own address (localIP) */
  char name[64];        /* pod name, with the caller's pid */
  char ns[PODNET_NS_MAX];
} rn_pod;

enum { RN_A1, RN_A2, RN_B1, RN_B2, RN_NPODS };

#define RELAYNET_WEIGHTS_PORT 15002

typedef struct relaynet {
  rn_pod pods[RN_NPODS];
  char dir[256]; /* temporary directory: keys, certificates, logs */
  char core_ns[PODNET_NS_MAX], node_ns[3][PODNET_NS_MAX]; /* [1], [2] */
  char hub_log[512], relay_log[3][512];
  lt_natsd nats; /* listening on 0.0.0.0 in core */
  bus_conn *conn;
  pid_t hub_pid, relay_pid[3];
  int hub_port;
  char out[1 << 14], errout[1 << 14]; /* of the last relaynet_sh */
  char err[1024];
} relaynet;

/*
 * Build it all: core, nodes, pods, broker and streams, keys and
 * certificates (certs1/d1, certs2/d1, certs2/d2 under dir), route rows,
 * the hub and both relays, and wait (up to 20 s each) until both relays
 * have registered with the hub and capture their pods' traffic. tag
 * names the temporary directory. Fails at once when not root. On
 * failure what was made stays: call relaynet_cleanup.
 */
int relaynet_start(relaynet *rn, const char *tag);

/* Kill (SIGKILL) the hub and relays, stop the broker, delete every
 * namespace and the directory (kept, and named on stderr, when
 * LARK_KEEP_TEST_DIR is set). Whatever point start reached; twice is
 * harmless. */
void relaynet_cleanup(relaynet *rn);

/* The hub on port (0: any; the port is then read back into hub_port). */
int relaynet_start_hub(relaynet *rn, int port);
/* SIGTERM and reap: the wait status (a clean stop exits 0). */
int relaynet_stop_hub(relaynet *rn);
/* `lark-relay node` of cluster c<n> (n 1 or 2) in its node namespace. */
int relaynet_start_relay(relaynet *rn, int n);
int relaynet_stop_relay(relaynet *rn, int n);

/* Whether file contains what within seconds (1) or not (0). */
int relaynet_log_says(relaynet *rn, const char *file, const char *what,
                      int seconds);

/* Run a /bin/sh command line; its exit code, output in rn->out and
 * rn->errout. */
int relaynet_sh(relaynet *rn, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void relaynet_sleep_ms(int ms);

#endif
