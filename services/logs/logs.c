/*
 * logs.c - the bindings view of lark-logs, its queries, and the routing
 * of one ingress batch.
 *
 * apply is pure and reads only the event and the view, so a replay from
 * sequence 1 builds the same tables as the live service (the digest
 * proves it). Records have a fixed layout and are zeroed before filling,
 * so equal bindings are equal bytes. A Job's pods are indexed under
 * "<job>/": names hold no '/', so the prefix scan finds exactly them.
 *
 * logs_route decides from the view alone whether a node may publish a
 * pod's lines: the <node> token of the ingress subject is the sender (the
 * broker lets a node publish only under its own token), and it must be
 * the node the pod was last bound to. Nothing else in the body is
 * trusted: job, task and node of the republished batch come from the
 * view.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logs.h"

#define T_PODS "pods"
#define T_JOBS "jobs"

static const char *const tables[] = {T_PODS, T_JOBS, NULL};

static void
copy_tok(char *dst, size_t cap, const char *src, size_t n) {
  if (n >= cap)
    n = cap - 1;
  memcpy(dst, src, n);
  dst[n] = 0;
}

int
logs_binding_get(bus_txn *t, const char *pod, logs_binding *b) {
  const void *val;
  size_t vlen;
  int rc = bus_txn_get(t, T_PODS, pod, strlen(pod), &val, &vlen);
  if (rc)
    return rc;
  if (vlen != sizeof *b)
    return bus_error(BUS_ECORRUPT, "binding of %s has %zu bytes", pod, vlen);
  memcpy(b, val, sizeof *b); /* LMDB values need not be aligned */
  return 0;
}

static int
binding_put(bus_txn *t, const logs_binding *b) {
  return bus_txn_put(t, T_PODS, b->pod, strlen(b->pod), b, sizeof *b);
}

static int
index_key(char *key, size_t cap, const char *job, const char *pod) {
  int n = snprintf(key, cap, "%s/%s", job, pod);
  return n < 0 || (size_t)n >= cap ? -1 : n;
}

/* ------------------------------------------------------------- apply */

static int
apply_binding(bus_txn *t, const char *job, const msgpack_object *o) {
  logs_binding b;
  memset(&b, 0, sizeof b);
  if (!bus_obj_str(o, "pod", b.pod, sizeof b.pod) ||
      !bus_obj_str(o, "task", b.task, sizeof b.task) ||
      !bus_obj_str(o, "node", b.node, sizeof b.node) || !b.pod[0])
    return bus_error(BUS_EFIELD, "a binding without pod, task or node");
  snprintf(b.job, sizeof b.job, "%s", job);
  snprintf(b.phase, sizeof b.phase, "Pending");
  b.attempt = (uint32_t)bus_obj_int(o, "attempt", 0);
  b.bound = 1;
  char key[LOGS_NAME_SZ + LOGS_DNAME_SZ + 2];
  int klen = index_key(key, sizeof key, job, b.pod);
  int rc = binding_put(t, &b);
  if (!rc && klen > 0)
    rc = bus_txn_put(t, T_JOBS, key, (size_t)klen, "", 0);
  return rc;
}

static int
apply_placed(bus_txn *t, const msgpack_object *data) {
  char job[LOGS_NAME_SZ] = "";
  const msgpack_object *bs = bus_obj_get(data, "bindings");
  if (!bus_obj_str(data, "job", job, sizeof job) || !bs ||
      bs->type != MSGPACK_OBJECT_ARRAY)
    return bus_error(BUS_EFIELD, "job.placed without job or bindings");
  for (uint32_t i = 0; i < bs->via.array.size; i++) {
    int rc = apply_binding(t, job, &bs->via.array.ptr[i]);
    if (rc)
      return rc;
  }
  return 0;
}

/* The pod names indexed under "<job>/", collected before any change. */
typedef struct podlist {
  char (*names)[LOGS_DNAME_SZ];
  size_t n, cap, plen;
} podlist;

static int
collect_pod(const void *key, size_t klen, const void *val, size_t vlen,
            void *ud) {
  (void)val, (void)vlen;
  podlist *l = ud;
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 16;
    void *p = realloc(l->names, cap * sizeof *l->names);
    if (!p)
      return BUS_ESTORE;
    l->names = p;
    l->cap = cap;
  }
  copy_tok(l->names[l->n++], LOGS_DNAME_SZ, (const char *)key + l->plen,
           klen - l->plen);
  return 0;
}

/*
 * Visit the pods of job still bound to it: unbind (forget = 0) or delete
 * them and their index entries (forget = 1).
 */
static int
release_job(bus_txn *t, const char *job, int forget) {
  char prefix[LOGS_NAME_SZ + 2];
  snprintf(prefix, sizeof prefix, "%s/", job);
  podlist l = {.plen = strlen(prefix)};
  int rc = bus_txn_scan(t, T_JOBS, prefix, l.plen, collect_pod, &l);
  for (size_t i = 0; !rc && i < l.n; i++) {
    logs_binding b;
    char key[LOGS_NAME_SZ + LOGS_DNAME_SZ + 2];
    int klen = index_key(key, sizeof key, job, l.names[i]);
    int got = logs_binding_get(t, l.names[i], &b);
    if (got == 0 && !strcmp(b.job, job)) {
      b.bound = 0;
      rc = forget ? bus_txn_del(t, T_PODS, b.pod, strlen(b.pod))
                  : binding_put(t, &b);
    } else if (got && got != BUS_ENOT_FOUND) {
      rc = got;
    }
    if (!rc && forget && klen > 0)
      rc = bus_txn_del(t, T_JOBS, key, (size_t)klen);
  }
  free(l.names);
  return rc;
}

static int
apply_pod_phase(bus_txn *t, const char *pod, const msgpack_object *data) {
  logs_binding b;
  char node[LOGS_NAME_SZ] = "";
  bus_obj_str(data, "node", node, sizeof node);
  if (logs_binding_get(t, pod, &b) || strcmp(b.node, node))
    return 0; /* not a pod we know on that node: nothing to track */
  uint32_t attempt = (uint32_t)bus_obj_int(data, "attempt", 0);
  if (attempt > b.attempt)
    b.attempt = attempt;
  memset(b.phase, 0, sizeof b.phase);
  bus_obj_str(data, "phase", b.phase, sizeof b.phase);
  return binding_put(t, &b);
}

static int
logs_apply(bus_txn *t, const bus_event *ev, void *ud) {
  (void)ud;
  const char *s = ev->subject;
  if (!s || !ev->type)
    return 0;
  if (!strncmp(s, "lark.ev.placement.", 18)) {
    char job[LOGS_NAME_SZ] = "";
    if (!strcmp(ev->type, "job.placed"))
      return apply_placed(t, &ev->data);
    if (!strcmp(ev->type, "job.unplaced") &&
        bus_obj_str(&ev->data, "job", job, sizeof job))
      return release_job(t, job, 0);
    return 0;
  }
  if (!strncmp(s, "lark.ev.pod.", 12) && !strcmp(ev->type, "pod.phase"))
    return apply_pod_phase(t, s + 12, &ev->data);
  if (!strncmp(s, "lark.ev.job.", 12) && !strcmp(ev->type, "job.deleted") &&
      strlen(s + 12) < LOGS_NAME_SZ)
    return release_job(t, s + 12, 1);
  return 0;
}

void
logs_view_def(bus_view_def *def) {
  memset(def, 0, sizeof *def);
  def->name = "logs";
  def->tables = tables;
  def->apply = logs_apply;
}

/* ------------------------------------------------------------ queries */

static void
kv_str(msgpack_packer *pk, const char *k, const char *v) {
  msgpack_pack_str_with_body(pk, k, strlen(k));
  msgpack_pack_str_with_body(pk, v, strlen(v));
}

static void
pack_binding(msgpack_packer *pk, const logs_binding *b) {
  msgpack_pack_map(pk, 7);
  kv_str(pk, "pod", b->pod);
  kv_str(pk, "job", b->job);
  kv_str(pk, "task", b->task);
  kv_str(pk, "node", b->node);
  kv_str(pk, "phase", b->phase);
  msgpack_pack_str_with_body(pk, "attempt", 7);
  msgpack_pack_uint32(pk, b->attempt);
  msgpack_pack_str_with_body(pk, "bound", 5);
  b->bound ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
}

typedef struct lister {
  const char *job; /* "" for all */
  msgpack_sbuffer items;
  msgpack_packer pk;
  uint32_t n;
} lister;

static int
list_one(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  lister *l = ud;
  logs_binding b;
  if (vl != sizeof b)
    return 0;
  memcpy(&b, v, sizeof b);
  if (*l->job && strcmp(l->job, b.job))
    return 0;
  pack_binding(&l->pk, &b);
  l->n++;
  return 0;
}

int
logs_query(bus_txn *t, const char *kind, const char *verb,
           const msgpack_object *req, msgpack_packer *pk, void *ud) {
  (void)kind, (void)ud;
  char name[LOGS_DNAME_SZ] = "";
  bus_obj_str(req, "name", name, sizeof name);
  if (!strcmp(verb, "describe") && name[0]) {
    logs_binding b;
    int rc = logs_binding_get(t, name, &b);
    if (rc == BUS_ENOT_FOUND)
      return bus_error(rc, "lark-logs knows no pod %s", name);
    if (!rc)
      pack_binding(pk, &b);
    return rc;
  }
  if (strcmp(verb, "list"))
    return bus_error(BUS_EINVAL, "verbs: list {name?: job}, describe {name}");
  lister l = {.job = name};
  msgpack_sbuffer_init(&l.items);
  msgpack_packer_init(&l.pk, &l.items, msgpack_sbuffer_write);
  int rc = bus_txn_scan(t, T_PODS, NULL, 0, list_one, &l);
  if (!rc) {
    msgpack_pack_array(pk, l.n);
    if (l.items.size)
      pk->callback(pk->data, l.items.data, l.items.size);
  }
  msgpack_sbuffer_destroy(&l.items);
  return rc;
}

/* ------------------------------------------------------------- routing */

/* lark.in.<node>.logs.<pod>: both tokens non-empty, pod the last. */
static int
split_ingress(const char *subject, char *node, char *pod) {
  if (strncmp(subject, "lark.in.", 8))
    return -1;
  const char *n = subject + 8, *dot = strchr(n, '.');
  if (!dot || dot == n || (size_t)(dot - n) >= LOGS_NAME_SZ ||
      strncmp(dot, ".logs.", 6))
    return -1;
  const char *p = dot + 6;
  if (!*p || strchr(p, '.') || strlen(p) >= LOGS_DNAME_SZ)
    return -1;
  copy_tok(node, LOGS_NAME_SZ, n, (size_t)(dot - n));
  strcpy(pod, p);
  return 0;
}

int
logs_route(bus_txn *t, const char *subject, const bus_event *ev,
           char *out_subject, size_t cap, msgpack_sbuffer *out) {
  char node[LOGS_NAME_SZ], pod[LOGS_DNAME_SZ], body_pod[LOGS_DNAME_SZ] = "";
  if (split_ingress(subject, node, pod))
    return bus_error(BUS_EINVAL, "not lark.in.<node>.logs.<pod>");
  if (!ev || !ev->type || strcmp(ev->type, "log.batch"))
    return bus_error(BUS_EINVAL, "expected log.batch, got %s",
                     ev && ev->type ? ev->type : "nothing");
  const msgpack_object *lines = bus_obj_get(&ev->data, "lines");
  bus_obj_str(&ev->data, "pod", body_pod, sizeof body_pod);
  if (strcmp(body_pod, pod) || !lines || lines->type != MSGPACK_OBJECT_ARRAY)
    return bus_error(BUS_EINVAL, "the batch names pod %s on the subject of %s",
                     body_pod, pod);
  logs_binding b;
  int rc = logs_binding_get(t, pod, &b);
  if (rc == BUS_ENOT_FOUND || (!rc && strcmp(b.node, node)))
    return bus_error(BUS_EDENIED, "pod %s is not bound to node %s", pod, node);
  if (rc)
    return rc;
  int n = snprintf(out_subject, cap, "lark.log.%s.%s.%s", b.job, b.task, pod);
  if (n < 0 || (size_t)n >= cap)
    return bus_error(BUS_ENAME, "subject too long for pod %s", pod);
  msgpack_packer pk;
  msgpack_packer_init(&pk, out, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 6);
  kv_str(&pk, "pod", pod);
  kv_str(&pk, "job", b.job);
  kv_str(&pk, "task", b.task);
  kv_str(&pk, "node", node);
  msgpack_pack_str_with_body(&pk, "attempt", 7);
  msgpack_pack_uint64(
      &pk, (uint64_t)bus_obj_int(&ev->data, "attempt", (int64_t)b.attempt));
  msgpack_pack_str_with_body(&pk, "lines", 5);
  msgpack_pack_object(&pk, *lines);
  return 0;
}
