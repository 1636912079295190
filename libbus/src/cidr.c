/*
 * cidr.c - IPv4 and IPv6 prefixes (bus.h, section cidr): one parser for
 * "10.0.0.0/16" and "fd00::/64" text, its canonical form, and the
 * arithmetic every user of a prefix needs (containment, size, the n-th
 * address). Allocation policy (which addresses are usable, how a range is
 * cut into blocks) stays with the caller.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "bus-int.h"

#define CIDR_IN_MAX 64 /* longer text is never a prefix */

static int
width(int family) {
  return family == 4 ? 32 : 128;
}

static int
bytes_of(int family) {
  return family == 4 ? 4 : 16;
}

/* Zero the bits of a[0..bytes) past prefix; 1 when some were set. */
static int
clear_host(uint8_t *a, int bytes, int prefix) {
  int dirty = 0;
  for (int i = 0; i < bytes; i++) {
    int keep = prefix - 8 * i;
    uint8_t m = keep >= 8   ? 0xff
                : keep <= 0 ? 0
                            : (uint8_t)(0xff << (8 - keep));
    dirty |= (a[i] & ~m) != 0;
    a[i] &= m;
  }
  return dirty;
}

/* The prefix length: 1 to 3 decimal digits, nothing else. */
static int
parse_len(const char *p) {
  size_t n = strlen(p);
  if (n == 0 || n > 3 || strspn(p, "0123456789") != n)
    return -1;
  int v = 0;
  for (size_t i = 0; i < n; i++)
    v = v * 10 + (p[i] - '0');
  return v;
}

static int
parse_addr(const char *a, unsigned flags, bus_cidr *out) {
  int v4ok = !(flags & BUS_CIDR_IPV6), v6ok = !(flags & BUS_CIDR_IPV4);
  if (v4ok && inet_pton(AF_INET, a, out->addr) == 1)
    out->family = 4;
  else if (v6ok && inet_pton(AF_INET6, a, out->addr) == 1)
    out->family = 6;
  else
    return BUS_ERR(BUS_EINVAL, "%s is not an %s address", a,
                   !v6ok   ? "IPv4"
                   : !v4ok ? "IPv6"
                           : "IPv4 or IPv6");
  return 0;
}

int
bus_cidr_parse(const char *s, unsigned flags, bus_cidr *out) {
  char buf[CIDR_IN_MAX];
  int len = -1;
  memset(out, 0, sizeof *out);
  if (!s || strlen(s) >= sizeof buf)
    return BUS_ERR(BUS_EINVAL, "must be a CIDR like 10.0.0.0/16 or fd00::/64");
  strcpy(buf, s);
  char *slash = strchr(buf, '/');
  if (!slash && !(flags & BUS_CIDR_BARE))
    return BUS_ERR(BUS_EINVAL, "%s has no prefix length (10.0.0.0/16)", s);
  if (slash) {
    *slash = 0;
    if ((len = parse_len(slash + 1)) < 0)
      return BUS_ERR(BUS_EINVAL, "%s: the prefix length must be a number", s);
  }
  int rc = parse_addr(buf, flags, out);
  if (rc < 0)
    return rc;
  if (len > width(out->family))
    return BUS_ERR(BUS_EINVAL, "%s: prefix length out of range", s);
  out->prefix = len < 0 ? width(out->family) : len;
  if (flags & BUS_CIDR_NETWORK) {
    bus_cidr net = *out;
    if (bus_cidr_mask(&net)) {
      char t[BUS_CIDR_TEXT_MAX];
      bus_cidr_format(&net, t, sizeof t);
      return BUS_ERR(BUS_EINVAL, "%s has host bits set (the network is %s)", s,
                     t);
    }
  }
  return 0;
}

int
bus_cidr_mask(bus_cidr *c) {
  return clear_host(c->addr, bytes_of(c->family), c->prefix);
}

int
bus_cidr_format_addr(const bus_cidr *c, char *out, size_t cap) {
  char a[INET6_ADDRSTRLEN];
  if (!inet_ntop(c->family == 4 ? AF_INET : AF_INET6, c->addr, a, sizeof a))
    a[0] = 0;
  int n = snprintf(out, cap, "%s", a);
  return n >= 0 && (size_t)n < cap ? 0 : BUS_EINVAL;
}

int
bus_cidr_format(const bus_cidr *c, char *out, size_t cap) {
  char a[INET6_ADDRSTRLEN];
  if (!inet_ntop(c->family == 4 ? AF_INET : AF_INET6, c->addr, a, sizeof a))
    a[0] = 0;
  int n = snprintf(out, cap, "%s/%d", a, c->prefix);
  return n >= 0 && (size_t)n < cap ? 0 : BUS_EINVAL;
}

int
bus_cidr_contains(const bus_cidr *net, const bus_cidr *x) {
  if (net->family != x->family || x->prefix < net->prefix)
    return 0;
  uint8_t a[16], b[16];
  memcpy(a, net->addr, 16);
  memcpy(b, x->addr, 16);
  clear_host(a, 16, net->prefix);
  clear_host(b, 16, net->prefix);
  return memcmp(a, b, 16) == 0;
}

uint64_t
bus_cidr_hosts(const bus_cidr *c) {
  int hb = width(c->family) - c->prefix;
  return hb >= 64 ? UINT64_MAX : UINT64_C(1) << hb;
}

int
bus_cidr_nth(const bus_cidr *c, uint64_t n, bus_cidr *out) {
  int hb = width(c->family) - c->prefix, bytes = bytes_of(c->family);
  if (hb < 64 && n >= (UINT64_C(1) << hb))
    return BUS_ERR(BUS_EINVAL, "address %llu is past the end of a /%d",
                   (unsigned long long)n, c->prefix);
  *out = *c;
  clear_host(out->addr, bytes, c->prefix);
  unsigned carry = 0;
  for (int i = bytes - 1; i >= 0; i--) {
    unsigned sum = out->addr[i] + (unsigned)(n & 0xff) + carry;
    out->addr[i] = (uint8_t)sum;
    carry = sum >> 8;
    n >>= 8;
  }
  out->prefix = width(c->family);
  return 0;
}
