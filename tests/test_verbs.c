/*
 * test_verbs.c - the one command path of libbus: the event id rule, the
 * wait until a view has applied a sequence, and a table of verbs served
 * by worker threads. Against a real broker, with a real service loop.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bed.h"
#include "natsd.h"

static const char *const tables[] = {"seen", NULL};

static int
apply_seen(bus_txn *t, const bus_event *ev, void *ud) {
  (void)ud;
  return bus_txn_put(t, "seen", ev->id, strlen(ev->id), "1", 1);
}

static lt_natsd srv;
static bus_conn *conn;
static char dir[256];
static bus_view *view;
static pthread_t loop;
static atomic_int stop;

static double
now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *
run_service(void *arg) {
  (void)arg;
  bus_service_opts o;
  bus_service_opts_init(&o);
  o.name = "verbs";
  o.stop_flag = &stop;
  if (bus_service_run(conn, view, &o))
    fprintf(stderr, "service: %s\n", bus_last_error());
  return NULL;
}

static void
setup(void) {
  lt_bed_up(&srv, &conn, dir, sizeof dir, "verbs", 1000);
  bus_view_def d = {.name = "verbs", .tables = tables, .apply = apply_seen};
  view = lt_must_open_view(&d, dir, 1);
  stop = 0;
  pthread_create(&loop, NULL, run_service, NULL);
}

static void
teardown(void) {
  stop = 1;
  pthread_join(loop, NULL);
  bus_view_close(view);
  lt_bed_down(&srv, conn, dir, NULL, 0);
}

TestSuite(verbs, .init = setup, .fini = teardown, .timeout = 60);

static bus_cmd
command(const char *user, const char *verb, const char *key) {
  bus_cmd c;
  memset(&c, 0, sizeof c);
  snprintf(c.user, sizeof c.user, "%s", user);
  snprintf(c.kind, sizeof c.kind, "sample");
  snprintf(c.verb, sizeof c.verb, "%s", verb);
  snprintf(c.key, sizeof c.key, "%s", key);
  return c;
}

/* One sample.created for cmd on lark.ev.sample.<name>. */
static int
append(const bus_cmd *cmd, const char *name, uint64_t prev, uint64_t *seq,
       int *dup) {
  char subject[64];
  snprintf(subject, sizeof subject, "lark.ev.sample.%s", name);
  return bus_cmd_append(conn, cmd, subject, "sample.created", prev, NULL, 0,
                        seq, dup);
}

/* ------------------------------------------------------------- the id rule */

Test(verbs, id_rule) {
  bus_cmd a = command("alice", "apply", "k1"), a2 = a;
  bus_cmd b = command("bob", "apply", "k1");
  bus_cmd stop_a = command("alice", "stop", "k1");
  char ia[33], ia2[33], ib[33], is[33], r1[33], r2[33];
  bus_cmd_event_id(&a, ia);
  bus_cmd_event_id(&a2, ia2);
  bus_cmd_event_id(&b, ib);
  bus_cmd_event_id(&stop_a, is);
  cr_expect_eq(strlen(ia), 32);
  cr_expect_eq(strspn(ia, "0123456789abcdef"), 32);
  cr_expect_str_eq(ia, ia2, "the same command, the same id");
  cr_expect_str_neq(ia, ib, "the same key from another user");
  cr_expect_str_neq(ia, is, "the same key for another verb");
  /* field boundaries count: user "ab" key "c" is not user "a" key "bc" */
  bus_cmd x = command("ab", "apply", "c"), y = command("a", "apply", "bc");
  bus_cmd_event_id(&x, r1);
  bus_cmd_event_id(&y, r2);
  cr_expect_str_neq(r1, r2);
  /* no key: a fresh id each time, never deduplicated */
  bus_cmd none = command("alice", "apply", "");
  bus_cmd_event_id(&none, r1);
  bus_cmd_event_id(&none, r2);
  cr_expect_str_neq(r1, r2);
}

Test(verbs, retry_lands_once) {
  bus_cmd a = command("alice", "created", "k-retry");
  bus_cmd b = command("bob", "created", "k-retry");
  uint64_t s1 = 0, s2 = 0, s3 = 0;
  int dup = -1;
  cr_assert_eq(append(&a, "one", 0, &s1, &dup), 0, "%s", bus_last_error());
  cr_expect_eq(dup, 0);
  /* the same version check again: the subject's last event is its own */
  cr_assert_eq(append(&a, "one", 0, &s2, &dup), 0, "%s", bus_last_error());
  cr_expect_eq(dup, 1, "a retry lands once");
  cr_expect_eq(s2, s1, "answered with the first attempt's sequence");
  /* a check that passes (a sign's fresh serial): the broker's duplicate */
  s2 = 0, dup = -1;
  cr_assert_eq(append(&a, "two", 0, &s2, &dup), 0, "%s", bus_last_error());
  cr_expect_eq(dup, 1, "a retry is the broker's duplicate");
  cr_expect_eq(s2, s1);
  cr_assert_eq(append(&b, "one", s1, &s3, &dup), 0, "%s", bus_last_error());
  cr_expect_eq(dup, 0, "another user's key is another command");
  cr_expect_gt(s3, s1);
  /* someone else's event in the way stays a conflict */
  bus_cmd other = command("carol", "created", "k-other");
  cr_expect_eq(append(&other, "one", s1, NULL, NULL), BUS_ECONFLICT);
}

/* Commands appended together are each answered as alone: the same
 * commands again at the same versions find their own events there (the
 * first attempt's sequences), and another's event in the way is a
 * conflict. */
Test(verbs, appended_together_each_as_alone) {
  bus_cmd a = command("alice", "created", "k-many");
  bus_cmd b = command("bob", "created", "k-many");
  bus_cmd other = command("carol", "created", "k-many");
  bus_cmd fresh = command("carol", "created", "k-fresh");
  bus_cmd_item it[2] = {
      {.cmd = &a, .subject = "lark.ev.sample.ma", .type = "sample.created"},
      {.cmd = &b, .subject = "lark.ev.sample.mb", .type = "sample.created"}};
  uint64_t first[2];
  cr_assert_eq(bus_cmd_append_many(conn, it, 2), 0);
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(it[i].rc, 0, "item %d: %s", i, bus_last_error());
    cr_expect_gt(it[i].seq, 0);
    first[i] = it[i].seq;
    it[i].rc = -1, it[i].seq = 0;
  }
  cr_assert_eq(bus_cmd_append_many(conn, it, 2), 0);
  for (int i = 0; i < 2; i++) {
    cr_expect_eq(it[i].rc, 0, "item %d: %s", i, bus_last_error());
    cr_expect_eq(it[i].seq, first[i], "item %d landed twice", i);
  }
  bus_cmd_item late[2] = {
      {.cmd = &other, .subject = "lark.ev.sample.ma", .type = "sample.created"},
      {.cmd = &fresh,
       .subject = "lark.ev.sample.mc",
       .type = "sample.created"}};
  cr_assert_eq(bus_cmd_append_many(conn, late, 2), 0);
  cr_expect_eq(late[0].rc, BUS_ECONFLICT);
  cr_expect_eq(late[1].rc, 0, "%s", bus_last_error());
}

/* ------------------------------------------------------ wait until applied */

typedef struct waiter {
  uint64_t seq;
  int timeout_ms, rc;
  double woke;
} waiter;

static void *
wait_thread(void *arg) {
  waiter *w = arg;
  w->rc = bus_view_wait_applied(view, w->seq, w->timeout_ms);
  w->woke = now_s();
  return NULL;
}

Test(verbs, waiter_wakes_on_commit) {
  uint64_t last = 0, seq = 0;
  cr_assert_eq(bus_stream_last_seq(conn, "LARK_EVENTS", &last), 0);
  waiter w = {.seq = last + 1, .timeout_ms = 10000, .rc = 1};
  pthread_t th;
  pthread_create(&th, NULL, wait_thread, &w);
  usleep(200 * 1000);
  cr_expect_eq(w.rc, 1, "woke before the sequence existed");
  bus_cmd a = command("alice", "created", "k-wake");
  cr_assert_eq(append(&a, "wake", 0, &seq, NULL), 0, "%s", bus_last_error());
  double stored = now_s();
  pthread_join(th, NULL);
  cr_assert_eq(seq, last + 1);
  cr_expect_eq(w.rc, 0, "%s", bus_last_error());
  cr_expect_lt(w.woke - stored, 1.0, "woke %.3f s after the append",
               w.woke - stored);
  bus_view_stats st;
  cr_assert_eq(bus_view_stats_get(view, &st), 0);
  cr_expect_geq(st.applied_seq, seq);
  /* already applied: at once */
  cr_expect_eq(bus_view_wait_applied(view, seq, 0), 0);
}

Test(verbs, deadline_expires) {
  double t0 = now_s();
  int rc = bus_view_wait_applied(view, 1000000, 150);
  double took = now_s() - t0;
  cr_expect_eq(rc, BUS_ETIMEOUT);
  cr_expect(strstr(bus_last_error(), "not yet 1000000") != NULL, "%s",
            bus_last_error());
  cr_expect_geq(took, 0.14);
  cr_expect_lt(took, 2.0);
}

/* --------------------------------------------------------- a verbs table */

static int
do_wait(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  (void)ud;
  uint64_t seq = (uint64_t)bus_obj_int(&cmd->body, "seq", 0);
  int rc = bus_view_wait_applied(v, seq, 10000);
  if (rc)
    return bus_cmd_reply_error(c, cmd, rc, bus_last_error(), NULL, 0), rc;
  return bus_cmd_reply_ok(c, cmd, seq, NULL, 0, 0);
}

static int
do_ok(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  (void)v, (void)ud;
  return bus_cmd_reply_ok(c, cmd, 1, NULL, 0, 0);
}

/* replies with the view's applied sequence */
static int
do_seen(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  (void)ud;
  bus_view_stats st;
  bus_view_stats_get(v, &st);
  return bus_cmd_reply_ok(c, cmd, st.applied_seq, NULL, 0, 0);
}

static const bus_verb table[] = {
    {"sample", "wait", do_wait, NULL, 0},
    {"sample", "ok", do_ok, NULL, 0},
    {"sample", "seen", do_seen, NULL, BUS_VERB_CATCH_UP},
    {"sample", "adm", do_ok, NULL, BUS_VERB_ADMIN},
    {0},
};
static const char *const kinds[] = {"sample", NULL};
static const bus_verbs verbs = {
    .kinds = kinds, .verbs = table, .unknown = "verbs: wait, ok, seen, adm"};

typedef struct call {
  const char *subject;
  char body[64];
  int rc;
  msgpack_zone zone;
  msgpack_object reply;
  _Atomic int done;
} call;

static void *
call_thread(void *arg) {
  call *k = arg;
  void *out = NULL;
  size_t len = 0;
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 1);
  bus_pack_kv_uint(&b.pk, "seq", strtoull(k->body, NULL, 10));
  k->rc = bus_conn_request(conn, k->subject, b.sb.data, b.sb.size, 15000, &out,
                           &len);
  bus_packbuf_destroy(&b);
  msgpack_zone_init(&k->zone, 1024);
  if (!k->rc) {
    void *keep = msgpack_zone_malloc(&k->zone, len);
    memcpy(keep, out, len);
    msgpack_unpack(keep, len, NULL, &k->zone, &k->reply);
  }
  free(out);
  atomic_store(&k->done, 1);
  return NULL;
}

static void
call_now(call *k) {
  call_thread(k);
  cr_assert_eq(k->rc, 0, "%s: %s", k->subject, bus_last_error());
}

static int
is_ok(const msgpack_object *r) {
  const msgpack_object *o = bus_obj_get(r, "ok");
  return o && o->type == MSGPACK_OBJECT_BOOLEAN && o->via.boolean;
}

static const char *
error_code(const msgpack_object *r, char *buf, size_t cap) {
  return bus_obj_str(bus_obj_get(r, "error"), "code", buf, cap);
}

Test(verbs, a_waiting_command_holds_up_no_other) {
  bus_cmd_server *s = NULL;
  cr_assert_eq(bus_verbs_serve(conn, &verbs, view, NULL, 2, &s), 0, "%s",
               bus_last_error());
  uint64_t last = 0, seq = 0;
  cr_assert_eq(bus_stream_last_seq(conn, "LARK_EVENTS", &last), 0);
  call w = {.subject = "lark.cmd.admin.sample.wait"};
  snprintf(w.body, sizeof w.body, "%llu", (unsigned long long)last + 1);
  pthread_t th;
  pthread_create(&th, NULL, call_thread, &w);
  usleep(300 * 1000);
  call ok = {.subject = "lark.cmd.admin.sample.ok"};
  double t0 = now_s();
  call_now(&ok);
  cr_expect_lt(now_s() - t0, 2.0, "the other command waited");
  cr_expect(is_ok(&ok.reply));
  cr_expect_eq(atomic_load(&w.done), 0, "the waiting one answered early");
  bus_cmd a = command("alice", "created", "k-held");
  cr_assert_eq(append(&a, "held", 0, &seq, NULL), 0, "%s", bus_last_error());
  double stored = now_s();
  pthread_join(th, NULL);
  cr_assert_eq(w.rc, 0, "%s", bus_last_error());
  cr_expect(is_ok(&w.reply));
  cr_expect_eq((uint64_t)bus_obj_int(&w.reply, "seq", 0), seq);
  cr_expect_lt(now_s() - stored, 2.0);
  msgpack_zone_destroy(&w.zone);
  msgpack_zone_destroy(&ok.zone);
  bus_cmd_server_stop(s);
}

/* A command on subject answered with error code and message. */
static void
refused(const char *subject, const char *code, const char *message) {
  char got[32] = "", msg[128] = "";
  call k = {.subject = subject};
  call_now(&k);
  cr_expect_str_eq(error_code(&k.reply, got, sizeof got), code);
  bus_obj_str(bus_obj_get(&k.reply, "error"), "message", msg, sizeof msg);
  cr_expect_str_eq(msg, message);
  msgpack_zone_destroy(&k.zone);
}

Test(verbs, flags_and_unknown_verbs) {
  bus_cmd_server *s = NULL;
  cr_assert_eq(bus_verbs_serve(conn, &verbs, view, NULL, 0, &s), 0, "%s",
               bus_last_error());
  refused("lark.cmd.bob.sample.adm", "DENIED", "only admin may adm");
  refused("lark.cmd.bob.sample.nothing", "INVAL", "verbs: wait, ok, seen, adm");
  /* CATCH_UP: the handler sees what was stored before the command came */
  uint64_t seq = 0;
  bus_cmd a = command("alice", "created", "k-seen");
  cr_assert_eq(append(&a, "seen", 0, &seq, NULL), 0, "%s", bus_last_error());
  call c = {.subject = "lark.cmd.admin.sample.seen"};
  call_now(&c);
  cr_expect_geq((uint64_t)bus_obj_int(&c.reply, "seq", 0), seq);
  msgpack_zone_destroy(&c.zone);
  bus_cmd_server_stop(s);
}
