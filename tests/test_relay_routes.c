/*
 * test_relay_routes.c - the relay's routing table, fed by hand and by
 * its follower from a real nats-server's LARK_ROUTES: a route.set
 * replaces its subject's row, route.deleted drops it, malformed messages
 * are skipped, rows appended before and after the follower starts both
 * arrive, and a cluster filter keeps other clusters' rows out.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "bus.h"
#include "events.h"
#include "natsd.h"
#include "routes.h"
#include "wait.h"

/* A route.set for pod in domain d, read by cluster c, the pod living in
 * pc; or a route.deleted when ip is NULL. */
static void
pack_route(msgpack_sbuffer *sb, const char *d, const char *c, const char *pod,
           const char *ip, const char *pc) {
  msgpack_packer pk;
  msgpack_sbuffer_init(sb);
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, ip ? 8 : 3);
  bus_pack_kv_str(&pk, "domain", d);
  bus_pack_kv_str(&pk, "cluster", c);
  bus_pack_kv_str(&pk, "pod", pod);
  if (!ip)
    return;
  bus_pack_kv_str(&pk, "ip", ip);
  bus_pack_kv_str(&pk, "cidr", "10.2.0.0/16");
  bus_pack_kv_str(&pk, "node", "n1");
  bus_pack_kv_str(&pk, "podCluster", pc);
  bus_pack_kv_str(&pk, "via", strcmp(c, pc) ? "hub" : "local");
}

static void
event_of(bus_event *ev, char id[33], const char *type, msgpack_sbuffer *sb) {
  lt_sample_event(ev, id, type, sb);
}

/* Decode an event as the follower would (zone kept by the caller). */
static void
as_delivered(const char *type, msgpack_sbuffer *sb, msgpack_zone *z,
             bus_event *out) {
  bus_event ev;
  char id[33];
  msgpack_sbuffer enc;
  event_of(&ev, id, type, sb);
  msgpack_sbuffer_init(&enc);
  cr_assert_eq(bus_event_encode(&ev, &enc), 0, "%s", bus_last_error());
  cr_assert_eq(bus_event_decode(enc.data, enc.size, out, z), 0, "%s",
               bus_last_error());
  msgpack_sbuffer_destroy(&enc);
}

static int
apply(relay_routes *t, const char *d, const char *c, const char *pod,
      const char *ip, const char *pc) {
  char subject[256];
  msgpack_sbuffer sb;
  msgpack_zone z;
  bus_event ev;
  msgpack_zone_init(&z, 4096);
  pack_route(&sb, d, c, pod, ip, pc);
  as_delivered(ip ? "route.set" : "route.deleted", &sb, &z, &ev);
  snprintf(subject, sizeof subject, "lark.route.%s.%s.%s", d, c, pod);
  int rc = relay_routes_apply(t, subject, &ev);
  msgpack_zone_destroy(&z);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

Test(relay_routes, set_replace_tombstone) {
  relay_routes *t;
  relay_route r;
  cr_assert_eq(relay_routes_new(&t), 0);
  cr_assert_eq(apply(t, "d1", "c1", "p1", "10.2.0.5", "c2"), 0);
  cr_assert_eq(apply(t, "d1", "c1", "p2", "fd00::05", "c1"), 0);
  cr_expect_eq(relay_routes_count(t), 2);
  cr_assert_eq(relay_routes_find(t, "d1", "10.2.0.5", &r), 0);
  cr_expect_str_eq(r.pod, "p1");
  cr_expect_str_eq(r.pod_cluster, "c2");
  cr_expect_str_eq(r.cidr, "10.2.0.0/16");
  cr_expect_eq(r.via_hub, 1);
  cr_expect_str_eq(r.real_ip, "");
  /* canonical addresses both ways */
  cr_assert_eq(relay_routes_find(t, "d1", "fd00:0::5", &r), 0);
  cr_expect_str_eq(r.ip, "fd00::5");
  cr_expect_eq(r.via_hub, 0);
  cr_expect_eq(relay_routes_find(t, "d2", "10.2.0.5", &r), BUS_ENOT_FOUND);
  /* replace: p1 moves to another address */
  uint64_t g = relay_routes_generation(t);
  cr_assert_eq(apply(t, "d1", "c1", "p1", "10.2.0.9", "c2"), 0);
  cr_expect_gt(relay_routes_generation(t), g);
  cr_expect_eq(relay_routes_count(t), 2);
  cr_expect_eq(relay_routes_find(t, "d1", "10.2.0.5", &r), BUS_ENOT_FOUND);
  cr_assert_eq(relay_routes_find_pod(t, "d1", "p1", &r), 0);
  cr_expect_str_eq(r.ip, "10.2.0.9");
  /* tombstone */
  cr_assert_eq(apply(t, "d1", "c1", "p1", NULL, NULL), 0);
  cr_expect_eq(relay_routes_count(t), 1);
  cr_expect_eq(relay_routes_find_pod(t, "d1", "p1", &r), BUS_ENOT_FOUND);
  relay_routes_free(t);
}

Test(relay_routes, malformed_is_skipped) {
  relay_routes *t;
  msgpack_sbuffer sb;
  msgpack_zone z;
  bus_event ev;
  cr_assert_eq(relay_routes_new(&t), 0);
  cr_assert_eq(apply(t, "d1", "c1", "p1", "10.2.0.5", "c2"), 0);
  msgpack_zone_init(&z, 4096);
  /* the subject disagrees with the row */
  pack_route(&sb, "d1", "c1", "p1", "10.2.0.6", "c2");
  as_delivered("route.set", &sb, &z, &ev);
  cr_expect_eq(relay_routes_apply(t, "lark.route.d1.c1.p9", &ev), BUS_EFIELD);
  cr_expect_eq(relay_routes_apply(t, "lark.route.d1.c2.p1", &ev), BUS_EFIELD);
  msgpack_sbuffer_destroy(&sb);
  /* not a route at all */
  ev.type = "job.submitted";
  cr_expect_eq(relay_routes_apply(t, "lark.route.d1.c1.p1", &ev),
               BUS_EUNKNOWN_TYPE);
  msgpack_zone_destroy(&z);
  cr_expect_eq(relay_routes_count(t), 1);
  cr_expect_eq(relay_routes_skipped(t), 3);
  relay_route r;
  cr_assert_eq(relay_routes_find_pod(t, "d1", "p1", &r), 0);
  cr_expect_str_eq(r.ip, "10.2.0.5");
  relay_routes_free(t);
}

/* ------------------------------------------------------------ follower */

typedef struct fx {
  lt_natsd s;
  bus_conn *c;
} fx;

static void
up(fx *f) {
  memset(f, 0, sizeof *f);
  cr_assert_eq(lt_natsd_start(&f->s, NULL, NULL), 0);
  cr_assert_eq(lt_connect(&f->s, &f->c), 0, "%s", bus_last_error());
  cr_assert_eq(lt_streams(f->c, 2000), 0, "%s", bus_last_error());
}

static void
down(fx *f) {
  bus_conn_close(f->c);
  lt_natsd_stop(&f->s);
}

static void
publish(fx *f, const char *d, const char *c, const char *pod, const char *ip,
        const char *pc) {
  char subject[256], id[33];
  msgpack_sbuffer sb;
  bus_event ev;
  pack_route(&sb, d, c, pod, ip, pc);
  event_of(&ev, id, ip ? "route.set" : "route.deleted", &sb);
  snprintf(subject, sizeof subject, "lark.route.%s.%s.%s", d, c, pod);
  int rc = bus_append(f->c, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL);
  cr_assert_eq(rc, 0, "%s", bus_last_error());
  msgpack_sbuffer_destroy(&sb);
}

static void
changed(void *ud) {
  __atomic_add_fetch((int *)ud, 1, __ATOMIC_SEQ_CST);
}

/* Wait (up to 10 s) for pod's row to hold ip (NULL: to be gone). */
static int
wait_row(relay_routes *t, const char *d, const char *pod, const char *ip) {
  relay_route r;
  for (int i = 0; i < 200; i++) {
    int rc = relay_routes_find_pod(t, d, pod, &r);
    if (ip ? !rc && !strcmp(r.ip, ip) : rc == BUS_ENOT_FOUND)
      return 1;
    lt_sleep_ms(50);
  }
  return 0;
}

Test(relay_routes, follower_before_and_after_start, .timeout = 60) {
  fx f;
  relay_routes *t;
  relay_follow *fw;
  int changes = 0;
  up(&f);
  publish(&f, "d1", "c1", "p1", "10.2.0.5", "c2");
  publish(&f, "d1", "c1", "p2", "10.2.0.6", "c1");
  publish(&f, "d1", "c1", "p1", "10.2.0.7", "c2"); /* replaces the first */
  /* garbage on a route subject: not an event */
  cr_assert_eq(bus_conn_publish(f.c, "lark.route.d1.c1.p3", "junk", 4), 0);
  cr_assert_eq(relay_routes_new(&t), 0);
  cr_assert_eq(
      relay_follow_start(f.c, "lark.route.>", t, changed, &changes, &fw), 0,
      "%s", bus_last_error());
  cr_expect(wait_row(t, "d1", "p1", "10.2.0.7"));
  cr_expect(wait_row(t, "d1", "p2", "10.2.0.6"));
  for (int i = 0; i < 200 && !relay_follow_synced(fw); i++)
    lt_sleep_ms(50);
  cr_expect(relay_follow_synced(fw));
  cr_expect_eq(relay_routes_count(t), 2);
  cr_expect_geq(__atomic_load_n(&changes, __ATOMIC_SEQ_CST), 1);
  /* after the start: a new row, a replacement, a tombstone */
  publish(&f, "d1", "c1", "p4", "10.2.0.8", "c2");
  publish(&f, "d1", "c1", "p2", "10.2.0.10", "c1");
  publish(&f, "d1", "c1", "p1", NULL, NULL);
  cr_expect(wait_row(t, "d1", "p4", "10.2.0.8"));
  cr_expect(wait_row(t, "d1", "p2", "10.2.0.10"));
  cr_expect(wait_row(t, "d1", "p1", NULL));
  cr_expect_eq(relay_routes_count(t), 2);
  cr_expect_geq(relay_routes_skipped(t), 1);
  relay_follow_stop(fw);
  relay_routes_free(t);
  down(&f);
}

Test(relay_routes, follower_filters_by_cluster, .timeout = 60) {
  fx f;
  relay_routes *t;
  relay_follow *fw;
  up(&f);
  publish(&f, "d1", "c1", "p1", "10.2.0.5", "c2");
  publish(&f, "d1", "c2", "p1", "10.2.0.5", "c2");
  publish(&f, "d2", "c2", "q1", "10.3.0.5", "c2");
  cr_assert_eq(relay_routes_new(&t), 0);
  cr_assert_eq(relay_follow_start(f.c, "lark.route.*.c2.>", t, NULL, NULL, &fw),
               0);
  for (int i = 0; i < 200 && !relay_follow_synced(fw); i++)
    lt_sleep_ms(50);
  cr_assert(relay_follow_synced(fw));
  publish(&f, "d1", "c1", "p2", "10.2.0.6", "c1");
  publish(&f, "d2", "c2", "q2", "10.3.0.6", "c2");
  cr_expect(wait_row(t, "d2", "q2", "10.3.0.6"));
  lt_sleep_ms(300);
  cr_expect_eq(relay_routes_count(t), 3);
  relay_route r;
  cr_assert_eq(relay_routes_find_pod(t, "d1", "p1", &r), 0);
  cr_expect_str_eq(r.cluster, "c2");
  cr_expect_eq(r.via_hub, 0);
  cr_expect_eq(relay_routes_find_pod(t, "d1", "p2", &r), BUS_ENOT_FOUND);
  relay_follow_stop(fw);
  relay_routes_free(t);
  down(&f);
}

Test(relay_routes, follower_survives_a_broker_restart, .timeout = 90) {
  fx f;
  relay_routes *t;
  relay_follow *fw;
  up(&f);
  publish(&f, "d1", "c1", "p1", "10.2.0.5", "c2");
  cr_assert_eq(relay_routes_new(&t), 0);
  cr_assert_eq(relay_follow_start(f.c, "lark.route.>", t, NULL, NULL, &fw), 0);
  cr_assert(wait_row(t, "d1", "p1", "10.2.0.5"));
  cr_assert_eq(lt_natsd_kill_restart(&f.s), 0);
  int ok = 0;
  for (int i = 0; i < 100 && !ok; i++) {
    char subject[] = "lark.route.d1.c1.p2", id[33];
    msgpack_sbuffer sb;
    bus_event ev;
    pack_route(&sb, "d1", "c1", "p2", "10.2.0.6", "c1");
    event_of(&ev, id, "route.set", &sb);
    ok = !bus_append(f.c, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL);
    msgpack_sbuffer_destroy(&sb);
    if (!ok)
      lt_sleep_ms(200);
  }
  cr_assert(ok, "the broker did not come back");
  cr_expect(wait_row(t, "d1", "p2", "10.2.0.6"));
  cr_expect(wait_row(t, "d1", "p1", "10.2.0.5"));
  relay_follow_stop(fw);
  relay_routes_free(t);
  down(&f);
}
