/*
 * test_cidr.c - bus_cidr: the prefix text every part reads (the schema's
 * `format: cidr`, ipam's Domains, lark-edge's pod range, podnet's
 * addresses and routes), its canonical form and its arithmetic.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "bus.h"

static bus_cidr
ok(const char *s, unsigned flags) {
  bus_cidr c;
  int rc = bus_cidr_parse(s, flags, &c);
  cr_assert_eq(rc, 0, "%s refused: %s", s, bus_last_error());
  return c;
}

static void
refused(const char *s, unsigned flags, const char *why) {
  bus_cidr c;
  cr_expect_eq(bus_cidr_parse(s, flags, &c), BUS_EINVAL, "'%s' taken",
               s ? s : "(null)");
  cr_expect(strstr(bus_last_error(), why), "'%s': '%s' has no '%s'",
            s ? s : "(null)", bus_last_error(), why);
}

static void
text_is(const bus_cidr *c, const char *want) {
  char t[BUS_CIDR_TEXT_MAX];
  cr_expect_eq(bus_cidr_format(c, t, sizeof t), 0);
  cr_expect_str_eq(t, want);
}

Test(cidr, ipv4_forms) {
  bus_cidr c = ok("10.0.0.0/16", 0);
  cr_expect_eq(c.family, 4);
  cr_expect_eq(c.prefix, 16);
  cr_expect_eq(c.addr[0], 10);
  text_is(&c, "10.0.0.0/16");
  c = ok("0.0.0.0/0", BUS_CIDR_NETWORK);
  cr_expect_eq(c.prefix, 0);
  text_is(&c, "0.0.0.0/0");
  c = ok("10.1.2.3/32", BUS_CIDR_NETWORK);
  cr_expect_eq(c.prefix, 32);
  c = ok("10.1.2.0/024", 0); /* leading zeros in the length */
  cr_expect_eq(c.prefix, 24);
  c = ok("10.1.2.0/00", 0);
  cr_expect_eq(c.prefix, 0);
}

Test(cidr, ipv6_forms) {
  bus_cidr c = ok("fd00::/64", 0);
  cr_expect_eq(c.family, 6);
  cr_expect_eq(c.prefix, 64);
  text_is(&c, "fd00::/64");
  c = ok("::/0", BUS_CIDR_NETWORK);
  text_is(&c, "::/0");
  c = ok("FD00:0:0:0:0:0:0:1/128", BUS_CIDR_NETWORK);
  text_is(&c, "fd00::1/128"); /* canonical text */
  c = ok("::ffff:10.0.0.0/120", 0);
  cr_expect_eq(c.family, 6);
  c = ok("fd00::0001/128", 0); /* leading zeros inside a group */
  text_is(&c, "fd00::1/128");
}

Test(cidr, host_bits) {
  bus_cidr c = ok("10.0.0.1/24", 0); /* kept as written */
  text_is(&c, "10.0.0.1/24");
  cr_expect_eq(bus_cidr_mask(&c), 1);
  text_is(&c, "10.0.0.0/24");
  cr_expect_eq(bus_cidr_mask(&c), 0);
  refused("10.0.0.1/24", BUS_CIDR_NETWORK, "network is 10.0.0.0/24");
  refused("fd00::1/64", BUS_CIDR_NETWORK, "network is fd00::/64");
  refused("10.88.1.5/24", BUS_CIDR_NETWORK, "host bits");
  refused("0.0.0.1/0", BUS_CIDR_NETWORK, "network is 0.0.0.0/0");
  ok("10.0.0.1/32", BUS_CIDR_NETWORK);
  ok("fd00::1/128", BUS_CIDR_NETWORK);
}

Test(cidr, refused) {
  refused(NULL, 0, "must be a CIDR");
  refused("", 0, "no prefix length");
  refused("10.0.0.0", 0, "no prefix length");
  refused("10.0.0.0/", 0, "must be a number");
  refused("10.0.0.0/-1", 0, "must be a number");
  refused("10.0.0.0/+8", 0, "must be a number");
  refused("10.0.0.0/ 8", 0, "must be a number");
  refused("10.0.0.0/8 ", 0, "must be a number");
  refused("10.0.0.0/0x8", 0, "must be a number");
  refused("10.0.0.0/0008", 0, "must be a number");
  refused("10.0.0.0/8/8", 0, "must be a number");
  refused(" 10.0.0.0/8", 0, "not an IPv4 or IPv6");
  refused("010.0.0.0/8", 0, "not an IPv4 or IPv6"); /* octal-looking */
  refused("10.0.0/8", 0, "not an IPv4 or IPv6");
  refused("10.0.0.300/24", 0, "not an IPv4 or IPv6");
  refused("banana/8", 0, "not an IPv4 or IPv6");
  refused("/8", 0, "not an IPv4 or IPv6");
  refused("fe80::1%eth0/64", 0, "not an IPv4 or IPv6");
  refused("10.0.0.0/33", 0, "out of range");
  refused("fd00::/129", 0, "out of range");
  refused("fd00::/999", 0, "out of range");
  char longer[80];
  memset(longer, '1', sizeof longer - 1);
  longer[sizeof longer - 1] = 0;
  refused(longer, 0, "must be a CIDR");
}

Test(cidr, flags) {
  refused("fd00::/64", BUS_CIDR_IPV4, "not an IPv4 address");
  refused("10.0.0.0/8", BUS_CIDR_IPV6, "not an IPv6 address");
  ok("10.0.0.0/8", BUS_CIDR_IPV4);
  ok("fd00::/8", BUS_CIDR_IPV6);
  bus_cidr c = ok("10.1.2.3", BUS_CIDR_BARE);
  cr_expect_eq(c.prefix, 32);
  c = ok("fd00::5", BUS_CIDR_BARE);
  cr_expect_eq(c.prefix, 128);
  c = ok("10.1.2.0/24", BUS_CIDR_BARE);
  cr_expect_eq(c.prefix, 24);
}

Test(cidr, contains) {
  bus_cidr a = ok("10.0.0.0/16", 0), b = ok("10.0.5.0/24", 0),
           c = ok("10.1.0.0/16", 0), d = ok("fd00::/8", 0),
           all = ok("0.0.0.0/0", 0), ip = ok("10.0.255.255", BUS_CIDR_BARE);
  cr_expect(bus_cidr_contains(&a, &b));
  cr_expect_not(bus_cidr_contains(&b, &a), "wider is not inside");
  cr_expect(bus_cidr_contains(&a, &a));
  cr_expect_not(bus_cidr_contains(&a, &c));
  cr_expect_not(bus_cidr_contains(&all, &d), "families never mix");
  cr_expect(bus_cidr_contains(&all, &c));
  cr_expect(bus_cidr_contains(&a, &ip));
  cr_expect_not(bus_cidr_contains(&b, &ip));
  bus_cidr e = ok("fd12::/64", 0), f = ok("fd12::1:2/128", 0);
  cr_expect(bus_cidr_contains(&d, &e));
  cr_expect(bus_cidr_contains(&e, &f));
}

Test(cidr, hosts) {
  bus_cidr c = ok("10.0.0.0/24", 0);
  cr_expect_eq(bus_cidr_hosts(&c), 256);
  c = ok("10.0.0.0/32", 0);
  cr_expect_eq(bus_cidr_hosts(&c), 1);
  c = ok("0.0.0.0/0", 0);
  cr_expect_eq(bus_cidr_hosts(&c), UINT64_C(1) << 32);
  c = ok("fd00::/127", 0);
  cr_expect_eq(bus_cidr_hosts(&c), 2);
  c = ok("fd00::/65", 0);
  cr_expect_eq(bus_cidr_hosts(&c), UINT64_C(1) << 63);
  c = ok("fd00::/64", 0);
  cr_expect_eq(bus_cidr_hosts(&c), UINT64_MAX, "saturated");
  c = ok("::/0", 0);
  cr_expect_eq(bus_cidr_hosts(&c), UINT64_MAX, "saturated");
}

static void
nth_is(const char *net, uint64_t n, const char *want) {
  bus_cidr c = ok(net, 0), a;
  char t[BUS_CIDR_TEXT_MAX];
  cr_assert_eq(bus_cidr_nth(&c, n, &a), 0, "%s #%llu", net,
               (unsigned long long)n);
  cr_expect_eq(a.prefix, a.family == 4 ? 32 : 128);
  cr_expect_eq(bus_cidr_format_addr(&a, t, sizeof t), 0);
  cr_expect_str_eq(t, want);
  cr_expect(bus_cidr_contains(&c, &a));
}

Test(cidr, nth) {
  nth_is("10.0.0.0/24", 0, "10.0.0.0");
  nth_is("10.0.0.0/24", 255, "10.0.0.255");
  nth_is("10.0.0.0/16", 256, "10.0.1.0");
  nth_is("10.0.0.7/16", 1, "10.0.0.1"); /* from the network address */
  nth_is("10.0.0.0/8", 0xffffff, "10.255.255.255");
  nth_is("fd00::/64", 0x10001, "fd00::1:1");
  nth_is("fd00::/48", UINT64_MAX, "fd00::ffff:ffff:ffff:ffff");
  bus_cidr c = ok("10.0.0.0/30", 0), a;
  cr_expect_eq(bus_cidr_nth(&c, 4, &a), BUS_EINVAL, "past the end");
  c = ok("10.0.0.1/32", 0);
  cr_expect_eq(bus_cidr_nth(&c, 1, &a), BUS_EINVAL);
}

Test(cidr, format_room) {
  bus_cidr c = ok("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255/128", 0);
  char t[BUS_CIDR_TEXT_MAX], small[8];
  cr_expect_eq(bus_cidr_format(&c, t, sizeof t), 0);
  cr_expect_lt(strlen(t), sizeof t);
  c = ok("10.0.0.0/16", 0);
  cr_expect_eq(bus_cidr_format(&c, small, sizeof small), BUS_EINVAL);
  cr_expect_eq(strlen(small), sizeof small - 1, "truncated, terminated");
}

/* Every text the parser takes formats back to a text it takes again, to
 * the same prefix. */
Test(cidr, round_trip) {
  const char *in[] = {"10.0.0.0/8",   "10.0.0.1/24", "0.0.0.0/0",
                      "fd00::/64",    "::1/128",     "::ffff:1.2.3.0/120",
                      "2001:db8::/32"};
  for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
    bus_cidr a = ok(in[i], 0), b;
    char t[BUS_CIDR_TEXT_MAX];
    cr_assert_eq(bus_cidr_format(&a, t, sizeof t), 0);
    b = ok(t, 0);
    cr_expect(!memcmp(&a, &b, sizeof a), "%s -> %s", in[i], t);
  }
}
