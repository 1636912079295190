/*
 * test_event_via.c - the envelope's one optional field, via: the
 * principal a command came through for its actor (lark-gateway). An event
 * without it has exactly the bytes it had before via existed (the golden
 * sample), one with it the same map plus via after data; bad values are
 * refused both ways; and a command's via comes from its reply inbox
 * _INBOX_<principal> only when that names another principal.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"

static msgpack_zone *zone;

static void
setup(void) {
  zone = msgpack_zone_new(4096);
}

static void
teardown(void) {
  msgpack_zone_free(zone);
}

TestSuite(via, .init = setup, .fini = teardown, .timeout = 30);

/* The golden sample of test_codec: {text, labels} data, alice, cmd-1. */
static void
encode(const char *via, msgpack_sbuffer *out) {
  msgpack_sbuffer d;
  msgpack_sbuffer_init(&d);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &d, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 2);
  bus_pack_kv_str(&pk, "text", "hello");
  bus_pack_str(&pk, "labels");
  msgpack_pack_map(&pk, 1);
  bus_pack_kv_str(&pk, "a", "b");
  bus_event ev = {.type = "sample.created",
                  .id = "0123456789abcdef0123456789abcdef",
                  .ts = 1700000000123456789LL,
                  .actor = "alice",
                  .cause = "cmd-1",
                  .prev = 42,
                  .via = via,
                  .data_mp = d.data,
                  .data_mp_len = d.size};
  msgpack_sbuffer_init(out);
  cr_assert_eq(bus_event_encode(&ev, out), 0, "%s", bus_last_error());
  msgpack_sbuffer_destroy(&d);
}

static char *
golden(size_t *n) {
  char path[1024];
  const char *src = getenv("LARK_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/tests/data/sample_created.mp",
           src ? src : ".");
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "missing %s", path);
  static char buf[4096];
  *n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  return buf;
}

Test(via, absent_keeps_the_bytes) {
  size_t n;
  const char *want = golden(&n);
  const char *none[] = {NULL, ""};
  for (int i = 0; i < 2; i++) {
    msgpack_sbuffer b;
    encode(none[i], &b);
    cr_assert_eq(b.size, n, "via %s", none[i] ? "\"\"" : "NULL");
    cr_assert_eq(memcmp(b.data, want, n), 0);
    bus_event out;
    memset(&out, 0, sizeof out);
    cr_assert_eq(bus_event_decode(b.data, b.size, &out, zone), 0);
    cr_assert_str_eq(out.via, "");
    msgpack_sbuffer_destroy(&b);
  }
}

Test(via, present_round_trips_after_data) {
  size_t n;
  const char *want = golden(&n);
  msgpack_sbuffer b;
  encode("gateway", &b);
  /* the same map with one more entry: fixmap 8 -> 9, then via at the end */
  cr_assert_eq((unsigned char)want[0], 0x88);
  cr_assert_eq((unsigned char)b.data[0], 0x89);
  cr_assert_eq(memcmp(b.data + 1, want + 1, n - 1), 0);
  cr_assert_eq(b.size, n + 4 + 8);
  cr_assert_eq(memcmp(b.data + n, "\xa3via\xa7gateway", 12), 0);
  bus_event out;
  memset(&out, 0, sizeof out);
  cr_assert_eq(bus_event_decode(b.data, b.size, &out, zone), 0, "%s",
               bus_last_error());
  cr_assert_str_eq(out.via, "gateway");
  cr_assert_str_eq(out.actor, "alice");
  cr_assert_str_eq(out.cause, "cmd-1");
  cr_assert_eq(out.prev, 42);
  msgpack_sbuffer_destroy(&b);
}

Test(via, bad_values_are_refused_on_encode) {
  const char *bad[] = {"Gateway",
                       "-gw",
                       "gw-",
                       "a.b",
                       "a b",
                       "0123456789012345678901234567890123456789012345678901"
                       "234567890123"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    msgpack_sbuffer b;
    msgpack_sbuffer_init(&b);
    bus_event ev = {
        .type = "sample.created", .id = "i", .actor = "alice", .via = bad[i]};
    cr_assert_eq(bus_event_encode(&ev, &b), BUS_EFIELD, "%s", bad[i]);
    cr_assert(strstr(bus_last_error(), "via"), "%s", bus_last_error());
    cr_assert_eq(b.size, 0, "nothing written");
    msgpack_sbuffer_destroy(&b);
  }
}

/* The golden sample with via appended as raw msgpack (value bytes vb). */
static int
decode_with(const char *vb, size_t vlen, int twice) {
  size_t n;
  const char *want = golden(&n);
  char buf[4096];
  memcpy(buf, want, n);
  buf[0] = (char)(0x89 + (twice ? 1 : 0));
  size_t at = n;
  for (int k = 0; k <= twice; k++) {
    memcpy(buf + at, "\xa3via", 4);
    memcpy(buf + at + 4, vb, vlen);
    at += 4 + vlen;
  }
  bus_event out;
  memset(&out, 0, sizeof out);
  return bus_event_decode(buf, at, &out, zone);
}

Test(via, bad_values_are_refused_on_decode) {
  cr_assert_eq(decode_with("\xa2gw", 3, 0), 0, "%s", bus_last_error());
  cr_assert_eq(decode_with("\x07", 1, 0), BUS_EMALFORMED, "an integer");
  cr_assert_eq(decode_with("\xc0", 1, 0), BUS_EMALFORMED, "nil");
  cr_assert_eq(decode_with("\xa0", 1, 0), BUS_EFIELD, "empty");
  cr_assert_eq(decode_with("\xa2GW", 3, 0), BUS_EFIELD, "upper case");
  cr_assert_eq(decode_with("\xa4gw\0x", 5, 0), BUS_EFIELD, "a NUL inside");
  cr_assert_eq(decode_with("\xa2gw", 3, 1), BUS_EMALFORMED, "repeated");
}

static void
via_of(const char *subject, const char *reply, const char *want) {
  bus_cmd cmd;
  cr_assert_eq(bus_cmd_parse(subject, reply, NULL, 0, zone, &cmd), 0);
  cr_assert_str_eq(cmd.via, want, "%s reply %s", subject,
                   reply ? reply : "(none)");
}

Test(via, a_command_takes_it_from_its_inbox) {
  via_of("lark.cmd.bob.job.apply", "_INBOX_gateway.abc.1", "gateway");
  via_of("lark.cmd.bob.job.apply", "_INBOX_gateway.x", "gateway");
  /* its own commands, and every other inbox, name none */
  via_of("lark.cmd.gateway.job.apply", "_INBOX_gateway.abc", "");
  via_of("lark.cmd.bob.job.apply",
         "_INBOX_UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4.x",
         "");
  via_of("lark.cmd.bob.job.apply", "_INBOX.abc.1", "");
  via_of("lark.cmd.bob.job.apply", NULL, "");
  via_of("lark.cmd.bob.job.apply", "_INBOX_gateway", "");
  via_of("lark.cmd.bob.job.apply", "_INBOX_.x", "");
  via_of("lark.cmd.bob.job.apply", "_INBOX_Bad_Name.x", "");
  via_of("lark.cmd.bob.job.apply", "reply.here", "");
  via_of("lark.cmd.bob.job.apply",
         "_INBOX_0123456789012345678901234567890123456789012345678901234567"
         "89abcdef.x", /* 64 characters: longer than a name */
         "");
}
