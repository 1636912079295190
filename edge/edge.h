/*
 * edge.h - lark-edge, the runtime of one node: it registers the node,
 * sends heartbeats, reads the node's own stream LARK_NODE_<node> (the
 * desired state of its pods), runs those pods as processes under libuv,
 * and sends their phases, output lines and training-script reports back
 * through the node's ingress (lark.in.<node>.>).
 *
 * This header is what main.c and the tests see: the configuration, the
 * agent's and the shim's entry points, and what the node says about
 * itself. The parts inside, from the top down (docs/architecture.md):
 *
 *   agent.c                      wiring: store, broker, loop, threads
 *   pods.c engine.c              desired states against runs: reconcile;
 *                                the RL engine's projections on the loop
 *   robot.c robot_sock.c         robots: launch processes against their
 *   robot_req.c reqline.c        robot.desired; their controller sockets
 *                                and the request lines those read
 *   lifetime.c                   a pod's process: spawn, exit, stop, adopt
 *   engine_sock.c engine_pod.c   the RL engine's requests on its
 *   engine_answer.c engine_op.c  LARK_SOCKET (each file above the next)
 *   shimcmd.c output.c sock.c    its command line and environment, its
 *                                stdout/stderr, its LARK_SOCKET
 *   weights*.c                   Jobs' weights: the cache, publish and
 *                                wait, the TLS server and fetcher
 *                                (weights.h, in layers: weights_int.h;
 *                                its threads call nothing above the
 *                                store and the log)
 *   report.c netns.c             run records with their pod.report; the
 *                                raw+netns pod's network (podnet)
 *   sender.c slice.c             the two threads
 *   proc.c store*.c log.c        the process record, the local store
 *                                (store_engine.c: the engine's rows),
 *   utf8.c node.c                the log, text, the node's description
 *   devices*.c peer.c            the device file (devices.h); the pod
 *                                behind a local socket (peer.h)
 *
 * A file calls only files on its own line or below, and never a file
 * that calls it; the calls upward go through hooks the agent sets: a
 * process that ended asking for its pod to be reconciled
 * (edge_agent.pod_ended), a request line to the RL engine on a pod's
 * socket and a connection closing (edge_agent.sock_op, sock_cancel). shim.c,
 * fetch.c and prepare.c are the pod-shim, a process of its own.
 */
#ifndef LARK_EDGE_H
#define LARK_EDGE_H

#include <stddef.h>
#include <stdint.h>

#include "bus.h"

#define EDGE_VERSION "0.1.0"

/*
 * An idle node's timing, which sets what it costs the broker (docs/design.md
 * "Idle nodes"; bench_fleet_idle measures it): a heartbeat every
 * EDGE_HEARTBEAT_MS (--heartbeat; each costs the broker about 800 bytes
 * with its ack and the scheduler's read of it), and a pull of its own
 * stream that the broker holds EDGE_SLICE_WAIT_MS before ending it empty
 * (--slice-wait; about 270 bytes each). Desired states never wait for
 * either: a pull returns as soon as one is there. What the long pull costs
 * is the time to notice a broker that forgot the node's consumer (a
 * restart): up to one wait. The scheduler's NotReady timeout spans three
 * heartbeats (SCHED_NODE_TIMEOUT_MS).
 */
#define EDGE_HEARTBEAT_MS 60000
#define EDGE_SLICE_WAIT_MS 30000
#define EDGE_POD_SZ (BUS_DERIVED_NAME_MAX + 1)
#define EDGE_NAME_SZ (BUS_NAME_MAX + 1)
#define EDGE_LINE_MAX 16384 /* LogLine.text's max_len */

/* ------------------------------------------------------------- config */

typedef struct edge_config {
  const char *node;
  const char *cluster;  /* default "local" */
  const char *labels;   /* "k=v,k2=v2" */
  const char *capacity; /* "cpu=8,memory=32768,gpu=2" (memory: MiB, or
                           with a Ki/Mi/Gi/Ti suffix) */
  const char *devices;  /* "rlinf.io/device=2" */
  /* the robots and cameras of --device-file (devices.h), or NULL: the
   * agent takes what it holds (leaving it empty) and frees it at the end;
   * the file's path is only for the log */
  struct edge_devices *devfile;
  const char *device_file;
  const char *runtimes; /* "raw"; "raw+netns" is added with pod_cidr */
  const char *pod_cidr; /* "10.88.1.0/24": raw+netns pods get a /30 of it;
                           NULL: no raw+netns (it needs root) */
  const char *url;
  const char *creds;
  const char *data;
  int heartbeat_ms;  /* default EDGE_HEARTBEAT_MS */
  int slice_wait_ms; /* default EDGE_SLICE_WAIT_MS */
  int grace_ms;      /* SIGTERM to SIGKILL; default 10000 */
  int log_flush_ms;  /* default 200 */
  int log_lines;     /* lines per batch at most; default 512 */
  int js_wait_ms;    /* default 2000 */
  /* pods' artifacts: a CA file trusted for https beside the system's CAs
   * (an absolute path; NULL: none), the most bytes one may have (default
   * 4 GiB) and the most seconds a fetch may take (default 1800) */
  const char *artifact_ca;
  uint64_t artifact_max;
  int artifact_timeout_s;
  /* Jobs' weights (weights.h): the node's certificate, key and the
   * platform CA (DIR/cert.pem, key.pem, ca.pem; NULL: no server, no
   * fetch), where the server listens (host:port; NULL: the node's first
   * address, any port), the versions kept per Job (default 3) and the
   * bytes in all (default 8 GiB) */
  const char *tls_dir;
  const char *weights_listen;
  const char *weights_relay; /* another cluster's nodes: through here */
  int weights_keep;
  uint64_t weights_max;
} edge_config;

void edge_config_init(edge_config *c);

/* Run the agent until SIGINT/SIGTERM. Pods keep running when it stops
 * (they are re-adopted on the next start). */
int edge_agent_run(const edge_config *cfg);

/* The pod shim: `lark-edge pod-shim STATUSFILE [OPTIONS] -- ARGV...`:
 * fetch the artifact, enter the network namespace, run the prepareScript,
 * then ARGV (shim.c). */
int edge_shim_main(int argc, char **argv);

/* node.c: parse "k=v,k2=v2" calling cb for each pair; BUS_EINVAL when
 * malformed. */
typedef int (*edge_kv_cb)(const char *k, const char *v, void *ud);
int edge_parse_kv(const char *s, edge_kv_cb cb, void *ud);

/* node.c: the Node resource the agent registers (msgpack map into sb). */
int edge_node_resource(const edge_config *cfg, msgpack_sbuffer *sb);

/* node.c: the node's first address (as it registers them). */
void edge_node_first_address(char *out, size_t cap);

/* node.c: whether cfg->runtimes lists rt. */
int edge_runtime_offered(const edge_config *cfg, const char *rt);

#endif
