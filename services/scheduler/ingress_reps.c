/*
 * ingress_reps.c - nodes' pod reports from the ingress, appended a run of
 * them at a time.
 *
 * A report becomes pod.phase on lark.ev.pod.<pod>, taken only for a pod
 * the view has bound to that node at that attempt, with the pod's Job and
 * node as the view knows them. It is an observation: checked at the
 * version the view has, and when the view lags the subject, appended
 * again on top of the subject's own last version (bus_append_rebased).
 *
 * One at a time, each report waited for its own checked append: about
 * 3,000 a second here, while a Job of 1,000 pods reports each pod twice
 * within a second. Staged, a run of reports goes out together
 * (bus_append_many) and costs about one wait. Only reports are staged
 * together, and only consecutive ones: the ingress stores what is staged
 * before it handles any other message, so a node's reports keep their
 * place among its other messages. Reports of different pods have no order
 * between them (each pod has its own subject); a pod reporting twice in
 * one run has its first stored before its second is staged, so the
 * second is checked after the first, as one at a time. Each keeps the id
 * derived from the node's message id, so a batch delivered again lands
 * once.
 */
#include <stdio.h>
#include <string.h>

#include "ingress-int.h"

int
sched_reps_has(const sched_reps *r, const char *pod) {
  for (size_t i = 0; i < r->n; i++)
    if (!strcmp(r->reps[i].pod, pod))
      return 1;
  return 0;
}

int
sched_reps_full(const sched_reps *r) {
  return r->n == SCHED_RUNS_MAX;
}

/* The pod's record and its subject's version as the view has them. */
static int
read_pod(bus_view *v, const char *pod, const char *subject, pod_rec *p,
         bus_version *ver) {
  bus_txn *t;
  int rc = bus_view_read(v, &t);
  if (rc)
    return rc;
  rc = sched_pod_get(t, pod, p);
  if (!rc)
    rc = bus_txn_version(t, subject, ver);
  bus_txn_end(t);
  return rc;
}

/* The pod.phase of a report: what the node says, with the pod's Job and
 * the node as the view knows them (copied into s). */
static void
phase_of(sched_rep *s, const bus_ev_pod_report *r) {
  s->d = (bus_ev_pod_phase){.phase = r->phase,
                            .has_job = 1,
                            .job = bus_str_of(s->job),
                            .node = bus_str_of(s->node),
                            .has_attempt = r->has_attempt,
                            .attempt = r->attempt,
                            .has_exitCode = r->has_exitCode,
                            .exitCode = r->exitCode,
                            .has_signal = r->has_signal,
                            .signal = r->signal,
                            .has_localIP = r->has_localIP,
                            .localIP = r->localIP,
                            .has_reason = r->has_reason,
                            .reason = r->reason};
}

int
sched_reps_stage(sched_reps *r, bus_view *v, const char *node,
                 const bus_event *in) {
  const bus_ev_pod_report *rep = bus_as_pod_report(in);
  sched_rep *s = &r->reps[r->n];
  pod_rec p;
  bus_version ver = {0};
  bus_str_copy(rep->pod, s->pod, sizeof s->pod);
  int rc = bus_subj_pod_phase(s->subject, sizeof s->subject, s->pod);
  if (!rc)
    rc = read_pod(v, s->pod, s->subject, &p, &ver);
  if (rc == BUS_ENOT_FOUND ||
      (!rc && (strcmp(p.node, node) || !p.bound || rep->attempt != p.attempt)))
    return bus_error(BUS_EDENIED, "pod %s is not bound to %s at that attempt",
                     s->pod, node);
  if (rc)
    return rc;
  snprintf(s->job, sizeof s->job, "%s", p.job);
  snprintf(s->node, sizeof s->node, "%s", node);
  snprintf(s->actor, sizeof s->actor, "node:%s", node);
  bus_event_derive_id(in->id, 0, s->id);
  phase_of(s, rep);
  s->ev = (bus_event){.t = BUS_T_POD_PHASE,
                      .type = bus_type_name(BUS_T_POD_PHASE),
                      .typed = &s->d,
                      .id = s->id,
                      .ts = bus_wall_ns(),
                      .actor = s->actor,
                      .cause = in->id,
                      .prev = ver.seq};
  r->n++;
  return 0;
}

/* Item k's answer, settled: a conflict (the view lagged the pod's
 * subject) appended again on top of the subject's last version. */
static int
settle(sched_reps *r, size_t k) {
  sched_rep *s = &r->reps[k];
  int rc = r->items[k].rc;
  if (rc == BUS_ECONFLICT)
    rc = bus_append_rebased(r->c, "LARK_EVENTS", s->subject, &s->ev, s->ev.prev,
                            SCHED_REPORT_TRIES, NULL);
  if (rc && !sched_ingress_transient(rc))
    sched_ingress_log(s->subject, "refused: ", bus_last_error());
  return rc;
}

int
sched_reps_flush(sched_reps *r, const bus_worker *w) {
  int delay_ms = SCHED_INGRESS_NAP_MS, rc = 0;
  size_t n = r->n, k = 0;
  for (size_t i = 0; i < n; i++)
    r->items[i] = (bus_append_item){
        r->reps[i].subject, &r->reps[i].ev, BUS_APPEND_CHECK, 0, 0, 0};
  while (k < n) {
    /* what is left from k on: those before are settled (sent again, a
     * stored one is a duplicate and lands once) */
    bus_append_many(r->c, &r->items[k], n - k);
    while (k < n && !sched_ingress_transient(rc = settle(r, k)))
      k++;
    if (k < n && sched_ingress_nap(w, &delay_ms, r->reps[k].subject))
      break;
  }
  r->n = 0;
  return k < n ? rc : 0;
}
