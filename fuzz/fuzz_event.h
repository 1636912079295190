/*
 * fuzz_event.h - what the event harnesses (fuzz_event.c, fuzz_typed.c)
 * share: the abort that names the broken property, the stable-bytes check
 * and the decode of one input. Each harness defines FUZZ_HARNESS, its
 * name, before including it.
 */
#ifndef LARK_FUZZ_EVENT_H
#define LARK_FUZZ_EVENT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "bus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Abort with what broke and libbus's last error: the fuzzer reports it
 * as a crash. */
static inline void
fail(const char *what) {
  fprintf(stderr, "%s: %s: %s\n", FUZZ_HARNESS, what, bus_last_error());
  abort();
}

/* a and b, two packings of one value, must be the same bytes (else
 * "<what> is not stable"); both are freed. */
static inline void
same_bytes(msgpack_sbuffer *a, msgpack_sbuffer *b, const char *what) {
  if (a->size != b->size || memcmp(a->data, b->data, a->size) != 0) {
    char msg[80];
    snprintf(msg, sizeof msg, "%s is not stable", what);
    fail(msg);
  }
  msgpack_sbuffer_destroy(a);
  msgpack_sbuffer_destroy(b);
}

typedef int decode_fn(const void *buf, size_t len, bus_event *ev,
                      msgpack_zone *zone);
typedef void check_fn(const bus_event *ev, msgpack_zone *zone);

/* One input: what decode accepts goes to check, in a zone of its own;
 * what it refuses is passed over. */
static inline int
fuzz_one_event(const uint8_t *data, size_t size, decode_fn *decode,
               check_fn *check) {
  msgpack_zone z;
  bus_event ev;
  if (!msgpack_zone_init(&z, 2048))
    return 0;
  memset(&ev, 0, sizeof ev);
  if (decode(data, size, &ev, &z) == 0)
    check(&ev, &z);
  msgpack_zone_destroy(&z);
  return 0;
}

#endif
