/*
 * fuzz_event.c - libFuzzer harness for bus_event_decode.
 *
 * Whatever decodes must re-encode, decode again to the same envelope, and
 * re-encode to the same bytes: decode accepts nothing encode refuses, and
 * encode's output is canonical. Any violation aborts, which the fuzzer
 * reports as a crash.
 */
#define FUZZ_HARNESS "fuzz_event"
#include "fuzz_event.h"

static void
same_envelope(const bus_event *a, const bus_event *b) {
  if (a->v != b->v || strcmp(a->type, b->type) != 0 ||
      strcmp(a->id, b->id) != 0 || a->ts != b->ts ||
      strcmp(a->actor, b->actor) != 0 || strcmp(a->cause, b->cause) != 0 ||
      a->prev != b->prev || !msgpack_object_equal(a->data, b->data))
    fail("round trip changed the envelope");
}

static void
round_trip(const bus_event *ev, msgpack_zone *z) {
  msgpack_sbuffer one, two;
  bus_event again;
  msgpack_sbuffer_init(&one);
  msgpack_sbuffer_init(&two);
  if (bus_event_encode(ev, &one) != 0)
    fail("decoded event does not encode");
  memset(&again, 0, sizeof again);
  if (bus_event_decode(one.data, one.size, &again, z) != 0)
    fail("encoded event does not decode");
  same_envelope(ev, &again);
  if (bus_event_encode(&again, &two) != 0)
    fail("a decoded event does not encode again");
  same_bytes(&one, &two, "encoding");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fuzz_one_event(data, size, bus_event_decode, round_trip);
}
