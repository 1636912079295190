/*
 * model.h - the scheduler's data model: nodes, Jobs, pods and bindings.
 *
 * This is the pure part of lark-scheduler: no broker, no LMDB. The service
 * fills the model from its view and its events (node.registered, the
 * job.submitted resource, job.placed bindings) and asks the functions of
 * expand.h, placement.h and phase.h for decisions.
 *
 * Units: cpu in millicores (the schema's Resources.cpu counts whole cores,
 * read as cores * 1000), memory in MiB, GPUs as a count (at most
 * SCHED_MAX_GPUS, bound by index), devices as a count per resource name
 * (`rlinf.io/device`).
 *
 * Named devices: a node's robots and cameras (NodeSpec.devices) are each a
 * device of capacity 1 under its own name (`robot/<name>`, `camera/<name>`,
 * flagged SCHED_DEV_NAMED) and are counted under the class
 * SCHED_DEVICE_CLASS too, whose capacity is the node's bare count plus its
 * named devices. A request key of that form asks for that one device (and
 * takes one unit of the class with it); a request for the class takes
 * free named devices first, in name order, then anonymous units.
 *
 * Ownership: every struct here owns its strings and arrays. A struct made
 * by an _init() or _from_msgpack() is released with the matching _clear()
 * (which accepts NULL and an already cleared struct). Pointers returned by
 * the add/find functions stay valid until the next call that changes the
 * owning struct, unless said otherwise.
 *
 * Threads: nothing here is shared; one thread at a time per struct.
 */
#ifndef LARK_SCHED_MODEL_H
#define LARK_SCHED_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "bus.h"

#define SCHED_NAME_SZ (BUS_NAME_MAX + 1)          /* a name and its NUL */
#define SCHED_DNAME_SZ (BUS_DERIVED_NAME_MAX + 1) /* a derived name */
#define SCHED_RUNTIME_SZ 32
#define SCHED_MAX_GPUS 64    /* GPU indices 0..63: one bit each */
#define SCHED_MAX_PODS 4096  /* bindings one job.placed can carry */
#define SCHED_MAX_TASKS 64   /* task templates of a Job (schema) */
#define SCHED_MAX_DEVICES 32 /* device kinds in one Resources (schema) */
/* A node's device table: its bare counts, the class and its named
 * devices (NodeSpec.devices: at most 64). */
#define SCHED_NODE_DEVICES 128
#define SCHED_DEV_SZ 72 /* "camera/" + a name + NUL (Binding.devices) */
#define SCHED_DEVICE_CLASS "rlinf.io/device"

/* What a node's device entry is (sched_device.flags). */
enum {
  SCHED_DEV_NAMED = 1u, /* a robot or camera: capacity 1, in the class */
  SCHED_DEV_SUBNET = 2u /* a robot with a subnet: its holder runs raw+netns */
};

/* What a device key names (sched_device_key). */
typedef enum sched_key {
  SCHED_KEY_BARE = 0, /* a bare count, e.g. `example.com/fpga` */
  SCHED_KEY_CLASS,    /* SCHED_DEVICE_CLASS */
  SCHED_KEY_NAMED,    /* `robot/<name>` or `camera/<name>` */
  SCHED_KEY_BAD       /* `robot/` or `camera/` without a valid name */
} sched_key;

/* Runtimes, as bits so a node's offer is a mask. */
enum {
  SCHED_RT_RAW = 1u,       /* "raw": a plain process */
  SCHED_RT_RAW_NETNS = 2u, /* "raw+netns": in its own network namespace */
  SCHED_RT_ALL = 3u
};

typedef enum sched_strategy {
  SCHED_SPREAD = 0,  /* least allocated node first (default) */
  SCHED_PACK,        /* most allocated first: fewest nodes */
  SCHED_COLOCATE,    /* the whole Job on one node when it fits */
  SCHED_DISAGGREGATE /* Actor pods apart from Rollout and Env pods */
} sched_strategy;

typedef enum sched_role {
  SCHED_ACTOR = 0,
  SCHED_ROLLOUT,
  SCHED_ENV
} sched_role;

/* Phases of Jobs, Tasks, Workflows and Pods (docs/design.md section 1). */
typedef enum sched_phase {
  SCHED_PH_NONE = 0, /* "": not yet submitted */
  SCHED_PH_PENDING,
  SCHED_PH_RUNNING,
  SCHED_PH_SUCCEEDED,
  SCHED_PH_FAILED,
  SCHED_PH_STOPPED,
  SCHED_PH_SKIPPED
} sched_phase;

typedef struct sched_kv {
  char *key;
  char *value;
} sched_kv;

typedef struct sched_device {
  char *name; /* "rlinf.io/device", "robot/arm-1" */
  uint32_t count;
  unsigned flags; /* a node's: SCHED_DEV_* bits; 0 in a request */
} sched_device;

/* An amount of compute: what a pod asks for, or what a node offers. */
typedef struct sched_resources {
  uint64_t cpu_m;      /* millicores */
  uint64_t memory_mib; /* MiB */
  uint32_t gpu;        /* whole GPUs; at most SCHED_MAX_GPUS */
  int ndevices;
  sched_device *devices; /* names unique */
} sched_resources;

/*
 * A node: its facts (from node.registered), its state (ready, cordoned)
 * and what is allocated on it. Allocation invariants, kept by placement.c:
 * cpu_used_m <= capacity.cpu_m, memory_used_mib <= capacity.memory_mib,
 * gpu_taken has bits only below capacity.gpu, dev_used[i] <=
 * capacity.devices[i].count (a named device's 1: held by a pod), and the
 * class's dev_used counts the named devices held. The `scratch_*` fields
 * belong to placement
 * while it runs and mean nothing outside it.
 */
typedef struct sched_node {
  char name[SCHED_NAME_SZ];
  char cluster[SCHED_NAME_SZ];
  int nlabels;
  sched_kv *labels;
  unsigned runtimes; /* SCHED_RT_* bits; "raw" when the node lists none */
  sched_resources capacity; /* devices: up to SCHED_NODE_DEVICES */
  uint32_t nnamed;          /* entries flagged SCHED_DEV_NAMED */
  int ready;                /* 1: Ready (the default for a registered node) */
  int cordoned;             /* 1: no new pods */
  /* allocated */
  uint64_t cpu_used_m;
  uint64_t memory_used_mib;
  uint64_t gpu_taken; /* bit i set: GPU i is bound */
  uint32_t *dev_used; /* parallel to capacity.devices */
  uint32_t pods;      /* pods bound */
  /* placement's scratch */
  uint64_t scratch_epoch;
  unsigned scratch_roles;
  int64_t scratch_score;
} sched_node;

/*
 * The nodes of a pool, kept sorted by name: placement breaks ties by this
 * order, which makes it deterministic. v[i] is owned by the set.
 */
typedef struct sched_nodes {
  sched_node **v;
  size_t n, cap;
  uint64_t epoch; /* placement's scratch generation */
} sched_nodes;

/* One task template of a Job. */
typedef struct sched_template {
  char name[SCHED_NAME_SZ];
  int head; /* head: true in the spec */
  sched_role role;
  uint32_t replicas;    /* >= 1 */
  uint32_t max_retries; /* failures of one pod before the task fails */
  int nselector;
  sched_kv *selector;  /* value: one label value or a comma list (any of) */
  sched_resources req; /* per pod */
  /* The runtime the pods need: "raw", or "raw+netns" when the Job names a
   * domain (its pods need their own network namespace). Another word is a
   * runtime larkbus does not run (the reference's "docker"). */
  char runtime[SCHED_RUNTIME_SZ];
} sched_template;

/* A Job as the scheduler needs it. */
typedef struct sched_job {
  char name[SCHED_NAME_SZ];
  char domain[SCHED_NAME_SZ]; /* "" when none */
  int stopped;
  sched_strategy strategy;
  int ntasks;
  sched_template *tasks; /* spec order */
} sched_job;

/* One pod of a Job: names, its place in the Job and what it reported. */
typedef struct sched_pod {
  char name[SCHED_DNAME_SZ]; /* <task>-<i> */
  int task;                  /* index into the Job's tasks */
  uint32_t replica;          /* i */
  uint32_t attempt;          /* 0 first; a retry keeps the name */
  sched_phase phase;
  int exit_code;
} sched_pod;

/* One pod bound to a node (schema Binding). */
typedef struct sched_binding {
  char pod[SCHED_DNAME_SZ];
  char task[SCHED_DNAME_SZ];
  char node[SCHED_NAME_SZ];
  int tmpl;         /* index into the Job's tasks */
  uint32_t replica; /* the pod's i */
  uint32_t attempt;
  unsigned runtime; /* SCHED_RT_RAW or SCHED_RT_RAW_NETNS */
  int ngpus;
  uint8_t gpus[SCHED_MAX_GPUS]; /* ascending */
  int ndevices;
  char **devices; /* named devices held, in name order; owned by the
                     placement (freed by sched_placement_clear) */
} sched_binding;

/* ------------------------------------------------------------- names */

/* "spread", "pack", ...; NULL for a value out of range. */
const char *sched_strategy_name(sched_strategy s);
/* Parse a strategy name; BUS_EINVAL if unknown (out untouched). */
int sched_strategy_parse(const char *s, sched_strategy *out);
/* "Actor", "Rollout", "Env"; NULL out of range. */
const char *sched_role_name(sched_role r);
/* Parse a role name; BUS_EINVAL if unknown. */
int sched_role_parse(const char *s, sched_role *out);
/* SCHED_RT_RAW for "raw", SCHED_RT_RAW_NETNS for "raw+netns", 0 else. */
unsigned sched_runtime_bit(const char *name);
/* "raw" or "raw+netns" for one bit; NULL for anything else. */
const char *sched_runtime_name(unsigned bit);
/* What a device key names: the class, a named device (`robot/<name>`,
 * `camera/<name>` with a valid name), a bad one of those, or a bare
 * count. */
sched_key sched_device_key(const char *key);

/* ------------------------------------------------------------ resources */

/* Frees the devices of r and zeroes it. Accepts NULL. */
void sched_resources_clear(sched_resources *r);
/*
 * Set device `name` to count in r (added if new). Returns 0, BUS_EINVAL
 * for an empty name or a full table (SCHED_MAX_DEVICES), -ENOMEM.
 */
int sched_resources_set_device(sched_resources *r, const char *name,
                               uint32_t count);
/* The device's count in r; 0 when r has no such device. */
uint32_t sched_resources_device(const sched_resources *r, const char *name);

/* ----------------------------------------------------------------- nodes */

/* An empty node called name (truncated to a name's size): Ready, not
 * cordoned, runtime raw, no capacity. Release with sched_node_clear. */
void sched_node_init(sched_node *n, const char *name);
/* Free what n owns and zero it. Accepts NULL. */
void sched_node_clear(sched_node *n);
/* Set label key=value (replaced if present). 0, BUS_EINVAL, -ENOMEM. */
int sched_node_set_label(sched_node *n, const char *key, const char *value);
/* Label value, or NULL when absent. Points into n. */
const char *sched_node_label(const sched_node *n, const char *key);
/* Set the capacity of device name (see sched_resources_set_device, but
 * up to SCHED_NODE_DEVICES entries); the allocation table grows with it. */
int sched_node_set_device(sched_node *n, const char *name, uint32_t count);
/*
 * Add a named device (`robot/<name>` or `camera/<name>`, flags
 * SCHED_DEV_NAMED and SCHED_DEV_SUBNET when subnet) and one unit of the
 * class for it. BUS_EINVAL for another key or one it has; -ENOMEM.
 */
int sched_node_add_named(sched_node *n, const char *name, int subnet);
/* Free GPUs: capacity.gpu minus those taken. */
uint32_t sched_node_free_gpus(const sched_node *n);

/*
 * Read a Node resource (its generated type: metadata.name, spec: cluster,
 * labels, runtimes, capacity, devices) into out (initialised here; release it
 * with sched_node_clear, also on error). The schema has checked the shapes;
 * what it cannot say is reported into errs[0..max) as {path, reason}, *n
 * the count found: a device named twice, a bare count under a named
 * device's key. Returns 0, BUS_EFIELD / BUS_ENAME (the first problem), or
 * -ENOMEM. The node is Ready and not cordoned; the service sets both.
 */
int sched_node_read(const bus_node_res *res, sched_node *out,
                    bus_field_err *errs, int max, int *n);
/* The same from a resource not yet checked: the schema's problems first
 * (returned as bus_schema_check returns them), then sched_node_read. */
int sched_node_from_msgpack(const msgpack_object *resource, sched_node *out,
                            bus_field_err *errs, int max, int *n);

/* An empty set. */
void sched_nodes_init(sched_nodes *s);
/* Free every node and the set's array. Accepts NULL. */
void sched_nodes_clear(sched_nodes *s);
/*
 * Move *node into the set (node is left zeroed, as after sched_node_clear).
 * When a node of that name exists its facts are replaced but its state
 * stays: allocations (devices matched by name; an allocation of a device
 * the node no longer offers is dropped), ready and cordoned. Returns 0,
 * BUS_ENAME for an invalid name, -ENOMEM (node untouched then).
 */
int sched_nodes_put(sched_nodes *s, sched_node *node);
/* The node called name, or NULL. Valid until the set changes. O(log n). */
sched_node *sched_nodes_find(const sched_nodes *s, const char *name);
/* Remove and free the node called name; BUS_ENOT_FOUND if absent. */
int sched_nodes_remove(sched_nodes *s, const char *name);
/* The union of the runtimes all nodes offer (SCHED_RT_* bits). */
unsigned sched_nodes_runtimes(const sched_nodes *s);

/* ------------------------------------------------------------------ jobs */

/* An empty Job called name, strategy spread. Release with sched_job_clear. */
void sched_job_init(sched_job *job, const char *name);
/* Free what job owns and zero it. Accepts NULL. */
void sched_job_clear(sched_job *job);
/*
 * Append a template called name: role Actor, 1 replica, no retries,
 * runtime "raw". Returns it (valid until the next add), or NULL when the
 * Job has SCHED_MAX_TASKS templates or memory runs out.
 */
sched_template *sched_job_add_task(sched_job *job, const char *name);
/* Require label key to be value (or one of a comma list). 0, -ENOMEM. */
int sched_template_set_selector(sched_template *t, const char *key,
                                const char *value);
/* Pods of the Job: the sum of replicas. */
size_t sched_job_pods(const sched_job *job);
/* Its pods into *pods, when it has tasks and at most SCHED_MAX_PODS pods;
 * BUS_EINVAL otherwise. */
int sched_job_sized(const sched_job *job, size_t *pods);
/* The index of the template called name, or -1. */
int sched_job_task_index(const sched_job *job, const char *name);

/*
 * Read a Job resource (its generated type: metadata.name, spec: JobSpec)
 * into out (initialised here; release with sched_job_clear, also on
 * error). Defaults: strategy spread, replicas 1, maxRetries 0, runtime raw
 * ("raw+netns" for every task when the Job names a domain). The schema
 * has checked the shapes; refuses what it cannot say: two templates with
 * the same name, more than one head, a task naming no runtime or two,
 * more than SCHED_MAX_PODS pods, a device key `robot/...` or `camera/...`
 * without a valid name, or asking for more than 1 of one. Problems go to
 * errs[0..max) as {path, reason} with *n the count found. Returns 0, the code
 * of the first problem (BUS_EFIELD, BUS_ENAME), or -ENOMEM.
 */
int sched_job_read(const bus_job_res *res, sched_job *out, bus_field_err *errs,
                   int max, int *n);
/* The same from a resource not yet checked: the schema's problems first
 * (returned as bus_schema_check returns them), then sched_job_read. */
int sched_job_from_msgpack(const msgpack_object *resource, sched_job *out,
                           bus_field_err *errs, int max, int *n);

#endif
