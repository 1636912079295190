/*
 * rayhead.c - the Ray head of a Job in the scheduler's view: which pod is
 * it, has it come up, where can its workers reach it, and why a worker
 * waits (docs/scheduler.md, "The Ray head").
 *
 * Invariants: whether a worker waits is read from the view alone (the
 * head pod's record: its phase is that of its current attempt, reset to
 * Pending when it is retried), so dispatch, which holds the worker, and
 * describe, which says why, agree, and a replay decides the same. The
 * head's virtual address is the one view state of its own (table
 * rayhead, <job> -> the address), kept from domain.allocated only for
 * Jobs with a head task.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "expand.h"
#include "scheduler.h"

int
sched_ray_head_pod(const char *job, const bus_job_spec *s,
                   char head[SCHED_DNAME_SZ]) {
  char task[SCHED_DNAME_SZ], tmpl[SCHED_NAME_SZ];
  int h = sched_spec_ray_head(s);
  head[0] = 0;
  if (h < 0)
    return 0;
  bus_str_copy(s->tasks.v[h].name, tmpl, sizeof tmpl);
  if (sched_task_name(job, tmpl, task, sizeof task) ||
      sched_pod_name(task, 0, head, SCHED_DNAME_SZ)) {
    head[0] = 0;
    return 0;
  }
  return 1;
}

int
sched_ray_head_up(const pod_rec *head) {
  /* Succeeded: it ran (both reports may come in one batch) */
  return head->bound &&
         (!strcmp(head->phase, "Running") || !strcmp(head->phase, "Succeeded"));
}

/* The first address of node's registration into out[cap] ("" none). */
static void
node_address(bus_txn *t, const char *node, char *out, size_t cap) {
  msgpack_zone z;
  bus_node_res res;
  out[0] = 0;
  if (!msgpack_zone_init(&z, 2048))
    return;
  if (!sched_spec_read(t, BUS_T_NODE_REGISTERED, node, &z, &res) &&
      res.spec.has_addresses && res.spec.addresses.n)
    bus_str_copy(res.spec.addresses.v[0], out, cap);
  msgpack_zone_destroy(&z);
}

int
sched_ray_addr(bus_txn *t, const job_rec *j, const pod_rec *head,
               const bus_job_spec *s, int own, char *out, size_t cap) {
  char vip[64] = "", node[64] = "";
  const void *v;
  size_t n;
  uint32_t port = s->has_rayPort ? (uint32_t)s->rayPort : SCHED_RAY_PORT;
  if (j->domain[0] && !bus_txn_get(t, "rayhead", j->name, strlen(j->name), &v,
                                   &n)) /* addresses of this run */
    sched_copy(vip, sizeof vip, (const char *)v, n);
  if (head->node[0])
    node_address(t, head->node, node, sizeof node);
  /* the head itself is dispatched before it reports an address: what
   * its record holds then is its former attempt's */
  return sched_ray_address(vip, own ? NULL : head->local_ip, node, port, out,
                           cap);
}

int
sched_ray_keep_vip(bus_txn *t, const job_rec *j,
                   const bus_ev_domain_allocated *d) {
  msgpack_zone z;
  bus_job_res res;
  char head[SCHED_DNAME_SZ];
  if (!msgpack_zone_init(&z, 4096))
    return -ENOMEM;
  int rc = 0;
  if (!sched_spec_read(t, BUS_T_JOB_SUBMITTED, j->name, &z, &res) &&
      sched_ray_head_pod(j->name, &res.spec, head))
    for (uint32_t i = 0; i < d->addresses.n && !rc; i++)
      if (bus_str_eq(d->addresses.v[i].pod, head))
        rc = bus_txn_put(t, "rayhead", j->name, strlen(j->name),
                         d->addresses.v[i].ip.ptr, d->addresses.v[i].ip.len);
  msgpack_zone_destroy(&z);
  return rc;
}

int
sched_ray_waiting(bus_txn *t, const pod_rec *p, char head[SCHED_DNAME_SZ]) {
  msgpack_zone z;
  bus_job_res res;
  job_rec j;
  pod_rec h;
  int waits = 0;
  head[0] = 0;
  if (!p->bound || p->released || strcmp(p->desired, "Running") ||
      strcmp(p->phase, "Pending") || sched_job_get(t, p->job, &j) ||
      (j.domain[0] && !j.addressed) || !msgpack_zone_init(&z, 4096))
    return 0;
  if (!sched_spec_read(t, BUS_T_JOB_SUBMITTED, p->job, &z, &res) &&
      sched_ray_head_pod(p->job, &res.spec, head) && strcmp(head, p->name))
    waits = sched_pod_get(t, head, &h) || !sched_ray_head_up(&h);
  msgpack_zone_destroy(&z);
  return waits;
}
