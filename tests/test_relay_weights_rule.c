/*
 * test_relay_weights_rule.c - the hub's Job rule for weights channels
 * (netrelay/jobs.c), fed events by hand as the hub's follower decodes
 * them: engine.nodes replaces a Job's nodes, weights.published/cached
 * add a node's addresses (canonical, the last RELAY_JOB_ADDRS), an
 * engine.ended of a deleted Job forgets it, and whatever does not decode
 * or is not numeric is kept out.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "bus.h"
#include "events.h"
#include "jobs.h"

static relay_jobs *t;

static void
setup(void) {
  cr_assert_eq(relay_jobs_new(&t), 0);
}

static void
teardown(void) {
  relay_jobs_free(t);
}

TestSuite(relay_weights_rule, .init = setup, .fini = teardown);

/* Apply the event of type packed in sb, decoded as delivered. */
static int
apply(const char *type, msgpack_sbuffer *sb) {
  bus_event ev, out;
  char id[33];
  msgpack_sbuffer enc;
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_sbuffer_init(&enc);
  lt_sample_event(&ev, id, type, sb);
  cr_assert_eq(bus_event_encode(&ev, &enc), 0, "%s", bus_last_error());
  cr_assert_eq(bus_event_decode_typed(enc.data, enc.size, &out, &z), 0, "%s",
               bus_last_error());
  int rc = relay_jobs_apply(t, &out);
  msgpack_sbuffer_destroy(&enc);
  msgpack_sbuffer_destroy(sb);
  msgpack_zone_destroy(&z);
  return rc;
}

/* engine.nodes of j1 from "node=cluster" words. */
static void
nodes(int n, const char *const *spec) {
  bus_engine_node v[8];
  char names[8][32], clusters[8][32];
  for (int i = 0; i < n; i++) {
    cr_assert_eq(sscanf(spec[i], "%31[^=]=%31s", names[i], clusters[i]), 2);
    v[i] = (bus_engine_node){.node = bus_str_of(names[i]),
                             .has_cluster = 1,
                             .cluster = bus_str_of(clusters[i])};
  }
  bus_ev_engine_nodes d = {.job = BUS_STR("j1"),
                           .nodes = {.v = v, .n = (uint32_t)n}};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  cr_assert_eq(bus_engine_nodes_pack(&sb, &d), 0, "%s", bus_last_error());
  cr_assert_eq(apply("engine.nodes", &sb), 1);
}

static const char sha[] =
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

static int
published(const char *node, const char *addr) {
  bus_ev_weights_published d = {.job = BUS_STR("j1"),
                                .version = 1,
                                .size = 1,
                                .sha256 = bus_str_of(sha),
                                .pod = BUS_STR("j1-learner-0"),
                                .node = bus_str_of(node),
                                .address = bus_str_of(addr)};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  cr_assert_eq(bus_weights_published_pack(&sb, &d), 0, "%s", bus_last_error());
  return apply("weights.published", &sb);
}

static int
cached(const char *node, const char *addr) {
  bus_ev_weights_cached d = {.job = BUS_STR("j1"),
                             .version = 1,
                             .node = bus_str_of(node),
                             .has_address = 1,
                             .address = bus_str_of(addr)};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  cr_assert_eq(bus_weights_cached_pack(&sb, &d), 0, "%s", bus_last_error());
  return apply("weights.cached", &sb);
}

static int
ended(const char *phase) {
  bus_ev_engine_ended d = {
      .job = BUS_STR("j1"), .has_phase = 1, .phase = bus_str_of(phase)};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  cr_assert_eq(bus_engine_ended_pack(&sb, &d), 0, "%s", bus_last_error());
  return apply("engine.ended", &sb);
}

static char why[512];

/* The rule for "WEIGHTS j1 from to addr" asked by a relay of cluster. */
static int
allowed(const char *cluster, const char *from, const char *to,
        const char *addr) {
  char line[256], to_cluster[RELAY_NAME_MAX] = "";
  relay_wreq r;
  snprintf(line, sizeof line, "WEIGHTS j1 %s %s %s", from, to, addr);
  cr_assert_eq(relay_wreq_parse_line(line, strlen(line), &r, why, sizeof why),
               0, "%s: %s", line, why);
  why[0] = 0;
  int rc = relay_jobs_check(t, &r, cluster, to_cluster, why, sizeof why);
  cr_assert(rc == 0 || (rc == BUS_EDENIED && why[0]), "%s: %d", line, rc);
  if (!rc)
    cr_assert_str_neq(to_cluster, "");
  return rc == 0;
}

static const char *const two[] = {"n1=c1", "n2=c2"};

Test(relay_weights_rule, nodes_clusters_and_addresses) {
  cr_expect(!allowed("c1", "n1", "n2", "10.0.0.2:7000"));
  cr_expect_str_eq(why, "job j1 has no nodes (unknown job)");
  nodes(2, two);
  cr_expect(!allowed("c1", "n1", "n2", "10.0.0.2:7000"));
  cr_expect_str_eq(why, "job j1 gave no address 10.0.0.2:7000 for node n2");
  cr_assert_eq(published("n2", "10.0.0.2:7000"), 1);
  cr_expect(allowed("c1", "n1", "n2", "10.0.0.2:7000"));
  cr_expect(allowed("c1", "n1", "n2", "10.0.0.2:07000"), "not canonical");
  cr_expect(!allowed("c2", "n1", "n2", "10.0.0.2:7000"));
  cr_expect_str_eq(why, "node n1 is in cluster c1, the relay in c2");
  cr_expect(!allowed("", "n1", "n2", "10.0.0.2:7000"));
  cr_expect(!allowed("c1", "n1", "n3", "10.0.0.2:7000"));
  cr_expect_str_eq(why, "node n3 hosts no pod of job j1");
  /* the address is n2's, not n1's */
  cr_expect(!allowed("c2", "n2", "n1", "10.0.0.2:7000"));
  cr_expect_eq(relay_jobs_count(t), 1);
}

Test(relay_weights_rule, a_node_keeps_its_last_addresses) {
  nodes(2, two);
  cr_assert_eq(published("n2", "10.0.0.2:1"), 1);
  cr_assert_eq(cached("n2", "[fd00::0002]:2"), 1);
  cr_assert_eq(cached("n2", "10.0.0.2:3"), 1);
  cr_assert_eq(cached("n2", "10.0.0.2:4"), 1);
  cr_expect_eq(cached("n2", "10.0.0.2:4"), 0, "the newest again: no change");
  cr_expect(allowed("c1", "n1", "n2", "[fd00::2]:2"));
  cr_expect(allowed("c1", "n1", "n2", "10.0.0.2:1"));
  /* 1 again moves first; a fifth pushes out the oldest, 2 */
  cr_assert_eq(cached("n2", "10.0.0.2:1"), 1);
  cr_assert_eq(cached("n2", "10.0.0.2:5"), 1);
  cr_expect(!allowed("c1", "n1", "n2", "[fd00::2]:2"));
  for (int p = 1; p <= 5; p++) {
    char a[32];
    snprintf(a, sizeof a, "10.0.0.2:%d", p);
    if (p != 2)
      cr_expect(allowed("c1", "n1", "n2", a), "%s", a);
  }
  /* names and non-numeric addresses are never kept */
  cr_expect_eq(published("n2", "weights.example:443"), 0);
  cr_expect_eq(published("n2", "10.0.0.2"), 0);
}

Test(relay_weights_rule, engine_nodes_replace_the_set_and_deleted_forgets) {
  nodes(2, two);
  cr_assert_eq(published("n2", "10.0.0.2:7000"), 1);
  cr_expect(allowed("c1", "n1", "n2", "10.0.0.2:7000"));
  const char *const moved[] = {"n1=c1", "n3=c2"};
  nodes(2, moved);
  cr_expect(!allowed("c1", "n1", "n2", "10.0.0.2:7000"));
  /* n2 back: its addresses were kept apart from the set */
  nodes(2, two);
  cr_expect(allowed("c1", "n1", "n2", "10.0.0.2:7000"));
  cr_expect_eq(ended("Stopped"), 0);
  cr_expect(allowed("c1", "n1", "n2", "10.0.0.2:7000"));
  cr_expect_eq(ended("Deleted"), 1);
  cr_expect(!allowed("c1", "n1", "n2", "10.0.0.2:7000"));
  cr_expect_eq(relay_jobs_count(t), 0);
}

Test(relay_weights_rule, other_and_undecodable_events) {
  bus_event ev;
  char id[33];
  msgpack_sbuffer sb;
  lt_pack_field(&sb, "job", "j1");
  lt_sample_event(&ev, id, "engine.nodes", &sb);
  cr_expect_eq(relay_jobs_apply(t, &ev), BUS_EMALFORMED, "not decoded");
  ev.type = "stage.started";
  cr_expect_eq(relay_jobs_apply(t, &ev), 0);
  cr_expect_eq(relay_jobs_apply(t, NULL), BUS_EMALFORMED);
  msgpack_sbuffer_destroy(&sb);
  cr_expect_eq(relay_jobs_count(t), 0);
}
