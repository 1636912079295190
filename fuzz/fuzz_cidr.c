/*
 * fuzz_cidr.c - libFuzzer harness for bus_cidr_parse, the parser of every
 * prefix a user, a manifest or a node's flags give. The first byte picks
 * the flags; the rest is the text. What parses must agree with itself: its
 * canonical text parses again to the same prefix, it contains its own
 * addresses, and masking leaves a network that contains it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(const bus_cidr *c) {
  char t[BUS_CIDR_TEXT_MAX];
  bus_cidr again, net = *c, first, last;
  int width = c->family == 4 ? 32 : 128;
  if ((c->family != 4 && c->family != 6) || c->prefix < 0 || c->prefix > width)
    abort();
  if (bus_cidr_format(c, t, sizeof t) != 0 ||
      bus_cidr_parse(t, 0, &again) != 0 || memcmp(c, &again, sizeof *c))
    abort();
  bus_cidr_mask(&net);
  if (!bus_cidr_contains(&net, c) || !bus_cidr_contains(c, &net) ||
      bus_cidr_mask(&net) != 0)
    abort();
  uint64_t n = bus_cidr_hosts(c);
  if (n == 0 || bus_cidr_nth(c, 0, &first) != 0 ||
      bus_cidr_nth(c, n - 1, &last) != 0 || !bus_cidr_contains(c, &first) ||
      !bus_cidr_contains(c, &last))
    abort();
  if (n != UINT64_MAX && bus_cidr_nth(c, n, &last) != BUS_EINVAL)
    abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char s[128];
  bus_cidr c;
  if (size == 0)
    return 0;
  unsigned flags = data[0] & 0x0f;
  size_t n = size - 1 < sizeof s - 1 ? size - 1 : sizeof s - 1;
  memcpy(s, data + 1, n);
  s[n] = 0;
  if (bus_cidr_parse(s, flags, &c) == 0)
    check(&c);
  return 0;
}
