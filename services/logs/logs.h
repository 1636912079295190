/*
 * logs.h - lark-logs: pods' output lines from their nodes to LARK_LOGS.
 *
 * A node sends a pod's stdout and stderr lines in batches as log.batch
 * events on lark.in.<node>.logs.<pod> (LARK_INGRESS). lark-logs accepts a
 * batch only from the node the pod is bound to, and republishes it, with
 * the pod's job, task and node added, on lark.log.<job>.<task>.<pod>
 * (LARK_LOGS), where `larkctl logs` reads it.
 *
 * Which pod is bound where comes from the bindings view, projected from
 * LARK_EVENTS by the same apply live and in replay:
 *
 *   pods  "<pod>"        -> logs_binding (fixed layout, zero padded)
 *   jobs  "<job>/<pod>"  -> "" (the pods a Job's placements bound)
 *
 *   job.placed   (lark.ev.placement.<pool>)  every binding: pod -> {job,
 *                task, node, attempt}, bound
 *   job.unplaced (lark.ev.placement.<pool>)  the Job's pods stay known
 *                with their last node but are no longer bound: the lines
 *                a node still flushes after its pod ended are accepted
 *   pod.phase    (lark.ev.pod.<pod>)         the attempt and phase
 *   job.deleted  (lark.ev.job.<job>)         the Job's pods are forgotten
 *
 * Queries on lark.cmd.<user>.logs.<verb>: "describe" {name: pod} gives
 * the pod's binding, "list" {name?: job} the bindings of a Job (or all).
 */
#ifndef LARK_LOGS_H
#define LARK_LOGS_H

#include "bus.h"
#include "queue.h"

#define LOGS_NAME_SZ (BUS_NAME_MAX + 1)
#define LOGS_DNAME_SZ (BUS_DERIVED_NAME_MAX + 1)

/* One pod's binding as the view stores it (memset to 0 before filling, so
 * the digest sees no stray padding). */
typedef struct logs_binding {
  char pod[LOGS_DNAME_SZ];
  char job[LOGS_NAME_SZ];
  char task[LOGS_DNAME_SZ];
  char node[LOGS_NAME_SZ];
  char phase[16];
  uint32_t attempt;
  uint32_t bound; /* 1 while placed; 0 after job.unplaced */
} logs_binding;

/* The view definition (no decisions: the view only observes). */
void logs_view_def(bus_view_def *def);

/* The binding of pod, read through t. BUS_ENOT_FOUND when unknown. */
int logs_binding_get(bus_txn *t, const char *pod, logs_binding *b);

/* The view's bus_query_fn: "describe" {name} and "list" {name?}. */
int logs_query(bus_txn *t, const char *kind, const char *verb,
               const msgpack_object *req, msgpack_packer *pk, void *ud);

/*
 * Check one ingress message and build its republication. subject is
 * lark.in.<node>.logs.<pod>; ev the decoded log.batch. When the pod is
 * bound to <node> (and the body names the same pod), fills out_subject
 * (lark.log.<job>.<task>.<pod>) and packs into out the data map {pod,
 * job, task, node, attempt, lines}; returns 0. Otherwise returns
 * BUS_EDENIED or BUS_EINVAL with the reason in bus_last_error(), and out
 * holds nothing useful. Reads the view through t only: pure.
 */
int logs_route(bus_txn *t, const char *subject, const bus_event *ev,
               char *out_subject, size_t cap, msgpack_sbuffer *out);

/* The ingress loop: a thread consuming lark.in.*.logs.> (logs_ingress.c). */
typedef struct logs_ingress logs_ingress;

/* durable (default "logs-ingress"), batch (messages per fetch, default
 * 256), ack_wait_ns (redelivery after a crash, default 5 s), and log: one
 * line per refused batch or failure (may be NULL), with ud. */
typedef svc_queue_opts logs_ingress_opts;

void logs_ingress_opts_init(logs_ingress_opts *o);
/* Start consuming in a new thread; the view is read, never written. */
int logs_ingress_start(bus_conn *c, bus_view *v, const logs_ingress_opts *o,
                       logs_ingress **out);
/* Counters: batches republished, refused; lines republished. */
void logs_ingress_counts(logs_ingress *in, uint64_t *published,
                         uint64_t *refused, uint64_t *lines);
/* Stop the thread (after its current fetch) and free in. NULL is fine. */
void logs_ingress_stop(logs_ingress *in);

#define LOGS_INGRESS_DURABLE "logs-ingress"
/*
 * Wait until the ingress consumer durable has taken (republished and
 * acked) everything LARK_INGRESS held when asked: its ack floor at the
 * stream's last sequence then, or nothing of its filter pending. 1 when
 * it has, 0 when wait_ms passed first, < 0 when it could not be asked.
 * A reader asks this before reading LARK_LOGS, so the lines a node sent
 * before the reader looked (a finished pod's last ones) are there.
 */
int logs_ingress_sync(bus_conn *c, const char *durable, int wait_ms);

#endif
