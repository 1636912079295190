/*
 * fuzz_event.c - libFuzzer harness for bus_event_decode.
 *
 * Whatever decodes must re-encode, decode again to the same envelope, and
 * re-encode to the same bytes: decode accepts nothing encode refuses, and
 * encode's output is canonical. Any violation aborts, which the fuzzer
 * reports as a crash.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "bus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fail(const char *what) {
  fprintf(stderr, "fuzz_event: %s: %s\n", what, bus_last_error());
  abort();
}

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
  if (bus_event_encode(&again, &two) != 0 || one.size != two.size ||
      memcmp(one.data, two.data, one.size) != 0)
    fail("encoding is not stable");
  msgpack_sbuffer_destroy(&one);
  msgpack_sbuffer_destroy(&two);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  msgpack_zone z;
  bus_event ev;
  if (!msgpack_zone_init(&z, 2048))
    return 0;
  memset(&ev, 0, sizeof ev);
  if (bus_event_decode(data, size, &ev, &z) == 0)
    round_trip(&ev, &z);
  msgpack_zone_destroy(&z);
  return 0;
}
