/*
 * records.c - the catalog's rows and their codecs: the key "<kind>/<id>"
 * of an aggregate subject, and the msgpack of an aggregate and of one
 * history entry (catalog.h lists the tables).
 */
#include <stdio.h>
#include <string.h>

#include "catalog-int.h"

/* lark.ev.<kind>.<id>: kind is one token, id the rest. */
int
catalog__split_subject(const char *subject, char *key, size_t cap,
                       size_t *klen) {
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

/* What both rows say of the event: its type, time and actor. */
static void
pack_origin(msgpack_packer *pk, const bus_event *ev) {
  bus_pack_kv_str(pk, "type", ev->type);
  bus_pack_kv_int(pk, "ts", ev->ts);
  bus_pack_kv_str(pk, "actor", ev->actor ? ev->actor : "");
}

void
catalog__pack_aggregate(msgpack_packer *pk, const char *key, size_t klen,
                        const bus_event *ev, const bus_version *ver) {
  const char *slash = memchr(key, '/', klen);
  msgpack_pack_map(pk, 9);
  bus_pack_str(pk, "kind");
  msgpack_pack_str_with_body(pk, key, (size_t)(slash - key));
  bus_pack_str(pk, "id");
  msgpack_pack_str_with_body(pk, slash + 1, klen - (size_t)(slash - key) - 1);
  bus_pack_kv_uint(pk, "version", ver->seq);
  bus_pack_kv_uint(pk, "generation", ver->generation);
  bus_pack_kv_uint(pk, "events", ver->count);
  pack_origin(pk, ev);
  bus_pack_kv_bool(pk, "deleted", ver->deleted);
}

void
catalog__pack_history(msgpack_packer *pk, const bus_event *ev,
                      uint64_t generation) {
  msgpack_pack_map(pk, 6);
  bus_pack_kv_uint(pk, "seq", ev->seq);
  pack_origin(pk, ev);
  bus_pack_kv_str(pk, "cause", ev->cause ? ev->cause : "");
  bus_pack_kv_uint(pk, "generation", generation);
}
