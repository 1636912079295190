/*
 * ingress_runs.c - pods' run reports from the ingress, stored a fetched
 * batch at a time.
 *
 * A pod's reports come through its node (lark.in.<node>.sched.run.<pod>)
 * and are appended to lark.run.<job> with the pod as actor, once the view
 * says the pod is bound to that node. Consecutive reports of one fetched
 * batch go to LARK_RUNS as one atomic batch: one round trip and one sync
 * for up to RUNS_MAX of them instead of one each. Each keeps the id it
 * always had (derived from the node's message id), so a batch that is
 * delivered again lands once. When the broker refuses the batch as such
 * (one of it is a duplicate: BUS_EEXISTS; or it would not take it) the
 * reports go one at a time, in order; a broker that does not answer is
 * waited for and asked again, the batch unacknowledged meanwhile.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ingress-int.h"

int
sched_runs_stage(sched_runs *r, bus_view *v, const char *node, const char *pod,
                 const bus_event *in) {
  pod_rec p;
  bus_txn *t;
  int rc = bus_view_read(v, &t);
  if (!rc) {
    rc = sched_pod_get(t, pod, &p);
    bus_txn_end(t);
  }
  if (rc || strcmp(p.node, node) || !p.bound)
    return bus_error(BUS_EDENIED, "pod %s is not on %s", pod, node);
  sched_run *s = &r->runs[r->n];
  snprintf(s->subject, sizeof s->subject, "lark.run.%s", p.job);
  snprintf(s->actor, sizeof s->actor, "pod:%s", pod);
  bus_event_derive_id(in->id, 0, s->id);
  s->ev = (bus_event){.v = BUS_SCHEMA_VERSION,
                      .type = "run.reported",
                      .id = s->id,
                      .ts = bus_wall_ns(),
                      .actor = s->actor,
                      .cause = in->id,
                      .data = in->data};
  r->n++;
  return 0;
}

int
sched_runs_full(const sched_runs *r) {
  return r->n == SCHED_RUNS_MAX;
}

/* One at a time, in order; a report the broker refuses for itself is
 * logged and passed. */
static int
append_each(sched_runs *r, const bus_worker *w) {
  int delay_ms = SCHED_INGRESS_NAP_MS;
  for (size_t i = 0; i < r->n;) {
    sched_run *s = &r->runs[i];
    int rc =
        bus_append(r->c, s->subject, &s->ev, BUS_APPEND_NOCHECK, NULL, NULL);
    if (!rc || !sched_ingress_transient(rc)) {
      if (rc)
        sched_ingress_log(s->subject, "refused: ", bus_last_error());
      i++;
    } else if (sched_ingress_nap(w, &delay_ms, s->subject)) {
      return rc;
    }
  }
  return 0;
}

int
sched_runs_flush(sched_runs *r, const bus_worker *w) {
  int rc = 0, delay_ms = SCHED_INGRESS_NAP_MS;
  for (size_t i = 0; i < r->n; i++)
    r->items[i] = (bus_atomic_item){r->runs[i].subject, &r->runs[i].ev,
                                    BUS_APPEND_NOCHECK};
  while (r->n) {
    rc = bus_append_atomic(r->c, "LARK_RUNS", r->items, r->n, NULL);
    if (rc == 0)
      break;
    if (!sched_ingress_transient(rc)) {
      /* not as a batch (one of it stored before: BUS_EEXISTS; or refused
       * whole): each on its own, in order, for its own answer */
      rc = append_each(r, w);
      break;
    }
    if (sched_ingress_nap(w, &delay_ms, "lark.run.>"))
      break;
  }
  r->n = 0;
  return rc;
}
