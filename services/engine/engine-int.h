/*
 * engine-int.h - lark-engine's view: records, tables and the functions
 * apply (apply.c, apply_run.c), the rules (rules.c), decide (decide.c,
 * project.c), the queries and the ingress share.
 *
 * Records are zeroed fixed structs with a layout byte, so equal states are
 * equal bytes for the digest. Tables:
 *   jobs     <job>                     -> eng_job
 *   live     <job>                     -> "": its run has not ended
 *   pods     <pod>                     -> eng_pod (a pod of a known Job)
 *   nodes    <node>                    -> eng_node (cluster, first address)
 *   jnodes   <job>/<node>              -> "" (its latest engine.nodes)
 *   done     <job>/<stage>/<pod>       -> eng_done (its latest report)
 *   steps    <job>/be64(seq)           -> eng_step (one per stage.started)
 *   wver     <job>/be64(version)       -> eng_wver (at most 16 per Job)
 *   projq    be64(seq) <job>/<what>    -> "": a projection to write
 *   projlast <job>/<what>              -> be64(seq): its one projq row
 *   purge    <job>/<node>              -> be64(seq of engine.ended)
 */
#ifndef LARK_ENGINE_INT_H
#define LARK_ENGINE_INT_H

#include <string.h>

#include "larkengine.h"

#define ENG_NAME_SZ 64
#define ENG_POD_SZ 256
#define ENG_KEY_SZ 400
#define ENG_TASKS_MAX 64
#define ENG_NSTAGES 4
#define ENG_METRICS_MAX 16
#define ENG_VERSIONS_MAX 16
#define ENG_SOURCES_MAX 32
#define ENG_LAYOUT 1
#define ENG_ACTOR "lark-engine"

enum { ENG_ROLLOUT = 0, ENG_UPDATE, ENG_TRAIN, ENG_SYNC };
enum { ENG_SEQUENTIAL = 0, ENG_PIPELINE = 1 };
enum { ENG_ACTOR_ROLE = 0, ENG_ROLLOUT_ROLE, ENG_ENV_ROLE };

typedef struct eng_task {
  char name[ENG_NAME_SZ];
  uint8_t role;
  uint8_t stages; /* bit s: takes part in stage s */
  uint16_t replicas;
  uint8_t pad[4];
} eng_task;

/* One stage of the current run: its latest started step. */
typedef struct eng_stage {
  int64_t step;     /* -1: not started in this run */
  uint8_t complete; /* every participant reported `step` done */
  uint8_t pad[7];
  uint64_t weights; /* the version the step carries */
  uint64_t seq;     /* its stage.started: the key of its steps row */
  int64_t ts;       /* started */
} eng_stage;

typedef struct eng_job {
  uint8_t layout;
  uint8_t mode;  /* ENG_SEQUENTIAL, ENG_PIPELINE */
  uint8_t nloop; /* stages in the loop */
  uint8_t loop[ENG_NSTAGES];
  uint8_t ntasks;
  uint8_t running; /* job.phase Running seen in this run */
  uint8_t over;    /* the Job ended or was deleted: the run is to end */
  uint8_t ended;   /* engine.ended applied for this run */
  uint8_t deleted;
  uint8_t placed; /* its pods are bound (job.placed) */
  uint8_t moved;  /* placement changed since its last engine.nodes */
  uint8_t pad[2];
  uint32_t max_stale;
  uint32_t run; /* runs started (job.resumed starts another) */
  char name[ENG_NAME_SZ];
  char phase[16]; /* the Job's last phase (or Deleted) */
  uint64_t generation;
  uint64_t weights; /* newest weights.published version */
  eng_stage st[ENG_NSTAGES];
  eng_task tasks[ENG_TASKS_MAX];
} eng_job;

typedef struct eng_pod {
  uint8_t layout;
  uint8_t bound; /* in the Job's current placement */
  uint8_t task;  /* index in eng_job.tasks */
  uint8_t pad[5];
  uint32_t attempt;
  uint32_t pad2;
  char pod[ENG_POD_SZ];
  char job[ENG_NAME_SZ];
  char node[ENG_NAME_SZ];
  char phase[16]; /* last reported; "" none */
  char local_ip[48];
  char vip[48]; /* its Domain address */
} eng_pod;

typedef struct eng_node {
  uint8_t layout;
  uint8_t pad[7];
  char cluster[ENG_NAME_SZ];
  char address[64]; /* its first address */
} eng_node;

typedef struct eng_done {
  uint8_t layout;
  uint8_t pad[3];
  uint32_t run;
  uint64_t step;
} eng_done;

typedef struct eng_metric {
  char name[32];
  double sum;
  uint64_t n;
} eng_metric;

typedef struct eng_step {
  uint8_t layout;
  uint8_t stage;
  uint8_t nmetrics;
  uint8_t pad[5];
  uint32_t run, done, of;
  uint32_t pad2;
  uint64_t step, weights;
  int64_t started, ended; /* ended 0 while running */
  char last[ENG_POD_SZ];  /* whose report completed it */
  eng_metric metrics[ENG_METRICS_MAX];
} eng_step;

typedef struct eng_source {
  char node[ENG_NAME_SZ];
  char cluster[ENG_NAME_SZ];
  char address[128];
} eng_source;

typedef struct eng_wver {
  uint8_t layout;
  uint8_t nsrc;
  uint8_t pad[6];
  uint64_t version, size;
  int64_t ts;
  char sha256[72];
  char pod[ENG_POD_SZ];
  eng_source src[ENG_SOURCES_MAX]; /* the publisher first */
} eng_wver;

/* records.c */
extern const char *const eng_stage_names[ENG_NSTAGES];
int eng_stage_of(bus_str s);
const char *eng_role_name(int role);
int eng_get(bus_txn *t, const char *table, const void *key, size_t klen,
            void *r, size_t sz);
int eng_job_get(bus_txn *t, const char *job, eng_job *j);
int eng_job_put(bus_txn *t, const eng_job *j);
int eng_pod_get(bus_txn *t, const char *pod, eng_pod *p);
int eng_pod_put(bus_txn *t, const eng_pod *p);
int eng_node_get(bus_txn *t, const char *node, eng_node *n);
/* "<a>/<b>" into key (ENG_KEY_SZ); its length. */
size_t eng_key2(char *key, const char *a, const char *b);
/* <job>/be64(n) into key; its length. */
size_t eng_key_seq(unsigned char *key, const char *job, uint64_t n);
/* The <id> of lark.ev.<kind>.<id>. */
const char *eng_subject_id(const char *subject);
/* Walk the pods of job (fn's non-zero stops). */
typedef int (*eng_pod_fn)(bus_txn *t, eng_pod *p, void *ud);
int eng_each_pod(bus_txn *t, const char *job, eng_pod_fn fn, void *ud);
/* Delete every row of table whose key starts with prefix. */
int eng_del_prefix(bus_txn *t, const char *table, const void *prefix,
                   size_t plen);
/* The Job's nodes (jnodes): fn(node) each. */
typedef int (*eng_name_fn)(const char *name, void *ud);
int eng_each_jnode(bus_txn *t, const char *job, eng_name_fn fn, void *ud);

/* rules.c: who takes part, and what may start */
int eng_takes_part(const eng_job *j, int task, int stage);
int eng_loads(const eng_job *j, int task); /* a loader in sync_weights */
int64_t eng_completed(const eng_job *j, int stage); /* steps completed */
uint64_t eng_syncs(const eng_job *j);
/* The next start the rules allow: 1 with *stage and *step, or 0. */
int eng_next_start(const eng_job *j, int *stage, int64_t *step);
/* Whether the pod's report for stage's latest step is in. */
int eng_pod_done(bus_txn *t, const eng_job *j, int stage, const char *pod);
/* Check stage's latest step: complete it (ended at ts) when every
 * participant is done or excused. */
int eng_check_complete(bus_txn *t, eng_job *j, int stage, int64_t ts,
                       const char *last);
/* Check every running stage of j. */
int eng_check_all(bus_txn *t, eng_job *j, int64_t ts);
/* The pod's name for task i's replica r into out. */
void eng_pod_name(const eng_job *j, int task, int r, char *out);

/* apply_run.c: the engine's own events */
int eng_apply_started(bus_txn *t, const bus_event *ev, const void *d, void *u);
int eng_apply_done(bus_txn *t, const bus_event *ev, const void *d, void *u);
int eng_apply_ended(bus_txn *t, const bus_event *ev, const void *d, void *u);
int eng_apply_nodes(bus_txn *t, const bus_event *ev, const void *d, void *u);
int eng_apply_weights(bus_txn *t, const bus_event *ev, const void *d, void *u);
/* A projection (what: 's', 'w', 'p') of job to write, decided at seq. */
int eng_queue(bus_txn *t, const char *job, char what, uint64_t seq);

/* project.c: where the projections go, and their bodies */
#define ENG_PEERS_MAX 4096
typedef struct eng_names {
  char (*v)[ENG_NAME_SZ];
  size_t n, cap;
} eng_names;
/* The nodes of job's bound pods, sorted (free out->v). */
int eng_job_nodes(bus_txn *t, const char *job, eng_names *out);
/* 1 when they are not the Job's jnodes (its latest engine.nodes). */
int eng_nodes_differ(bus_txn *t, const char *job);

typedef struct eng_peer {
  eng_pod pod;
  char task[ENG_POD_SZ];
  char cluster[ENG_NAME_SZ];
  char address[64];
} eng_peer;

/* A projection's body and the arrays it points into (big: one per pass). */
typedef struct eng_proj {
  union {
    bus_ev_engine_stages stages;
    bus_ev_engine_weights weights;
    bus_ev_engine_peers peers;
  } u;
  bus_stage_state st[ENG_NSTAGES];
  char names[ENG_TASKS_MAX][ENG_POD_SZ];
  bus_str strs[ENG_TASKS_MAX];
  eng_wver w[ENG_VERSIONS_MAX];
  bus_weights_ref refs[ENG_VERSIONS_MAX];
  bus_weights_source src[ENG_VERSIONS_MAX * ENG_SOURCES_MAX];
  const eng_job *job;
  uint32_t npods;
  eng_peer pods[ENG_PEERS_MAX];
  bus_peer peers[ENG_PEERS_MAX];
} eng_proj;
eng_proj *eng_proj_new(void);
int eng_build_stages(bus_txn *t, const eng_job *j, uint64_t version,
                     eng_proj *p);
int eng_build_weights(bus_txn *t, const eng_job *j, uint64_t version,
                      eng_proj *p);
int eng_build_peers(bus_txn *t, const eng_job *j, uint64_t version,
                    eng_proj *p);

int engine_apply(bus_txn *t, const bus_event *ev, void *ud);
int engine_decide(bus_txn *t, const bus_event *cause, int64_t now, void *ud);

#endif
