/*
 * cidr.c - address ranges and the allocator, pure: no LMDB, no broker.
 *
 * An address is the range's network address plus an offset. Offsets are
 * 64-bit: a range with more than 2^64 addresses is cut to its first 2^64,
 * which no allocator reaches. The usable offsets [first, last] follow the
 * prefix rules in ipam.h. ipam_pick never chooses an address `next` says
 * is taken, nor the same address twice, and chooses nothing at all when
 * fewer than n are free: a Job's addresses are all or none.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipam.h"

static int
fail(char *err, size_t cap, const char *fmt, const char *a) {
  if (err && cap)
    snprintf(err, cap, fmt, a);
  return BUS_EFIELD;
}

static int
host_bits(const ipam_cidr *c) {
  return (c->family == 4 ? 32 : 128) - c->prefix;
}

static void
set_range(ipam_cidr *c) {
  int hb = host_bits(c);
  uint64_t size_m1 = hb >= 64 ? UINT64_MAX : (UINT64_C(1) << hb) - 1;
  c->first = 0;
  c->last = size_m1;
  if (c->family == 4 && c->prefix <= 30) {
    c->first = 1;
    c->last = size_m1 - 1;
  } else if (c->family == 6 && c->prefix <= 126) {
    c->first = 1;
  }
}

/* c as libbus's prefix (bus.h, cidr), for its arithmetic. */
static bus_cidr
net_of(const ipam_cidr *c) {
  bus_cidr n = {.family = c->family, .prefix = c->prefix};
  memcpy(n.addr, c->base, sizeof n.addr);
  return n;
}

int
ipam_cidr_parse(const char *s, ipam_cidr *out, char *err, size_t cap) {
  bus_cidr c;
  memset(out, 0, sizeof *out);
  if (bus_cidr_parse(s, BUS_CIDR_NETWORK, &c))
    return fail(err, cap, "%s", bus_last_error());
  out->family = c.family;
  out->prefix = c.prefix;
  memcpy(out->base, c.addr, sizeof out->base);
  set_range(out);
  return 0;
}

int
ipam_domain_cidr_check(const ipam_cidr *c, char *err, size_t cap) {
  int min = c->family == 4 ? IPAM_DOMAIN_MIN_PREFIX4 : IPAM_DOMAIN_MIN_PREFIX6;
  if (c->prefix >= min)
    return 0;
  char net[64], msg[200];
  ipam_cidr_format(c, net, sizeof net);
  snprintf(msg, sizeof msg,
           "%s is too wide for a Domain: an IPv%d Domain is a /%d or "
           "narrower",
           net, c->family, min);
  return fail(err, cap, "%s", msg);
}

void
ipam_cidr_format(const ipam_cidr *c, char *out, size_t cap) {
  bus_cidr n = net_of(c);
  bus_cidr_format(&n, out, cap);
}

int
ipam_cidr_overlap(const ipam_cidr *a, const ipam_cidr *b) {
  bus_cidr x = net_of(a), y = net_of(b);
  return bus_cidr_contains(&x, &y) || bus_cidr_contains(&y, &x);
}

uint64_t
ipam_cidr_usable(const ipam_cidr *c) {
  uint64_t n = c->last - c->first;
  return n == UINT64_MAX ? n : n + 1;
}

void
ipam_addr_format(const ipam_cidr *c, uint64_t off, char *out, size_t cap) {
  bus_cidr n = net_of(c), a;
  if ((bus_cidr_nth(&n, off, &a) || bus_cidr_format_addr(&a, out, cap)) && cap)
    out[0] = 0;
}

int
ipam_addr_offset(const ipam_cidr *c, const char *ip, uint64_t *off) {
  int bytes = c->family == 4 ? 4 : 16;
  bus_cidr n = net_of(c), x = {.family = c->family, .prefix = 8 * bytes};
  uint8_t *a = x.addr;
  if (inet_pton(c->family == 4 ? AF_INET : AF_INET6, ip, a) != 1 ||
      !bus_cidr_contains(&n, &x))
    return BUS_EFIELD;
  /* a - base over the low 8 bytes; higher host bits mean past 2^64 */
  int hb = host_bits(c);
  if (hb > 64)
    for (int i = 0; i < bytes - 8; i++)
      if (a[i] != c->base[i])
        return BUS_EFIELD;
  uint64_t v = 0;
  for (int i = bytes > 8 ? bytes - 8 : 0; i < bytes; i++)
    v = v << 8 | (uint8_t)(a[i] - c->base[i]);
  if (hb < 64)
    v &= (UINT64_C(1) << hb) - 1;
  if (v < c->first || v > c->last)
    return BUS_EFIELD;
  *off = v;
  return 0;
}

/* ------------------------------------------------------------- allocator */

static int
in_list(const uint64_t *v, size_t n, uint64_t x) {
  for (size_t i = 0; i < n; i++)
    if (v[i] == x)
      return 1;
  return 0;
}

/* Give back the sticky addresses still free; returns how many. */
static int
take_sticky(const ipam_cidr *c, size_t n, const uint64_t *sticky,
            ipam_next_fn next, void *ud, uint64_t *out, size_t *got) {
  for (size_t i = 0; i < n; i++) {
    uint64_t s = sticky ? sticky[i] : IPAM_NONE, t;
    out[i] = IPAM_NONE;
    if (s == IPAM_NONE || s < c->first || s > c->last || in_list(out, i, s))
      continue;
    int rc = next(ud, s, &t);
    if (rc < 0)
      return rc;
    if (rc == 1 && t == s)
      continue;
    out[i] = s;
    (*got)++;
  }
  return 0;
}

int
ipam_pick(const ipam_cidr *c, uint64_t low, uint64_t free, size_t n,
          const uint64_t *sticky, ipam_next_fn next, void *ud, uint64_t *out) {
  if (free < n)
    return 1;
  size_t got = 0;
  int rc = take_sticky(c, n, sticky, next, ud, out, &got);
  if (rc < 0)
    return rc;
  uint64_t cur = low > c->first ? low : c->first, gap_last = 0, t;
  int have_gap = 0;
  for (size_t i = 0; i < n; i++) {
    while (out[i] == IPAM_NONE) {
      if (cur > c->last)
        return 1; /* free was wrong: the view is corrupt */
      if (!have_gap || cur > gap_last) {
        if ((rc = next(ud, cur, &t)) < 0)
          return rc;
        if (rc == 1 && t == cur) {
          cur++;
          have_gap = 0;
          continue;
        }
        gap_last = rc == 1 ? t - 1 : c->last;
        have_gap = 1;
      }
      if (!sticky || !in_list(out, n, cur))
        out[i] = cur;
      if (cur == c->last) { /* the end: no increment past it */
        for (size_t k = i + (out[i] != IPAM_NONE); k < n; k++)
          if (out[k] == IPAM_NONE)
            return 1;
        return 0;
      }
      cur++;
    }
  }
  return 0;
}

/* ------------------------------------------------------------- ipam_set */

static size_t
lower_bound(const ipam_set *s, uint64_t x) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (s->v[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

int
ipam_set_add(ipam_set *s, uint64_t off) {
  size_t i = lower_bound(s, off);
  if (i < s->n && s->v[i] == off)
    return 0;
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    uint64_t *v = realloc(s->v, cap * sizeof *v);
    if (!v)
      return bus_error(BUS_ESTORE, "out of memory");
    s->v = v;
    s->cap = cap;
  }
  memmove(s->v + i + 1, s->v + i, (s->n - i) * sizeof *s->v);
  s->v[i] = off;
  s->n++;
  return 0;
}

void
ipam_set_del(ipam_set *s, uint64_t off) {
  size_t i = lower_bound(s, off);
  if (i < s->n && s->v[i] == off) {
    memmove(s->v + i, s->v + i + 1, (s->n - i - 1) * sizeof *s->v);
    s->n--;
  }
}

int
ipam_set_has(const ipam_set *s, uint64_t off) {
  size_t i = lower_bound(s, off);
  return i < s->n && s->v[i] == off;
}

void
ipam_set_free(ipam_set *s) {
  if (s) {
    free(s->v);
    memset(s, 0, sizeof *s);
  }
}

int
ipam_set_next(void *ud, uint64_t from, uint64_t *taken) {
  const ipam_set *s = ud;
  size_t i = lower_bound(s, from);
  if (i == s->n)
    return 0;
  *taken = s->v[i];
  return 1;
}
