/*
 * pack.c - msgpack pack helpers (bus.h, section pack): a C string, and a
 * map entry keyed by a C string with a string, integer, boolean or
 * pre-packed value. Each returns what msgpack-c's packer returns. And
 * bus_packbuf, an sbuffer with its packer; big-endian 64-bit keys.
 */
#include <string.h>

#include "bus.h"

int
bus_pack_str(msgpack_packer *pk, const char *s) {
  size_t len;
  if (!s)
    return msgpack_pack_nil(pk);
  len = strlen(s);
  if (msgpack_pack_str(pk, len) != 0)
    return -1;
  return msgpack_pack_str_body(pk, s, len);
}

int
bus_pack_kv_str(msgpack_packer *pk, const char *k, const char *v) {
  return bus_pack_str(pk, k) || bus_pack_str(pk, v) ? -1 : 0;
}

int
bus_pack_kv_int(msgpack_packer *pk, const char *k, int64_t v) {
  return bus_pack_str(pk, k) || msgpack_pack_int64(pk, v) ? -1 : 0;
}

int
bus_pack_kv_uint(msgpack_packer *pk, const char *k, uint64_t v) {
  return bus_pack_str(pk, k) || msgpack_pack_uint64(pk, v) ? -1 : 0;
}

int
bus_pack_kv_bool(msgpack_packer *pk, const char *k, int v) {
  if (bus_pack_str(pk, k) != 0)
    return -1;
  return v ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
}

int
bus_pack_raw(msgpack_packer *pk, const void *mp, size_t len) {
  if (len == 0)
    return 0;
  return pk->callback(pk->data, mp, len);
}

int
bus_pack_kv_raw(msgpack_packer *pk, const char *k, const void *mp, size_t len) {
  return bus_pack_str(pk, k) || bus_pack_raw(pk, mp, len) ? -1 : 0;
}

void
bus_put_be64(unsigned char *p, uint64_t v) {
  for (int i = 7; i >= 0; i--, v >>= 8)
    p[i] = (unsigned char)v;
}

uint64_t
bus_get_be64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v = v << 8 | p[i];
  return v;
}

void
bus_packbuf_init(bus_packbuf *b) {
  msgpack_sbuffer_init(&b->sb);
  msgpack_packer_init(&b->pk, &b->sb, msgpack_sbuffer_write);
}

void
bus_packbuf_destroy(bus_packbuf *b) {
  msgpack_sbuffer_destroy(&b->sb);
}
