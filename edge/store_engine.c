/*
 * store_engine.c - a node's copy of the RL engine's projections and what
 * it did for each pod through the engine's socket (store.h).
 *
 * Table "engine": "<job>/<what>" -> [be64 version][the message body as it
 * came] for what = stages | weights | peers, kept only when its version
 * (the deciding event's sequence) is newer, so a redelivery never rolls
 * a projection back. A Job's three rows go together (forget).
 *
 * Table "engine_pods": pod -> edge_engine_pod, for the pod's attempt the
 * highest weights version handed to it and the last step it reported per
 * stage;
 * written with the stage.report it queues, in one transaction, so a
 * report is queued once however often the pod says it (and across an
 * agent restart). The row goes with the pod (edge_store_forget).
 */
#include <stdio.h>
#include <stdlib.h>

#include "store_int.h"

static const char *const whats[] = {"stages", "weights", "peers"};

/* "<job>/<what>" into out; BUS_EINVAL when what is not one of them or it
 * does not fit. */
static int
engine_key(const char *job, const char *what, char *out, size_t cap) {
  int known = 0;
  for (size_t i = 0; i < sizeof whats / sizeof *whats; i++)
    known |= !strcmp(what, whats[i]);
  int n = snprintf(out, cap, "%s/%s", job, what);
  if (!known || !*job || strchr(job, '/') || n < 0 || (size_t)n >= cap)
    return bus_error(BUS_EINVAL, "edge store: no engine row %s/%s", job, what);
  return 0;
}

int
edge_store_engine_put(edge_store *s, const char *job, const char *what,
                      uint64_t version, const void *body, size_t len,
                      int *stored) {
  char key[EDGE_NAME_SZ + 16];
  int rc = engine_key(job, what, key, sizeof key);
  if (stored)
    *stored = 0;
  return rc ? rc
            : edge_store__put_newer(s, s->engine, key, version, body, len,
                                    stored);
}

static int
body_of(const MDB_val *v, void *out) {
  if (v->mv_size < 8)
    return 0;
  msgpack_sbuffer_write(out, (const char *)v->mv_data + 8, v->mv_size - 8);
  return 1;
}

int
edge_store_engine_get(edge_store *s, const char *job, const char *what,
                      msgpack_sbuffer *out) {
  char key[EDGE_NAME_SZ + 16];
  int rc = engine_key(job, what, key, sizeof key);
  return rc ? rc
            : edge_store__get(s, s->engine, key, body_of, out, "get engine");
}

int
edge_store_engine_load(edge_store *s, const char *job, const char *what,
                       msgpack_zone *zone, const void **out) {
  msgpack_sbuffer sb;
  bus_event ev = {0};
  msgpack_sbuffer_init(&sb);
  int rc = edge_store_engine_get(s, job, what, &sb);
  if (!rc)
    rc = bus_event_decode_typed(sb.data, sb.size, &ev, zone);
  msgpack_sbuffer_destroy(&sb);
  if (rc)
    return rc;
  const void *typed = NULL;
  if (!strcmp(what, "stages"))
    typed = bus_as_engine_stages(&ev);
  else if (!strcmp(what, "weights"))
    typed = bus_as_engine_weights(&ev);
  else
    typed = bus_as_engine_peers(&ev);
  if (!typed)
    return bus_error(BUS_EMALFORMED, "edge store: the engine.%s of %s is a %s",
                     what, job, ev.type ? ev.type : "?");
  *out = typed;
  return 0;
}

int
edge_store_engine_forget(edge_store *s, const char *job) {
  char key[EDGE_NAME_SZ + 16];
  MDB_txn *t;
  int rc = mdb_txn_begin(s->env, NULL, 0, &t);
  if (rc)
    return edge_store__fail(rc, "begin");
  for (size_t i = 0; !rc && i < sizeof whats / sizeof *whats; i++) {
    if ((rc = engine_key(job, whats[i], key, sizeof key))) {
      mdb_txn_abort(t);
      return rc;
    }
    MDB_val k = key_of(key);
    if ((rc = mdb_del(t, s->engine, &k, NULL)) == MDB_NOTFOUND)
      rc = 0;
  }
  if (rc) {
    mdb_txn_abort(t);
    return edge_store__fail(rc, "forget engine");
  }
  return (rc = mdb_txn_commit(t)) ? edge_store__fail(rc, "commit") : 0;
}

/* The Jobs of the table, each once (rows of a Job are adjacent). */
typedef struct jobs_walk {
  char (*jobs)[EDGE_NAME_SZ];
  size_t n, cap;
} jobs_walk;

static int
job_row(const MDB_val *k, const MDB_val *v, void *ud) {
  jobs_walk *w = ud;
  (void)v;
  const char *slash = memchr(k->mv_data, '/', k->mv_size);
  size_t len = slash ? (size_t)(slash - (const char *)k->mv_data) : 0;
  if (!len || len >= EDGE_NAME_SZ)
    return 0;
  if (w->n && strlen(w->jobs[w->n - 1]) == len &&
      !memcmp(w->jobs[w->n - 1], k->mv_data, len))
    return 0;
  if (bus_grow(&w->jobs, w->n, &w->cap, sizeof *w->jobs, 8))
    return 1;
  memcpy(w->jobs[w->n], k->mv_data, len);
  w->jobs[w->n++][len] = 0;
  return 0;
}

int
edge_store_engine_jobs(edge_store *s, edge_job_cb cb, void *ud) {
  jobs_walk w = {0};
  int rc = edge_store__walk(s, s->engine, "engine jobs", job_row, &w);
  for (size_t i = 0; !rc && i < w.n; i++)
    cb(w.jobs[i], ud);
  free(w.jobs);
  return rc;
}

static int
engine_pod_of(const MDB_val *v, void *out) {
  if (v->mv_size != sizeof(edge_engine_pod))
    return 0;
  memcpy(out, v->mv_data, sizeof(edge_engine_pod));
  return 1;
}

int
edge_store_engine_pod_get(edge_store *s, const char *pod, edge_engine_pod *r) {
  return edge_store__get(s, s->engine_pods, pod, engine_pod_of, r,
                         "get engine pod");
}

int
edge_store_engine_pod_put(edge_store *s, const char *pod,
                          const edge_engine_pod *r, const edge_msg *msg) {
  MDB_val v = {sizeof *r, (void *)r};
  return edge_store__write(s, &s->engine_pods, 1, key_of(pod), &v, msg,
                           msg != NULL, "put engine pod");
}
