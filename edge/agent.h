/*
 * agent.h - private to edge/: the state of one running agent, shared by
 * the parts of edge/ (edge.h lists them). Declarations only: each part's
 * functions are in its own header.
 *
 * Threads
 *   loop    the libuv loop: pods, their output, their sockets, timers.
 *           Everything marked "loop" runs only there.
 *   slice   fetches the node's slice, stores each desired state in the
 *           local store, acks it, and wakes the loop (slice.h).
 *   sender  sends the store's outbox, oldest first, and the heartbeats
 *           (sender.h).
 *
 * The slice acks a desired state only after it is stored; the sender
 * deletes a report only after the broker acked it (store.h).
 */
#ifndef LARK_EDGE_AGENT_H
#define LARK_EDGE_AGENT_H

#include <pthread.h>
#include <stdatomic.h>

#include <uv.h>

#include "devices.h"
#include "edge.h"
#include "store.h"

typedef struct edge_agent edge_agent;
typedef struct edge_proc edge_proc;
struct edge_client; /* proc.h */

struct edge_agent {
  edge_config cfg;
  char self_exe[4096];
  char pods_dir[4096];
  uv_loop_t *loop;
  uv_async_t wake; /* slice -> loop: desired states changed */
  uv_signal_t sigs[2];
  uv_timer_t flush; /* log batches */
  edge_store *store;
  edge_devices devices; /* the node's robots and cameras; read-only once
                           the agent runs (cfg.devfile points here) */
  bus_conn *conn;
  edge_proc *procs;          /* live and ending processes */
  struct edge_cam_run *cams; /* camera_run.c; NULL: no camera */
  atomic_int npods;          /* live processes, for heartbeats */
  atomic_int stop;           /* threads stop */
  int conn_lost;             /* the broker connection closed for good */
  int creds_gone;            /* the seed file could not be read, last look */
  int64_t creds_looked_ms;   /* when it was looked at */
  atomic_int dirty;          /* desired states changed since last reconcile */
  pthread_t slice_th, sender_th;
  int slice_started, sender_started;
  bus_serve *pushes;  /* desired states pushed ahead of the slice */
  char runtimes[256]; /* cfg.runtimes points here */
  pthread_mutex_t mu; /* sender wake-up */
  pthread_cond_t cv;
  int closing;
  /* A pod's process ended (its end recorded): bring the pod in line with
   * its desired state again. Set by the agent (edge_pods_reconcile_one),
   * so lifetime.c calls up without depending on pods.c. Loop. */
  void (*pod_ended)(edge_agent *a, const char *pod);
  /* A request line to the RL engine on a pod's socket, and a connection
   * closing (its pending request, if any, dropped). Set by the agent
   * (edge_engine_sock_op, edge_engine_sock_cancel), so sock.c hands them
   * up without depending on engine_sock.c, which answers through it.
   * Loop. */
  void (*sock_op)(struct edge_client *c, const char *line, size_t len);
  void (*sock_cancel)(struct edge_client *c);
  struct edge_robots *robots;   /* the device file's robots (robot.h) */
  struct edge_weights *weights; /* Jobs' weights on this node (weights.h) */
  /* slice -> loop: the Jobs whose engine projections changed (slice.h) */
  pthread_mutex_t changes_mu;
  struct edge_slice_change *changes;
  size_t nchanges, changes_cap;
};

#endif
