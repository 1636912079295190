/*
 * fuzz_wreq.c - libFuzzer harness for the relay's weights requests
 * (netrelay/wreq.c): the line a fetcher sends to `lark-relay node
 * --weights-listen` and the channel destination the hub and the far relay
 * read. The first byte picks which; the rest is the input. What parses
 * must agree with itself: names are names, the address is canonical (it
 * parses again to itself), and its destination form parses back to the
 * same request.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(const relay_wreq *r) {
  char dest[RELAY_WREQ_MAX + 64], canon[RELAY_ADDR_MAX], ip[RELAY_IP_MAX],
      why[256];
  relay_wreq again;
  int port;
  if (!bus_name_valid(r->job, BUS_NAME_MAX) ||
      !bus_name_valid(r->from, BUS_NAME_MAX) ||
      !bus_name_valid(r->to, BUS_NAME_MAX) || r->port < 1 || r->port > 65535)
    abort();
  if (relay_addr_canon(r->addr, strlen(r->addr), canon, ip, &port) ||
      strcmp(canon, r->addr) || strcmp(ip, r->ip) || port != r->port)
    abort();
  relay_wreq_dest(r, dest, sizeof dest);
  if (!relay_wreq_is_dest(dest) ||
      relay_wreq_parse_dest(dest, &again, why, sizeof why) ||
      memcmp(&again, r, sizeof again))
    abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  relay_wreq r;
  char why[256] = "";
  if (size < 1)
    return 0;
  size_t n = size - 1;
  char *s = malloc(n + 1);
  if (!s)
    return 0;
  memcpy(s, data + 1, n);
  s[n] = 0;
  int rc = data[0] & 1 ? relay_wreq_parse_dest(s, &r, why, sizeof why)
                       : relay_wreq_parse_line(s, n, &r, why, sizeof why);
  if (rc && !why[0])
    abort(); /* a refusal says why */
  if (!rc)
    check(&r);
  free(s);
  return 0;
}
