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
  if (!ev->subject || strncmp(ev->subject, SUBJ, strlen(SUBJ)))
    return BUS_EINVAL;
  const char *tok = ev->subject + strlen(SUBJ);
  if (!field.ptr || strcmp(bus_str_copy(field, serial, cap), tok))
    return BUS_EINVAL;
  return 0;
}

int
signer__put_record(bus_txn *t, const char *table, const char *key,
                   const bus_event *ev) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  signer__pack_record(&pk, ev, &ev->data);
  int rc = sb.data ? bus_txn_put(t, table, key, strlen(key), sb.data, sb.size)
                   : -ENOMEM;
  msgpack_sbuffer_destroy(&sb);
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
