/*
 * queries.c - reads of the signer's view: one certificate, a list of
 * them, and the serial an issuing event id was given.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "signer-int.h"

int
signer_show(bus_txn *t, const char *serial, msgpack_packer *pk) {
  const void *val, *rv;
  size_t len, rlen;
  if (!serial || strlen(serial) >= SIGNER_SERIAL_MAX)
    return BUS_ENOT_FOUND;
  int rc = bus_txn_get(t, T_CERTS, serial, strlen(serial), &val, &len);
  if (rc)
    return rc;
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object o;
  if (!(rc = signer__unpack(val, len, &z, &o))) {
    msgpack_pack_map(pk, o.via.map.size + 1);
    for (uint32_t i = 0; i < o.via.map.size; i++) {
      msgpack_pack_object(pk, o.via.map.ptr[i].key);
      msgpack_pack_object(pk, o.via.map.ptr[i].val);
    }
    bus_pack_str(pk, "revoked");
    if (bus_txn_get(t, T_REVOKED, serial, strlen(serial), &rv, &rlen) == 0)
      pk->callback(pk->data, rv, rlen);
    else
      msgpack_pack_nil(pk);
  }
  msgpack_zone_destroy(&z);
  return rc;
}

typedef struct lister {
  bus_txn *t;
  const char *role;
  size_t limit, n;
  msgpack_packer pk;
} lister;

static void
copy_field(msgpack_packer *pk, const msgpack_object *o, const char *k) {
  const msgpack_object *v = bus_obj_get(o, k);
  bus_pack_str(pk, k);
  if (v)
    msgpack_pack_object(pk, *v);
  else
    msgpack_pack_nil(pk);
}

static int
list_one(const void *key, size_t klen, const void *val, size_t vlen, void *ud) {
  lister *l = ud;
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object o;
  char role[64] = "";
  const void *rv;
  size_t rlen;
  if (signer__unpack(val, vlen, &z, &o) == 0 &&
      (!l->role || !*l->role ||
       (bus_obj_str(&o, "role", role, sizeof role) &&
        !strcmp(role, l->role)))) {
    static const char *const keys[] = {"serial",   "format",     "role",
                                       "name",     "subject",    "notBefore",
                                       "notAfter", "fingerprint"};
    msgpack_pack_map(&l->pk, 9);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
      copy_field(&l->pk, &o, keys[i]);
    bus_pack_str(&l->pk, "revoked");
    if (bus_txn_get(l->t, T_REVOKED, key, klen, &rv, &rlen) == 0)
      msgpack_pack_true(&l->pk);
    else
      msgpack_pack_false(&l->pk);
    l->n++;
  }
  msgpack_zone_destroy(&z);
  return l->limit && l->n == l->limit ? 1 : 0;
}

int
signer_list(bus_txn *t, const char *role, size_t limit, msgpack_packer *pk) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  lister l = {.t = t, .role = role, .limit = limit};
  msgpack_packer_init(&l.pk, &sb, msgpack_sbuffer_write);
  int rc = bus_txn_scan(t, T_CERTS, NULL, 0, list_one, &l);
  if (rc >= 0) {
    msgpack_pack_array(pk, (uint32_t)l.n);
    if (sb.size)
      pk->callback(pk->data, sb.data, sb.size);
    rc = 0;
  }
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

int
signer_query(bus_txn *t, const char *kind, const char *verb,
             const msgpack_object *req, msgpack_packer *pk, void *ud) {
  char role[256] = "", serial[256] = "";
  (void)kind;
  (void)ud;
  int64_t limit = bus_obj_int(req, "limit", 0);
  bus_obj_str(req, "role", role, sizeof role);
  bus_obj_str(req, "serial", serial, sizeof serial);
  if (limit < 0)
    return bus_error(BUS_EFIELD, "limit: a count, 0 for all");
  if (!strcmp(verb, "list"))
    return signer_list(t, role, (size_t)limit, pk);
  if (strcmp(verb, "show"))
    return bus_error(BUS_EINVAL, "verbs: list {role?, limit?}, show {serial}");
  int rc = signer_show(t, serial, pk);
  if (rc == BUS_ENOT_FOUND)
    return bus_error(rc, "no certificate with serial %s", serial);
  return rc;
}

int
signer_request_serial(bus_txn *t, const char *event_id,
                      char serial[SIGNER_SERIAL_MAX]) {
  const void *val;
  size_t len;
  int rc = bus_txn_get(t, T_REQ, event_id, strlen(event_id), &val, &len);
  if (rc)
    return rc;
  if (len >= SIGNER_SERIAL_MAX)
    return BUS_ECORRUPT;
  memcpy(serial, val, len);
  serial[len] = 0;
  return 0;
}
