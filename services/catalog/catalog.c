/*
 * catalog.c - apply for the catalog view, and its queries.
 *
 * apply is pure: it reads the event and the aggregate's version record
 * (already advanced by the view, see view.c) and writes two entries. It
 * never reads the previous catalog record, so a rebuild costs three puts
 * per event. Keys are "<kind>/<id>": names hold no '/', so a prefix scan
 * on "<kind>/" lists a kind, and "<kind>/<id>/" one history.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"

#define T_AGG "aggregates"
#define T_HIST "history"
#define KEY_MAX (BUS_SUBJECT_MAX + 16)

static const char *const tables[] = {T_AGG, T_HIST, NULL};

/* lark.ev.<kind>.<id>: kind is one token, id the rest. */
static int
split_subject(const char *subject, char *key, size_t cap, size_t *klen) {
  if (strncmp(subject, "lark.ev.", 8))
    return BUS_EINVAL;
  const char *kind = subject + 8, *dot = strchr(kind, '.');
  if (!dot || dot == kind || !dot[1])
    return BUS_EINVAL;
  int n = snprintf(key, cap, "%.*s/%s", (int)(dot - kind), kind, dot + 1);
  if (n < 0 || (size_t)n >= cap)
    return BUS_EINVAL;
  *klen = (size_t)n;
  return 0;
}

static void
pack_str(msgpack_packer *pk, const char *s) {
  msgpack_pack_str_with_body(pk, s, strlen(s));
}

static void
pack_key(msgpack_packer *pk, const char *k) {
  pack_str(pk, k);
}

static void
pack_aggregate(msgpack_packer *pk, const char *key, size_t klen,
               const bus_event *ev, const bus_version *ver) {
  const char *slash = memchr(key, '/', klen);
  msgpack_pack_map(pk, 9);
  pack_key(pk, "kind");
  msgpack_pack_str_with_body(pk, key, (size_t)(slash - key));
  pack_key(pk, "id");
  msgpack_pack_str_with_body(pk, slash + 1, klen - (size_t)(slash - key) - 1);
  pack_key(pk, "version");
  msgpack_pack_uint64(pk, ver->seq);
  pack_key(pk, "generation");
  msgpack_pack_uint64(pk, ver->generation);
  pack_key(pk, "events");
  msgpack_pack_uint64(pk, ver->count);
  pack_key(pk, "type");
  pack_str(pk, ev->type);
  pack_key(pk, "ts");
  msgpack_pack_int64(pk, ev->ts);
  pack_key(pk, "actor");
  pack_str(pk, ev->actor ? ev->actor : "");
  pack_key(pk, "deleted");
  ver->deleted ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
}

static void
pack_history(msgpack_packer *pk, const bus_event *ev, uint64_t generation) {
  msgpack_pack_map(pk, 6);
  pack_key(pk, "seq");
  msgpack_pack_uint64(pk, ev->seq);
  pack_key(pk, "type");
  pack_str(pk, ev->type);
  pack_key(pk, "ts");
  msgpack_pack_int64(pk, ev->ts);
  pack_key(pk, "actor");
  pack_str(pk, ev->actor ? ev->actor : "");
  pack_key(pk, "cause");
  pack_str(pk, ev->cause ? ev->cause : "");
  pack_key(pk, "generation");
  msgpack_pack_uint64(pk, generation);
}

/* A small stack buffer for msgpack_packer: no malloc on the hot path. */
typedef struct sbuf {
  char data[1024];
  size_t len;
  int overflow;
} sbuf;

static int
sbuf_write(void *ud, const char *p, size_t n) {
  sbuf *b = ud;
  if (b->len + n > sizeof b->data) {
    b->overflow = 1;
    return -1;
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
  return 0;
}

static int
catalog_apply(bus_txn *t, const bus_event *ev, void *ud) {
  (void)ud;
  char key[KEY_MAX];
  size_t klen;
  bus_version ver;
  if (split_subject(ev->subject, key, sizeof key - 9, &klen))
    return BUS_EINVAL;
  int rc = bus_txn_version(t, ev->subject, &ver);
  if (rc)
    return rc;
  sbuf b = {.len = 0};
  msgpack_packer pk;
  msgpack_packer_init(&pk, &b, sbuf_write);
  pack_aggregate(&pk, key, klen, ev, &ver);
  if (b.overflow)
    return BUS_EFIELD;
  if ((rc = bus_txn_put(t, T_AGG, key, klen, b.data, b.len)))
    return rc;
  key[klen] = '/';
  unsigned char *seqp = (unsigned char *)key + klen + 1;
  for (int i = 7; i >= 0; i--)
    seqp[7 - i] = (unsigned char)(ev->seq >> (8 * i));
  b.len = 0;
  pack_history(&pk, ev, ver.generation);
  if (b.overflow)
    return BUS_EFIELD;
  return bus_txn_put(t, T_HIST, key, klen + 9, b.data, b.len);
}

void
catalog_view_def(bus_view_def *def) {
  memset(def, 0, sizeof *def);
  def->name = "catalog";
  def->tables = tables;
  def->apply = catalog_apply;
}

/* ------------------------------------------------------------- queries */

/* Raw msgpack values of a scan, one after another, with their offsets. */
typedef struct collect {
  msgpack_sbuffer items;
  size_t *offs;
  size_t n, cap, limit;
} collect;

static int
collect_raw(const void *key, size_t klen, const void *val, size_t vlen,
            void *ud) {
  (void)key;
  (void)klen;
  collect *c = ud;
  if (c->n == c->cap) {
    size_t cap = c->cap ? 2 * c->cap : 64;
    size_t *offs = realloc(c->offs, cap * sizeof *offs);
    if (!offs)
      return BUS_EINVAL;
    c->offs = offs;
    c->cap = cap;
  }
  c->offs[c->n++] = c->items.size;
  msgpack_sbuffer_write(&c->items, val, vlen);
  return c->limit && c->n == c->limit ? 1 : 0;
}

/*
 * Pack as an array the values under prefix: the first `limit` when
 * !newest, else the newest `limit` (0: all).
 */
static int
pack_scan(bus_txn *t, const char *table, const char *prefix, size_t limit,
          int newest, msgpack_packer *pk) {
  collect c = {.limit = newest ? 0 : limit};
  msgpack_sbuffer_init(&c.items);
  int rc = bus_txn_scan(t, table, prefix, strlen(prefix), collect_raw, &c);
  if (rc >= 0) {
    size_t skip = newest && limit && c.n > limit ? c.n - limit : 0;
    size_t from = skip < c.n ? c.offs[skip] : c.items.size;
    msgpack_pack_array(pk, (uint32_t)(c.n - skip));
    if (c.items.size > from)
      pk->callback(pk->data, c.items.data + from, c.items.size - from);
    rc = 0;
  }
  free(c.offs);
  msgpack_sbuffer_destroy(&c.items);
  return rc;
}

int
catalog_list(bus_txn *t, const char *kind, size_t limit, msgpack_packer *pk) {
  char prefix[BUS_NAME_MAX + 2] = "";
  if (kind && *kind)
    snprintf(prefix, sizeof prefix, "%s/", kind);
  return pack_scan(t, T_AGG, prefix, limit, 0, pk);
}

int
catalog_describe(bus_txn *t, const char *kind, const char *id, size_t limit,
                 msgpack_packer *pk) {
  char key[KEY_MAX];
  int n = snprintf(key, sizeof key, "%s/%s", kind, id);
  if (n < 0 || (size_t)n + 1 >= sizeof key)
    return BUS_ENAME;
  const void *val;
  size_t vlen;
  int rc = bus_txn_get(t, T_AGG, key, (size_t)n, &val, &vlen);
  if (rc)
    return rc;
  msgpack_pack_map(pk, 2);
  pack_key(pk, "aggregate");
  pk->callback(pk->data, val, vlen);
  pack_key(pk, "history");
  strcat(key, "/");
  return pack_scan(t, T_HIST, key, limit, 1, pk);
}

/*
 * The catalog's queries: "list" {kind?, limit?} and "describe" {kind, id,
 * limit?}. The command kind is "catalog"; the aggregate kind travels in
 * the request.
 */
int
catalog_query(bus_txn *t, const char *kind, const char *verb,
              const msgpack_object *req, msgpack_packer *pk, void *ud) {
  (void)kind;
  (void)ud;
  char akind[BUS_NAME_MAX + 1] = "", id[BUS_DERIVED_NAME_MAX + 1] = "";
  bus_obj_str(req, "kind", akind, sizeof akind);
  bus_obj_str(req, "id", id, sizeof id);
  int64_t limit = bus_obj_int(req, "limit", 0);
  if (limit < 0)
    return bus_error(BUS_EFIELD, "limit must not be negative");
  if (!strcmp(verb, "list"))
    return catalog_list(t, akind, (size_t)limit, pk);
  if (strcmp(verb, "describe") || !*akind || !*id)
    return bus_error(BUS_EINVAL,
                     "verbs: list {kind?, limit?}, describe {kind, id}");
  int rc = catalog_describe(t, akind, id, (size_t)limit, pk);
  if (rc == BUS_ENOT_FOUND)
    return bus_error(rc, "the catalog has never seen %s/%s", akind, id);
  return rc;
}
