/*
 * expand.h - a Job's Tasks and Pods, their Ray annotations, and the checks
 * apply makes on a Job's names and runtimes.
 *
 * A Job `j` with templates `a` (2 replicas) and `b` (1) expands to Tasks
 * `j-a`, `j-b` and Pods `j-a-0`, `j-a-1`, `j-b-0`, always in template
 * order, then replica order. Each Task carries the Ray annotations:
 *
 *   ray-role             "head" for the head task, "worker" for the others;
 *                        the head is the template with head: true, else
 *                        the first template
 *   ray-total-nodes      the sum of all replicas
 *   ray-node-rank-start  the replicas of the templates before this one
 *   ray-head-task-name   the head task's name
 *
 * Annotation values are strings, as Kubernetes annotations are.
 */
#ifndef LARK_SCHED_EXPAND_H
#define LARK_SCHED_EXPAND_H

#include "model.h"

/* One Task of an expanded Job. */
typedef struct sched_task_info {
  char name[SCHED_DNAME_SZ]; /* <job>-<template> */
  int tmpl;                  /* index into the Job's tasks */
  int head;                  /* ray-role: 1 head, 0 worker */
  uint32_t rank_start;       /* ray-node-rank-start */
  uint32_t pods;             /* the template's replicas */
  size_t first_pod;          /* index of its first pod in the expansion */
} sched_task_info;

/* A Job's Tasks and Pods. Release with sched_expansion_clear. */
typedef struct sched_expansion {
  int ntasks;
  sched_task_info *tasks;
  uint32_t total_nodes;           /* ray-total-nodes */
  char head_task[SCHED_DNAME_SZ]; /* ray-head-task-name */
  size_t npods;
  sched_pod *pods; /* Pending, attempt 0 */
} sched_expansion;

/*
 * Write `<job>-<tmpl>` into buf (cap bytes). Returns 0, or BUS_ENAME when
 * it is longer than a derived name may be (253) or does not fit in cap.
 */
int sched_task_name(const char *job, const char *tmpl, char *buf, size_t cap);
/* Write `<task>-<i>` into buf; 0 or BUS_ENAME as sched_task_name. */
int sched_pod_name(const char *task, uint32_t i, char *buf, size_t cap);

/* The index of the head template: the first with head set, else 0; -1
 * for a Job without tasks. */
int sched_job_head(const sched_job *job);

/*
 * The Ray head of a Job, as its pods are dispatched (docs/scheduler.md,
 * "The Ray head"): only a template with head: true makes one. Its first
 * pod is the head pod; every other pod of the Job is a worker, started
 * once the head pod has been reported Running. A Job whose templates name
 * no head has none (the annotations still call its first template the
 * head task): its pods start at once and get no RAY_ADDRESS.
 *
 * sched_spec_ray_head: the index of the template with head: true in s,
 * or -1 when none has it.
 */
int sched_spec_ray_head(const bus_job_spec *s);

#define SCHED_RAY_PORT 6379  /* RAY_ADDRESS's port when rayPort is absent */
#define SCHED_RAY_ADDR_SZ 72 /* "[" an IPv6 address "]:" a port, NUL */

/*
 * RAY_ADDRESS, `<addr>:<port>` (`[<addr>]:<port>` for an IPv6 address),
 * into out[cap]: addr is the first of vip (the head pod's virtual address
 * in its Job's Domain), local_ip (the address its node reported for it)
 * and node_addr (its node's first address) that is not NULL or empty.
 * Returns 0, or BUS_ENOT_FOUND (out "") when all are empty or it does not
 * fit.
 */
int sched_ray_address(const char *vip, const char *local_ip,
                      const char *node_addr, uint32_t port, char *out,
                      size_t cap);

/*
 * Expand job into out (initialised here). Returns 0; BUS_EINVAL for a Job
 * without tasks or with more than SCHED_MAX_PODS pods; BUS_ENAME when a
 * derived name exceeds 253 characters (detail in bus_last_error());
 * -ENOMEM. On error out is left empty. out does not point into job.
 */
int sched_expand(const sched_job *job, sched_expansion *out);
/* Free what x owns and zero it. Accepts NULL. */
void sched_expansion_clear(sched_expansion *x);

/*
 * Pack task i's Ray annotations as a msgpack map of four strings
 * {ray-role, ray-total-nodes, ray-node-rank-start, ray-head-task-name}.
 * Returns 0, or BUS_EINVAL when i is out of range (nothing packed).
 */
int sched_pack_ray_annotations(msgpack_packer *pk, const sched_expansion *x,
                               int i);

/*
 * Who owns an existing object: given a kind ("job", "task" or "pod") and
 * a name, return the name of the Job that owns the object of that kind
 * and name, or NULL when there is none. The string must stay valid until
 * the next call. Kinds are separate namespaces (their subjects are), and
 * the service's view backs the lookup.
 */
typedef const char *(*sched_exists_fn)(const char *kind, const char *name,
                                       void *ud);

/*
 * The name rule of docs/design.md section 1: `-` joins derived names, so `a-b`
 * + `c` and `a` + `b-c` both give the Task `a-b-c`. Refuse job when its
 * name or a derived name (Tasks, Pods) is not valid, is derived twice
 * within the Job, or names an existing object owned by another Job
 * (exists may be NULL: only the Job itself is checked). The Job's own
 * objects (owner == job->name) are not collisions: re-applying is the
 * service's decision. On refusal fills *err (may be NULL) with the path of
 * the template and a reason naming both objects, e.g. "task a-b-c (job
 * a-b, template c) collides with task a-b-c of job a", and returns
 * BUS_EEXISTS (a collision) or BUS_ENAME (a name too long); 0 when clear.
 */
int sched_names_check(const sched_job *job, sched_exists_fn exists, void *ud,
                      bus_field_err *err);

/* The runtimes job's tasks need, as SCHED_RT_* bits (unknown runtimes,
 * which no node can offer, are not in the mask). */
unsigned sched_job_runtimes(const sched_job *job);

/*
 * Refuse the tasks whose runtime no node offers: offered is the union of
 * the nodes' runtimes (sched_nodes_runtimes), or SCHED_RT_ALL to refuse
 * only runtimes larkbus does not run at all (e.g. before any node has
 * registered). One {path, reason} per refused task into errs[0..max),
 * e.g. {spec.tasks[1].runtime, "task sim needs runtime docker, which no
 * node offers"}; *n the count. Returns 0 or BUS_EFIELD.
 */
int sched_job_runtimes_check(const sched_job *job, unsigned offered,
                             bus_field_err *errs, int max, int *n);

#endif
