/*
 * edge.h - lark-edge, the runtime of one node: it registers the node,
 * sends heartbeats, reads the node's own slice of LARK_NODES (the desired
 * state of its pods), runs those pods as processes under libuv, and sends
 * their phases, output lines and training-script reports back through the
 * node's ingress (lark.in.<node>.>).
 *
 * Threads
 *   loop    the libuv loop: pods, their output, their sockets, timers.
 *           Everything below marked "loop" runs only there.
 *   slice   fetches the node's slice, stores each desired state in the
 *           local store, acks it, and wakes the loop (edge_slice_*).
 *   sender  sends the store's outbox, oldest first, and the heartbeats
 *           (edge_sender_*).
 *
 * The local store (LMDB) is the node's memory across cut-offs and
 * restarts: desired states, what was started (a run record per pod, made
 * before the process is spawned, so an attempt is never started twice),
 * and every report not yet acknowledged by the broker, with its id fixed
 * when it was made. The slice acks a desired state only after it is
 * stored; the sender deletes a report only after the broker acked it.
 */
#ifndef LARK_EDGE_H
#define LARK_EDGE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "bus.h"

#define EDGE_VERSION "0.1.0"
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
  const char *runtimes; /* "raw"; "raw+netns" is added with pod_cidr */
  const char *pod_cidr; /* "10.88.1.0/24": raw+netns pods get a /30 of it;
                           NULL: no raw+netns (it needs root) */
  const char *url;
  const char *creds;
  const char *data;
  int heartbeat_ms; /* default 2000 */
  int grace_ms;     /* SIGTERM to SIGKILL; default 10000 */
  int log_flush_ms; /* default 200 */
  int log_lines;    /* lines per batch at most; default 512 */
  int js_wait_ms;   /* default 2000 */
  /* pods' artifacts: a CA file trusted for https beside the system's CAs
   * (an absolute path; NULL: none), the most bytes one may have (default
   * 4 GiB) and the most seconds a fetch may take (default 1800) */
  const char *artifact_ca;
  uint64_t artifact_max;
  int artifact_timeout_s;
} edge_config;

void edge_config_init(edge_config *c);

/* ---------------------------------------------------------------- store */

typedef struct edge_store edge_store;

enum { EDGE_RUN_STARTING = 1, EDGE_RUN_RUNNING = 2, EDGE_RUN_ENDED = 3 };

/* What was started for a pod: made before the spawn, so a crash between
 * the two leaves STARTING and the attempt is never started again. */
typedef struct edge_run {
  uint32_t attempt;
  int32_t state;
  int32_t pid;
  int32_t pad;
  uint64_t start_ticks; /* /proc/<pid>/stat start time: no pid reuse */
} edge_run;

/* A message to send: built by the loop, sent by the sender. */
typedef struct edge_msg {
  const char *subject;
  const char *type;
  const void *data; /* one msgpack map */
  size_t len;
} edge_msg;

int edge_store_open(edge_store **out, const char *dir);
void edge_store_close(edge_store *s);

/* Store data (a pod.desired map) for pod when seq is newer than what is
 * there; *stored (may be NULL) says whether it was. */
int edge_store_desired_put(edge_store *s, const char *pod, uint64_t seq,
                           const void *data, size_t len, int *stored);
/* Visit every desired state (copied: cb may write the store). */
typedef void (*edge_desired_cb)(const char *pod, const void *data, size_t len,
                                void *ud);
int edge_store_desired_each(edge_store *s, edge_desired_cb cb, void *ud);
int edge_store_desired_get(edge_store *s, const char *pod, void **data,
                           size_t *len);

/* BUS_ENOT_FOUND when absent. */
int edge_store_run_get(edge_store *s, const char *pod, edge_run *r);
/* Put r (or delete it when r is NULL) and queue msg (may be NULL), in one
 * transaction. The message gets a new id now, kept until it is sent. */
int edge_store_run_put(edge_store *s, const char *pod, const edge_run *r,
                       const edge_msg *msg);
/* Forget pod: its run and its desired state go, and msg (may be NULL) is
 * queued, in one transaction. */
int edge_store_forget(edge_store *s, const char *pod, const edge_msg *msg);
typedef void (*edge_run_cb)(const char *pod, const edge_run *r, void *ud);
int edge_store_run_each(edge_store *s, edge_run_cb cb, void *ud);

/* A raw+netns pod's network as it was made: the names are recorded, so
 * whoever removes it removes exactly that, and its /30 (node end
 * host_ip, the pod's localIP pod_ip) stays its own until it is freed. */
typedef struct edge_net {
  char ns[64];      /* PODNET_NS_MAX */
  char host_if[16]; /* PODNET_IFNAME_MAX */
  char host_ip[16];
  char pod_ip[16];
  int32_t plen;
  int32_t pad;
} edge_net;

/*
 * The network pod holds, or a new one: the lowest /30 of cidr whose pod
 * address no other pod holds, the namespace podnet_ns_name(pod) and a
 * host interface podnet_host_ifname(pod, salt) with the first salt no
 * other pod holds. Claimed in one transaction. -ENOSPC when cidr has no
 * free /30, BUS_EINVAL for a malformed cidr.
 */
int edge_store_net_claim(edge_store *s, const char *pod, const char *cidr,
                         edge_net *n);
/* BUS_ENOT_FOUND when pod holds none. */
int edge_store_net_get(edge_store *s, const char *pod, edge_net *n);
/* Free it (0 when there was none). */
int edge_store_net_del(edge_store *s, const char *pod);
typedef void (*edge_net_cb)(const char *pod, const edge_net *n, void *ud);
int edge_store_net_each(edge_store *s, edge_net_cb cb, void *ud);

/* "a.b.c.d/len" (IPv4, len 8..30, no host bits) into its first address
 * (host order) and length; BUS_EINVAL with the reason else. */
int edge_cidr_parse(const char *cidr, uint32_t *base, int *plen);

/* Queue a message (a new id and the time now, fixed from here on). */
int edge_store_enqueue(edge_store *s, const edge_msg *msg);

/* The oldest queued message, decoded into ev (strings in buf, data points
 * into buf: valid until the next call). BUS_ENOT_FOUND when empty. */
typedef struct edge_queued {
  uint64_t key;
  char subject[BUS_SUBJECT_MAX];
  char type[64];
  char id[65];
  int64_t ts;
  void *data;
  size_t len;
} edge_queued;
int edge_store_peek(edge_store *s, edge_queued *q);
void edge_queued_free(edge_queued *q);
int edge_store_drop(edge_store *s, uint64_t key);
/* Messages queued. */
uint64_t edge_store_queued(edge_store *s);

/* --------------------------------------------------------------- agent */

typedef struct edge_agent edge_agent;
typedef struct edge_proc edge_proc;

struct edge_agent {
  edge_config cfg;
  char self_exe[4096];
  char pods_dir[4096];
  uv_loop_t *loop;
  uv_async_t wake; /* slice -> loop: desired states changed */
  uv_signal_t sigs[2];
  uv_timer_t flush; /* log batches */
  edge_store *store;
  bus_conn *conn;
  edge_proc *procs; /* live and ending processes */
  atomic_int npods; /* live processes, for heartbeats */
  atomic_int stop;  /* threads stop */
  int conn_lost;    /* the broker connection closed for good */
  atomic_int dirty; /* desired states changed since last reconcile */
  pthread_t slice_th, sender_th;
  int slice_started, sender_started;
  char runtimes[256]; /* cfg.runtimes points here */
  pthread_mutex_t mu; /* sender wake-up */
  pthread_cond_t cv;
  int closing;
};

/* Run the agent until SIGINT/SIGTERM. Pods keep running when it stops
 * (they are re-adopted on the next start). */
int edge_agent_run(const edge_config *cfg);

/* Parse "k=v,k2=v2" calling cb for each pair; BUS_EINVAL when malformed. */
typedef int (*edge_kv_cb)(const char *k, const char *v, void *ud);
int edge_parse_kv(const char *s, edge_kv_cb cb, void *ud);

/* The Node resource the agent registers (msgpack map into sb). */
int edge_node_resource(const edge_config *cfg, msgpack_sbuffer *sb);

/* Queue a message and wake the sender. loop or any thread. */
int edge_send(edge_agent *a, const edge_msg *m);
void edge_sender_wake(edge_agent *a);

/* Threads. */
int edge_slice_start(edge_agent *a);
int edge_sender_start(edge_agent *a);

/* ---------------------------------------------------------- pods (loop) */

/* Adopt or account for the processes a previous agent started. */
void edge_pods_adopt(edge_agent *a);
/* Bring the processes in line with every desired state. */
void edge_pods_reconcile(edge_agent *a);
/* Remove the networks of pods that no longer run (after adopting). */
void edge_pods_sweep_nets(edge_agent *a);
/* Flush every pod's pending log lines. */
void edge_pods_flush_logs(edge_agent *a);
/* Close every handle the pods hold (processes keep running). */
void edge_pods_close(edge_agent *a);

/* /proc/<pid>/stat start time; 0 when the process is gone. */
uint64_t edge_proc_start_ticks(pid_t pid);

/* Whether cfg->runtimes lists rt. */
int edge_runtime_offered(const edge_config *cfg, const char *rt);

/* ------------------------------------------------- pod networks (loop) */

/* Claim pod's /30 and make its namespace and veth (netns.c); on failure
 * nothing is left and the /30 is free again. */
int edge_net_setup(edge_agent *a, const char *pod, edge_net *n);
/* Remove pod's veth and namespace and free its /30; 0 when it held none.
 * On failure the /30 stays claimed (so it is never handed out while its
 * interface may be there) and a later sweep retries. */
int edge_net_teardown(edge_agent *a, const char *pod);

/* The pod shim: `lark-edge pod-shim STATUSFILE [OPTIONS] -- ARGV...`:
 * fetch the artifact, enter the network namespace, run the prepareScript,
 * then ARGV (shim.c). */
int edge_shim_main(int argc, char **argv);

/* Make s valid UTF-8 without NUL in place (bad bytes become '?'). */
void edge_utf8_fix(char *s, size_t len);
/* Length of the longest prefix of s (at most max) not ending inside a
 * UTF-8 sequence. */
size_t edge_utf8_cut(const char *s, size_t len, size_t max);

/* Unix-socket path for a pod into out; BUS_EINVAL if it cannot fit. */
int edge_sock_path(const edge_agent *a, const char *pod, char *out, size_t cap);

/* One log line. */
void edge_logf(const char *level, const char *subject, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
