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
lt_sample_event(bus_event *ev, char id[33], const char *type,
                const msgpack_sbuffer *data) {
  memset(ev, 0, sizeof *ev);
  bus_event_new_id(id);
  ev->v = BUS_SCHEMA_VERSION;
  ev->type = type;
  ev->id = id;
  ev->ts = 1;
  ev->actor = "test";
  ev->cause = "";
  if (data) {
    ev->data_mp = data->data;
    ev->data_mp_len = data->size;
  }
}
