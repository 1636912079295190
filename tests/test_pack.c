/*
 * test_pack.c - the msgpack pack helpers (bus_pack_*): the bytes they
 * write are the ones msgpack-c's own calls write, a map they build reads
 * back with bus_obj_*, and a failing write comes back as -1; and the
 * array helpers (bus_grow, bus_bsearch).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "bus.h"

static msgpack_sbuffer sb, want;
static msgpack_packer pk, wpk;

static void
setup(void) {
  msgpack_sbuffer_init(&sb);
  msgpack_sbuffer_init(&want);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_packer_init(&wpk, &want, msgpack_sbuffer_write);
}

static void
teardown(void) {
  msgpack_sbuffer_destroy(&sb);
  msgpack_sbuffer_destroy(&want);
}

static void
same_bytes(void) {
  cr_assert_eq(sb.size, want.size);
  cr_expect(!memcmp(sb.data, want.data, sb.size));
}

TestSuite(pack, .init = setup, .fini = teardown);

Test(pack, str_as_msgpack_c_writes_it) {
  cr_expect_eq(bus_pack_str(&pk, "hello"), 0);
  cr_expect_eq(bus_pack_str(&pk, ""), 0);
  msgpack_pack_str_with_body(&wpk, "hello", 5);
  msgpack_pack_str_with_body(&wpk, "", 0);
  same_bytes();
}

Test(pack, null_is_nil) {
  cr_expect_eq(bus_pack_str(&pk, NULL), 0);
  msgpack_pack_nil(&wpk);
  same_bytes();
}

Test(pack, long_str) {
  char s[70000];
  memset(s, 'x', sizeof s - 1);
  s[sizeof s - 1] = 0;
  cr_expect_eq(bus_pack_str(&pk, s), 0);
  msgpack_pack_str_with_body(&wpk, s, sizeof s - 1);
  same_bytes();
}

Test(pack, entries_read_back) {
  static const uint8_t raw[] = {0x92, 0x01, 0x02}; /* [1, 2] */
  msgpack_pack_map(&pk, 6);
  cr_expect_eq(bus_pack_kv_str(&pk, "name", "job-a"), 0);
  cr_expect_eq(bus_pack_kv_int(&pk, "delta", -5), 0);
  cr_expect_eq(bus_pack_kv_uint(&pk, "seq", UINT64_MAX), 0);
  cr_expect_eq(bus_pack_kv_bool(&pk, "ok", 7), 0);
  cr_expect_eq(bus_pack_kv_bool(&pk, "dry", 0), 0);
  cr_expect_eq(bus_pack_kv_raw(&pk, "list", raw, sizeof raw), 0);
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object o;
  cr_assert_eq(msgpack_unpack(sb.data, sb.size, NULL, &z, &o),
               MSGPACK_UNPACK_SUCCESS);
  char buf[16];
  cr_expect_str_eq(bus_obj_str(&o, "name", buf, sizeof buf), "job-a");
  cr_expect_eq(bus_obj_int(&o, "delta", 0), -5);
  const msgpack_object *v = bus_obj_get(&o, "seq");
  cr_assert_not_null(v);
  cr_expect_eq(v->via.u64, UINT64_MAX);
  v = bus_obj_get(&o, "ok");
  cr_expect(v && v->type == MSGPACK_OBJECT_BOOLEAN && v->via.boolean);
  v = bus_obj_get(&o, "dry");
  cr_expect(v && v->type == MSGPACK_OBJECT_BOOLEAN && !v->via.boolean);
  v = bus_obj_get(&o, "list");
  cr_expect(v && v->type == MSGPACK_OBJECT_ARRAY && v->via.array.size == 2);
  msgpack_zone_destroy(&z);
}

/* Integers take the smallest form, as msgpack-c's packers give them. */
Test(pack, integers_smallest_form) {
  bus_pack_kv_uint(&pk, "a", 5);
  bus_pack_kv_int(&pk, "b", 300);
  bus_pack_kv_int(&pk, "c", -1);
  msgpack_pack_str_with_body(&wpk, "a", 1);
  msgpack_pack_uint8(&wpk, 5);
  msgpack_pack_str_with_body(&wpk, "b", 1);
  msgpack_pack_uint32(&wpk, 300);
  msgpack_pack_str_with_body(&wpk, "c", 1);
  msgpack_pack_int8(&wpk, -1);
  same_bytes();
}

static int
refuse(void *data, const char *buf, size_t len) {
  (void)data, (void)buf, (void)len;
  return -1;
}

Test(pack, failed_write_is_minus_one) {
  msgpack_packer bad;
  msgpack_packer_init(&bad, NULL, refuse);
  cr_expect_eq(bus_pack_str(&bad, "x"), -1);
  cr_expect_eq(bus_pack_kv_str(&bad, "k", "v"), -1);
  cr_expect_eq(bus_pack_kv_int(&bad, "k", 1), -1);
  cr_expect_eq(bus_pack_kv_uint(&bad, "k", 1), -1);
  cr_expect_eq(bus_pack_kv_bool(&bad, "k", 1), -1);
  cr_expect_eq(bus_pack_kv_raw(&bad, "k", "\xc0", 1), -1);
  cr_expect_eq(bus_pack_raw(&bad, "\xc0", 1), -1);
  cr_expect_eq(bus_pack_raw(&bad, NULL, 0), 0, "nothing to write");
}

Test(pack, packbuf_writes_into_its_buffer) {
  bus_packbuf b;
  bus_packbuf_init(&b);
  cr_assert_eq(b.sb.size, 0);
  cr_expect_eq(msgpack_pack_map(&b.pk, 1), 0);
  cr_expect_eq(bus_pack_kv_str(&b.pk, "name", "j1"), 0);
  msgpack_pack_map(&wpk, 1);
  msgpack_pack_str_with_body(&wpk, "name", 4);
  msgpack_pack_str_with_body(&wpk, "j1", 2);
  cr_assert_eq(b.sb.size, want.size);
  cr_expect(!memcmp(b.sb.data, want.data, want.size));
  bus_packbuf_destroy(&b);
}

Test(pack, packbuf_taken_data_is_not_freed) {
  bus_packbuf b;
  char *data;
  bus_packbuf_init(&b);
  bus_pack_str(&b.pk, "kept");
  data = b.sb.data;
  b.sb.data = NULL;
  bus_packbuf_destroy(&b);
  cr_expect_eq((unsigned char)data[0], 0xa4);
  cr_expect(!memcmp(data + 1, "kept", 4));
  free(data);
}

Test(pack, grow_doubles_and_keeps_items) {
  int *v = NULL;
  size_t n = 0, cap = 0;
  for (int i = 0; i < 100; i++) {
    cr_assert_eq(bus_grow(&v, n, &cap, sizeof *v, 4), 0);
    v[n++] = i;
  }
  cr_expect_eq(cap, 128); /* 4, 8, ..., 128 */
  for (int i = 0; i < 100; i++)
    cr_expect_eq(v[i], i);
  /* room left: nothing moves */
  int *before = v;
  cr_expect_eq(bus_grow(&v, n, &cap, sizeof *v, 4), 0);
  cr_expect_eq(v, before);
  free(v);
  /* an impossible size: -ENOMEM, the array as it was */
  char *big = NULL;
  size_t bcap = 0;
  cr_expect_eq(bus_grow(&big, 0, &bcap, SIZE_MAX / 2, 4), -ENOMEM);
  cr_expect_null(big);
  cr_expect_eq(bcap, 0);
}

static int
by_int(const void *key, const void *item) {
  int a = *(const int *)key, b = *(const int *)item;
  return (a > b) - (a < b);
}

Test(pack, bsearch_finds_or_places) {
  const int v[] = {2, 4, 6, 8};
  int found, k;
  k = 6;
  cr_expect_eq(bus_bsearch(&k, v, 4, sizeof *v, by_int, &found), 2);
  cr_expect_eq(found, 1);
  k = 5;
  cr_expect_eq(bus_bsearch(&k, v, 4, sizeof *v, by_int, &found), 2);
  cr_expect_eq(found, 0);
  k = 1;
  cr_expect_eq(bus_bsearch(&k, v, 4, sizeof *v, by_int, &found), 0);
  cr_expect_eq(found, 0);
  k = 9;
  cr_expect_eq(bus_bsearch(&k, v, 4, sizeof *v, by_int, &found), 4);
  cr_expect_eq(found, 0);
  cr_expect_eq(bus_bsearch(&k, NULL, 0, sizeof *v, by_int, &found), 0);
  cr_expect_eq(found, 0);
}

Test(pack, be64_sorts_as_the_number) {
  unsigned char a[8], b[8];
  bus_put_be64(a, 0x0102030405060708ULL);
  cr_expect_eq(a[0], 0x01);
  cr_expect_eq(a[7], 0x08);
  cr_expect_eq(bus_get_be64(a), 0x0102030405060708ULL);
  bus_put_be64(a, 255);
  bus_put_be64(b, 256);
  cr_expect_lt(memcmp(a, b, 8), 0);
}
