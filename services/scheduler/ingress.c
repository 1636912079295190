/*
 * ingress.c - what nodes tell the scheduler, on lark.in.<node>.sched.>.
 *
 * A node may only write its own ingress subjects (the broker enforces
 * it), so the <node> token names the sender. Nothing a node sends is
 * trusted beyond that: a pod report is applied only for a pod bound to
 * that node at that attempt; a registration only for its own name. What
 * passes becomes an event appended with the broker's version check; what
 * does not is logged and dropped. Heartbeats stay here: only a change of
 * readiness becomes an event.
 *
 * One thread: fetch, handle, ack; once a second, look for silent nodes.
 * Pods' run reports are stored a batch at a time (ingress_runs.c); what
 * else a batch holds is handled between them, in the batch's order.
 *
 * A registering node's stream is made first, unless it is known to be on
 * the broker: checking costs a JetStream API request, which in a fleet
 * registering at once waits behind the nodes' own, the largest part of a
 * batch's time. What is known is a bit on the node's entry, set from the
 * broker's own list of node streams (bus_node_streams_list) the first
 * time it is asked, and for each stream made since; it is forgotten when
 * the connection was made again, since a restarted broker has no node
 * streams (they are in memory) until their writers make them again. A
 * stream deleted meanwhile by another (a node deleted) and not made again
 * is found missing by the outbox, which makes it (svc_node_streams_repair).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ingress-int.h"
#include "queue.h"

typedef struct seen {
  char node[SCHED_NAME_SZ];
  int64_t last_ms;
  unsigned char watched; /* heard of (or sends heartbeats): scanned */
  unsigned char stream;  /* its stream known to be on the broker */
} seen;

/* What is known of each node: when it was last heard of, and whether its
 * stream is there. An array in arrival order (the scan for silent ones
 * walks it) and an open-addressed index of it by name (slots hold
 * position + 1; 0 is empty), at most half full, for the heartbeats of a
 * fleet of any size. */
struct sched_ingress {
  svc_ingress s; /* first: the worker's ud */
  int timeout_ms;
  sched_runs runs;
  sched_reps reps;
  sched_regs regs;
  seen *nodes;
  size_t nnodes, cap;
  uint32_t *slots;
  size_t nslots; /* a power of two */
  int64_t started_ms, last_scan_ms;
  /* the streams known: listed while the connection's count of
   * reconnections was this one */
  unsigned long reconnects;
  int listed;
  /* the batch at hand could not make its nodes' streams together: each
   * registration makes its own (streams_first) */
  int alone;
};

static size_t
slot_of(const sched_ingress *in, const char *node) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (const char *p = node; *p; p++)
    h = (h ^ (unsigned char)*p) * 16777619u;
  size_t i = h & (in->nslots - 1);
  while (in->slots[i] && strcmp(in->nodes[in->slots[i] - 1].node, node))
    i = (i + 1) & (in->nslots - 1);
  return i;
}

/* The index twice as large, filled again from the array. */
static int
reindex(sched_ingress *in) {
  size_t n = in->nslots ? in->nslots * 2 : 1024;
  uint32_t *slots = calloc(n, sizeof *slots);
  if (!slots)
    return -1;
  free(in->slots);
  in->slots = slots, in->nslots = n;
  for (size_t k = 0; k < in->nnodes; k++)
    in->slots[slot_of(in, in->nodes[k].node)] = (uint32_t)k + 1;
  return 0;
}

/* node's entry, made when new and make; NULL when there is none (or no
 * memory for it). */
static seen *
entry_of(sched_ingress *in, const char *node, int make) {
  if (in->nslots && in->slots[slot_of(in, node)])
    return &in->nodes[in->slots[slot_of(in, node)] - 1];
  if (!make || strlen(node) >= SCHED_NAME_SZ ||
      (2 * (in->nnodes + 1) > in->nslots && reindex(in)) ||
      bus_grow(&in->nodes, in->nnodes, &in->cap, sizeof *in->nodes, 256))
    return NULL;
  seen *s = &in->nodes[in->nnodes];
  memset(s, 0, sizeof *s);
  snprintf(s->node, sizeof s->node, "%s", node);
  in->slots[slot_of(in, node)] = (uint32_t)++in->nnodes;
  return s;
}

/* node's entry, watched (heard of now) when it was not; NULL when out of
 * memory. */
static seen *
seen_of(sched_ingress *in, const char *node) {
  seen *s = entry_of(in, node, 1);
  if (s && !s->watched) {
    s->watched = 1;
    s->last_ms = bus_mono_ms();
  }
  return s;
}

/* node's stream is there (listed, or made now). Not known when out of
 * memory: asked again next time. */
static void
stream_is_there(sched_ingress *in, const char *node) {
  seen *s = entry_of(in, node, 1);
  if (s)
    s->stream = 1;
}

static int
listed(const char *node, void *ud) {
  stream_is_there(ud, node);
  return 0;
}

/* The node streams there are, listed from the broker the first time and
 * again after a reconnection (a restarted broker may have lost those kept
 * in memory); a list that failed is asked for again with the next batch. */
static void
list_streams(sched_ingress *in) {
  unsigned long now = bus_conn_reconnects(in->s.c);
  if (in->listed && now == in->reconnects)
    return;
  for (size_t i = 0; i < in->nnodes; i++)
    in->nodes[i].stream = 0;
  in->reconnects = now;
  in->listed = bus_node_streams_list(in->s.c, listed, in) == 0;
}

/* 1 when node's stream is known to be there: listed (list_streams) or
 * made since. */
static int
stream_known(sched_ingress *in, const char *node) {
  seen *s = entry_of(in, node, 0);
  return s && s->stream;
}

/* Append ev (its type's enum, data and actor set) for a node, with the
 * version check: its id derived from src_id, the message's (a re-sent
 * message lands once), which is also its cause. */
static int
append_for(sched_ingress *in, const char *subject, bus_event *ev,
           const char *src_id, uint64_t prev) {
  char id[33];
  bus_event_derive_id(src_id, 0, id);
  ev->type = bus_type_name(ev->t); /* the Lark-Type header */
  ev->id = id;
  ev->ts = bus_wall_ns();
  ev->cause = src_id;
  ev->prev = prev;
  return bus_append(in->s.c, subject, ev, BUS_APPEND_CHECK, NULL, NULL);
}

static int
version_of(bus_view *v, const char *subject, bus_version *ver) {
  bus_txn *t;
  int rc = bus_view_read(v, &t);
  if (rc)
    return rc;
  rc = bus_txn_version(t, subject, ver);
  bus_txn_end(t);
  return rc;
}

/* ------------------------------------------------------------ reports */

/* pod's record as the view has it now. */
static int
pod_of(sched_ingress *in, const char *pod, pod_rec *p) {
  bus_txn *t;
  int rc = bus_view_read(in->s.v, &t);
  if (!rc) {
    rc = sched_pod_get(t, pod, p);
    bus_txn_end(t);
  }
  return rc;
}

/*
 * A node forgot a Deleted pod: the pod's subject leaves the node's
 * stream, which so holds only pods that still matter (docs/design.md section
 * 2). Only for a pod the view has Deleted on that node, at the version
 * the node acted on when it says one: a late word about an earlier
 * generation purges nothing newer. Purging twice is harmless.
 */
static int
pod_forgotten(sched_ingress *in, const char *node, const bus_event *ev) {
  const bus_ev_pod_forgotten *f = bus_as_pod_forgotten(ev);
  char pod[SCHED_DNAME_SZ], subject[BUS_SUBJECT_MAX];
  char stream[BUS_NODE_STREAM_MAX];
  pod_rec p;
  bus_str_copy(f->pod, pod, sizeof pod);
  int rc = pod_of(in, pod, &p);
  uint64_t version = f->version, out = rc ? 0 : sched_seq_of(p.out_key);
  if (rc || strcmp(p.node, node) || strcmp(p.desired, "Deleted") ||
      (version && out && version != out))
    return bus_error(BUS_EDENIED, "pod %s is not Deleted on %s", pod, node);
  if ((rc = bus_subj_pod_desired(subject, sizeof subject, node, pod)))
    return rc;
  if ((rc = bus_node_stream_name(node, stream, sizeof stream)) == 0)
    rc = bus_purge_subject(in->s.c, stream, subject);
  if (rc == 0)
    sched_ingress_log(subject, "purged: the node forgot the pod", NULL);
  return rc;
}

/* -------------------------------------------------------------- nodes */

static int
node_ready(sched_ingress *in, const char *node, int ready, const char *reason) {
  char subject[BUS_SUBJECT_MAX], src[160];
  bus_version ver;
  int rc = bus_subj_node_ready(subject, sizeof subject, node);
  if (!rc)
    rc = version_of(in->s.v, subject, &ver);
  if (rc)
    return rc;
  snprintf(src, sizeof src, "%s:%s:%llu", ready ? "ready" : "notready", node,
           (unsigned long long)ver.seq);
  bus_ev_node_ready r = {.has_reason = 1, .reason = bus_str_of(reason)};
  bus_ev_node_notready nr = {.has_reason = 1, .reason = bus_str_of(reason)};
  bus_event ev = {.t = ready ? BUS_T_NODE_READY : BUS_T_NODE_NOTREADY,
                  .typed = ready ? (const void *)&r : &nr,
                  .actor = "lark-scheduler"};
  rc = append_for(in, subject, &ev, src, ver.seq);
  return rc == BUS_ECONFLICT ? 0 : rc; /* the view will show the change */
}

static int
heartbeat(sched_ingress *in, const char *node) {
  seen *s = seen_of(in, node);
  if (s)
    s->last_ms = bus_mono_ms();
  node_rec r;
  bus_txn *t;
  int rc = bus_view_read(in->s.v, &t);
  if (!rc) {
    rc = sched_noderec_get(t, node, &r);
    bus_txn_end(t);
  }
  if (rc == BUS_ENOT_FOUND)
    return bus_error(rc, "heartbeat from unregistered node %s", node);
  if (!rc && !r.ready)
    rc = node_ready(in, node, 1, "heartbeats arrive again");
  return rc;
}

/* A registration is checked here and staged (ingress_regs.c): the
 * batch's registrations are appended together. */
static int
registration(sched_ingress *in, const char *node, const bus_event *ev) {
  const bus_node_res *res = bus_as_node_registered(ev);
  char name[SCHED_NAME_SZ], subject[BUS_SUBJECT_MAX];
  bus_str_copy(res->metadata.name, name, sizeof name);
  if (strcmp(name, node))
    return bus_error(BUS_EDENIED, "node %s may not register %s", node, name);
  bus_version ver;
  seen *e = entry_of(in, node, 0);
  int known = !in->alone && e && e->stream; /* made first (streams_first) */
  /* the node's stream first: it exists before the node can be placed */
  int rc = known ? 0 : sched_slice_ensure(in->s.c, node);
  if (rc >= 0 && !known)
    stream_is_there(in, node);
  if (rc >= 0 &&
      (sched_regs_full(&in->regs) || sched_regs_has(&in->regs, node)))
    rc = sched_regs_flush(&in->regs, in->s.q.w);
  if (rc >= 0)
    rc = bus_subj_node_registered(subject, sizeof subject, node);
  if (!rc)
    rc = version_of(in->s.v, subject, &ver);
  if (!rc)
    sched_regs_stage(&in->regs, node, subject, ev, ver.seq);
  seen *s = seen_of(in, node);
  if (s)
    s->last_ms = bus_mono_ms();
  return rc;
}

/* ------------------------------------------------------------ routing */

/* lark.in.<node>.sched.<what>[.<pod>]: node and what, or an error. */
static int
route(const char *subject, char node[SCHED_NAME_SZ], const char **what) {
  const char *p = subject + 8, *dot = strchr(p, '.');
  if (strncmp(subject, "lark.in.", 8) || !dot)
    return bus_error(BUS_EINVAL, "not an ingress subject");
  sched_copy(node, SCHED_NAME_SZ, p, (size_t)(dot - p));
  if (strncmp(dot + 1, "sched.", 6))
    return bus_error(BUS_EINVAL, "not for the scheduler");
  *what = dot + 7;
  return 0;
}

static int
is_run_report(const bus_event *ev, const char *what) {
  return ev->t == BUS_T_RUN_REPORTED && !strncmp(what, "run.", 4);
}

static int
handle(sched_ingress *in, const char *subject, const bus_event *ev) {
  char node[SCHED_NAME_SZ];
  const char *what;
  int rc = route(subject, node, &what);
  if (rc)
    return rc;
  if (!ev->typed) /* a worker's batch decodes every message to its type */
    return bus_error(BUS_EINVAL, "%s: not decoded to its type", ev->type);
  switch (ev->t) {
  case BUS_T_NODE_HEARTBEAT:
    return heartbeat(in, node);
  case BUS_T_NODE_REGISTERED:
    return registration(in, node, ev);
  case BUS_T_POD_FORGOTTEN:
    return pod_forgotten(in, node, ev);
  default:
    break;
  }
  return bus_error(BUS_EINVAL, "unexpected %s", ev->type);
}

/*
 * A broker that does not answer now (no responders while a cluster elects
 * a stream leader, a timeout, a lost connection) has refused nothing: the
 * message is handled again, in place, until it is stored or truly refused
 * by the rules. Handling it in place keeps the node's reports in order; a
 * repeat lands once (ids derive from the message's, appends carry prev).
 */
static int
handle_until_stored(sched_ingress *in, const char *subject,
                    const bus_event *ev) {
  int delay_ms = SCHED_INGRESS_NAP_MS;
  for (;;) {
    int rc = handle(in, subject, ev);
    if (!sched_ingress_transient(rc) ||
        sched_ingress_nap(in->s.q.w, &delay_ms, subject))
      return rc;
  }
}

/* 1 when the reports staged go out before pod report ev is staged: full,
 * or its pod has one there. */
static int
reps_first(const sched_ingress *in, const bus_event *ev) {
  char pod[SCHED_DNAME_SZ];
  bus_str_copy(bus_as_pod_report(ev)->pod, pod, sizeof pod);
  return sched_reps_full(&in->reps) || sched_reps_has(&in->reps, pod);
}

/* Message i of b: a run report, or a pod report, is staged with the ones
 * of its kind just before it (stored first when full, or for a pod report
 * when its pod has one staged); anything else is handled once all staged
 * before it is stored. A transient error only when told to stop
 * meanwhile. */
static int
take(sched_ingress *in, bus_batch *b, size_t i) {
  const char *subject, *what = NULL;
  char node[SCHED_NAME_SZ];
  bus_batch_meta(b, i, &subject, NULL, NULL);
  const bus_event *ev = bus_batch_event(b, i);
  int rc = ev ? 0 : bus_batch_status(b, i);
  int routed = !rc && !route(subject, node, &what);
  int run = routed && is_run_report(ev, what);
  int rep = routed && ev->typed && ev->t == BUS_T_POD_REPORT;
  if (!rc && (!run || sched_runs_full(&in->runs)))
    rc = sched_runs_flush(&in->runs, in->s.q.w);
  if (!rc && (!rep || reps_first(in, ev)))
    rc = sched_reps_flush(&in->reps, in->s.q.w);
  if (!rc && run)
    rc = sched_runs_stage(&in->runs, in->s.v, node, what + 4, ev);
  else if (!rc && rep)
    rc = sched_reps_stage(&in->reps, in->s.v, node, ev);
  else if (!rc)
    rc = handle_until_stored(in, subject, ev);
  if (rc && !sched_ingress_transient(rc))
    sched_ingress_log(subject, "refused: ", bus_last_error());
  return rc;
}

static void
silent_nodes(sched_ingress *in) {
  bus_txn *t;
  if (bus_view_read(in->s.v, &t))
    return;
  int64_t now = bus_mono_ms();
  for (size_t i = 0; i < in->nnodes; i++) {
    seen *s = &in->nodes[i];
    node_rec r;
    if (!s->watched || now - s->last_ms < in->timeout_ms ||
        sched_noderec_get(t, s->node, &r) || !r.ready || !r.heartbeats)
      continue;
    char reason[128];
    snprintf(reason, sizeof reason, "no heartbeat for %d ms", in->timeout_ms);
    node_ready(in, s->node, 0, reason);
  }
  bus_txn_end(t);
}

/* Nodes that send heartbeats are watched from the start, even before the
 * first one arrives after a restart. */
static int
watch_node(void *rec, void *ud) {
  const node_rec *r = rec;
  if (r->heartbeats)
    seen_of(ud, r->name);
  return 0;
}

/*
 * The streams of the nodes whose registration is in b, before any of it
 * is handled: those not known to be there made in one go, their requests
 * in flight together (in a storm of registrations each JetStream request
 * waits behind the fleet's own). On failure each registration makes its
 * own, as before.
 */
static void
streams_first(sched_ingress *in, bus_batch *b) {
  const char *names[SCHED_RUNS_MAX], *what, *subject;
  char node[SCHED_NAME_SZ], name[SCHED_NAME_SZ];
  char ask[SCHED_RUNS_MAX][SCHED_NAME_SZ];
  size_t nask = 0;
  in->alone = 0;
  list_streams(in);
  for (size_t i = 0; i < bus_batch_len(b) && nask < SCHED_RUNS_MAX; i++) {
    bus_batch_meta(b, i, &subject, NULL, NULL);
    const bus_event *ev = bus_batch_event(b, i);
    const bus_node_res *res = ev ? bus_as_node_registered(ev) : NULL;
    if (!res || route(subject, node, &what))
      continue;
    bus_str_copy(res->metadata.name, name, sizeof name);
    if (strcmp(name, node) || stream_known(in, node))
      continue; /* refused later, with its reason; or there */
    snprintf(ask[nask], SCHED_NAME_SZ, "%s", node);
    names[nask] = ask[nask];
    nask++;
  }
  if (nask && bus_node_streams_ensure(in->s.c, names, nask, NULL) < 0)
    in->alone = 1;
  for (size_t i = 0; !in->alone && i < nask; i++)
    stream_is_there(in, names[i]);
}

/* One fetched batch: each message in order, then what is staged; acked
 * unless told to stop meanwhile (then it comes again). */
static void
handle_batch(bus_worker *w, bus_batch *b, void *ud) {
  sched_ingress *in = ud;
  in->s.q.w = w;
  streams_first(in, b);
  int rc = 0;
  for (size_t i = 0; i < bus_batch_len(b) && !sched_ingress_transient(rc); i++)
    rc = take(in, b, i);
  if (!sched_ingress_transient(rc))
    rc = sched_runs_flush(&in->runs, w);
  if (!sched_ingress_transient(rc))
    rc = sched_reps_flush(&in->reps, w);
  if (!sched_ingress_transient(rc))
    rc = sched_regs_flush(&in->regs, w);
  in->runs.n = in->reps.n = in->regs.n = 0;
  if (!sched_ingress_transient(rc))
    bus_batch_ack(b);
}

static void
tick(bus_worker *w, void *ud) {
  sched_ingress *in = ud;
  (void)w;
  if (bus_mono_ms() - in->last_scan_ms > 1000) {
    in->last_scan_ms = bus_mono_ms();
    silent_nodes(in);
  }
}

static void
queue_log(const char *subject, const char *line, void *ud) {
  (void)ud;
  sched_ingress_log(subject, line, NULL);
}

int
sched_ingress_start(bus_conn *c, bus_view *v, int timeout_ms,
                    sched_ingress **out) {
  sched_ingress *in = calloc(1, sizeof *in);
  if (!in)
    return bus_error(BUS_EINVAL, "out of memory");
  in->s.c = c;
  in->s.v = v;
  in->runs.c = c;
  in->reps.c = c;
  in->regs.c = c;
  in->timeout_ms = timeout_ms > 0 ? timeout_ms : SCHED_NODE_TIMEOUT_MS;
  in->started_ms = bus_mono_ms();
  bus_txn *t;
  if (bus_view_read(v, &t) == 0) {
    sched_each_rec(t, "nodes", NULL, sizeof(node_rec), 0, watch_node, in);
    bus_txn_end(t);
  }
  /* the worker's defaults: 256 a fetch, redelivered after 30 s */
  svc_queue_opts qo = {.durable = "scheduler-ingress",
                       .batch = 256,
                       .ack_wait_ns = INT64_C(30000000000),
                       .log = queue_log,
                       .tick = tick};
  int rc = svc_queue_ingress(&in->s.q, c, &qo, &qo, "lark.in.*.sched.>",
                             handle_batch);
  if (rc) {
    free(in->nodes);
    free(in->slots);
    free(in);
    return rc;
  }
  *out = in;
  return 0;
}

void
sched_ingress_stop(sched_ingress *in) {
  if (!in)
    return;
  seen *nodes = in->nodes;
  uint32_t *slots = in->slots;
  svc_ingress_stop(&in->s); /* the worker stops, then in is freed */
  free(nodes);
  free(slots);
}
