/*
 * fuzz_schema.c - libFuzzer harness for bus_schema_check on arbitrary
 * msgpack. The first byte picks an event type or a resource kind; the rest
 * is the object, passed through the same structural scan the decoder uses
 * (so the unpacker's allocations stay bounded), then checked. The check
 * must agree with itself: a valid object reports no problem, an invalid one
 * at least one, and the stored paths are NUL-terminated.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "bus.h"
#include "schema-int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *
pick(uint8_t b) {
  size_t n = bus__schema_nevents + bus__schema_nresources;
  size_t i = b % (n + 1);
  if (i < bus__schema_nevents)
    return bus__schema_events[i].name;
  if (i < n)
    return bus__schema_resources[i - bus__schema_nevents].name;
  return "no.such-type";
}

static void
check(const char *name, const msgpack_object *o) {
  bus_field_err errs[4];
  int n = -1, rc, i;
  rc = bus_schema_check(name, o, errs, 4, &n);
  if ((rc == 0) != (n == 0) && rc != BUS_EUNKNOWN_TYPE)
    abort();
  for (i = 0; i < n && i < 4; i++)
    if (!memchr(errs[i].path, 0, sizeof errs[i].path) ||
        !memchr(errs[i].reason, 0, sizeof errs[i].reason) || !errs[i].reason[0])
      abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  msgpack_zone z;
  msgpack_object o;
  size_t off = 0;
  if (size < 2 || size > BUS_MAX_PAYLOAD || bus__mp_scan(data + 1, size - 1))
    return 0;
  if (!msgpack_zone_init(&z, 2048))
    return 0;
  if (msgpack_unpack((const char *)data + 1, size - 1, &off, &z, &o) ==
      MSGPACK_UNPACK_SUCCESS)
    check(pick(data[0]), &o);
  msgpack_zone_destroy(&z);
  return 0;
}
