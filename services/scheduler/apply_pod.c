/*
 * apply_pod.c - the scheduler's view follows its Pods: pod.phase records
 * what a node reported (a failed pod retries when its Task may), and the
 * domain events give pods their addresses or wake the Jobs that wait for
 * one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply-int.h"
#include "phase.h"
#include "scheduler.h"

/* ------------------------------------------------------------------ pods */

int
sched_apply_pod_phase(bus_txn *t, const bus_event *ev, const void *data,
                      void *ud) {
  const char *name = sched_subject_id(ev);
  const bus_ev_pod_phase *d = data;
  (void)ud;
  char phase[SCHED_PHASE_SZ], node[SCHED_NAME_SZ];
  char reason[SCHED_REASON_SZ] = "";
  pod_rec p;
  int rc = sched_pod_get(t, name, &p);
  if (rc)
    return rc == BUS_ENOT_FOUND ? BUS_EINVAL : rc;
  bus_str_copy(d->phase, phase, sizeof phase);
  bus_str_copy(d->node, node, sizeof node);
  if (d->has_reason)
    bus_str_copy(d->reason, reason, sizeof reason);
  if ((uint32_t)d->attempt != p.attempt || strcmp(node, p.node) || !p.bound ||
      p.released)
    return 0; /* about an earlier attempt, or a pod no longer there */
  if (d->has_localIP)
    bus_str_copy(d->localIP, p.local_ip, sizeof p.local_ip);
  p.exit_code = (int32_t)d->exitCode;
  p.signal = (uint32_t)d->signal;
  if (!strcmp(phase, "Failed"))
    return sched_fail_pod(t, &p, reason[0] ? reason : "the pod failed", ev->seq,
                          0);
  sched_copy(p.phase, sizeof p.phase, phase, strlen(phase));
  sched_copy(p.reason, sizeof p.reason, reason, strlen(reason));
  if (sched_terminal(phase)) {
    job_rec j;
    if ((rc = sched_pod_release(t, &p)) || (rc = sched_job_get(t, p.job, &j)))
      return rc;
    j.ended++;
    if ((rc = sched_job_put(t, &j)))
      return rc;
  }
  if ((rc = sched_pod_put(t, &p)))
    return rc;
  return sched_touch(t, p.job);
}

/* ------------------------------------------------------------- domains */

static int
address(bus_txn *t, pod_rec *p, void *ud) {
  pods_ctx *c = ud;
  if (!p->bound || p->released)
    return 0;
  int rc = sched_outgoing(t, p, c->seq);
  return rc ? rc : sched_pod_put(t, p);
}

int
sched_apply_domain_allocated(bus_txn *t, const bus_event *ev, const void *data,
                             void *ud) {
  const bus_ev_domain_allocated *d = data;
  job_rec j;
  (void)ud;
  int rc = sched_job_named(t, d->job, &j);
  if (rc)
    return rc == BUS_EINVAL ? 0 : rc; /* a Job this view never had */
  if (j.addressed || j.stopped ||
      (d->has_generation && d->generation != j.generation))
    return 0; /* already addressed, or addresses for an earlier run */
  j.addressed = 1;
  if ((rc = sched_ray_keep_vip(t, &j, d)))
    return rc;
  pods_ctx c = {&j, "Running", ev->seq, 0};
  if ((rc = sched_each_pod(t, j.name, address, &c)))
    return rc;
  return sched_job_put(t, &j);
}

int
sched_apply_domain_exhausted(bus_txn *t, const bus_event *ev, const void *data,
                             void *ud) {
  const bus_ev_domain_exhausted *d = data;
  (void)ev, (void)ud;
  job_rec j;
  int rc = sched_job_named(t, d->job, &j);
  if (rc)
    return rc == BUS_EINVAL ? 0 : rc; /* a Job this view never had */
  snprintf(j.reason, sizeof j.reason,
           "DomainExhausted: %lld addresses needed, %lld free",
           (long long)d->needed, (long long)d->free);
  j.exhausted = 1; /* decide gives its capacity back (job.unplaced) */
  if ((rc = sched_queue_job(t, &j, 1)))
    return rc;
  return sched_job_put(t, &j);
}

typedef struct wake {
  bus_txn *t;
  const char *domain;
} wake;

static int
wake_job(void *rec, void *ud) {
  wake *w = ud;
  job_rec *j = rec;
  if (!j->exhausted || strcmp(j->domain, w->domain))
    return 0;
  j->exhausted = 0;
  j->reason[0] = 0;
  return sched_job_put(w->t, j);
}

/* Addresses came free in a domain: its waiting Jobs may be placed again. */
int
sched_apply_domain_released(bus_txn *t, const bus_event *ev, const void *data,
                            void *ud) {
  /* domain.released and domain.deleted both lead with the domain */
  bus_str domain = ev->t == BUS_T_DOMAIN_DELETED
                       ? ((const bus_ev_domain_deleted *)data)->domain
                       : ((const bus_ev_domain_released *)data)->domain;
  char name[SCHED_NAME_SZ];
  (void)ud;
  bus_str_copy(domain, name, sizeof name);
  wake w = {t, name};
  return sched_each_rec(t, "jobs", NULL, sizeof(job_rec), 0, wake_job, &w);
}
