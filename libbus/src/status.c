/*
 * status.c - the status record a service answers with.
 *
 * The record is a msgpack map {name, seq, digest, lag, applied, stale,
 * rejected, outbox, version}; decoding never trusts it: unknown keys are
 * skipped, strings are truncated to their fields, a non-map is BUS_EMALFORMED.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nats-int.h"

static void
copy_str(const msgpack_object *v, char *out, size_t cap) {
  if (v->type != MSGPACK_OBJECT_STR)
    return;
  size_t n = v->via.str.size < cap - 1 ? v->via.str.size : cap - 1;
  memcpy(out, v->via.str.ptr, n);
  out[n] = 0;
}

static void
copy_u64(const msgpack_object *v, uint64_t *out) {
  if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
    *out = v->via.u64;
}

static void
set_field(bus_status *st, const msgpack_object_kv *kv) {
  const msgpack_object_str *k = &kv->key.via.str;
  static const struct {
    const char *name;
    size_t off;
  } nums[] = {
      {"seq", offsetof(bus_status, seq)},
      {"lag", offsetof(bus_status, lag)},
      {"applied", offsetof(bus_status, applied)},
      {"stale", offsetof(bus_status, stale)},
      {"rejected", offsetof(bus_status, rejected)},
      {"outbox", offsetof(bus_status, outbox)},
      {"repositions", offsetof(bus_status, repositions)},
  };
  static const struct {
    const char *name;
    size_t off, cap;
  } strs[] = {
      {"name", offsetof(bus_status, name), sizeof st->name},
      {"digest", offsetof(bus_status, digest), sizeof st->digest},
      {"state", offsetof(bus_status, state), sizeof st->state},
      {"why", offsetof(bus_status, why), sizeof st->why},
      {"version", offsetof(bus_status, version), sizeof st->version},
  };
  if (kv->key.type != MSGPACK_OBJECT_STR)
    return;
  for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
    if (k->size == strlen(strs[i].name) &&
        memcmp(k->ptr, strs[i].name, k->size) == 0)
      copy_str(&kv->val, (char *)st + strs[i].off, strs[i].cap);
  for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
    if (k->size == strlen(nums[i].name) &&
        memcmp(k->ptr, nums[i].name, k->size) == 0)
      copy_u64(&kv->val, (uint64_t *)(void *)((char *)st + nums[i].off));
}

const char *
bus_build_version(void) {
  return LARK_VERSION;
}

int
bus_status_decode(const void *buf, size_t len, bus_status *st) {
  msgpack_unpacked u;
  size_t off = 0;
  int rc = 0;
  memset(st, 0, sizeof *st);
  msgpack_unpacked_init(&u);
  if (msgpack_unpack_next(&u, buf, len, &off) != MSGPACK_UNPACK_SUCCESS ||
      off != len || u.data.type != MSGPACK_OBJECT_MAP) {
    rc = BUS_ERR(BUS_EMALFORMED, "status reply is not a msgpack map");
    goto out;
  }
  for (uint32_t i = 0; i < u.data.via.map.size; i++)
    set_field(st, &u.data.via.map.ptr[i]);
  if (!st->state[0])
    snprintf(st->state, sizeof st->state, "up");
out:
  msgpack_unpacked_destroy(&u);
  return rc;
}

int
bus_status_query(bus_conn *c, const char *name, int timeout_ms,
                 bus_status *st) {
  char subject[BUS_SUBJECT_MAX];
  void *reply = NULL;
  size_t len = 0;
  if (!name || !*name)
    return BUS_ERR(BUS_EINVAL, "status query needs a service name");
  snprintf(subject, sizeof subject, "lark.sys.status.%s", name);
  int rc = bus_conn_request(c, subject, "", 0, timeout_ms, &reply, &len);
  if (rc == 0)
    rc = bus_status_decode(reply, len, st);
  free(reply);
  return rc;
}
