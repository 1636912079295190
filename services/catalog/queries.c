/*
 * queries.c - the catalog's reads: a kind's aggregates, and one
 * aggregate with its history (catalog.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog-int.h"

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
  bus_pack_str(pk, "aggregate");
  pk->callback(pk->data, val, vlen);
  bus_pack_str(pk, "history");
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
