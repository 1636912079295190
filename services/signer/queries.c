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

int
signer_cert_state(bus_txn *t, const char *serial) {
  const void *val;
  size_t len;
  size_t n = serial ? strlen(serial) : 0;
  if (!n || n >= SIGNER_SERIAL_MAX)
    return BUS_ENOT_FOUND;
  int rc = bus_txn_get(t, T_CERTS, serial, n, &val, &len);
  if (!rc && bus_txn_get(t, T_REVOKED, serial, n, &val, &len) == 0)
    rc = BUS_EEXISTS;
  return rc;
}

int
signer_cert_owner(bus_txn *t, const char *serial, char *role, char *name,
                  size_t cap) {
  const void *val;
  size_t len;
  int rc = bus_txn_get(t, T_CERTS, serial, strlen(serial), &val, &len);
  if (!rc)
    rc = signer__row_get(val, len, "role", role, cap, NULL);
  if (!rc)
    rc = signer__row_get(val, len, "name", name, cap, NULL);
  return rc;
}

static void
copy_field(msgpack_packer *pk, const msgpack_object *o, const char *k) {
  const msgpack_object *v = bus_obj_get(o, k);
  bus_pack_str(pk, k);
  if (v)
    msgpack_pack_object(pk, *v);
  else
    msgpack_pack_nil(pk);
}

typedef struct lister {
  bus_txn *t;
  const char *role; /* NULL or "": every role */
} lister;

/* One certificate's summary, when its role is the one asked for. */
static int
list_one(const void *key, size_t klen, const void *val, size_t vlen,
         msgpack_packer *pk, void *ud) {
  static const char *const keys[] = {"serial",   "format",     "role",
                                     "name",     "subject",    "notBefore",
                                     "notAfter", "fingerprint"};
  const lister *l = ud;
  const void *rv;
  size_t rlen;
  char own[64] = "";
  if (l->role && *l->role &&
      (signer__row_get(val, vlen, "role", own, sizeof own, NULL) ||
       strcmp(own, l->role)))
    return 0;
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object o;
  int n = signer__unpack(val, vlen, &z, &o) == 0;
  if (n) {
    msgpack_pack_map(pk, 9);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
      copy_field(pk, &o, keys[i]);
    bus_pack_kv_bool(pk, "revoked",
                     bus_txn_get(l->t, T_REVOKED, key, klen, &rv, &rlen) == 0);
  }
  msgpack_zone_destroy(&z);
  return n;
}

int
signer_list(bus_txn *t, const char *role, size_t limit, msgpack_packer *pk) {
  lister l = {t, role};
  return bus_txn_list(t, T_CERTS, NULL, 0, limit, list_one, &l, pk);
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
