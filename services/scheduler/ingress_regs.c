/*
 * ingress_regs.c - nodes' registrations from the ingress, appended a
 * fetched batch at a time.
 *
 * A registration becomes node.registered on lark.ev.node.<node>, checked
 * at the version the view had (a conflict means the view lags a newer
 * one: dropped, as before). In a registration storm every node's append
 * waited for its own answer behind the broker's queue; staged here, a
 * batch's registrations go out together (bus_append_many) and cost about
 * one wait. Each keeps the id it always had (derived from the node's
 * message id), so a batch delivered again lands once. A node registering
 * twice in one batch has its first flushed before its second is staged:
 * the second is checked after the first, as it was one at a time. A
 * broker that does not answer is waited for and asked again, the batch
 * unacknowledged meanwhile; one that refuses is logged.
 */
#include <stdio.h>
#include <string.h>

#include "ingress-int.h"

int
sched_regs_has(const sched_regs *r, const char *node) {
  for (size_t i = 0; i < r->n; i++)
    if (!strcmp(r->regs[i].node, node))
      return 1;
  return 0;
}

int
sched_regs_full(const sched_regs *r) {
  return r->n == SCHED_RUNS_MAX;
}

void
sched_regs_stage(sched_regs *r, const char *node, const char *subject,
                 const bus_event *in, uint64_t prev) {
  sched_reg *g = &r->regs[r->n++];
  snprintf(g->node, sizeof g->node, "%s", node);
  snprintf(g->subject, sizeof g->subject, "%s", subject);
  snprintf(g->actor, sizeof g->actor, "node:%s", node);
  snprintf(g->cause, sizeof g->cause, "%s", in->id);
  bus_event_derive_id(in->id, 0, g->id);
  /* the resource as the node sent it: apply keeps it byte for byte */
  g->ev = (bus_event){.t = BUS_T_NODE_REGISTERED,
                      .type = bus_type_name(BUS_T_NODE_REGISTERED),
                      .id = g->id,
                      .ts = bus_wall_ns(),
                      .actor = g->actor,
                      .cause = g->cause,
                      .prev = prev,
                      .data = in->data};
}

int
sched_regs_flush(sched_regs *r, const bus_worker *w) {
  int delay_ms = SCHED_INGRESS_NAP_MS, rc = 0;
  size_t n = r->n, k;
  for (size_t i = 0; i < n; i++)
    r->items[i] = (bus_append_item){
        r->regs[i].subject, &r->regs[i].ev, BUS_APPEND_CHECK, 0, 0, 0};
  for (k = 0; k < n;) {
    /* what is left from k on: those before are settled */
    bus_append_many(r->c, &r->items[k], n - k);
    while (k < n && !sched_ingress_transient(r->items[k].rc)) {
      if (r->items[k].rc && r->items[k].rc != BUS_ECONFLICT)
        sched_ingress_log(r->regs[k].subject, "refused: ", bus_last_error());
      k++;
    }
    if (k < n && (rc = r->items[k].rc) &&
        sched_ingress_nap(w, &delay_ms, r->regs[k].subject))
      break;
  }
  r->n = 0;
  return k < n ? rc : 0;
}
