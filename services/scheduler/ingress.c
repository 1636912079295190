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
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ingress-int.h"

#define MAX_NODES 4096

typedef struct seen {
  char node[SCHED_NAME_SZ];
  int64_t last_ms;
} seen;

struct sched_ingress {
  bus_conn *c;
  bus_view *v;
  int timeout_ms;
  bus_worker *worker;
  bus_worker *w; /* the worker, as its handler was last given it */
  sched_runs runs;
  seen nodes[MAX_NODES];
  int nnodes;
  int64_t started_ms, last_scan_ms;
};

static seen *
seen_of(sched_ingress *in, const char *node) {
  for (int i = 0; i < in->nnodes; i++)
    if (!strcmp(in->nodes[i].node, node))
      return &in->nodes[i];
  if (in->nnodes == MAX_NODES)
    return NULL;
  seen *s = &in->nodes[in->nnodes++];
  snprintf(s->node, sizeof s->node, "%s", node);
  s->last_ms = bus_mono_ms();
  return s;
}

/* Append for a node: id from the message (a re-sent report lands once). */
static int
append_for(sched_ingress *in, const char *subject, const char *type,
           const char *actor, const char *src_id, uint64_t prev, int flags,
           const msgpack_sbuffer *data) {
  char id[33];
  bus_event_derive_id(src_id, 0, id);
  bus_event ev = {.type = type,
                  .id = id,
                  .ts = bus_wall_ns(),
                  .actor = actor,
                  .cause = src_id,
                  .prev = prev,
                  .data_mp = data->data,
                  .data_mp_len = data->size};
  return bus_append(in->c, subject, &ev, flags, NULL, NULL);
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
  int rc = bus_view_read(in->v, &t);
  if (!rc) {
    rc = sched_pod_get(t, pod, p);
    bus_txn_end(t);
  }
  return rc;
}

static void
copy_field(msgpack_packer *pk, const msgpack_object *data, const char *k) {
  const msgpack_object *v = bus_obj_get(data, k);
  if (!v)
    return;
  msgpack_pack_str_with_body(pk, k, strlen(k));
  msgpack_pack_object(pk, *v);
}

static int
count_fields(const msgpack_object *data, const char *const *keys) {
  int n = 0;
  for (int i = 0; keys[i]; i++)
    n += bus_obj_get(data, keys[i]) != NULL;
  return n;
}

static int
pod_report(sched_ingress *in, const char *node, const bus_event *ev) {
  char pod[SCHED_DNAME_SZ] = "", subject[BUS_SUBJECT_MAX], actor[80];
  pod_rec p;
  bus_obj_str(&ev->data, "pod", pod, sizeof pod);
  int rc = pod_of(in, pod, &p);
  if (rc || strcmp(p.node, node) || !p.bound ||
      (uint32_t)bus_obj_int(&ev->data, "attempt", 0) != p.attempt)
    return bus_error(BUS_EDENIED, "pod %s is not bound to %s at that attempt",
                     pod, node);
  static const char *const keys[] = {"phase",   "attempt", "exitCode", "signal",
                                     "localIP", "reason",  NULL};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, (uint32_t)(2 + count_fields(&ev->data, keys)));
  msgpack_pack_str_with_body(&pk, "job", 3);
  msgpack_pack_str_with_body(&pk, p.job, strlen(p.job));
  msgpack_pack_str_with_body(&pk, "node", 4);
  msgpack_pack_str_with_body(&pk, node, strlen(node));
  for (int i = 0; keys[i]; i++)
    copy_field(&pk, &ev->data, keys[i]);
  snprintf(subject, sizeof subject, "lark.ev.pod.%s", pod);
  snprintf(actor, sizeof actor, "node:%s", node);
  bus_version ver;
  rc = version_of(in->v, subject, &ver);
  for (int tries = 0; !rc && tries < 3; tries++) {
    rc = append_for(in, subject, "pod.phase", actor, ev->id, ver.seq,
                    BUS_APPEND_CHECK, &sb);
    if (rc != BUS_ECONFLICT)
      break;
    /* our view lags the stream: take the subject's own last version */
    msgpack_zone z;
    msgpack_zone_init(&z, 1024);
    bus_event last;
    memset(&last, 0, sizeof last);
    rc = bus_last_event(in->c, "LARK_EVENTS", subject, &last, &z);
    ver.seq = last.seq;
    msgpack_zone_destroy(&z);
  }
  msgpack_sbuffer_destroy(&sb);
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
  char pod[SCHED_DNAME_SZ] = "", subject[BUS_SUBJECT_MAX];
  char stream[BUS_NODE_STREAM_MAX];
  pod_rec p;
  bus_obj_str(&ev->data, "pod", pod, sizeof pod);
  int rc = pod_of(in, pod, &p);
  uint64_t version = (uint64_t)bus_obj_int(&ev->data, "version", 0), out = 0;
  for (int i = 0; !rc && i < 8; i++)
    out = out << 8 | p.out_key[i];
  if (rc || strcmp(p.node, node) || strcmp(p.desired, "Deleted") ||
      (version && out && version != out))
    return bus_error(BUS_EDENIED, "pod %s is not Deleted on %s", pod, node);
  snprintf(subject, sizeof subject, "lark.node.%s.pod.%s", node, pod);
  if ((rc = bus_node_stream_name(node, stream, sizeof stream)) == 0)
    rc = bus_purge_subject(in->c, stream, subject);
  if (rc == 0)
    sched_ingress_log(subject, "purged: the node forgot the pod", NULL);
  return rc;
}

/* -------------------------------------------------------------- nodes */

static int
node_ready(sched_ingress *in, const char *node, int ready, const char *reason) {
  char subject[BUS_SUBJECT_MAX], src[160];
  snprintf(subject, sizeof subject, "lark.ev.node.%s", node);
  bus_version ver;
  int rc = version_of(in->v, subject, &ver);
  if (rc)
    return rc;
  snprintf(src, sizeof src, "%s:%s:%llu", ready ? "ready" : "notready", node,
           (unsigned long long)ver.seq);
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 1);
  msgpack_pack_str_with_body(&pk, "reason", 6);
  msgpack_pack_str_with_body(&pk, reason, strlen(reason));
  rc = append_for(in, subject, ready ? "node.ready" : "node.notready",
                  "lark-scheduler", src, ver.seq, BUS_APPEND_CHECK, &sb);
  msgpack_sbuffer_destroy(&sb);
  return rc == BUS_ECONFLICT ? 0 : rc; /* the view will show the change */
}

static int
heartbeat(sched_ingress *in, const char *node) {
  seen *s = seen_of(in, node);
  if (s)
    s->last_ms = bus_mono_ms();
  node_rec r;
  bus_txn *t;
  int rc = bus_view_read(in->v, &t);
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

static int
registration(sched_ingress *in, const char *node, const bus_event *ev) {
  char name[SCHED_NAME_SZ] = "", subject[BUS_SUBJECT_MAX], actor[80];
  bus_obj_str(bus_obj_get(&ev->data, "metadata"), "name", name, sizeof name);
  if (strcmp(name, node))
    return bus_error(BUS_EDENIED, "node %s may not register %s", node, name);
  snprintf(subject, sizeof subject, "lark.ev.node.%s", node);
  snprintf(actor, sizeof actor, "node:%s", node);
  bus_version ver;
  /* the node's stream first: it exists before the node can be placed */
  int rc = sched_slice_ensure(in->c, node);
  if (rc >= 0)
    rc = version_of(in->v, subject, &ver);
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_object(&pk, ev->data);
  if (!rc)
    rc = append_for(in, subject, "node.registered", actor, ev->id, ver.seq,
                    BUS_APPEND_CHECK, &sb);
  msgpack_sbuffer_destroy(&sb);
  seen *s = seen_of(in, node);
  if (s)
    s->last_ms = bus_mono_ms();
  return rc == BUS_ECONFLICT ? 0 : rc;
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
  return !strcmp(ev->type, "run.reported") && !strncmp(what, "run.", 4);
}

static int
handle(sched_ingress *in, const char *subject, const bus_event *ev) {
  char node[SCHED_NAME_SZ];
  const char *what;
  int rc = route(subject, node, &what);
  if (rc)
    return rc;
  if (!strcmp(ev->type, "node.heartbeat"))
    return heartbeat(in, node);
  if (!strcmp(ev->type, "node.registered"))
    return registration(in, node, ev);
  if (!strcmp(ev->type, "pod.report"))
    return pod_report(in, node, ev);
  if (!strcmp(ev->type, "pod.forgotten"))
    return pod_forgotten(in, node, ev);
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
        sched_ingress_nap(in->w, &delay_ms, subject))
      return rc;
  }
}

/* Message i of b: a run report is staged (the staged ones are stored
 * first when full), anything else is handled once those before it are
 * stored. A transient error only when told to stop meanwhile. */
static int
take(sched_ingress *in, bus_batch *b, size_t i) {
  const char *subject, *what = NULL;
  char node[SCHED_NAME_SZ];
  bus_batch_meta(b, i, &subject, NULL, NULL);
  const bus_event *ev = bus_batch_event(b, i);
  int rc = ev ? 0 : bus_batch_status(b, i);
  int run = !rc && !route(subject, node, &what) && is_run_report(ev, what);
  if (!rc && (!run || sched_runs_full(&in->runs)))
    rc = sched_runs_flush(&in->runs, in->w);
  if (!rc)
    rc = run ? sched_runs_stage(&in->runs, in->v, node, what + 4, ev)
             : handle_until_stored(in, subject, ev);
  if (rc && !sched_ingress_transient(rc))
    sched_ingress_log(subject, "refused: ", bus_last_error());
  return rc;
}

static void
silent_nodes(sched_ingress *in) {
  bus_txn *t;
  if (bus_view_read(in->v, &t))
    return;
  int64_t now = bus_mono_ms();
  for (int i = 0; i < in->nnodes; i++) {
    seen *s = &in->nodes[i];
    node_rec r;
    if (now - s->last_ms < in->timeout_ms ||
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
watch_node(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  node_rec r;
  if (vl != sizeof r)
    return 0;
  memcpy(&r, v, sizeof r);
  if (r.heartbeats)
    seen_of(ud, r.name);
  return 0;
}

/* One fetched batch: each message in order, then what is staged; acked
 * unless told to stop meanwhile (then it comes again). */
static void
handle_batch(bus_worker *w, bus_batch *b, void *ud) {
  sched_ingress *in = ud;
  in->w = w;
  int rc = 0;
  for (size_t i = 0; i < bus_batch_len(b) && !sched_ingress_transient(rc); i++)
    rc = take(in, b, i);
  if (!sched_ingress_transient(rc))
    rc = sched_runs_flush(&in->runs, w);
  else
    in->runs.n = 0;
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
worker_log(const char *line, void *ud) {
  (void)ud;
  sched_ingress_log("lark.in.*.sched.>", line, NULL);
}

int
sched_ingress_start(bus_conn *c, bus_view *v, int timeout_ms,
                    sched_ingress **out) {
  sched_ingress *in = calloc(1, sizeof *in);
  if (!in)
    return bus_error(BUS_EINVAL, "out of memory");
  in->c = c;
  in->v = v;
  in->runs.c = c;
  in->timeout_ms = timeout_ms > 0 ? timeout_ms : 15000;
  in->started_ms = bus_mono_ms();
  bus_txn *t;
  if (bus_view_read(v, &t) == 0) {
    bus_txn_scan(t, "nodes", NULL, 0, watch_node, in);
    bus_txn_end(t);
  }
  bus_worker_opts wo;
  bus_worker_opts_init(&wo);
  wo.consumer.stream = "LARK_INGRESS";
  wo.consumer.durable = "scheduler-ingress";
  wo.consumer.filter = "lark.in.*.sched.>";
  wo.handle = handle_batch;
  wo.tick = tick;
  wo.log = worker_log;
  wo.ud = in;
  int rc = bus_worker_start(c, &wo, &in->worker);
  if (rc) {
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
  bus_worker_stop(in->worker);
  free(in);
}
