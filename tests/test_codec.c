/*
 * test_codec.c - the event envelope: round trips, every error class of
 * encode and decode, ids, names, the msgpack helpers, golden bytes in
 * tests/data/, and hostile bytes that must never crash the decoder.
 *
 * LARK_WRITE_GOLDEN=1 rewrites the .mp files of tests/data from the events
 * below (after a deliberate format change only).
 *
 * It is one file over 600 lines because it is one subject, the envelope's
 * codec: the round trips, error classes, golden bytes and hostile input
 * all build their events with the packers at its top.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <msgpack.h>

#include "bus.h"

static msgpack_zone *zone;
static msgpack_sbuffer sb;

static void
setup(void) {
  zone = msgpack_zone_new(4096);
  msgpack_sbuffer_init(&sb);
}

static void
teardown(void) {
  msgpack_zone_free(zone);
  msgpack_sbuffer_destroy(&sb);
}

TestSuite(codec, .init = setup, .fini = teardown);

/* A packer writing into a fresh sbuffer the caller destroys. */
static msgpack_packer
packer(msgpack_sbuffer *b) {
  msgpack_packer pk;
  msgpack_sbuffer_init(b);
  msgpack_packer_init(&pk, b, msgpack_sbuffer_write);
  return pk;
}

static bus_event
sample_event(const void *data_mp, size_t len) {
  bus_event ev;
  memset(&ev, 0, sizeof ev);
  ev.type = "sample.created";
  ev.id = "0123456789abcdef0123456789abcdef";
  ev.ts = 1700000000123456789LL;
  ev.actor = "alice";
  ev.cause = "cmd-1";
  ev.prev = 42;
  ev.data_mp = data_mp;
  ev.data_mp_len = len;
  return ev;
}

/* {text: "hello", labels: {a: "b"}} packed into b. */
static void
sample_data(msgpack_sbuffer *b) {
  msgpack_packer pk = packer(b);
  msgpack_pack_map(&pk, 2);
  bus_pack_kv_str(&pk, "text", "hello");
  bus_pack_str(&pk, "labels");
  msgpack_pack_map(&pk, 1);
  bus_pack_kv_str(&pk, "a", "b");
}

static void
encode_sample(void) {
  msgpack_sbuffer d;
  bus_event ev;
  sample_data(&d);
  ev = sample_event(d.data, d.size);
  cr_assert_eq(bus_event_encode(&ev, &sb), 0, "%s", bus_last_error());
  msgpack_sbuffer_destroy(&d);
}

Test(codec, round_trip_data_mp) {
  bus_event out;
  char text[16];
  encode_sample();
  memset(&out, 0, sizeof out);
  out.subject = "lark.ev.sample.s";
  out.seq = 9;
  out.stored_ns = 77;
  out.data_mp = "x";
  cr_assert_eq(bus_event_decode(sb.data, sb.size, &out, zone), 0, "%s",
               bus_last_error());
  cr_assert_eq(out.v, 1);
  cr_assert_str_eq(out.type, "sample.created");
  cr_assert_str_eq(out.id, "0123456789abcdef0123456789abcdef");
  cr_assert_eq(out.ts, 1700000000123456789LL);
  cr_assert_str_eq(out.actor, "alice");
  cr_assert_str_eq(out.cause, "cmd-1");
  cr_assert_eq(out.prev, 42);
  cr_assert_str_eq(bus_obj_str(&out.data, "text", text, sizeof text), "hello");
  cr_assert_null(out.data_mp);
  cr_assert_eq(out.data_mp_len, 0);
  cr_assert_str_eq(out.subject, "lark.ev.sample.s");
  cr_assert_eq(out.seq, 9);
  cr_assert_eq(out.stored_ns, 77);
}

Test(codec, round_trip_object_and_reencode) {
  bus_event a, b;
  msgpack_sbuffer again;
  encode_sample();
  memset(&a, 0, sizeof a);
  cr_assert_eq(bus_event_decode(sb.data, sb.size, &a, zone), 0);
  msgpack_sbuffer_init(&again);
  cr_assert_eq(bus_event_encode(&a, &again), 0, "%s", bus_last_error());
  cr_assert_eq(again.size, sb.size);
  cr_assert_eq(memcmp(again.data, sb.data, sb.size), 0);
  memset(&b, 0, sizeof b);
  cr_assert_eq(bus_event_decode(again.data, again.size, &b, zone), 0);
  cr_assert(msgpack_object_equal(a.data, b.data));
  msgpack_sbuffer_destroy(&again);
}

Test(codec, nil_data_is_empty_map_and_cause_may_be_empty) {
  bus_event ev = sample_event(NULL, 0), out;
  ev.type = "sample.deleted";
  ev.cause = NULL;
  ev.data.type = MSGPACK_OBJECT_NIL;
  cr_assert_eq(bus_event_encode(&ev, &sb), 0, "%s", bus_last_error());
  memset(&out, 0, sizeof out);
  cr_assert_eq(bus_event_decode(sb.data, sb.size, &out, zone), 0);
  cr_assert_eq(out.data.type, MSGPACK_OBJECT_MAP);
  cr_assert_eq(out.data.via.map.size, 0);
  cr_assert_str_eq(out.cause, "");
}

Test(codec, decoded_event_lives_in_the_zone) {
  bus_event out;
  char *copy, text[16];
  encode_sample();
  copy = malloc(sb.size);
  memcpy(copy, sb.data, sb.size);
  memset(&out, 0, sizeof out);
  cr_assert_eq(bus_event_decode(copy, sb.size, &out, zone), 0);
  memset(copy, 0xee, sb.size);
  free(copy);
  cr_assert_str_eq(out.id, "0123456789abcdef0123456789abcdef");
  cr_assert_str_eq(bus_obj_str(&out.data, "text", text, sizeof text), "hello");
}

Test(codec, appends_and_keeps_buffer_on_error) {
  bus_event ev = sample_event(NULL, 0);
  size_t before;
  msgpack_sbuffer_write(&sb, "ab", 2);
  encode_sample();
  cr_assert_eq(memcmp(sb.data, "ab", 2), 0);
  before = sb.size;
  ev.type = "sample.exploded";
  cr_assert_eq(bus_event_encode(&ev, &sb), BUS_EUNKNOWN_TYPE);
  cr_assert(strstr(bus_last_error(), "sample.exploded"));
  cr_assert_eq(sb.size, before);
}

Test(codec, encode_errors) {
  bus_event ev = sample_event(NULL, 0);
  msgpack_sbuffer d;
  msgpack_packer pk;
  char id65[66];
  cr_assert_eq(bus_event_encode(NULL, &sb), BUS_EINVAL);
  cr_assert_eq(bus_event_encode(&ev, NULL), BUS_EINVAL);
  ev.type = "job.phase";
  ev.data.type = MSGPACK_OBJECT_NIL; /* job.phase needs its phase */
  cr_assert_eq(bus_event_encode(&ev, &sb), BUS_EMISSING);
  cr_assert(strstr(bus_last_error(), "data.phase"), "%s", bus_last_error());
  ev.type = "sample.deleted";
  ev.id = NULL;
  cr_assert_eq(bus_event_encode(&ev, &sb), BUS_EMISSING);
  ev.id = "has space";
  cr_assert_eq(bus_event_encode(&ev, &sb), BUS_EFIELD);
  cr_assert(strstr(bus_last_error(), "id"));
  memset(id65, 'a', 65);
  id65[65] = 0;
  ev.id = id65;
  cr_assert_eq(bus_event_encode(&ev, &sb), BUS_EFIELD);
  id65[64] = 0;
  cr_assert_eq(bus_event_encode(&ev, &sb), 0, "%s", bus_last_error());
  ev.actor = NULL;
  cr_assert_eq(bus_event_encode(&ev, &sb), BUS_EMISSING);
  ev.actor = "";
  cr_assert_eq(bus_event_encode(&ev, &sb), BUS_EFIELD);
  ev.actor = "bob";
  ev.cause = "a\nb";
  cr_assert_eq(bus_event_encode(&ev, &sb), BUS_EFIELD);
  ev.cause = "";
  ev.type = NULL;
  cr_assert_eq(bus_event_encode(&ev, &sb), BUS_EMISSING);
  ev.type = "nodot";
  cr_assert_eq(bus_event_encode(&ev, &sb), BUS_EUNKNOWN_TYPE);
  /* data_mp that is not one map */
  ev.type = "sample.deleted";
  pk = packer(&d);
  msgpack_pack_array(&pk, 0);
  ev.data_mp = d.data;
  ev.data_mp_len = d.size;
  cr_assert_eq(bus_event_encode(&ev, &sb), BUS_EFIELD);
  ev.data_mp_len = d.size + 1;
  cr_assert_eq(bus_event_encode(&ev, &sb), BUS_EFIELD);
  msgpack_sbuffer_destroy(&d);
  /* an invalid name inside data */
  ev.type = "job.phase";
  pk = packer(&d);
  msgpack_pack_map(&pk, 1);
  bus_pack_kv_str(&pk, "phase", "Lost");
  ev.data_mp = d.data;
  ev.data_mp_len = d.size;
  cr_assert_eq(bus_event_encode(&ev, &sb), BUS_EFIELD);
  cr_assert(strstr(bus_last_error(), "data.phase"));
  msgpack_sbuffer_destroy(&d);
}

/* A Job whose environment makes the event exceed BUS_MAX_PAYLOAD. */
static void
big_job(msgpack_sbuffer *b, int envs, size_t vlen) {
  msgpack_packer pk = packer(b);
  char *val = malloc(vlen + 1);
  int i;
  memset(val, 'v', vlen);
  msgpack_pack_map(&pk, 4);
  bus_pack_kv_str(&pk, "apiVersion", "rlinf.io/v1alpha1");
  bus_pack_kv_str(&pk, "kind", "Job");
  bus_pack_str(&pk, "metadata");
  msgpack_pack_map(&pk, 1);
  bus_pack_kv_str(&pk, "name", "big");
  bus_pack_str(&pk, "spec");
  msgpack_pack_map(&pk, 1);
  bus_pack_str(&pk, "tasks");
  msgpack_pack_array(&pk, 1);
  msgpack_pack_map(&pk, 3);
  bus_pack_kv_str(&pk, "name", "t");
  bus_pack_kv_str(&pk, "role", "Env");
  bus_pack_str(&pk, "runtime");
  msgpack_pack_map(&pk, 1);
  bus_pack_str(&pk, "raw");
  msgpack_pack_map(&pk, 2);
  bus_pack_str(&pk, "entrypoint");
  msgpack_pack_array(&pk, 1);
  bus_pack_kv_str(&pk, "x", "environment");
  msgpack_pack_array(&pk, (size_t)envs);
  for (i = 0; i < envs; i++) {
    msgpack_pack_map(&pk, 2);
    bus_pack_kv_str(&pk, "name", "E");
    bus_pack_str(&pk, "value");
    msgpack_pack_str_with_body(&pk, val, vlen);
  }
  free(val);
}

Test(codec, too_big) {
  msgpack_sbuffer d;
  msgpack_object o;
  size_t off = 0;
  bus_event ev = sample_event(NULL, 0);
  ev.type = "job.submitted";
  big_job(&d, 33, 32768); /* 33 * 32 KiB > 1 MiB */
  ev.data_mp = d.data;
  ev.data_mp_len = d.size;
  cr_assert_eq(bus_event_encode(&ev, &sb), BUS_ETOO_BIG, "%s",
               bus_last_error());
  cr_assert_eq(sb.size, 0);
  cr_assert_eq(msgpack_unpack(d.data, d.size, &off, zone, &o),
               MSGPACK_UNPACK_SUCCESS);
  ev.data_mp = NULL;
  ev.data = o;
  cr_assert_eq(bus_event_encode(&ev, &sb), BUS_ETOO_BIG, "%s",
               bus_last_error());
  cr_assert_eq(sb.size, 0);
  msgpack_sbuffer_destroy(&d);
  big_job(&d, 31, 32768);
  ev.data_mp = d.data;
  ev.data_mp_len = d.size;
  cr_assert_eq(bus_event_encode(&ev, &sb), 0, "%s", bus_last_error());
  msgpack_sbuffer_destroy(&d);
  memset(&ev, 0, sizeof ev);
  cr_assert_eq(bus_event_decode(sb.data, BUS_MAX_PAYLOAD + 1, &ev, zone),
               BUS_ETOO_BIG);
}

/* ------------------------------------------------------ hostile decode */

/* An envelope with field `skip` left out and field `bad` of the wrong
 * msgpack type; -1 for neither. extra adds an unknown key. */
static void
envelope(msgpack_sbuffer *b, int skip, int bad, int extra, uint64_t v) {
  static const char *const keys[] = {"v",     "type",  "id",   "ts",
                                     "actor", "cause", "prev", "data"};
  msgpack_packer pk = packer(b);
  int i;
  msgpack_pack_map(&pk, (size_t)(8 - (skip >= 0) + extra));
  for (i = 0; i < 8; i++) {
    if (i == skip)
      continue;
    bus_pack_str(&pk, keys[i]);
    if (i == bad) {
      msgpack_pack_array(&pk, 0);
      continue;
    }
    switch (i) {
    case 0:
      msgpack_pack_uint64(&pk, v);
      break;
    case 1:
      bus_pack_str(&pk, "job.stopped");
      break;
    case 2:
      bus_pack_str(&pk, "id-1");
      break;
    case 3:
      msgpack_pack_int64(&pk, -5);
      break;
    case 4:
      bus_pack_str(&pk, "alice");
      break;
    case 5:
      bus_pack_str(&pk, "");
      break;
    case 6:
      msgpack_pack_uint64(&pk, 3);
      break;
    default:
      msgpack_pack_map(&pk, 0);
      break;
    }
  }
  if (extra) {
    bus_pack_str(&pk, "extra");
    msgpack_pack_nil(&pk);
  }
}

static int
decode(const msgpack_sbuffer *b) {
  bus_event ev;
  memset(&ev, 0, sizeof ev);
  return bus_event_decode(b->data, b->size, &ev, zone);
}

Test(codec, envelope_errors) {
  msgpack_sbuffer b;
  bus_event ev;
  int i;
  envelope(&b, -1, -1, 0, 1);
  cr_assert_eq(decode(&b), 0, "%s", bus_last_error());
  msgpack_sbuffer_destroy(&b);
  for (i = 0; i < 8; i++) {
    envelope(&b, i, -1, 0, 1);
    cr_assert_eq(decode(&b), BUS_EMISSING, "field %d: %s", i, bus_last_error());
    msgpack_sbuffer_destroy(&b);
    envelope(&b, -1, i, 0, 1);
    cr_assert_eq(decode(&b), BUS_EMALFORMED, "field %d: %s", i,
                 bus_last_error());
    msgpack_sbuffer_destroy(&b);
  }
  envelope(&b, -1, -1, 1, 1);
  cr_assert_eq(decode(&b), BUS_EMALFORMED);
  cr_assert(strstr(bus_last_error(), "extra"));
  msgpack_sbuffer_destroy(&b);
  envelope(&b, -1, -1, 0, 2);
  cr_assert_eq(decode(&b), BUS_EVERSION);
  msgpack_sbuffer_destroy(&b);
  envelope(&b, -1, -1, 1, 2); /* newer version wins over unknown keys */
  cr_assert_eq(decode(&b), BUS_EVERSION);
  msgpack_sbuffer_destroy(&b);
  envelope(&b, -1, -1, 0, 0);
  cr_assert_eq(decode(&b), BUS_EMALFORMED);
  /* trailing bytes, and a failure leaves ev alone */
  msgpack_sbuffer_write(&b, "\xc0", 1);
  memset(&ev, 0, sizeof ev);
  ev.id = "untouched";
  cr_assert_eq(bus_event_decode(b.data, b.size, &ev, zone), BUS_EMALFORMED);
  cr_assert(strstr(bus_last_error(), "trailing"));
  cr_assert_str_eq(ev.id, "untouched");
  msgpack_sbuffer_destroy(&b);
}

Test(codec, decode_type_and_data_errors) {
  msgpack_sbuffer b;
  msgpack_packer pk = packer(&b);
  bus_event ev;
  msgpack_pack_map(&pk, 8);
  bus_pack_kv_uint(&pk, "v", 1);
  bus_pack_kv_str(&pk, "type", "job.exploded");
  bus_pack_kv_str(&pk, "id", "i");
  bus_pack_kv_int(&pk, "ts", 1);
  bus_pack_kv_str(&pk, "actor", "a");
  bus_pack_kv_str(&pk, "cause", "");
  bus_pack_kv_uint(&pk, "prev", 0);
  bus_pack_str(&pk, "data");
  msgpack_pack_map(&pk, 2);
  bus_pack_kv_str(&pk, "domain", "Bad_Name");
  bus_pack_kv_str(&pk, "job", "j");
  memset(&ev, 0, sizeof ev);
  cr_assert_eq(bus_event_decode(b.data, b.size, &ev, zone), BUS_EUNKNOWN_TYPE);
  cr_assert(strstr(bus_last_error(), "job.exploded"));
  /* same length, so the bytes can be patched in place */
  memcpy(memmem(b.data, b.size, "job.exploded", 12), "domain.nope1", 12);
  cr_assert_eq(bus_event_decode(b.data, b.size, &ev, zone), BUS_EUNKNOWN_TYPE);
  msgpack_sbuffer_destroy(&b);
}

Test(codec, decode_invalid_name_in_data) {
  msgpack_sbuffer d;
  msgpack_packer pk = packer(&d);
  bus_event ev = sample_event(NULL, 0), out;
  msgpack_pack_map(&pk, 2);
  bus_pack_kv_str(&pk, "domain", "ok");
  bus_pack_kv_str(&pk, "job", "j");
  ev.type = "domain.exhausted";
  ev.data_mp = d.data;
  ev.data_mp_len = d.size;
  cr_assert_eq(bus_event_encode(&ev, &sb), 0, "%s", bus_last_error());
  /* "ok" -> "OK": same bytes count, now not a name */
  memcpy(memmem(sb.data, sb.size, "\xa2ok", 3), "\xa2OK", 3);
  memset(&out, 0, sizeof out);
  cr_assert_eq(bus_event_decode(sb.data, sb.size, &out, zone), BUS_ENAME);
  cr_assert(strstr(bus_last_error(), "data.domain"), "%s", bus_last_error());
  msgpack_sbuffer_destroy(&d);
}

Test(codec, hostile_bytes) {
  static const struct {
    const char *bytes;
    size_t len;
  } cases[] = {
      {"", 0},
      {"\xc1", 1},                     /* never used */
      {"\x93\x01\x02", 3},             /* truncated array */
      {"\xdd\xff\xff\xff\xff", 5},     /* array of 4G items */
      {"\xdf\xff\xff\xff\xff", 5},     /* map of 4G pairs */
      {"\xdb\xff\xff\xff\xff", 5},     /* str of 4 GiB */
      {"\xc6\x7f\xff\xff\xff\x00", 6}, /* bin of 2 GiB */
      {"\xc9\xff\xff\xff\xff\x01", 6}, /* ext of 4 GiB */
      {"\x81\xa1v", 3},                /* map missing a value */
      {"\x01", 1},                     /* not a map */
      {"\x80", 1},                     /* empty map */
      {"\x81\x01\x02", 3},             /* integer key */
  };
  size_t i;
  for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    bus_event ev;
    int rc;
    memset(&ev, 0, sizeof ev);
    rc = bus_event_decode(cases[i].bytes, cases[i].len, &ev, zone);
    cr_assert(rc == BUS_EMALFORMED || rc == BUS_EMISSING, "case %zu: %s", i,
              bus_err_name(rc));
  }
}

Test(codec, deep_nesting) {
  char buf[200];
  bus_event ev;
  memset(buf, 0x91, sizeof buf); /* [[[[...]]]] */
  buf[sizeof buf - 1] = 0x01;
  memset(&ev, 0, sizeof ev);
  cr_assert_eq(bus_event_decode(buf, sizeof buf, &ev, zone), BUS_EMALFORMED);
  cr_assert(strstr(bus_last_error(), "deeper"), "%s", bus_last_error());
}

Test(codec, every_prefix_and_bit_flip_is_safe) {
  size_t cut, i;
  unsigned seed = 12345;
  encode_sample();
  for (cut = 0; cut < sb.size; cut++) {
    bus_event ev;
    memset(&ev, 0, sizeof ev);
    cr_assert_eq(bus_event_decode(sb.data, cut, &ev, zone), BUS_EMALFORMED,
                 "prefix %zu decoded", cut);
  }
  for (i = 0; i < 20000; i++) {
    char *copy = malloc(sb.size);
    bus_event ev;
    size_t k;
    int rc;
    memcpy(copy, sb.data, sb.size);
    for (k = 0; k < 1 + i % 4; k++) {
      seed = seed * 1103515245u + 12345u;
      copy[(seed >> 8) % sb.size] ^= (char)(1u << ((seed >> 4) % 8));
    }
    memset(&ev, 0, sizeof ev);
    rc = bus_event_decode(copy, sb.size, &ev, zone);
    cr_assert(rc == 0 || (rc <= -4001 && rc > -4100), "rc %d", rc);
    if (rc == 0)
      cr_assert_not_null(ev.type);
    free(copy);
    if (i % 512 == 0)
      msgpack_zone_clear(zone);
  }
}

/* ----------------------------------------------------------------- ids */

static int
is_hex32(const char *s) {
  size_t i;
  for (i = 0; i < 32; i++)
    if (!strchr("0123456789abcdef", s[i]) || !s[i])
      return 0;
  return s[32] == 0;
}

Test(codec, ids) {
  char a[33], b[33], c[33], d[33];
  bus_event_new_id(a);
  bus_event_new_id(b);
  cr_assert(is_hex32(a) && is_hex32(b));
  cr_assert_str_neq(a, b);
  bus_event_derive_id("cause-1", 0, a);
  bus_event_derive_id("cause-1", 0, b);
  bus_event_derive_id("cause-1", 1, c);
  bus_event_derive_id("cause-2", 0, d);
  cr_assert(is_hex32(a));
  cr_assert_str_eq(a, b);
  cr_assert_str_neq(a, c);
  cr_assert_str_neq(a, d);
  /* pinned: a derived id must never change between versions */
  bus_event_derive_id("", 0, a);
  bus_event_derive_id(NULL, 0, b);
  cr_assert_str_eq(a, b);
  bus_event_derive_id("cause-1", 0, a);
  cr_assert_str_eq(a, "28f1f7b497f460aac361cef1bd31e6df");
}

Test(codec, kind) {
  char k[8];
  cr_assert_eq(bus_event_kind("job.submitted", k, sizeof k), 0);
  cr_assert_str_eq(k, "job");
  cr_assert_eq(bus_event_kind("workflow.submitted", k, 4), BUS_EINVAL);
  cr_assert_str_eq(k, "");
  cr_assert_eq(bus_event_kind("nodot", k, sizeof k), BUS_EINVAL);
  cr_assert_eq(bus_event_kind(".x", k, sizeof k), BUS_EINVAL);
  cr_assert_eq(bus_event_kind(NULL, k, sizeof k), BUS_EINVAL);
}

Test(codec, names) {
  char n[256];
  cr_assert(bus_name_valid("gpu-1", BUS_NAME_MAX));
  cr_assert(bus_name_valid("a", BUS_NAME_MAX));
  cr_assert(bus_name_valid("0", BUS_NAME_MAX));
  cr_assert_not(bus_name_valid("", BUS_NAME_MAX));
  cr_assert_not(bus_name_valid(NULL, BUS_NAME_MAX));
  cr_assert_not(bus_name_valid("Gpu", BUS_NAME_MAX));
  cr_assert_not(bus_name_valid("-a", BUS_NAME_MAX));
  cr_assert_not(bus_name_valid("a-", BUS_NAME_MAX));
  cr_assert_not(bus_name_valid("a.b", BUS_NAME_MAX));
  cr_assert_not(bus_name_valid("a_b", BUS_NAME_MAX));
  cr_assert_not(bus_name_valid("a b", BUS_NAME_MAX));
  memset(n, 'a', 63);
  n[63] = 0;
  cr_assert(bus_name_valid(n, BUS_NAME_MAX));
  n[63] = 'a';
  n[64] = 0;
  cr_assert_not(bus_name_valid(n, BUS_NAME_MAX));
  cr_assert(bus_name_valid(n, BUS_DERIVED_NAME_MAX));
  memset(n, 'b', 254);
  n[253] = 0;
  cr_assert(bus_name_valid(n, BUS_DERIVED_NAME_MAX));
  n[253] = 'b';
  n[254] = 0;
  cr_assert_not(bus_name_valid(n, BUS_DERIVED_NAME_MAX));
}

Test(codec, obj_helpers) {
  msgpack_sbuffer b;
  msgpack_packer pk = packer(&b);
  msgpack_object o;
  size_t off = 0;
  char buf[4];
  msgpack_pack_map(&pk, 4);
  bus_pack_kv_str(&pk, "name", "gpu-1");
  bus_pack_kv_int(&pk, "neg", -7);
  bus_pack_kv_uint(&pk, "pos", 9);
  bus_pack_kv_uint(&pk, "huge", UINT64_MAX);
  cr_assert_eq(msgpack_unpack(b.data, b.size, &off, zone, &o),
               MSGPACK_UNPACK_SUCCESS);
  cr_assert_not_null(bus_obj_get(&o, "name"));
  cr_assert_null(bus_obj_get(&o, "nam"));
  cr_assert_null(bus_obj_get(NULL, "name"));
  cr_assert_str_eq(bus_obj_str(&o, "name", buf, sizeof buf), "gpu");
  cr_assert_null(bus_obj_str(&o, "neg", buf, sizeof buf));
  cr_assert_null(bus_obj_str(&o, "none", buf, sizeof buf));
  cr_assert_eq(bus_obj_int(&o, "neg", 0), -7);
  cr_assert_eq(bus_obj_int(&o, "pos", 0), 9);
  cr_assert_eq(bus_obj_int(&o, "huge", 5), 5);
  cr_assert_eq(bus_obj_int(&o, "name", 5), 5);
  cr_assert_eq(bus_obj_int(&o, "none", 6), 6);
  cr_assert_null(bus_obj_get(&o.via.map.ptr[1].val, "x"));
  msgpack_sbuffer_destroy(&b);
}

/* ------------------------------------------------------------- golden */

static void
golden(const char *name, const msgpack_sbuffer *b) {
  const char *src = getenv("LARK_SOURCE_DIR");
  char path[1024];
  FILE *f;
  char *want;
  long n;
  snprintf(path, sizeof path, "%s/tests/data/%s", src ? src : ".", name);
  if (getenv("LARK_WRITE_GOLDEN")) {
    f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    fwrite(b->data, 1, b->size, f);
    fclose(f);
  }
  f = fopen(path, "rb");
  cr_assert_not_null(f, "missing %s", path);
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  rewind(f);
  want = malloc((size_t)n + 1);
  cr_assert_eq(fread(want, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  cr_assert_eq((size_t)n, b->size, "%s: %ld bytes, encoded %zu", name, n,
               b->size);
  cr_assert_eq(memcmp(want, b->data, b->size), 0, "%s differs", name);
  free(want);
}

Test(codec, golden_sample) {
  bus_event out;
  encode_sample();
  golden("sample_created.mp", &sb);
  memset(&out, 0, sizeof out);
  cr_assert_eq(bus_event_decode(sb.data, sb.size, &out, zone), 0);
}

Test(codec, golden_job) {
  msgpack_sbuffer d;
  bus_event ev = sample_event(NULL, 0), out;
  ev.type = "job.submitted";
  ev.prev = 0;
  big_job(&d, 2, 20);
  ev.data_mp = d.data;
  ev.data_mp_len = d.size;
  cr_assert_eq(bus_event_encode(&ev, &sb), 0, "%s", bus_last_error());
  golden("job_submitted.mp", &sb);
  memset(&out, 0, sizeof out);
  cr_assert_eq(bus_event_decode(sb.data, sb.size, &out, zone), 0);
  msgpack_sbuffer_destroy(&d);
}
