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
sched_apply_pod_phase(bus_txn *t, const bus_event *ev, const char *name) {
  char phase[SCHED_PHASE_SZ] = "", node[SCHED_NAME_SZ] = "";
  char reason[SCHED_REASON_SZ] = "";
  pod_rec p;
  int rc = sched_pod_get(t, name, &p);
  if (rc)
    return rc == BUS_ENOT_FOUND ? BUS_EINVAL : rc;
  bus_obj_str(&ev->data, "phase", phase, sizeof phase);
  bus_obj_str(&ev->data, "node", node, sizeof node);
  bus_obj_str(&ev->data, "reason", reason, sizeof reason);
  if ((uint32_t)bus_obj_int(&ev->data, "attempt", 0) != p.attempt ||
      strcmp(node, p.node) || !p.bound || p.released)
    return 0; /* about an earlier attempt, or a pod no longer there */
  bus_obj_str(&ev->data, "localIP", p.local_ip, sizeof p.local_ip);
  p.exit_code = (int32_t)bus_obj_int(&ev->data, "exitCode", 0);
  p.signal = (uint32_t)bus_obj_int(&ev->data, "signal", 0);
  if (!strcmp(phase, "Failed"))
    return sched_fail_pod(t, &p, reason[0] ? reason : "the pod failed",
                          ev->seq);
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
sched_apply_domain(bus_txn *t, const bus_event *ev, const char *verb) {
  char name[SCHED_NAME_SZ];
  job_rec j;
  if (!bus_obj_str(&ev->data, "job", name, sizeof name))
    return 0;
  int rc = sched_job_get(t, name, &j);
  if (rc == BUS_ENOT_FOUND)
    return 0;
  if (rc)
    return rc;
  if (!strcmp(verb, "exhausted")) {
    snprintf(j.reason, sizeof j.reason,
             "DomainExhausted: %lld addresses needed, %lld free",
             (long long)bus_obj_int(&ev->data, "needed", 0),
             (long long)bus_obj_int(&ev->data, "free", 0));
    j.exhausted = 1; /* decide gives its capacity back (job.unplaced) */
    if ((rc = sched_queue_job(t, &j, 1)))
      return rc;
    return sched_job_put(t, &j);
  }
  uint64_t gen =
      (uint64_t)bus_obj_int(&ev->data, "generation", (int64_t)j.generation);
  if (j.addressed || j.stopped || gen != j.generation)
    return 0; /* already addressed, or addresses for an earlier run */
  j.addressed = 1;
  pods_ctx c = {&j, "Running", ev->seq, 0};
  if ((rc = sched_each_pod(t, name, address, &c)))
    return rc;
  return sched_job_put(t, &j);
}

typedef struct wake {
  bus_txn *t;
  const char *domain;
} wake;

static int
wake_job(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  wake *w = ud;
  job_rec j;
  if (vl != sizeof j)
    return 0;
  memcpy(&j, v, sizeof j);
  if (!j.exhausted || strcmp(j.domain, w->domain))
    return 0;
  j.exhausted = 0;
  j.reason[0] = 0;
  return sched_job_put(w->t, &j);
}

/* Addresses came free in a domain: its waiting Jobs may be placed again. */
int
sched_apply_domain_released(bus_txn *t, const bus_event *ev) {
  char domain[SCHED_NAME_SZ];
  if (!bus_obj_str(&ev->data, "domain", domain, sizeof domain))
    return 0;
  wake w = {t, domain};
  return bus_txn_scan(t, "jobs", NULL, 0, wake_job, &w);
}
