/*
 * events.c - sample events for tests and benches.
 */
#include "events.h"

#include <string.h>

void
lt_pack_field(msgpack_sbuffer *sb, const char *key, const char *value) {
  msgpack_packer pk;
  msgpack_sbuffer_init(sb);
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 1);
  bus_pack_str(&pk, key);
  bus_pack_str(&pk, value);
}

void
lt_pack_text(msgpack_sbuffer *sb, const char *text) {
  lt_pack_field(sb, "text", text);
}

void
lt_event(bus_event *ev, char id[33], const char *type, const char *actor,
         int64_t ts, uint64_t prev, const msgpack_sbuffer *data) {
  memset(ev, 0, sizeof *ev); /* data: nil */
  bus_event_new_id(id);
  ev->v = BUS_SCHEMA_VERSION;
  ev->type = type;
  ev->id = id;
  ev->ts = ts;
  ev->actor = actor;
  ev->cause = "";
  ev->prev = prev;
  if (data) {
    ev->data_mp = data->data;
    ev->data_mp_len = data->size;
  }
}

void
lt_sample_event(bus_event *ev, char id[33], const char *type,
                const msgpack_sbuffer *data) {
  lt_event(ev, id, type, "test", 1, 0, data);
}
