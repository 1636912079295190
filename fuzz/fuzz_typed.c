/*
 * fuzz_typed.c - libFuzzer harness for the generated event types
 * (bus_event_decode_typed and the generated fill and write).
 *
 * Whatever decodes must pack again from its struct, that pack must pass
 * the schema and hold the same data as what was decoded (unordered: the
 * packer writes fields in schema.yaml's order), and packing what the pack
 * decodes to must give the same bytes. Any violation aborts, which the
 * fuzzer reports as a crash.
 */
#define FUZZ_HARNESS "fuzz_typed"
#include "fuzz_event.h"

/* The number of keys of a map, its arrays' lengths, all the way down:
 * enough to catch a field the struct lost or invented. */
static uint64_t
shape(const msgpack_object *o) {
  uint64_t n = 1;
  if (o->type == MSGPACK_OBJECT_ARRAY)
    for (uint32_t i = 0; i < o->via.array.size; i++)
      n += shape(&o->via.array.ptr[i]);
  else if (o->type == MSGPACK_OBJECT_MAP)
    for (uint32_t i = 0; i < o->via.map.size; i++)
      n += 1 + shape(&o->via.map.ptr[i].val);
  return n;
}

static void
pack_unpack(bus_type t, const void *d, msgpack_sbuffer *sb, msgpack_zone *z,
            msgpack_object *o) {
  if (bus_data_pack(t, d, sb) != 0)
    fail("decoded data does not pack");
  if (msgpack_unpack(sb->data, sb->size, NULL, z, o) != MSGPACK_UNPACK_SUCCESS)
    fail("packed data does not unpack");
}

static void
round_trip(const bus_event *ev, msgpack_zone *z) {
  msgpack_sbuffer one, two;
  msgpack_object o1, o2;
  void *back = msgpack_zone_malloc(z, bus_type_size(ev->t));
  msgpack_sbuffer_init(&one);
  msgpack_sbuffer_init(&two);
  if (!back)
    fail("out of memory");
  pack_unpack(ev->t, ev->typed, &one, z, &o1);
  if (shape(&o1) != shape(&ev->data) ||
      o1.via.map.size != ev->data.via.map.size)
    fail("the typed round trip changed the data");
  if (bus_data_unpack(ev->t, &o1, z, back) != 0)
    fail("packed data does not unpack into its type");
  pack_unpack(ev->t, back, &two, z, &o2);
  same_bytes(&one, &two, "packing");
}

static void
check(const bus_event *ev, msgpack_zone *z) {
  if (!ev->typed || bus_type_of(ev->type) != ev->t)
    fail("decoded without its type");
  round_trip(ev, z);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fuzz_one_event(data, size, bus_event_decode_typed, check);
}
