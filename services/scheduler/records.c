/*
 * records.c - the scheduler's records in its LMDB view.
 *
 * A record is its struct's bytes, zeroed before it is filled, stored as
 * runs (sched_rec_pack), so equal states are equal bytes (the digest
 * compares them). The first byte of the struct is the layout version;
 * another version, or a record not stored as runs (a view written before
 * they were), means the view predates this binary and must be rebuilt
 * (`larkctl replay scheduler`).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler.h"

void
sched_copy(char *dst, size_t cap, const char *src, size_t n) {
  bus_str_copy((bus_str){src, (uint32_t)n}, dst, cap);
}

size_t
sched_seq_key(unsigned char *key, uint64_t seq, const char *name) {
  size_t n = strlen(name);
  bus_put_be64(key, seq);
  memcpy(key + 8, name, n);
  return 8 + n;
}

uint64_t
sched_seq_of(const void *key) {
  return bus_get_be64(key);
}

int
sched_seq_key_name(const void *key, size_t klen, char *name, size_t cap) {
  if (klen <= 8)
    return 0;
  sched_copy(name, cap, (const char *)key + 8, klen - 8);
  return 1;
}

/* Any record, for a copy of one. */
typedef union any_rec {
  job_rec job;
  task_rec task;
  pod_rec pod;
  node_rec node;
} any_rec;

_Static_assert(1 + sizeof(any_rec) + sizeof(any_rec) / 128 + 1 <=
                   SCHED_REC_PACK_MAX,
               "SCHED_REC_PACK_MAX holds the largest record packed");

/* The zero bytes at b[0..end), up to 128. */
static size_t
zeros_at(const unsigned char *b, size_t end) {
  size_t n = 0;
  while (n < end && n < 128 && !b[n])
    n++;
  return n;
}

size_t
sched_rec_pack(const void *r, size_t size, unsigned char *out) {
  const unsigned char *b = r;
  size_t o = 0, i = 0;
  out[o++] = SCHED_REC_PACKED;
  while (i < size) {
    size_t z = zeros_at(b + i, size - i);
    if (z >= 2 || (z == 1 && i + 1 == size)) {
      out[o++] = (unsigned char)(0x7f + z);
      i += z;
      continue;
    }
    size_t n = 0; /* literal: up to a run of two zeros, 128 at most */
    while (i + n < size && n < 128 && zeros_at(b + i + n, size - i - n) < 2)
      n++;
    out[o++] = (unsigned char)(n - 1);
    memcpy(out + o, b + i, n);
    o += n;
    i += n;
  }
  return o;
}

int
sched_rec_unpack(const void *v, size_t len, void *r, size_t size) {
  const unsigned char *p = v, *end = p + len;
  unsigned char *b = r;
  size_t o = 0;
  if (len == 0 || *p++ != SCHED_REC_PACKED)
    return BUS_ECORRUPT;
  while (p < end) {
    unsigned c = *p++;
    size_t n = c >= 0x80 ? c - 0x7f : c + 1;
    if (o + n > size || (c < 0x80 && n > (size_t)(end - p)))
      return BUS_ECORRUPT;
    if (c >= 0x80) {
      memset(b + o, 0, n);
    } else {
      memcpy(b + o, p, n);
      p += n;
    }
    o += n;
  }
  return o == size && b[0] == SCHED_REC_VERSION ? 0 : BUS_ECORRUPT;
}

static int
get_rec(bus_txn *t, const char *table, const char *name, void *r, size_t size) {
  const void *v;
  size_t len;
  int rc = bus_txn_get(t, table, name, strlen(name), &v, &len);
  if (rc)
    return rc;
  if (sched_rec_unpack(v, len, r, size))
    return bus_error(BUS_ECORRUPT,
                     "%s/%s: record of another layout; rebuild the view "
                     "with larkctl replay scheduler",
                     table, name);
  return 0;
}

static int
put_rec(bus_txn *t, const char *table, const char *name, const void *r,
        size_t size) {
  unsigned char packed[SCHED_REC_PACK_MAX];
  size_t n = sched_rec_pack(r, size, packed);
  return bus_txn_put(t, table, name, strlen(name), packed, n);
}

/* A record's get and put, by its table. */
#define RECORD(fn, table, type)                                                \
  int sched_##fn##_get(bus_txn *t, const char *name, type *r) {                \
    return get_rec(t, table, name, r, sizeof *r);                              \
  }                                                                            \
  int sched_##fn##_put(bus_txn *t, const type *r) {                            \
    return put_rec(t, table, r->name, r, sizeof *r);                           \
  }

RECORD(job, "jobs", job_rec)
RECORD(task, "tasks", task_rec)
RECORD(pod, "pods", pod_rec)
RECORD(noderec, "nodes", node_rec)

int
sched_spec_get(bus_txn *t, const char *table, const char *name,
               const void **data, size_t *len) {
  return bus_txn_get(t, table, name, strlen(name), data, len);
}

int
sched_spec_unpack(bus_txn *t, const char *table, const char *name,
                  msgpack_zone *z, msgpack_object *o) {
  const void *data;
  size_t len;
  int rc = sched_spec_get(t, table, name, &data, &len);
  if (!rc && msgpack_unpack(data, len, NULL, z, o) < 0)
    rc = bus_error(BUS_ECORRUPT, "%s/%s: not msgpack", table, name);
  return rc;
}

int
sched_spec_read(bus_txn *t, bus_type type, const char *name, msgpack_zone *z,
                void *out) {
  msgpack_object o;
  const char *table = type == BUS_T_NODE_REGISTERED ? "nodespecs" : "specs";
  int rc = sched_spec_unpack(t, table, name, z, &o);
  return rc ? rc : bus_data_unpack(type, &o, z, out);
}

int
sched_job_load(bus_txn *t, const char *name, sched_job *job) {
  msgpack_zone z;
  bus_job_res res;
  bus_field_err err;
  int n = 0;
  if (!msgpack_zone_init(&z, 4096))
    return -ENOMEM;
  int rc = sched_spec_read(t, BUS_T_JOB_SUBMITTED, name, &z, &res);
  if (!rc)
    rc = sched_job_read(&res, job, &err, 1, &n);
  msgpack_zone_destroy(&z);
  return rc;
}

typedef struct each_rec {
  size_t size;
  int strict;
  sched_rec_cb cb;
  void *ud;
} each_rec;

static int
visit_rec(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl;
  each_rec *e = ud;
  any_rec r;
  if (sched_rec_unpack(v, vl, &r, e->size))
    return e->strict ? BUS_ECORRUPT : 0;
  return e->cb(&r, e->ud);
}

int
sched_each_rec(bus_txn *t, const char *table, const char *prefix, size_t size,
               int strict, sched_rec_cb cb, void *ud) {
  each_rec e = {size, strict, cb, ud};
  if (size > sizeof(any_rec))
    return BUS_EINVAL;
  return bus_txn_scan(t, table, prefix, prefix ? strlen(prefix) : 0, visit_rec,
                      &e);
}

typedef struct each_pod {
  const char *job;
  sched_pod_cb cb;
  void *ud;
  bus_txn *t;
} each_pod;

static int
visit_pod(void *rec, void *ud) {
  each_pod *e = ud;
  pod_rec *p = rec;
  if (strcmp(p->job, e->job))
    return 0; /* another Job's pod sharing the prefix */
  return e->cb(e->t, p, e->ud);
}

/*
 * The callback may write pods: LMDB cursors stay valid across puts in the
 * same transaction, and we hand it a copy of the record.
 */
int
sched_each_pod(bus_txn *t, const char *job, sched_pod_cb cb, void *ud) {
  char prefix[SCHED_NAME_SZ + 1];
  snprintf(prefix, sizeof prefix, "%s-", job);
  each_pod e = {job, cb, ud, t};
  return sched_each_rec(t, "pods", prefix, sizeof(pod_rec), 1, visit_pod, &e);
}

/* ------------------------------------------------------------------ why */

/* The first byte of a pod's `why` row that names its placement's Why
 * instead of holding it: 0xc1 starts no msgpack object, so a row written
 * before (the Why itself) is told apart. */
#define WHY_LINK 0xc1

/* "<job>/<seq, 16 hex digits>": no pod's name has a '/'. */
static size_t
why_key(char *key, size_t cap, const char *job, uint64_t seq) {
  int n = snprintf(key, cap, "%s/%016llx", job, (unsigned long long)seq);
  return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

int
sched_why_put(bus_txn *t, const char *job, uint64_t seq, const void *why,
              size_t len) {
  char key[SCHED_NAME_SZ + 20];
  size_t kl = why_key(key, sizeof key, job, seq);
  return kl ? bus_txn_put(t, "why", key, kl, why, len) : BUS_EINVAL;
}

int
sched_why_link(bus_txn *t, const char *pod, uint64_t seq) {
  unsigned char v[9] = {WHY_LINK};
  bus_put_be64(v + 1, seq);
  return bus_txn_put(t, "why", pod, strlen(pod), v, sizeof v);
}

int
sched_why_get(bus_txn *t, const pod_rec *p, const void **why, size_t *len) {
  const unsigned char *v;
  char key[SCHED_NAME_SZ + 20];
  int rc =
      bus_txn_get(t, "why", p->name, strlen(p->name), (const void **)&v, len);
  if (rc || *len != 9 || v[0] != WHY_LINK) {
    *why = rc ? NULL : v;
    return rc;
  }
  size_t kl = why_key(key, sizeof key, p->job, sched_seq_of(v + 1));
  rc = kl ? bus_txn_get(t, "why", key, kl, why, len) : BUS_ENOT_FOUND;
  if (rc)
    *why = NULL;
  return rc;
}

static int
take_key(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)v, (void)vl;
  sched_keys *w = ud;
  if (kl < w->skip || kl - w->skip >= sizeof *w->v)
    return 0;
  int rc = bus_grow(&w->v, w->n, &w->cap, sizeof *w->v, 4);
  if (!rc)
    sched_copy(w->v[w->n++], sizeof *w->v, (const char *)k + w->skip,
               kl - w->skip);
  return rc;
}

int
sched_keys_of(bus_txn *t, const char *table, const char *prefix,
              sched_keys *out) {
  *out = (sched_keys){0};
  return bus_txn_scan(t, table, prefix, prefix ? strlen(prefix) : 0, take_key,
                      out);
}

int
sched_key_tails(bus_txn *t, const char *table, const char *prefix,
                sched_keys *out) {
  size_t plen = strlen(prefix);
  *out = (sched_keys){.skip = plen};
  return bus_txn_scan(t, table, prefix, plen, take_key, out);
}

int
sched_why_drop(bus_txn *t, const char *job) {
  char prefix[SCHED_NAME_SZ + 1];
  sched_keys w;
  snprintf(prefix, sizeof prefix, "%s/", job);
  int rc = sched_keys_of(t, "why", prefix, &w);
  for (size_t i = 0; !rc && i < w.n; i++)
    rc = bus_txn_del(t, "why", w.v[i], strlen(w.v[i]));
  free(w.v);
  return rc;
}

static const char *const tables[] = {
    "jobs",      "specs",       "tasks",        "pods", "why",  "nodes",
    "nodespecs", "queue",       "outgoing",     "todo", "held", "rayhead",
    SCHED_GONE,  SCHED_TOUCHED, SCHED_NODEPODS, NULL};

/* A batch's last word: the phases its events touched, derived (decide
 * did it already when it ran). */
static int
commit_touched(bus_txn *t, void *ud) {
  (void)ud;
  return sched_touched_derive(t);
}

void
sched_view_def(bus_view_def *def) {
  memset(def, 0, sizeof *def);
  def->name = "scheduler";
  def->tables = tables;
  def->apply = sched_apply;
  def->decide = sched_decide;
  def->commit = commit_touched;
  def->layout = SCHED_VIEW_LAYOUT;
  def->stream = "LARK_EVENTS";
  def->filter = "lark.ev.>";
}
