/*
 * store.h - private to edge/ (and its tests): the node's local store
 * (LMDB), its memory across cut-offs and restarts: desired states, what
 * was started (a run record per pod, made before the process is spawned,
 * so an attempt is never started twice), the networks raw+netns pods
 * hold and their addresses on robots' subnets, and every report not yet
 * acknowledged by the broker, with its id fixed when it was made. Any
 * thread. The bottom of edge/: it uses nothing else here (store.c,
 * store_net.c, store_subnet.c, store_queue.c).
 */
#ifndef LARK_EDGE_STORE_H
#define LARK_EDGE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "bus.h"

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
/* How long a forgotten pod's tombstone is kept (store.c): at least
 * seconds, gone at a later forget's sweep. */
#define EDGE_TOMB_KEEP_S 3600
void edge_store_tomb_keep(edge_store *s, unsigned seconds);
/* Forget pod: its run and its engine row go, its desired state becomes a
 * tombstone (no desired state older than it is taken again, nor read),
 * and msg (may be NULL) is queued, in one transaction. */
int edge_store_forget(edge_store *s, const char *pod, const edge_msg *msg);
/* Visit every row of a table, copied (cb may write the store): val is
 * an edge_run for the runs, an edge_net for the nets. */
typedef void (*edge_row_cb)(const char *pod, const void *val, void *ud);
int edge_store_run_each(edge_store *s, edge_row_cb cb, void *ud);

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
int edge_store_net_each(edge_store *s, edge_row_cb cb, void *ud);

/*
 * The addresses a raw+netns pod holds on the subnets of the robots it
 * holds (edge/devices.h, subnet:): for each, the macvlan's name inside
 * the pod's namespace ("rb0", "rb1", ...), the node's interface it is
 * made on, the subnet and the address the pod got there from the node's
 * range. Its own until freed, across agent restarts.
 */
enum { EDGE_SUBNETS_MAX = 4, EDGE_SUBNET_IF_SZ = 16 };

typedef struct edge_subnet_addr {
  char ifname[EDGE_SUBNET_IF_SZ]; /* inside the pod */
  char parent[EDGE_SUBNET_IF_SZ]; /* on the node */
  char cidr[56];                  /* "192.168.50.0/24", canonical */
  char addr[48];                  /* "192.168.50.100", canonical */
  int32_t plen;                   /* cidr's */
  int32_t pad;
} edge_subnet_addr;

typedef struct edge_subnets {
  int32_t n;
  int32_t pad;
  edge_subnet_addr v[EDGE_SUBNETS_MAX];
} edge_subnets;

/* A subnet a pod is to reach: the node's parent interface, the subnet
 * and the node's range of addresses for pods on it (first..last). */
typedef struct edge_subnet_want {
  const char *parent, *cidr, *first, *last;
} edge_subnet_want;

/*
 * The addresses pod holds, or new ones: for want[i], "rb<i>" and the
 * lowest address of its range that no other pod holds. Claimed in one
 * transaction, all or none. -ENOSPC when a range has no free address,
 * BUS_EINVAL for a malformed subnet or a range not inside it.
 */
int edge_store_subnet_claim(edge_store *s, const char *pod,
                            const edge_subnet_want *want, int n,
                            edge_subnets *out);
/* BUS_ENOT_FOUND when pod holds none. */
int edge_store_subnet_get(edge_store *s, const char *pod, edge_subnets *out);
/* Free them (0 when there were none). */
int edge_store_subnet_del(edge_store *s, const char *pod);
int edge_store_subnet_each(edge_store *s, edge_row_cb cb, void *ud);

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

/* Queue n messages in one store transaction (one sync), in order, all or
 * none. */
int edge_store_enqueue_n(edge_store *s, const edge_msg *msgs, size_t n);
/* The oldest queued messages, at most max, into q (each freed with
 * edge_queued_free), how many into *n: as edge_store_peek, which is this
 * with max 1; an unreadable one is handed over only first. */
int edge_store_peek_n(edge_store *s, edge_queued *q, size_t max, size_t *n);
/* Drop every queued message up to key in one transaction. */
int edge_store_drop_upto(edge_store *s, uint64_t key);

/* ------------------------------------------------------------ robots */

/* What the node did with a robot (store_robot.c): recorded with each
 * robot.report it queues, in one transaction, so a restarted agent
 * re-adopts the launch process (pid and start time) instead of starting
 * it twice, and knows which desired version and resets it acted on. */
typedef struct edge_robot_run {
  uint32_t attempt;  /* launches so far: the shim's status file exit-<n> */
  int32_t state;     /* EDGE_RUN_RUNNING while launched, else ENDED */
  int32_t pid;       /* the shim's, leader of the launch's group */
  uint32_t restarts; /* after crashes, since last started as desired */
  uint64_t start_ticks;
  uint64_t version; /* the robot.desired version acted on */
  uint64_t resets;  /* the resets applied */
  char mode[64];    /* the mode launched */
} edge_robot_run;

/* Store a robot.desired map for robot when seq is newer (as
 * edge_store_desired_put). */
int edge_store_robot_desired_put(edge_store *s, const char *robot, uint64_t seq,
                                 const void *data, size_t len, int *stored);
/* The robot's desired map (malloc'd into *data) and its seq;
 * BUS_ENOT_FOUND when none came yet. */
int edge_store_robot_desired_get(edge_store *s, const char *robot,
                                 uint64_t *seq, void **data, size_t *len);
/* BUS_ENOT_FOUND when the robot never ran here. */
int edge_store_robot_run_get(edge_store *s, const char *robot,
                             edge_robot_run *r);
/* Put r and queue msg (may be NULL) in one transaction. */
int edge_store_robot_run_put(edge_store *s, const char *robot,
                             const edge_robot_run *r, const edge_msg *msg);

/* ----------------------------------------------------------- weights */

/* A weights version held in the node's cache (store_weights.c): the
 * file <data>/weights/<sha256>; ts when it came here (unix ns). */
typedef struct edge_wver {
  char job[BUS_NAME_MAX + 1];
  char sha256[65];
  char pad[6];
  uint64_t version;
  uint64_t size;
  int64_t ts;
} edge_wver;

/* Record w and queue msg (may be NULL) in one transaction. */
int edge_store_weights_put(edge_store *s, const edge_wver *w,
                           const edge_msg *msg);
/* Forget job's version and queue msg (may be NULL), in one transaction. */
int edge_store_weights_del(edge_store *s, const char *job, uint64_t version,
                           const edge_msg *msg);
/* BUS_ENOT_FOUND when job's version is not held. Any thread. */
int edge_store_weights_get(edge_store *s, const char *job, uint64_t version,
                           edge_wver *w);
/* Every version held, by job then version (cb must not write the store). */
typedef void (*edge_wver_cb)(const edge_wver *w, void *ud);
int edge_store_weights_each(edge_store *s, edge_wver_cb cb, void *ud);

/* ------------------------------------------------------------ engine */

/*
 * The RL engine's projections of a Job on this node (store_engine.c):
 * what = "stages" | "weights" | "peers", the message body of
 * engine.stages / engine.weights / engine.peers as it came on
 * lark.node.<node>.engine.<job>.<what> (an event: decode it with
 * bus_event_decode_typed, then bus_as_engine_stages / _weights / _peers;
 * edge_store_engine_load does both). Put
 * keeps only a newer version (the deciding event's sequence); *stored
 * (may be NULL) says whether it did.
 */
int edge_store_engine_put(edge_store *s, const char *job, const char *what,
                          uint64_t version, const void *body, size_t len,
                          int *stored);
/* The stored body appended to out; BUS_ENOT_FOUND when none came. */
int edge_store_engine_get(edge_store *s, const char *job, const char *what,
                          msgpack_sbuffer *out);
/* The stored body decoded into zone: *out points at its
 * bus_ev_engine_<what> struct; BUS_ENOT_FOUND when none came. */
int edge_store_engine_load(edge_store *s, const char *job, const char *what,
                           msgpack_zone *zone, const void **out);
/* The Job's three rows go, in one transaction. */
int edge_store_engine_forget(edge_store *s, const char *job);
/* Each Job with a row, once (copied first: cb may write the store). */
typedef void (*edge_job_cb)(const char *job, void *ud);
int edge_store_engine_jobs(edge_store *s, edge_job_cb cb, void *ud);

/* What the node did for a pod's attempt through the engine's socket: the
 * highest weights version it handed it (the stamp on its reports, and
 * what a loader's done needs) and, per stage in the canonical order, the
 * last step it reported plus one (0: none), so a step said twice is
 * queued once. A new attempt starts a new row (it has loaded nothing). */
enum { EDGE_ENGINE_STAGES = 4 };
typedef struct edge_engine_pod {
  uint32_t attempt;
  uint32_t pad;
  uint64_t handed;
  uint64_t done[EDGE_ENGINE_STAGES];
} edge_engine_pod;

/* BUS_ENOT_FOUND when the pod has none. */
int edge_store_engine_pod_get(edge_store *s, const char *pod,
                              edge_engine_pod *r);
/* Put r and queue msg (may be NULL) in one transaction. */
int edge_store_engine_pod_put(edge_store *s, const char *pod,
                              const edge_engine_pod *r, const edge_msg *msg);

#endif
