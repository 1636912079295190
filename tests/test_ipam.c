/*
 * test_ipam.c - lark-ipam's pure parts without a broker: CIDR arithmetic
 * (IPv4 and IPv6, the prefix rules), the allocator (lowest free, whole
 * Job, sticky reuse, exhaustion), and the view's apply (overlap refused,
 * first allocation wins, release frees, queries) on a local LMDB view.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bed.h"
#include "cmd.h"
#include "ipam.h"
#include "natsd.h"

static ipam_cidr
parse(const char *s) {
  ipam_cidr c;
  char err[200];
  cr_assert_eq(ipam_cidr_parse(s, &c, err, sizeof err), 0, "%s: %s", s, err);
  return c;
}

static void
expect_refused(const char *s, const char *why) {
  ipam_cidr c;
  char err[200] = "";
  cr_expect_eq(ipam_cidr_parse(s, &c, err, sizeof err), BUS_EFIELD, "%s", s);
  cr_expect(strstr(err, why), "%s: '%s' lacks '%s'", s, err, why);
}

static void
expect_addr(const ipam_cidr *c, uint64_t off, const char *want) {
  char ip[64];
  ipam_addr_format(c, off, ip, sizeof ip);
  cr_expect_str_eq(ip, want);
  uint64_t back = 0;
  cr_expect_eq(ipam_addr_offset(c, ip, &back), 0, "%s", ip);
  cr_expect_eq(back, off);
}

Test(ipam_cidr, ipv4_prefix_rules) {
  ipam_cidr c = parse("10.1.0.0/24");
  cr_expect_eq(c.family, 4);
  cr_expect_eq(c.first, 1);
  cr_expect_eq(c.last, 254);
  cr_expect_eq(ipam_cidr_usable(&c), 254);
  expect_addr(&c, 1, "10.1.0.1");
  expect_addr(&c, 254, "10.1.0.254");
  uint64_t off;
  cr_expect_eq(ipam_addr_offset(&c, "10.1.0.0", &off), BUS_EFIELD, "network");
  cr_expect_eq(ipam_addr_offset(&c, "10.1.0.255", &off), BUS_EFIELD, "bcast");
  cr_expect_eq(ipam_addr_offset(&c, "10.1.1.1", &off), BUS_EFIELD, "outside");
  c = parse("192.168.0.4/30");
  cr_expect_eq(ipam_cidr_usable(&c), 2);
  expect_addr(&c, c.first, "192.168.0.5");
  expect_addr(&c, c.last, "192.168.0.6");
  c = parse("192.168.0.4/31");
  cr_expect_eq(ipam_cidr_usable(&c), 2, "/31 uses both");
  expect_addr(&c, c.first, "192.168.0.4");
  c = parse("192.168.0.9/32");
  cr_expect_eq(ipam_cidr_usable(&c), 1);
  expect_addr(&c, c.first, "192.168.0.9");
  c = parse("0.0.0.0/0");
  cr_expect_eq(ipam_cidr_usable(&c), 4294967294ull);
  c = parse("10.2.0.0/16");
  cr_expect_eq(ipam_cidr_usable(&c), 65534);
  expect_addr(&c, 256, "10.2.1.0");
}

Test(ipam_cidr, ipv6_prefix_rules) {
  ipam_cidr c = parse("fd00:1::/64");
  cr_expect_eq(c.family, 6);
  cr_expect_eq(c.first, 1, "never the first address");
  cr_expect_eq(c.last, UINT64_MAX);
  expect_addr(&c, 1, "fd00:1::1");
  expect_addr(&c, 0x10000, "fd00:1::1:0");
  c = parse("fd00::/126");
  cr_expect_eq(ipam_cidr_usable(&c), 3);
  expect_addr(&c, c.last, "fd00::3");
  c = parse("fd00::/127");
  cr_expect_eq(ipam_cidr_usable(&c), 2, "/127 uses both");
  expect_addr(&c, 0, "fd00::");
  c = parse("fd00::5/128");
  cr_expect_eq(ipam_cidr_usable(&c), 1);
  c = parse("fd00::/48");
  cr_expect_eq(ipam_cidr_usable(&c), UINT64_MAX, "saturated");
  uint64_t off;
  cr_expect_eq(ipam_addr_offset(&c, "fd00:0:0:1::1", &off), BUS_EFIELD,
               "past the first 2^64 addresses");
  char s[64];
  ipam_cidr_format(&c, s, sizeof s);
  cr_expect_str_eq(s, "fd00::/48");
}

Test(ipam_cidr, invalid_refused_with_reason) {
  expect_refused("10.0.0.0", "no prefix length");
  expect_refused("10.0.0.1/24", "network is 10.0.0.0/24");
  expect_refused("fd00::1/64", "network is fd00::/64");
  expect_refused("10.0.0.0/33", "out of range");
  expect_refused("fd00::/129", "out of range");
  expect_refused("10.0.0.0/-1", "must be a number");
  expect_refused("10.0.0.0/", "must be a number");
  expect_refused("10.0.0.300/24", "not an IPv4 or IPv6");
  expect_refused("banana/8", "not an IPv4 or IPv6");
  expect_refused("", "no prefix length");
}

Test(ipam_cidr, overlap) {
  ipam_cidr a = parse("10.0.0.0/16"), b = parse("10.0.5.0/24"),
            c = parse("10.1.0.0/16"), d = parse("fd00::/8"),
            e = parse("fd12::/64"), all = parse("0.0.0.0/0");
  cr_expect(ipam_cidr_overlap(&a, &b));
  cr_expect(ipam_cidr_overlap(&b, &a));
  cr_expect_not(ipam_cidr_overlap(&a, &c));
  cr_expect_not(ipam_cidr_overlap(&a, &d), "families never overlap");
  cr_expect(ipam_cidr_overlap(&d, &e));
  cr_expect(ipam_cidr_overlap(&all, &c));
}

/* ------------------------------------------------------------ allocator */

static uint64_t
free_of(const ipam_cidr *c, const ipam_set *s) {
  return ipam_cidr_usable(c) - s->n;
}

Test(ipam_alloc, lowest_free_whole_job) {
  ipam_cidr c = parse("10.0.0.0/24");
  ipam_set s = {0};
  ipam_set_add(&s, 1);
  ipam_set_add(&s, 2);
  ipam_set_add(&s, 4);
  uint64_t out[3];
  cr_assert_eq(
      ipam_pick(&c, 1, free_of(&c, &s), 3, NULL, ipam_set_next, &s, out), 0);
  cr_expect_eq(out[0], 3);
  cr_expect_eq(out[1], 5);
  cr_expect_eq(out[2], 6);
  ipam_set_free(&s);
}

Test(ipam_alloc, sticky_reuse_while_free) {
  ipam_cidr c = parse("10.0.0.0/24");
  ipam_set s = {0};
  ipam_set_add(&s, 1);
  uint64_t sticky[3] = {7, IPAM_NONE, 1}, out[3];
  cr_assert_eq(
      ipam_pick(&c, 1, free_of(&c, &s), 3, sticky, ipam_set_next, &s, out), 0);
  cr_expect_eq(out[0], 7, "its old address back");
  cr_expect_eq(out[1], 2, "the lowest free");
  cr_expect_eq(out[2], 3, "its old address is taken: the next lowest");
  uint64_t again[2] = {2, 2}, out2[2];
  cr_assert_eq(
      ipam_pick(&c, 1, free_of(&c, &s), 2, again, ipam_set_next, &s, out2), 0);
  cr_expect_eq(out2[0], 2);
  cr_expect_eq(out2[1], 3, "one address never given twice");
  ipam_set_free(&s);
}

Test(ipam_alloc, exhaustion_is_all_or_nothing) {
  ipam_cidr c = parse("10.0.0.0/30"); /* 2 usable */
  ipam_set s = {0};
  uint64_t out[3] = {0, 0, 0};
  cr_expect_eq(ipam_pick(&c, 1, 2, 3, NULL, ipam_set_next, &s, out), 1);
  cr_expect_eq(ipam_pick(&c, 1, 2, 2, NULL, ipam_set_next, &s, out), 0);
  cr_expect_eq(out[0], 1);
  cr_expect_eq(out[1], 2);
  c = parse("10.0.0.8/31");
  cr_expect_eq(ipam_pick(&c, 0, 2, 2, NULL, ipam_set_next, &s, out), 0);
  cr_expect_eq(out[0], 0);
  cr_expect_eq(out[1], 1);
}

Test(ipam_alloc, release_then_reuse_fills_the_hole) {
  ipam_cidr c = parse("fd00::/120");
  ipam_set s = {0};
  uint64_t out[100];
  for (int round = 0; round < 2; round++) {
    cr_assert_eq(
        ipam_pick(&c, 1, free_of(&c, &s), 100, NULL, ipam_set_next, &s, out),
        0);
    for (int i = 0; i < 100; i++) {
      cr_expect_eq(out[i], (uint64_t)(round * 100 + i + 1));
      ipam_set_add(&s, out[i]);
    }
  }
  for (uint64_t o = 50; o < 60; o++)
    ipam_set_del(&s, o);
  cr_assert_eq(
      ipam_pick(&c, 1, free_of(&c, &s), 12, NULL, ipam_set_next, &s, out), 0);
  cr_expect_eq(out[0], 50);
  cr_expect_eq(out[9], 59);
  cr_expect_eq(out[10], 201);
  cr_expect_eq(
      ipam_pick(&c, 1, free_of(&c, &s), 300, NULL, ipam_set_next, &s, out), 1,
      "fd00::/120 has 255 usable addresses");
  ipam_set_free(&s);
}

/* ------------------------------------------------------------- the view */

static bus_view *view;
static char dir[256];
static uint64_t seq;

static void
vsetup(void) {
  lt_tmpdir(dir, sizeof dir, "ipamview");
  bus_view_def def;
  ipam_view_def(&def);
  view = lt_must_open_view(&def, dir, 0);
  seq = 0;
}

static void
vteardown(void) {
  bus_view_close(view);
  lt_rmtree(dir);
}

/* Apply one event whose data is the msgpack in sb. */
static void
feed(const char *subject, const char *type, uint64_t prev,
     const msgpack_sbuffer *sb) {
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object o;
  cr_assert(msgpack_unpack(sb->data, sb->size, NULL, &z, &o) >= 0);
  char id[33];
  bus_event_new_id(id);
  bus_event ev = {.v = 1,
                  .type = type,
                  .id = id,
                  .ts = 1,
                  .actor = "t",
                  .cause = "",
                  .prev = prev,
                  .data = o,
                  .subject = subject,
                  .seq = ++seq};
  const bus_event *evs[1] = {&ev};
  cr_assert_eq(bus_view_apply(view, evs, 1), 0, "%s", bus_last_error());
  msgpack_zone_destroy(&z);
}

static void
create(const char *name, const char *cidr, uint64_t prev) {
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 4); /* a whole Domain, as lark-ipam writes it */
  bus_pack_kv_str(&b.pk, "apiVersion", "rlinf.io/v1alpha1");
  bus_pack_kv_str(&b.pk, "kind", "Domain");
  bus_pack_str(&b.pk, "metadata");
  msgpack_pack_map(&b.pk, 1);
  bus_pack_kv_str(&b.pk, "name", name);
  bus_pack_str(&b.pk, "spec");
  msgpack_pack_map(&b.pk, 1);
  bus_pack_kv_str(&b.pk, "cidr", cidr);
  feed("lark.ev.ipam.domains", "domain.created", prev, &b.sb);
  bus_packbuf_destroy(&b);
}

static void
allocated(const char *d, const char *job, int n, const char *const *pods,
          const char *const *ips, uint64_t prev) {
  char subject[128];
  snprintf(subject, sizeof subject, "lark.ev.domain.%s", d);
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 3);
  bus_pack_kv_str(&b.pk, "domain", d);
  bus_pack_kv_str(&b.pk, "job", job);
  bus_pack_str(&b.pk, "addresses");
  msgpack_pack_array(&b.pk, (uint32_t)n);
  for (int i = 0; i < n; i++) {
    msgpack_pack_map(&b.pk, 2);
    bus_pack_kv_str(&b.pk, "pod", pods[i]);
    bus_pack_kv_str(&b.pk, "ip", ips[i]);
  }
  feed(subject, "domain.allocated", prev, &b.sb);
  bus_packbuf_destroy(&b);
}

/* Answer a query into z; the result object. */
static msgpack_object
ask(const char *kind, const char *verb, const char *name, msgpack_zone *z) {
  msgpack_sbuffer req, out;
  msgpack_sbuffer_init(&req);
  msgpack_sbuffer_init(&out);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &req, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 1);
  bus_pack_kv_str(&pk, "name", name);
  msgpack_object r;
  cr_assert(msgpack_unpack(req.data, req.size, NULL, z, &r) >= 0);
  bus_query_answer(view, ipam_query, kind, verb, &r, &out, NULL);
  msgpack_object o;
  cr_assert(lt_unpack_into(z, out.data, out.size, &o) >= 0);
  msgpack_sbuffer_destroy(&req);
  msgpack_sbuffer_destroy(&out);
  const msgpack_object *res = bus_obj_get(&o, "result");
  cr_assert_not_null(res, "%s %s %s refused", kind, verb, name);
  return *res;
}

/* How many Domains `domain list` answers with. */
static uint32_t
domains_listed(void) {
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object r = ask("domain", "list", "", &z);
  cr_assert_eq(r.type, MSGPACK_OBJECT_ARRAY);
  uint32_t n = r.via.array.size;
  msgpack_zone_destroy(&z);
  return n;
}

static int64_t
domain_field(const char *name, const char *key) {
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object r = ask("domain", "describe", name, &z);
  int64_t v = bus_obj_int(bus_obj_get(&r, "domain"), key, -1);
  msgpack_zone_destroy(&z);
  return v;
}

TestSuite(ipam_view, .init = vsetup, .fini = vteardown, .timeout = 60);

Test(ipam_view, overlap_refused_in_apply_first_wins) {
  create("net-a", "10.0.0.0/16", 0);
  create("net-b", "10.0.128.0/17", 1); /* overlaps: refused */
  create("net-c", "fd00::/64", 1);     /* prev 1 is stale now? no: refused
                                          events restore the version */
  cr_expect_eq(domains_listed(), 2, "net-a and net-c, not net-b");
  cr_expect_eq(domain_field("net-a", "free"), 65534);
}

Test(ipam_view, first_allocation_wins_and_release_frees) {
  create("net", "10.9.0.0/29", 0); /* 6 usable */
  const char *pods1[] = {"a-x-0", "a-x-1"}, *ips1[] = {"10.9.0.1", "10.9.0.2"};
  allocated("net", "a", 2, pods1, ips1, 0);
  cr_expect_eq(domain_field("net", "used"), 2);
  /* a second allocator's decision on the same version: stale, ignored */
  const char *pods2[] = {"b-x-0"}, *ips2[] = {"10.9.0.1"};
  allocated("net", "b", 1, pods2, ips2, 0);
  /* and one on the new version reusing a taken address: refused whole */
  const char *pods3[] = {"b-x-0", "b-x-1"}, *ips3[] = {"10.9.0.3", "10.9.0.2"};
  allocated("net", "b", 2, pods3, ips3, 2);
  cr_expect_eq(domain_field("net", "used"), 2, "no address held twice");
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object r = ask("domain", "describe", "net", &z);
  const msgpack_object *al = bus_obj_get(&r, "allocations");
  cr_assert(al && al->type == MSGPACK_OBJECT_ARRAY);
  cr_expect_eq(al->via.array.size, 2);
  char ip[32];
  cr_expect_str_eq(bus_obj_str(&al->via.array.ptr[1], "ip", ip, sizeof ip),
                   "10.9.0.2");
  msgpack_zone_destroy(&z);
  bus_view_stats st;
  bus_view_stats_get(view, &st);
  cr_expect_eq(st.stale, 1);
  cr_expect_eq(st.rejected, 1);
}

Test(ipam_cidr, a_domain_is_at_most_a_slash_8_or_a_slash_48) {
  char err[200];
  const char *wide[] = {"0.0.0.0/0", "10.0.0.0/7", "::/0", "fd00::/47"};
  for (size_t i = 0; i < sizeof wide / sizeof *wide; i++) {
    ipam_cidr c = parse(wide[i]);
    err[0] = 0;
    cr_expect_eq(ipam_domain_cidr_check(&c, err, sizeof err), BUS_EFIELD,
                 "%s accepted", wide[i]);
    cr_expect(strstr(err, "too wide for a Domain"), "%s: %s", wide[i], err);
  }
  const char *fine[] = {"10.0.0.0/8", "10.2.0.0/24", "fd00::/48", "fd00::/64",
                        "10.0.0.1/32"};
  for (size_t i = 0; i < sizeof fine / sizeof *fine; i++) {
    ipam_cidr c = parse(fine[i]);
    cr_expect_eq(ipam_domain_cidr_check(&c, err, sizeof err), 0, "%s: %s",
                 fine[i], err);
  }
}

Test(ipam_view, a_domain_wider_than_the_bound_is_refused_in_apply) {
  create("everything", "0.0.0.0/0", 0);
  create("v6", "::/0", 0);
  create("net-a", "10.0.0.0/8", 0);
  cr_expect_eq(domains_listed(), 1, "only net-a");
}
