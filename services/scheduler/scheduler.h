/*
 * scheduler.h - lark-scheduler's view: Jobs, Tasks, Pods and Nodes as
 * LMDB records, and the apply/decide/command/query functions over them.
 *
 * Records are fixed-size structs stored as bytes (zeroed before filling,
 * so the digest sees the same bytes live and in replay). The view can be
 * rebuilt at any time; a record of another layout version is refused
 * with BUS_ECORRUPT and a rebuild fixes it.
 *
 * Tables
 *   jobs      <job>                  job_rec
 *   specs     <job>                  the Job resource as submitted (msgpack)
 *   tasks     <task>                 task_rec
 *   pods      <pod>                  pod_rec
 *   why       <pod>                  0xc1 u64be(seq): its placement's Why
 *                                    is <job>/<seq in hex> (a row of an
 *                                    older view: the Why itself)
 *             <job>/<seq in hex>     the Why of the job.placed at seq, once
 *                                    for all the pods it bound (msgpack)
 *   nodes     <node>                 node_rec (state and allocation)
 *   nodespecs <node>                 the Node resource (msgpack)
 *   queue     u64be(submit seq) <job> Jobs with pods waiting for a node
 *   outgoing  u64be(seq) <pod>       desired states to send to nodes
 *   todo      <job>                  Jobs whose derived phases changed
 *   held      <node>/<device>        the pod holding a named device (holds.c)
 *   rayhead   <job>                  its Ray head pod's virtual address
 *                                    (domain.allocated; Jobs with a head)
 *   gone      <node>                 u64be(seq of its node.deleted): a
 *                                    deleted node whose stream goes (gone.c)
 *
 * decide remembers in _effects: "p:<version>" (a placement emitted at that
 * placement-log version), "o" (the outgoing key sent last), "h<pod>" (a
 * Ray worker's desired state held until its head is up: the outgoing
 * seq, then the head pod's name) and each phase event's id until it is
 * applied; and "sc:<node>", the creation time of the node's stream (a
 * stream made anew has "o" rewound: svc_node_streams_repair).
 */
#ifndef LARK_SCHEDULER_H
#define LARK_SCHEDULER_H

#include "bus.h"
#include "model.h"

#define SCHED_POOL "default"
#define SCHED_PLACEMENT_SUBJECT "lark.ev.placement." SCHED_POOL
#define SCHED_REC_VERSION 2
/* What the view's apply writes (records, their packing, keys): bumped
 * when it changes, so a view written before is rebuilt at start. 3: the
 * records packed as runs (SCHED_REC_PACKED). 4: derived phases once a
 * batch, their wants zeroed past the name (sched_touched_derive). 5: the
 * pods booked on each node (SCHED_NODEPODS, nodepods.c). */
#define SCHED_VIEW_LAYOUT 5
#define SCHED_GONE "gone"
#define SCHED_TOUCHED "touched"
#define SCHED_NODEPODS "nodepods"
#define SCHED_PHASE_SZ 16
#define SCHED_REASON_SZ 256
#define SCHED_POD_DEVICES 4

typedef struct job_rec {
  uint8_t version;
  char name[SCHED_NAME_SZ];
  char domain[SCHED_NAME_SZ];
  char phase[SCHED_PHASE_SZ]; /* last job.phase applied ("" at first) */
  char want[SCHED_PHASE_SZ];  /* derived from its tasks */
  char reason[SCHED_REASON_SZ];
  char sub_id[72]; /* the job.submitted event id */
  uint64_t generation, sub_seq, sub_ts;
  uint32_t pods, bound, ended;
  uint8_t stopped, deleted, addressed;
  uint8_t exhausted; /* its domain had too few addresses: waits until some
                        are released */
} job_rec;

typedef struct task_rec {
  uint8_t version;
  char name[SCHED_DNAME_SZ];
  char job[SCHED_NAME_SZ];
  char tmpl[SCHED_NAME_SZ];
  char phase[SCHED_PHASE_SZ];
  char want[SCHED_PHASE_SZ];
  char head_task[SCHED_DNAME_SZ];
  int32_t index; /* template index */
  uint32_t replicas, max_retries, rank_start, total_nodes;
  uint8_t head, role;
} task_rec;

typedef struct pod_rec {
  uint8_t version;
  char name[SCHED_DNAME_SZ];
  char job[SCHED_NAME_SZ];
  char task[SCHED_DNAME_SZ];
  char node[SCHED_NAME_SZ]; /* "" while unbound */
  char phase[SCHED_PHASE_SZ];
  char desired[SCHED_PHASE_SZ]; /* Running, Stopped, Deleted */
  char reason[SCHED_REASON_SZ];
  char local_ip[64];
  int32_t tmpl, exit_code;
  uint32_t replica, attempt, failures, signal;
  uint64_t gpus; /* bit i: GPU i bound */
  uint8_t runtime, bound, released;
  /* what it holds on its node while bound */
  uint64_t cpu_m, memory_mib;
  uint32_t gpu;
  uint32_t ndev;
  char dev_name[SCHED_POD_DEVICES][SCHED_NAME_SZ];
  uint32_t dev_count[SCHED_POD_DEVICES];
  unsigned char out_key[8]; /* its entry in `outgoing`, when queued */
} pod_rec;

typedef struct node_rec {
  uint8_t version;
  char name[SCHED_NAME_SZ];
  char cluster[SCHED_NAME_SZ];
  uint8_t ready, cordoned;
  uint8_t heartbeats; /* registered by its edge: goes NotReady when silent */
  uint64_t cpu_used_m, memory_used_mib, gpu_taken;
  uint32_t pods;
  uint32_t ndev;
  char dev_name[SCHED_POD_DEVICES * 2][SCHED_NAME_SZ];
  uint32_t dev_used[SCHED_POD_DEVICES * 2];
} node_rec;

/* ------------------------------------------------------------ records */

/* Read a record; BUS_ENOT_FOUND when absent, BUS_ECORRUPT for another
 * layout. */
int sched_job_get(bus_txn *t, const char *name, job_rec *r);
int sched_job_put(bus_txn *t, const job_rec *r);
int sched_task_get(bus_txn *t, const char *name, task_rec *r);
int sched_task_put(bus_txn *t, const task_rec *r);
int sched_pod_get(bus_txn *t, const char *name, pod_rec *r);
int sched_pod_put(bus_txn *t, const pod_rec *r);
int sched_noderec_get(bus_txn *t, const char *name, node_rec *r);
int sched_noderec_put(bus_txn *t, const node_rec *r);
/* The raw resource stored for a Job or Node (points into t). */
int sched_spec_get(bus_txn *t, const char *table, const char *name,
                   const void **data, size_t *len);
/* The stored resource of table unpacked into z; BUS_ECORRUPT when it is
 * not msgpack. */
int sched_spec_unpack(bus_txn *t, const char *table, const char *name,
                      msgpack_zone *z, msgpack_object *o);
/* The stored resource of a Job (type BUS_T_JOB_SUBMITTED: a bus_job_res)
 * or a Node (BUS_T_NODE_REGISTERED: a bus_node_res) into out, from z. */
int sched_spec_read(bus_txn *t, bus_type type, const char *name,
                    msgpack_zone *z, void *out);
/* Decode the stored Job spec into job (sched_job_clear it after). */
int sched_job_load(bus_txn *t, const char *name, sched_job *job);
/*
 * Visit the records of table (those whose key starts with prefix, when
 * not NULL): cb gets a copy of each, of size bytes. A value of another
 * size is passed over, or with strict ends the walk with BUS_ECORRUPT.
 * A non-zero return of cb ends it too, with that value.
 */
/*
 * A record as stored: SCHED_REC_PACKED, then its struct's bytes as runs
 * (a byte c < 0x80: the c + 1 bytes after it; c >= 0x80: c - 0x7f zero
 * bytes). A pod's record is 1.3 KB of mostly empty names; stored as runs
 * it is a tenth of that, and a Job of 1,000 pods writes that much less
 * into the view. Equal records are still equal bytes (the digest).
 */
#define SCHED_REC_PACKED 0xa5
/* r (size bytes, size <= the largest record) packed into out, which
 * holds SCHED_REC_PACK_MAX bytes: its length. */
#define SCHED_REC_PACK_MAX 2200
size_t sched_rec_pack(const void *r, size_t size, unsigned char *out);
/* v (len bytes) into the record r of size bytes: 0, or BUS_ECORRUPT when
 * it is not such a record of this size and SCHED_REC_VERSION. */
int sched_rec_unpack(const void *v, size_t len, void *r, size_t size);

typedef int (*sched_rec_cb)(void *rec, void *ud);
int sched_each_rec(bus_txn *t, const char *table, const char *prefix,
                   size_t size, int strict, sched_rec_cb cb, void *ud);
/*
 * The Why of a placement is kept once per job.placed (sched_why_put, its
 * event's seq) and each pod it bound points to it (sched_why_link): one
 * row per pod of a Job of 100 on 100 nodes was 100 copies of the same
 * hundred scores. sched_why_get: a pod's Why (points into t), NULL and
 * BUS_ENOT_FOUND when it has none. sched_why_drop: every Why of job.
 */
int sched_why_put(bus_txn *t, const char *job, uint64_t seq, const void *why,
                  size_t len);
int sched_why_link(bus_txn *t, const char *pod, uint64_t seq);
int sched_why_get(bus_txn *t, const pod_rec *p, const void **why, size_t *len);
int sched_why_drop(bus_txn *t, const char *job);
/* The keys of table (those starting with prefix, when not NULL) up to
 * SCHED_DNAME_SZ - 1 bytes (longer ones passed over), into out; free
 * out->v after, on failure too. For a walk that changes the table. */
typedef struct sched_keys {
  char (*v)[SCHED_DNAME_SZ];
  size_t n, cap;
  size_t skip; /* bytes left off the front of each key */
} sched_keys;
int sched_keys_of(bus_txn *t, const char *table, const char *prefix,
                  sched_keys *out);
/* As sched_keys_of, each key without the prefix. */
int sched_key_tails(bus_txn *t, const char *table, const char *prefix,
                    sched_keys *out);
/* Visit every pod of job (prefix scan of "<job>-"; checks pod.job). */
typedef int (*sched_pod_cb)(bus_txn *t, pod_rec *p, void *ud);
int sched_each_pod(bus_txn *t, const char *job, sched_pod_cb cb, void *ud);
/*
 * The keys of `queue` and `outgoing`: a sequence (8 bytes, big-endian, so
 * the keys sort by it) and a name. sched_seq_key writes one into key (room
 * for 8 + the name) and returns its length; sched_seq_of reads the
 * sequence of one (or of a pod's out_key); sched_seq_key_name copies its
 * name into name[cap], 0 when the key holds none.
 */
size_t sched_seq_key(unsigned char *key, uint64_t seq, const char *name);
uint64_t sched_seq_of(const void *key);
int sched_seq_key_name(const void *key, size_t klen, char *name, size_t cap);
/* Copy with NUL into a fixed field. */
void sched_copy(char *dst, size_t cap, const char *src, size_t n);

/* -------------------------------------------------------- apply/decide */

/* The view definition (tables, apply, decide). ud: a sched_ctx or NULL. */
void sched_view_def(bus_view_def *def);
int sched_apply(bus_txn *t, const bus_event *ev, void *ud);
int sched_decide(bus_txn *t, const bus_event *cause, int64_t now, void *ud);
/* One event decided from id_src, appended by decide (emit.c): data is
 * the generated struct of type (bus_ev_<type>). */
int sched_emit(bus_txn *t, const char *subject, bus_type type, const void *data,
               const char *id_src, const char *cause, uint64_t prev, int flags);
/* The same with the version check, once: its id stays noted in _effects
 * until apply sees the event (and unmarks it), so the next pass does not
 * emit it again. */
int sched_emit_once(bus_txn *t, const char *subject, bus_type type,
                    const void *data, const char *id_src, const char *cause,
                    uint64_t prev);
/* The nodes of the view as placement's model (decide_nodes.c): kept by
 * the calling thread between passes, each node's facts read again only
 * when its resource changed, its state from its record every time. *out
 * is valid until the thread's next call. */
int sched_nodes_load(bus_txn *t, sched_nodes **out);
/* Send the desired states queued in `outgoing` (decide_dispatch.c). */
int sched_decide_dispatch(bus_txn *t);

/*
 * Who owns the job, task or pod called name (a sched_exists_fn for
 * sched_names_check), read through o->t; the Job's name or NULL.
 */
typedef struct sched_owner {
  bus_txn *t;
  char owner[SCHED_NAME_SZ];
} sched_owner;
const char *sched_owner_of(const char *kind, const char *name, void *ud);

/* ------------------------------------------------------------ Ray head */

/* The head pod of job (spec s: its first pod of the template with head:
 * true) into head; 1 when the Job has one, 0 (head "") when not. */
int sched_ray_head_pod(const char *job, const bus_job_spec *s,
                       char head[SCHED_DNAME_SZ]);
/* 1 when the head pod's current attempt has been reported Running (or
 * has Succeeded since): its workers may start. */
int sched_ray_head_up(const pod_rec *head);
/* RAY_ADDRESS for the pods of Job j (spec s) whose head pod is head, into
 * out[cap] (sched_ray_address): its virtual address in j's Domain, else
 * its reported localIP (not when own: the head's own, dispatched before
 * it reports one), else its node's first address; port spec.rayPort or
 * 6379. 0, or BUS_ENOT_FOUND when there is no address. */
int sched_ray_addr(bus_txn *t, const job_rec *j, const pod_rec *head,
                   const bus_job_spec *s, int own, char *out, size_t cap);
/* domain.allocated for Job j: keep its head pod's virtual address. */
int sched_ray_keep_vip(bus_txn *t, const job_rec *j,
                       const bus_ev_domain_allocated *d);
/* 1 when p is a worker that is bound but not started because its Job's
 * Ray head pod (into head) is not up yet; what describe says. */
int sched_ray_waiting(bus_txn *t, const pod_rec *p, char head[SCHED_DNAME_SZ]);

/* ---------------------------------------------------------------- holds */

/* Record that bound pod p (its node set) holds the named devices devs
 * (Binding.devices). */
int sched_hold_devices(bus_txn *t, const pod_rec *p, const bus_str_list *devs);
/* Forget every device pod p holds on its node. */
int sched_drop_holds(bus_txn *t, const pod_rec *p);
/* Visit the named devices held on node (by pod, or by any when pod is
 * NULL), in name order; a non-zero return of cb ends the walk with it. */
typedef int (*sched_hold_cb)(const char *device, void *ud);
int sched_each_hold(bus_txn *t, const char *node, const char *pod,
                    sched_hold_cb cb, void *ud);

/* ------------------------------------------------------------ nodepods */

/* Mark pod p as booked on its node (booked 1) or no longer (0): the
 * `nodepods` row "<node>/<pod>", kept by sched_node_book. */
int sched_nodepod_mark(bus_txn *t, const pod_rec *p, int booked);
/* Visit the pods booked on node, in name order: each read from `pods`,
 * bound there and not released (a row that no longer says so is
 * dropped). cb may change pods and the rows. */
int sched_each_node_pod(bus_txn *t, const char *node, sched_pod_cb cb,
                        void *ud);

/* Pod bookkeeping shared by apply paths. */
int sched_pod_release(bus_txn *t, pod_rec *p);
int sched_queue_job(bus_txn *t, const job_rec *j, int on);
/* 1 when the pod waits for a placement: unbound, meant to run, not ended.
 * The one test of it: decide places these, apply keeps a Job queued while
 * it has one. */
int sched_pod_waiting(const pod_rec *p);
int sched_outgoing(bus_txn *t, pod_rec *p, uint64_t seq);
/* A stop of p's attempt on p's node, queued as an entry of its own (its
 * value: u32be attempt, node), for a pod that moves on before decide
 * sends it (its next attempt placed anew). */
int sched_outgoing_stop(bus_txn *t, pod_rec *p, uint64_t seq);
/*
 * The derived phases of a Job and its Tasks (their `want`, and the Job in
 * `todo` while a recorded phase differs) follow its pods. sched_touch
 * notes that an event changed what they are derived from (in
 * SCHED_TOUCHED); sched_touched_derive derives them for every Job noted,
 * once, and clears the notes. Derived once a batch, not once an event: a
 * Job of 1,000 pods read all 1,000 for each pod's report. It runs before
 * decide and in the view's commit hook (replay, embedded views), so a
 * committed view never holds a note; every event that changes what the
 * phases derive from notes its Job, so the view after a batch is the same
 * however the stream was cut into batches.
 */
int sched_touch(bus_txn *t, const char *job);
int sched_touched_derive(bus_txn *t);

/* ------------------------------------------------------------- ingress */

/* What nodes send on lark.in.<node>.sched.>: validated against the view,
 * then appended as events (pod.phase, node.registered, node.ready,
 * run.reported); silence beyond timeout_ms becomes node.notready. */
typedef struct sched_ingress sched_ingress;
/* The silence (LARK_NODE_TIMEOUT_MS) after which a node is NotReady: three
 * of lark-edge's heartbeats (EDGE_HEARTBEAT_MS, 60 s), so two lost ones
 * do not fail a node's pods (docs/design.md "Idle nodes"). */
#define SCHED_NODE_TIMEOUT_MS 180000
int sched_ingress_start(bus_conn *c, bus_view *v, int timeout_ms,
                        sched_ingress **out);
void sched_ingress_stop(sched_ingress *in);

/* -------------------------------------------------------- node streams */

/* Make node's own stream (bus_node_stream_ensure): 1 when it was made
 * now, 0 when it was there, negative on failure. */
int sched_slice_ensure(bus_conn *c, const char *node);

/*
 * gone.c: remove the streams of the nodes in `gone` (deleted nodes), once
 * the outbox is empty (outbox: the view's count), so nothing queued for
 * such a stream is left to send into it; then, for SCHED_GONE_WATCH_MS,
 * remove it again should another writer's outbox make it anew (lark-engine
 * and lark-devices make a node stream their outbox misses). *removed (may
 * be NULL) counts the streams that were there.
 */
#define SCHED_GONE_WATCH_MS 60000
enum { SCHED_GONE_WATCHED = 32 };
typedef struct sched_gone_state {
  uint64_t done; /* node.deleted sequences handled up to this one */
  struct {
    char node[SCHED_NAME_SZ];
    int64_t until_ms;
  } watch[SCHED_GONE_WATCHED];
  int nwatch;
  int64_t checked_ms;
} sched_gone_state;
int sched_gone_sweep(bus_conn *c, bus_view *v, uint64_t outbox,
                     sched_gone_state *g, int *removed);

/* -------------------------------------------------- commands, queries */

/* The scheduler's verbs (commands.c): job.* and node.* commands, and the
 * list and describe queries of job, node, task and pod; served by
 * bus_verbs_serve with the view. */
extern const bus_verbs sched_verbs;
/* The bus_query_fn of the scheduler's view: kinds job, task, pod, node;
 * verbs list {name?} and describe {name}. */
int sched_query(bus_txn *t, const char *kind, const char *verb,
                const msgpack_object *req, msgpack_packer *pk, void *ud);

#endif
