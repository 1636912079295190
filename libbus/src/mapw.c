/*
 * mapw.c - a msgpack map whose size is counted as its entries are
 * written (bus.h "typed data"), for maps no schema type describes: a
 * command's body, a reply. The entries go to a buffer of their own; the
 * header with the count and then the entries go to the packer at the end.
 */
#include <errno.h>
#include <string.h>

#include "bus-int.h"

void
bus_map_begin(bus_map *m, msgpack_packer *out) {
  memset(m, 0, sizeof *m);
  m->out = out;
  msgpack_sbuffer_init(&m->body);
  msgpack_packer_init(&m->pk, &m->body, msgpack_sbuffer_write);
}

msgpack_packer *
bus_map_key(bus_map *m, const char *key) {
  size_t n = strlen(key);
  m->n++;
  m->bad |=
      msgpack_pack_str(&m->pk, n) || msgpack_pack_str_body(&m->pk, key, n);
  return &m->pk;
}

void
bus_map_str(bus_map *m, const char *key, const char *val) {
  msgpack_packer *pk = bus_map_key(m, key);
  size_t n = strlen(val);
  m->bad |= msgpack_pack_str(pk, n) || msgpack_pack_str_body(pk, val, n);
}

void
bus_map_uint(bus_map *m, const char *key, uint64_t val) {
  m->bad |= msgpack_pack_uint64(bus_map_key(m, key), val);
}

int
bus_map_end(bus_map *m) {
  int bad = m->bad || msgpack_pack_map(m->out, m->n) ||
            (m->body.size &&
             m->out->callback(m->out->data, m->body.data, m->body.size));
  msgpack_sbuffer_destroy(&m->body);
  return bad ? BUS_ERR(-ENOMEM, "out of memory packing a map") : 0;
}
