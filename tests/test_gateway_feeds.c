/*
 * test_gateway_feeds.c - the gateway's feeds (services/gateway/feeds.c)
 * against a real broker and the real lark-logs:
 *   - the events feed gives exactly what its filters ask (subject, type,
 *     actor, since), each record the bytes `larkctl tail -o json` prints
 *     for that event, both streams merged in stored-time order;
 *   - resuming after an id continues without a gap or a duplicate, also
 *     while events keep coming, compared with an unbroken follower;
 *   - follow gives what is appended after it opened; limit ends a feed;
 *   - bad queries are refused with BUS_EINVAL, never a crash;
 *   - a Job's logs, republished by lark-logs from a node's batches: the
 *     last N lines in time order over two pods, one pod alone, then
 *     following new batches;
 *   - both feeds under the broker's rules for the gateway, with its own
 *     credentials.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bed.h"
#include "gateway.h"
#include "natsd.h"
#include "proc.h"
#include "secbed.h"

static lt_natsd srv;
static bus_conn *conn;
static char dir[256];
static pid_t logs_pid;

static void
setup(void) {
  lt_bed_up(&srv, &conn, dir, sizeof dir, "gwfeeds", 60000);
  logs_pid =
      lt_must_start("lark-logs", srv.url, dir, "logs", "lark-logs.log", NULL);
}

static void
teardown(void) {
  lt_bed_down(&srv, conn, dir, &logs_pid, 1);
}

TestSuite(gateway_feeds, .init = setup, .fini = teardown, .timeout = 120);

/* ------------------------------------------------------------ writing */

static uint64_t
append(const char *subject, const char *type, const char *actor,
       const bus_packbuf *b) {
  char id[33];
  uint64_t seq = 0;
  bus_event_new_id(id);
  bus_event ev = {.v = 1,
                  .type = type,
                  .id = id,
                  .ts = bus_wall_ns(),
                  .actor = actor,
                  .cause = "",
                  .data_mp = b ? b->sb.data : NULL,
                  .data_mp_len = b ? b->sb.size : 0};
  int rc = bus_append(conn, subject, &ev, BUS_APPEND_NOCHECK, &seq, NULL);
  cr_assert_eq(rc, 0, "append %s on %s: %s", type, subject, bus_last_error());
  return seq;
}

static uint64_t
sample(const char *name, const char *type, const char *actor, int k) {
  char subject[128], text[32];
  bus_packbuf b;
  bus_packbuf_init(&b);
  snprintf(text, sizeof text, "v%d", k);
  msgpack_pack_map(&b.pk, 1);
  bus_pack_kv_str(&b.pk, "text", text);
  snprintf(subject, sizeof subject, "lark.ev.sample.%s", name);
  uint64_t seq = append(subject, type, actor, &b);
  bus_packbuf_destroy(&b);
  return seq;
}

static uint64_t
report(const char *job, double reward) {
  char subject[128];
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 2);
  bus_pack_kv_str(&b.pk, "kind", "metric");
  bus_pack_str(&b.pk, "values");
  msgpack_pack_map(&b.pk, 1);
  bus_pack_str(&b.pk, "reward");
  msgpack_pack_double(&b.pk, reward);
  snprintf(subject, sizeof subject, "lark.run.%s", job);
  uint64_t seq = append(subject, "run.reported", "lark-reports", &b);
  bus_packbuf_destroy(&b);
  return seq;
}

/* ------------------------------------------------------------ reading */

typedef struct rec {
  uint64_t id;
  char event[16];
  char *json;
} rec;

typedef struct recs {
  rec r[512];
  size_t n;
} recs;

static int
keep(void *ud, uint64_t id, const char *event, const char *json, size_t len) {
  recs *k = ud;
  cr_assert_lt(k->n, 512, "too many records");
  cr_assert_eq(strlen(json), len);
  rec *r = &k->r[k->n++];
  r->id = id;
  snprintf(r->event, sizeof r->event, "%s", event);
  r->json = strdup(json);
  return 0;
}

static void
recs_free(recs *k) {
  for (size_t i = 0; i < k->n; i++)
    free(k->r[i].json);
  k->n = 0;
}

/* Read f until it ends (a feed that does not follow) or holds want
 * records, for up to 10 s; the last call's result. */
static int
drain(gw_feed *f, recs *k, size_t want) {
  int rc = 0;
  for (int i = 0; i < 100 && (!want || k->n < want); i++) {
    rc = gw_feed_next(f, keep, k, 100);
    if (rc == GW_FEED_END)
      break;
    cr_assert_geq(rc, 0, "gw_feed_next: %s %s", bus_err_name(rc),
                  bus_last_error());
  }
  return rc;
}

static recs *
events(const gw_events_query *q, size_t want) {
  recs *k = calloc(1, sizeof *k);
  gw_feed *f = NULL;
  int rc = gw_events_open(conn, q, &f);
  cr_assert_eq(rc, 0, "gw_events_open: %s", bus_last_error());
  rc = drain(f, k, want);
  if (!q->follow)
    cr_assert_eq(rc, GW_FEED_END, "a feed that does not follow ends");
  gw_feed_close(f);
  return k;
}

static const char *
field(const rec *r, const char *key, char *buf, size_t cap) {
  json_t *j = json_loads(r->json, 0, NULL);
  cr_assert_not_null(j, "not JSON: %s", r->json);
  json_t *v = json_object_get(j, key);
  if (json_is_string(v))
    snprintf(buf, cap, "%s", json_string_value(v));
  else if (json_is_integer(v))
    snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
  else
    snprintf(buf, cap, "%s", v ? "?" : "");
  json_decref(j);
  return buf;
}

static void
assert_all(const recs *k, const char *key, const char *want) {
  char buf[256];
  for (size_t i = 0; i < k->n; i++)
    cr_assert_str_eq(field(&k->r[i], key, buf, sizeof buf), want,
                     "record %zu: %s", i, k->r[i].json);
}

/* The test's history: alice creates a, bob updates b, two run reports of
 * j1 in between. */
static void
history(uint64_t *mid_seq, int64_t *mid_ns) {
  sample("a", "sample.created", "alice", 0);
  sample("b", "sample.created", "bob", 1);
  report("j1", 0.25);
  sample("a", "sample.updated", "alice", 2);
  usleep(20 * 1000);
  *mid_ns = bus_wall_ns();
  usleep(20 * 1000);
  *mid_seq = sample("b", "sample.updated", "bob", 3);
  report("j1", 0.5);
  sample("a", "sample.updated", "alice", 4);
}

/* ------------------------------------------------------------- events */

Test(gateway_feeds, events_as_larkctl_tail_prints_them) {
  uint64_t mid;
  int64_t mid_ns;
  history(&mid, &mid_ns);
  gw_events_query q = {0};
  recs *k = events(&q, 0);
  cr_assert_eq(k->n, 7, "both streams whole: %zu", k->n);
  char out[65536], err[4096];
  char bin[512];
  lt_bin("larkctl", bin, sizeof bin);
  int rc = lt_runl(out, sizeof out, err, sizeof err, bin, "--url", srv.url,
                   "-o", "json", "tail", (char *)NULL);
  cr_assert_eq(rc, 0, "larkctl tail: %s", err);
  char *line = out;
  for (size_t i = 0; i < k->n; i++) {
    char *nl = strchr(line, '\n');
    cr_assert_not_null(nl, "larkctl printed fewer lines");
    *nl = 0;
    cr_assert_str_eq(k->r[i].json, line, "record %zu", i);
    cr_assert_str_eq(k->r[i].event, "event");
    line = nl + 1;
  }
  cr_assert_str_eq(line, "", "larkctl printed more: %s", line);
  char buf[64];
  cr_assert_str_eq(field(&k->r[2], "stream", buf, sizeof buf), "LARK_RUNS");
  cr_assert_eq(k->r[2].id, 1, "a record's id is its stream sequence");
  recs_free(k);
  free(k);
}

Test(gateway_feeds, filters_subject_type_actor_since) {
  uint64_t mid;
  int64_t mid_ns;
  history(&mid, &mid_ns);
  gw_events_query q = {.subject = "lark.ev.sample.a"};
  recs *k = events(&q, 0);
  cr_assert_eq(k->n, 3);
  assert_all(k, "subject", "lark.ev.sample.a");
  recs_free(k);
  free(k);

  gw_events_query t = {.type = "sample.updated"};
  k = events(&t, 0);
  cr_assert_eq(k->n, 3);
  assert_all(k, "type", "sample.updated");
  recs_free(k);
  free(k);

  gw_events_query glob = {.type = "run.*"};
  k = events(&glob, 0);
  cr_assert_eq(k->n, 2);
  assert_all(k, "stream", "LARK_RUNS");
  recs_free(k);
  free(k);

  gw_events_query a = {.actor = "bob"};
  k = events(&a, 0);
  cr_assert_eq(k->n, 2);
  assert_all(k, "actor", "bob");
  recs_free(k);
  free(k);

  gw_events_query s = {.since_ns = mid_ns};
  k = events(&s, 0);
  cr_assert_eq(k->n, 3, "since keeps what was stored after: %zu", k->n);
  cr_assert_eq(k->r[0].id, mid);
  recs_free(k);
  free(k);

  gw_events_query all = {.subject = "lark.ev.>",
                         .actor = "alice",
                         .type = "sample.updated",
                         .limit = 1};
  k = events(&all, 0);
  cr_assert_eq(k->n, 1, "limit 1");
  assert_all(k, "actor", "alice");
  recs_free(k);
  free(k);

  gw_events_query none = {.actor = "carol"};
  k = events(&none, 0);
  cr_assert_eq(k->n, 0);
  free(k);
}

Test(gateway_feeds, bad_queries_refused) {
  gw_feed *f = (gw_feed *)1;
  gw_events_query q = {.subject = "lark.cmd.alice.>"};
  cr_assert_eq(gw_events_open(conn, &q, &f), BUS_EINVAL);
  cr_assert_null(f);
  gw_events_query r = {.after_seq = 3}; /* ids of two streams */
  cr_assert_eq(gw_events_open(conn, &r, &f), BUS_EINVAL);
  char longtype[300];
  memset(longtype, 'x', sizeof longtype - 1);
  longtype[sizeof longtype - 1] = 0;
  gw_events_query l = {.type = longtype};
  cr_assert_eq(gw_events_open(conn, &l, &f), BUS_EINVAL);
  gw_logs_query j = {.job = "Not A Name"};
  cr_assert_eq(gw_logs_open(conn, &j, &f), BUS_EINVAL);
  gw_logs_query p = {.job = "j1", .pod = "a.b"};
  cr_assert_eq(gw_logs_open(conn, &p, &f), BUS_EINVAL);
  gw_logs_query n = {0};
  cr_assert_eq(gw_logs_open(conn, &n, &f), BUS_EINVAL);
  cr_assert_eq(gw_feed_next(NULL, keep, NULL, 0), BUS_EINVAL);
  gw_feed_close(NULL);
}

/* A follower from the start and resumed readers, each cut after a few
 * records and opened again after the last id seen, while events go on
 * being appended: the pieces put together equal the unbroken one. */
Test(gateway_feeds, resume_after_an_id_without_gap_or_duplicate) {
  enum { TOTAL = 120 };
  gw_events_query q = {.subject = "lark.ev.sample.>", .follow = 1};
  gw_feed *whole = NULL;
  cr_assert_eq(gw_events_open(conn, &q, &whole), 0, "%s", bus_last_error());
  recs *all = calloc(1, sizeof *all), *pieces = calloc(1, sizeof *pieces);
  uint64_t last = 0;
  int written = 0;
  while (pieces->n < TOTAL) {
    for (int i = 0; i < 7 && written < TOTAL; i++, written++)
      sample(written % 2 ? "a" : "b", "sample.created", "alice", written);
    gw_events_query r = {
        .subject = "lark.ev.sample.>", .after_seq = last, .follow = 1};
    gw_feed *f = NULL;
    cr_assert_eq(gw_events_open(conn, &r, &f), 0, "%s", bus_last_error());
    size_t want =
        pieces->n + 5 < (size_t)written ? pieces->n + 5 : (size_t)written;
    drain(f, pieces, want);
    gw_feed_close(f);
    cr_assert_geq(pieces->n, want, "resumed after %llu: nothing came",
                  (unsigned long long)last);
    last = pieces->r[pieces->n - 1].id;
    /* more than asked may have come in the last call: drop them, the
     * next resume gives them again */
    while (pieces->n > want) {
      free(pieces->r[--pieces->n].json);
      last = pieces->r[pieces->n - 1].id;
    }
  }
  drain(whole, all, TOTAL);
  gw_feed_close(whole);
  cr_assert_eq(all->n, TOTAL);
  cr_assert_eq(pieces->n, TOTAL);
  for (size_t i = 0; i < TOTAL; i++) {
    cr_assert_eq(pieces->r[i].id, all->r[i].id, "record %zu", i);
    cr_assert_str_eq(pieces->r[i].json, all->r[i].json);
  }
  recs_free(all);
  recs_free(pieces);
  free(all);
  free(pieces);
}

Test(gateway_feeds, follow_gives_what_comes_after) {
  sample("a", "sample.created", "alice", 0);
  gw_events_query q = {.type = "run.reported", .follow = 1};
  gw_feed *f = NULL;
  cr_assert_eq(gw_events_open(conn, &q, &f), 0, "%s", bus_last_error());
  recs k = {0};
  cr_assert_eq(gw_feed_next(f, keep, &k, 300), 0, "nothing yet");
  report("j2", 1.5);
  sample("a", "sample.updated", "alice", 1);
  report("j2", 2.5);
  drain(f, &k, 2);
  cr_assert_eq(k.n, 2);
  cr_assert(strstr(k.r[0].json, "\"reward\":1.5"), "%s", k.r[0].json);
  cr_assert(strstr(k.r[1].json, "\"reward\":2.5"), "%s", k.r[1].json);
  gw_feed_close(f);
  recs_free(&k);
}

/* --------------------------------------------------------------- logs */

/* job.placed: pods <job>-w-0 and <job>-w-1 of task <job>-w on node n1, so
 * lark-logs takes their batches from n1. */
static void
place(const char *job) {
  bus_packbuf b;
  bus_packbuf_init(&b);
  char task[64], pod[80];
  snprintf(task, sizeof task, "%s-w", job);
  msgpack_pack_map(&b.pk, 3);
  bus_pack_kv_str(&b.pk, "pool", "default");
  bus_pack_kv_str(&b.pk, "job", job);
  bus_pack_str(&b.pk, "bindings");
  msgpack_pack_array(&b.pk, 2);
  for (int i = 0; i < 2; i++) {
    snprintf(pod, sizeof pod, "%s-%d", task, i);
    msgpack_pack_map(&b.pk, 4);
    bus_pack_kv_str(&b.pk, "pod", pod);
    bus_pack_kv_str(&b.pk, "task", task);
    bus_pack_kv_str(&b.pk, "node", "n1");
    bus_pack_kv_uint(&b.pk, "attempt", 0);
  }
  append("lark.ev.placement.default", "job.placed", "lark-scheduler", &b);
  bus_packbuf_destroy(&b);
}

/* A batch from n1 for pod: lines "<prefix><k>" at ts0 + 10 ms * step * k. */
static void
lines(const char *pod, const char *prefix, int n, int64_t ts0, int step) {
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 3);
  bus_pack_kv_str(&b.pk, "pod", pod);
  bus_pack_kv_uint(&b.pk, "attempt", 0);
  bus_pack_str(&b.pk, "lines");
  msgpack_pack_array(&b.pk, (uint32_t)n);
  for (int k = 0; k < n; k++) {
    char text[64];
    snprintf(text, sizeof text, "%s%d", prefix, k);
    msgpack_pack_map(&b.pk, 3);
    bus_pack_kv_int(&b.pk, "ts", ts0 + INT64_C(10000000) * step * k);
    bus_pack_kv_str(&b.pk, "stream", k % 2 ? "stderr" : "stdout");
    bus_pack_kv_str(&b.pk, "text", text);
  }
  char subject[256];
  snprintf(subject, sizeof subject, "lark.in.n1.logs.%s", pod);
  append(subject, "log.batch", "n1", &b);
  bus_packbuf_destroy(&b);
}

static recs *
logs(const gw_logs_query *q, size_t want, gw_feed **keep_open) {
  recs *k = calloc(1, sizeof *k);
  gw_feed *f = NULL;
  cr_assert_eq(gw_logs_open(conn, q, &f), 0, "%s", bus_last_error());
  int rc = drain(f, k, want);
  if (!q->follow)
    cr_assert_eq(rc, GW_FEED_END);
  if (keep_open)
    *keep_open = f;
  else
    gw_feed_close(f);
  return k;
}

/* Wait until lark-logs republished n lines of job (a tail of all). */
static void
wait_lines(const char *job, size_t n) {
  for (int i = 0; i < 100; i++) {
    gw_logs_query q = {.job = job};
    recs *k = logs(&q, 0, NULL);
    size_t got = k->n;
    recs_free(k);
    free(k);
    if (got >= n)
      return;
    usleep(100 * 1000);
  }
  cr_assert_fail("lark-logs did not republish %zu lines of %s", n, job);
}

Test(gateway_feeds, logs_take_the_lines_on_their_way) {
  place("wj");
  lines("wj-w-0", "first", 2, bus_wall_ns(), 1);
  wait_lines("wj", 2);
  /* lark-logs falls behind (paused) with the last lines in the ingress;
   * they are taken before the feed reads (it asks, as user admin) */
  cr_assert_eq(kill(logs_pid, SIGSTOP), 0);
  lines("wj-w-0", "last", 2, bus_wall_ns(), 1);
  pid_t waker = fork();
  if (waker == 0) {
    usleep(1000 * 1000);
    kill(logs_pid, SIGCONT);
    _exit(0);
  }
  gw_logs_query q = {.job = "wj", .user = "admin"};
  recs *k = logs(&q, 0, NULL);
  waitpid(waker, NULL, 0);
  kill(logs_pid, SIGCONT);
  cr_expect_eq(k->n, 4, "%zu lines: the last ones were still on their way",
               k->n);
  recs_free(k);
  free(k);
}

Test(gateway_feeds, logs_tail_in_time_order_then_follow) {
  int64_t t0 = bus_wall_ns() - INT64_C(60000000000);
  place("tj");
  /* pod 1's lines fall between pod 0's: the feed orders by ts */
  lines("tj-w-0", "a", 4, t0, 2);
  lines("tj-w-1", "b", 4, t0 + INT64_C(10000000), 2);
  wait_lines("tj", 8);

  gw_logs_query q = {.job = "tj"};
  recs *k = logs(&q, 0, NULL);
  cr_assert_eq(k->n, 8);
  char buf[64], buf2[64];
  static const char *const order[] = {"a0", "b0", "a1", "b1",
                                      "a2", "b2", "a3", "b3"};
  for (size_t i = 0; i < 8; i++) {
    cr_assert_str_eq(field(&k->r[i], "line", buf, sizeof buf), order[i]);
    cr_assert_str_eq(k->r[i].event, "log");
    cr_assert_str_eq(field(&k->r[i], "task", buf, sizeof buf), "tj-w");
    cr_assert_str_eq(field(&k->r[i], "stream", buf, sizeof buf),
                     i % 4 >= 2 ? "stderr" : "stdout");
    cr_assert_gt(k->r[i].id, 0);
  }
  cr_assert_str_eq(field(&k->r[1], "pod", buf, sizeof buf), "tj-w-1");
  recs_free(k);
  free(k);

  gw_logs_query t = {.job = "tj", .tail = 3};
  k = logs(&t, 0, NULL);
  cr_assert_eq(k->n, 3, "tail 3");
  cr_assert_str_eq(field(&k->r[0], "line", buf, sizeof buf), "b2");
  cr_assert_str_eq(field(&k->r[2], "line", buf, sizeof buf), "b3");
  recs_free(k);
  free(k);

  gw_logs_query p = {.job = "tj", .pod = "tj-w-0"};
  k = logs(&p, 0, NULL);
  cr_assert_eq(k->n, 4, "one pod");
  assert_all(k, "pod", "tj-w-0");
  recs_free(k);
  free(k);

  gw_logs_query fq = {.job = "tj", .tail = 1, .follow = 1};
  gw_feed *f = NULL;
  k = logs(&fq, 1, &f);
  cr_assert_eq(k->n, 1);
  cr_assert_str_eq(field(&k->r[0], "line", buf, sizeof buf), "b3");
  lines("tj-w-0", "c", 2, bus_wall_ns(), 1);
  drain(f, k, 3);
  cr_assert_eq(k->n, 3, "followed: %zu", k->n);
  cr_assert_str_eq(field(&k->r[1], "line", buf, sizeof buf), "c0");
  cr_assert_str_eq(field(&k->r[2], "line", buf2, sizeof buf2), "c1");
  cr_assert_gt(k->r[1].id, k->r[0].id, "a later batch, a later id");
  gw_feed_close(f);
  recs_free(k);
  free(k);

  gw_logs_query none = {.job = "nothing-here"};
  k = logs(&none, 0, NULL);
  cr_assert_eq(k->n, 0);
  free(k);
}

/* ------------------------------------------------- the gateway's rules */

/* With the gateway's own credentials, under the rules larkctl renders
 * (deploy/policy.c: events by direct gets, logs by an ephemeral reader),
 * both feeds read what they serve. */
Test(gateway_feeds_secure, under_the_gateways_own_rules, .timeout = 120) {
  lt_sec x;
  lt_sec_up(&x);
  lt_sec_put(&x, "lark.ev.sample.one");
  lt_sec_put(&x, "lark.ev.sample.two");
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 4);
  bus_pack_kv_str(&b.pk, "pod", "j1-w-0");
  bus_pack_kv_str(&b.pk, "job", "j1");
  bus_pack_kv_str(&b.pk, "task", "j1-w");
  bus_pack_str(&b.pk, "lines");
  msgpack_pack_array(&b.pk, 1);
  msgpack_pack_map(&b.pk, 3);
  bus_pack_kv_int(&b.pk, "ts", bus_wall_ns());
  bus_pack_kv_str(&b.pk, "stream", "stdout");
  bus_pack_kv_str(&b.pk, "text", "hello");
  char id[33];
  bus_event_new_id(id);
  bus_event ev = {.v = 1,
                  .type = "log.batch",
                  .id = id,
                  .ts = bus_wall_ns(),
                  .actor = "lark-logs",
                  .cause = "",
                  .data_mp = b.sb.data,
                  .data_mp_len = b.sb.size};
  cr_assert_eq(bus_append(x.admin, "lark.log.j1.j1-w.j1-w-0", &ev,
                          BUS_APPEND_NOCHECK, NULL, NULL),
               0, "%s", bus_last_error());
  bus_packbuf_destroy(&b);

  cr_assert_eq(lt_sec_connect(&x, "gateway", "_INBOX_gateway", &conn), 0, "%s",
               bus_last_error());
  gw_events_query q = {.subject = "lark.ev.sample.>", .follow = 1};
  recs *k = events(&q, 2);
  cr_assert_eq(k->n, 2, "events: %s", bus_last_error());
  recs_free(k);
  free(k);
  gw_logs_query l = {.job = "j1"};
  k = logs(&l, 0, NULL);
  cr_assert_eq(k->n, 1, "logs");
  char buf[64];
  cr_assert_str_eq(field(&k->r[0], "line", buf, sizeof buf), "hello");
  recs_free(k);
  free(k);
  bus_conn_close(conn);
  conn = NULL;
  lt_sec_down(&x);
}
