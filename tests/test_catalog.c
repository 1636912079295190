/*
 * test_catalog.c - the catalog end to end with real processes: the
 * lark-catalog binary is killed with SIGKILL while events are appended,
 * restarted, and must end with every event applied exactly once and a
 * view equal to its replay. Stale and malformed events are counted the
 * same way live and in replay.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bed.h"
#include "events.h"
#include "catalog.h"
#include "natsd.h"
#include "proc.h"
#include "replay.h"

#define SUBJECTS 40

static lt_natsd srv;
static bus_conn *conn;
static char dir[256];
static uint64_t versions[SUBJECTS];
static uint64_t counts[SUBJECTS];

static void
setup(void) {
  lt_bed_up(&srv, &conn, dir, sizeof dir, "catalog", 1000);
  memset(versions, 0, sizeof versions);
  memset(counts, 0, sizeof counts);
}

static void
teardown(void) {
  lt_bed_down(&srv, conn, dir, NULL, 0);
}

TestSuite(catalog, .init = setup, .fini = teardown, .timeout = 120);

static pid_t
start_catalog(void) {
  return lt_must_start("lark-catalog", srv.url, dir, "view", "catalog.log",
                       NULL);
}

/* Append one event on subject k, chained on its version. */
static void
append_one(int k, int n) {
  char subject[64], id[33];
  snprintf(subject, sizeof subject, "lark.ev.sample.s%d", k);
  const char *type = versions[k] ? "sample.updated" : "sample.created";
  bus_event ev;
  lt_event(&ev, id, type, "t", n, versions[k], NULL);
  int rc = bus_append(conn, subject, &ev, BUS_APPEND_CHECK, &versions[k], NULL);
  cr_assert_eq(rc, 0, "append %d: %s", n, bus_last_error());
  counts[k]++;
}

/* An event whose prev is stale, appended without the broker's check (as
 * on an R3 stream of 2.9.10, where the check is unsafe). */
static void
append_stale(int k) {
  char subject[64], id[33];
  snprintf(subject, sizeof subject, "lark.ev.sample.s%d", k);
  bus_event ev;
  lt_event(&ev, id, "sample.updated", "late", 1, versions[k] - 1, NULL);
  cr_assert_eq(bus_append(conn, subject, &ev, BUS_APPEND_NOCHECK, NULL, NULL),
               0);
}

static bus_status
wait_caught_up(uint64_t last) {
  bus_status st = {0};
  for (int i = 0; i < 300; i++) {
    if (bus_status_query(conn, "catalog", 500, &st) == 0 && st.seq >= last)
      return st;
    usleep(100 * 1000);
  }
  cr_assert_fail("catalog did not catch up to %llu (at %llu)",
                 (unsigned long long)last, (unsigned long long)st.seq);
  return st;
}

Test(catalog, kill9_restart_applies_everything_once) {
  pid_t pid = start_catalog();
  int n = 0;
  for (; n < 600; n++) {
    append_one(n % SUBJECTS, n);
    if (n == 200 || n == 400) { /* kill mid-stream, at two moments */
      lt_kill(pid, SIGKILL);
      pid = start_catalog();
    }
  }
  append_stale(3);
  append_stale(7);
  cr_assert_eq(bus_conn_publish(conn, "lark.ev.sample.junk", "\xc1\xff", 2), 0);
  uint64_t last = 0;
  usleep(200 * 1000);
  bus_stream_last_seq(conn, "LARK_EVENTS", &last);
  cr_assert_eq(last, 603);
  bus_status st = wait_caught_up(last);
  cr_expect_eq(st.applied, 600, "every event applied exactly once");
  cr_expect_eq(st.stale, 2);
  cr_expect_eq(st.rejected, 1);

  lt_expect_replay(conn, "catalog", 1, 1);
  lt_kill(pid, SIGTERM);
}

static uint64_t
catalog_events(bus_view *v, const char *id) {
  bus_txn *t;
  cr_assert_eq(bus_view_read(v, &t), 0);
  bus_packbuf b;
  bus_packbuf_init(&b);
  cr_assert_eq(catalog_describe(t, "sample", id, 0, &b.pk), 0);
  bus_txn_end(t);
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object o;
  cr_assert(msgpack_unpack(b.sb.data, b.sb.size, NULL, &z, &o) >= 0);
  const msgpack_object *agg = bus_obj_get(&o, "aggregate");
  const msgpack_object *hist = bus_obj_get(&o, "history");
  uint64_t n = (uint64_t)bus_obj_int(agg, "events", -1);
  cr_expect_eq(hist->via.array.size, n, "history holds every event");
  msgpack_zone_destroy(&z);
  bus_packbuf_destroy(&b);
  return n;
}

Test(catalog, replay_until_seq_and_from_snapshot) {
  for (int n = 0; n < 100; n++)
    append_one(n % 4, n);
  const lark_view_entry *ve = lark_view_find("catalog");
  cr_assert_not_null(ve);

  char half[512], full[512], cont[512];
  snprintf(half, sizeof half, "%s/half", dir);
  snprintf(full, sizeof full, "%s/full", dir);
  snprintf(cont, sizeof cont, "%s/cont", dir);
  lark_replay_opts o;
  lark_replay_opts_init(&o);
  o.out_dir = half;
  o.until_seq = 50;
  o.batch = 7;
  lark_replay_result rh, rf, rc2;
  cr_assert_eq(lark_replay_run(conn, ve, &o, &rh), 0, "%s", bus_last_error());
  cr_expect_eq(rh.seq, 50);
  cr_expect_eq(rh.events, 50);

  o.out_dir = full;
  o.until_seq = 0;
  cr_assert_eq(lark_replay_run(conn, ve, &o, &rf), 0);
  cr_expect_eq(rf.seq, 100);

  o.out_dir = cont; /* continue the half view from its snapshot */
  o.from_snapshot = half;
  cr_assert_eq(lark_replay_run(conn, ve, &o, &rc2), 0, "%s", bus_last_error());
  cr_expect_eq(rc2.seq, 100);
  cr_expect_eq(rc2.events, 50, "only the rest is read");
  cr_expect(!memcmp(rf.digest, rc2.digest, 32));
  cr_expect(memcmp(rf.digest, rh.digest, 32));

  o.out_dir = full; /* not empty: refused */
  o.from_snapshot = NULL;
  cr_expect_eq(lark_replay_run(conn, ve, &o, &rf), BUS_EEXISTS);

  bus_view_def def;
  ve->def(&def);
  bus_view *v = lt_must_open_view(&def, full, 1);
  cr_expect_eq(catalog_events(v, "s1"), 25);
  bus_view_close(v);
}

Test(catalog, replay_until_time) {
  for (int n = 0; n < 10; n++)
    append_one(0, n);
  usleep(300 * 1000);
  int64_t cut = bus_wall_ns();
  usleep(300 * 1000);
  for (int n = 0; n < 5; n++)
    append_one(0, n);
  char out[512];
  snprintf(out, sizeof out, "%s/at", dir);
  lark_replay_opts o;
  lark_replay_opts_init(&o);
  o.out_dir = out;
  o.until_ns = cut;
  lark_replay_result r;
  cr_assert_eq(lark_replay_run(conn, lark_view_find("catalog"), &o, &r), 0,
               "%s", bus_last_error());
  cr_expect_eq(r.seq, 10);
}
