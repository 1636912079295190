/*
 * records.c - the signer's rows: a record is the event's data plus {seq,
 * ts, actor}, so `cert show` returns what the signer published,
 * certificate included; a certificate's serial is its subject's last
 * token.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "signer-int.h"

/* The event's data entries plus seq, ts and actor. */
void
signer__pack_record(msgpack_packer *pk, const bus_event *ev,
                    const msgpack_object *d) {
  uint32_t n = d->type == MSGPACK_OBJECT_MAP ? d->via.map.size : 0;
  msgpack_pack_map(pk, n + 3);
  for (uint32_t i = 0; i < n; i++) {
    msgpack_pack_object(pk, d->via.map.ptr[i].key);
    msgpack_pack_object(pk, d->via.map.ptr[i].val);
  }
  bus_pack_str(pk, "seq");
  msgpack_pack_uint64(pk, ev->seq);
  bus_pack_str(pk, "ts");
  msgpack_pack_int64(pk, ev->ts);
  bus_pack_str(pk, "actor");
  bus_pack_str(pk, ev->actor ? ev->actor : "");
}

/* The serial the subject names, which must equal data.serial. */
int
signer__serial_of(const bus_event *ev, bus_str field, char *serial,
                  size_t cap) {
  char want[BUS_SUBJECT_MAX];
  if (!field.ptr || !ev->subject)
    return BUS_EINVAL;
  bus_str_copy(field, serial, cap);
  if (bus_subj_cert_issued(want, sizeof want, serial) ||
      strcmp(want, ev->subject))
    return BUS_EINVAL;
  return 0;
}

int
signer__put_record(bus_txn *t, const char *table, const char *key,
                   const bus_event *ev) {
  bus_packbuf b;
  bus_packbuf_init(&b);
  signer__pack_record(&b.pk, ev, &ev->data);
  int rc = b.sb.data
               ? bus_txn_put(t, table, key, strlen(key), b.sb.data, b.sb.size)
               : -ENOMEM;
  bus_packbuf_destroy(&b);
  return rc;
}

int
signer__unpack(const void *val, size_t len, msgpack_zone *z,
               msgpack_object *o) {
  size_t off = 0;
  if (msgpack_unpack(val, len, &off, z, o) != MSGPACK_UNPACK_SUCCESS ||
      o->type != MSGPACK_OBJECT_MAP)
    return BUS_ECORRUPT;
  return 0;
}

int
signer__row_get(const void *val, size_t len, const char *key, char *buf,
                size_t cap, int64_t *num) {
  msgpack_zone z;
  msgpack_zone_init(&z, 512);
  msgpack_object o;
  int rc = signer__unpack(val, len, &z, &o);
  if (buf && cap)
    buf[0] = 0;
  if (!rc && buf)
    bus_obj_str(&o, key, buf, cap);
  if (!rc && num)
    *num = bus_obj_int(&o, key, 0);
  msgpack_zone_destroy(&z);
  return rc;
}
