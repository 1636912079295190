/*
 * test_append.c - streams, appends with the broker's version check,
 * dedupe, async appends and a broker restart, against a real nats-server.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "bus.h"
#include "events.h"
#include "json.h"
#include "natsd.h"
#include "stream.h"
#include "wait.h"

typedef struct fixture {
  lt_natsd s;
  bus_conn *c;
  msgpack_sbuffer data;
} fixture;

static void
up(fixture *f, int streams) {
  memset(f, 0, sizeof *f);
  cr_assert_eq(lt_natsd_start(&f->s, NULL, NULL), 0);
  cr_assert_eq(lt_connect(&f->s, &f->c), 0, "%s", bus_last_error());
  if (streams)
    cr_assert_eq(lt_streams(f->c, 2000), 0, "%s", bus_last_error());
  lt_pack_text(&f->data, "hello");
}

static void
down(fixture *f) {
  bus_conn_close(f->c);
  lt_natsd_stop(&f->s);
  msgpack_sbuffer_destroy(&f->data);
}

static void
sample(fixture *f, bus_event *ev, char id[33], uint64_t prev) {
  lt_sample_event(ev, id, "sample.created", &f->data);
  ev->prev = prev;
}

Test(streams, ensure_idempotent_and_require) {
  fixture f;
  up(&f, 0);
  const char *const some[] = {"LARK_EVENTS", "LARK_ROUTES", NULL};
  int rc = bus_streams_require(f.c, some);
  cr_assert_eq(rc, BUS_ENO_STREAM);
  cr_assert(strstr(bus_last_error(), "LARK_EVENTS"), "%s", bus_last_error());
  cr_assert(strstr(bus_last_error(), "LARK_ROUTES"));
  cr_assert(strstr(bus_last_error(), "larkctl init"));
  cr_assert_eq(lt_streams(f.c, 2000), 0, "%s", bus_last_error());
  cr_assert_eq(lt_streams(f.c, 2000), 0, "%s", bus_last_error());
  cr_assert_eq(lt_streams(f.c, 3000), 0, "update: %s", bus_last_error());
  cr_assert_eq(bus_streams_require(f.c, bus_stream_names), 0);
  uint64_t seq = 99;
  cr_assert_eq(bus_stream_last_seq(f.c, "LARK_EVENTS", &seq), 0);
  cr_assert_eq(seq, 0);
  cr_assert_eq(bus_stream_last_seq(f.c, "NOPE", &seq), BUS_ENO_STREAM);
  down(&f);
}

/* STREAM.INFO of name as JSON (NULL when it fails). */
static json_t *
stream_info(fixture *f, const char *name) {
  char subject[128];
  snprintf(subject, sizeof subject, "$JS.API.STREAM.INFO.%s", name);
  return lt_request_json(f->c, subject, "");
}

static json_int_t
config_int(json_t *info, const char *key) {
  return json_integer_value(
      json_object_get(json_object_get(info, "config"), key));
}

Test(streams, node_streams_one_per_node) {
  fixture f;
  bus_event ev;
  char id[33], name[BUS_NODE_STREAM_MAX];
  int created = -1;
  up(&f, 0);
  /* a node stream takes LARK_EVENTS' settings: without it, a clear no */
  cr_assert_eq(bus_node_stream_ensure(f.c, "gpu-1", &created), BUS_ENO_STREAM);
  cr_assert(strstr(bus_last_error(), "larkctl init"), "%s", bus_last_error());
  /* the single stream of earlier versions overlaps every node stream:
   * init removes it */
  const char legacy[] =
      "{\"name\":\"LARK_NODES\",\"subjects\":[\"lark.node.>\"],"
      "\"storage\":\"file\",\"max_msgs_per_subject\":1}";
  json_t *made =
      lt_request_json(f.c, "$JS.API.STREAM.CREATE.LARK_NODES", legacy);
  cr_assert(made && json_object_get(made, "config"), "%s", bus_last_error());
  json_decref(made);
  uint64_t seq = 0;
  cr_assert_eq(bus_stream_last_seq(f.c, "LARK_NODES", &seq), 0);
  cr_assert_eq(lt_streams(f.c, 2000), 0, "%s", bus_last_error());
  cr_assert_eq(bus_stream_last_seq(f.c, "LARK_NODES", &seq), BUS_ENO_STREAM);

  cr_assert_eq(bus_node_stream_name("gpu-1", name, sizeof name), 0);
  cr_assert_str_eq(name, "LARK_NODE_gpu-1");
  cr_assert_eq(bus_node_stream_name("GPU.1", name, sizeof name), BUS_ENAME);
  cr_assert_eq(bus_node_stream_ensure(f.c, "gpu-1", &created), 0, "%s",
               bus_last_error());
  cr_assert_eq(created, 1);
  cr_assert_eq(bus_node_stream_ensure(f.c, "gpu-1", &created), 0);
  cr_assert_eq(created, 0, "made once");
  json_t *info = stream_info(&f, "LARK_NODE_gpu-1");
  cr_assert(info);
  cr_expect_eq(config_int(info, "max_msgs_per_subject"), 1);
  cr_expect_eq(config_int(info, "duplicate_window"), 2000LL * 1000000,
               "LARK_EVENTS' window");
  cr_expect_str_eq(
      json_string_value(json_array_get(
          json_object_get(json_object_get(info, "config"), "subjects"), 0)),
      "lark.node.gpu-1.>");
  json_decref(info);

  /* latest wins per pod; another node's subject finds no stream */
  for (int i = 0; i < 2; i++) {
    sample(&f, &ev, id, 0);
    cr_assert_eq(bus_append(f.c, "lark.node.gpu-1.pod.a", &ev,
                            BUS_APPEND_NOCHECK, &seq, NULL),
                 0, "%s", bus_last_error());
  }
  cr_expect_eq(seq, 2);
  info = stream_info(&f, "LARK_NODE_gpu-1");
  cr_expect_eq(json_integer_value(
                   json_object_get(json_object_get(info, "state"), "messages")),
               1);
  json_decref(info);
  sample(&f, &ev, id, 0);
  cr_assert_eq(bus_append(f.c, "lark.node.gpu-2.pod.a", &ev, BUS_APPEND_NOCHECK,
                          NULL, NULL),
               BUS_ENO_STREAM);
  cr_assert_eq(
      bus_append_async(f.c, "lark.node.gpu-2.pod.a", &ev, BUS_APPEND_NOCHECK),
      0);
  uint64_t failed = 0;
  cr_assert_eq(bus_append_flush(f.c, 2000, &failed), BUS_ENO_STREAM, "%s",
               bus_last_error());
  cr_expect_eq(failed, 1);

  cr_assert_eq(bus_stream_delete(f.c, "LARK_NODE_gpu-1"), 0);
  cr_assert_eq(bus_stream_delete(f.c, "LARK_NODE_gpu-1"), BUS_ENO_STREAM);
  down(&f);
}

/*
 * Many nodes' streams at once (a registration storm, a repair after a
 * broker restart): asked together, each answered as when made alone. One
 * made before by itself is found with the same settings (not made again,
 * born when it was), one left on file by an earlier version is made anew
 * in memory, the rest are made; a second call makes nothing and reads the
 * same creation times, which are those nats.c reads for a stream alone.
 */
Test(streams, many_node_streams_made_together, .timeout = 60) {
  enum { N = 300 };
  fixture f;
  char names[N][16];
  const char *nodes[N];
  int64_t born[2][N];
  unsigned char made[2][N];
  int created = -1;
  up(&f, 1);
  for (int i = 0; i < N; i++) {
    snprintf(names[i], sizeof names[i], "m%d", i);
    nodes[i] = names[i];
  }
  cr_assert_eq(bus_node_stream_ensure(f.c, "m7", &created), 0, "%s",
               bus_last_error());
  const char old[] = "{\"name\":\"LARK_NODE_m9\",\"subjects\":"
                     "[\"lark.node.m9.>\"],\"storage\":\"file\","
                     "\"max_msgs_per_subject\":1}";
  json_t *j = lt_request_json(f.c, "$JS.API.STREAM.CREATE.LARK_NODE_m9", old);
  cr_assert(j && json_object_get(j, "config"), "%s", bus_last_error());
  json_decref(j);
  for (int k = 0; k < 2; k++) {
    cr_assert_eq(
        bus_node_streams_born(f.c, nodes, N, born[k], made[k], &created), 0,
        "%s", bus_last_error());
    cr_expect_eq(created, k ? 0 : N - 1, "round %d made %d", k, created);
    for (int i = 0; i < N; i++) {
      cr_expect_eq(made[k][i], !k && i != 7, "%s made %d in round %d", nodes[i],
                   made[k][i], k);
      cr_expect(born[k][i] > 0, "%s has no creation time", nodes[i]);
    }
  }
  for (int i = 0; i < N; i++)
    cr_expect_eq(born[0][i], born[1][i], "%s born twice", nodes[i]);
  int64_t alone = 0;
  unsigned char m = 1;
  cr_assert_eq(bus_node_streams_born(f.c, &nodes[42], 1, &alone, &m, NULL), 0);
  cr_expect_eq(alone, born[0][42], "the time nats.c reads for it");
  cr_expect_eq(m, 0);
  /* asked only to be there (a batch of registrations): made all the same */
  cr_assert_eq(bus_stream_delete(f.c, "LARK_NODE_m3"), 0);
  cr_assert_eq(bus_node_streams_ensure(f.c, nodes, N, NULL), 0, "%s",
               bus_last_error());
  cr_assert_eq(bus_node_streams_born(f.c, &nodes[3], 1, &alone, &m, NULL), 0);
  cr_expect_eq(m, 0, "m3 was made again");
  json_t *info = stream_info(&f, "LARK_NODE_m9");
  cr_expect_str_eq(json_string_value(json_object_get(
                       json_object_get(info, "config"), "storage")),
                   "memory");
  json_decref(info);
  down(&f);
}

static int
count_listed(const char *node, void *ud) {
  int *seen = ud;
  int i = node[0] == 'l' ? atoi(node + 1) : -1;
  if (i >= 0 && i < 1100)
    seen[i]++;
  else
    seen[1100]++; /* not one of ours */
  return 0;
}

/* The broker's own list of node streams, over more than one page (1,024
 * names a page): each node once, and only node streams. */
Test(streams, node_streams_listed_page_by_page, .timeout = 90) {
  enum { N = 1100 };
  fixture f;
  static char names[N][16];
  static const char *nodes[N];
  static int seen[N + 1];
  up(&f, 1);
  for (int i = 0; i < N; i++) {
    snprintf(names[i], sizeof names[i], "l%d", i);
    nodes[i] = names[i];
  }
  cr_assert_eq(bus_node_streams_ensure(f.c, nodes, N, NULL), 0, "%s",
               bus_last_error());
  cr_assert_eq(bus_node_streams_list(f.c, count_listed, seen), 0, "%s",
               bus_last_error());
  for (int i = 0; i < N; i++)
    cr_expect_eq(seen[i], 1, "%s listed %d times", nodes[i], seen[i]);
  cr_expect_eq(seen[N], 0, "listed what is no node stream");
  cr_expect_eq(bus_conn_reconnects(f.c), 0);
  down(&f);
}

Test(append, check_conflict_and_create) {
  fixture f;
  bus_event ev;
  char id[33];
  uint64_t s1 = 0, s2 = 0, s3 = 0;
  int dup = -1;
  up(&f, 1);
  sample(&f, &ev, id, 0);
  int rc =
      bus_append(f.c, "lark.ev.sample.a", &ev, BUS_APPEND_CHECK, &s1, &dup);
  cr_assert_eq(rc, 0, "%s", bus_last_error());
  cr_assert_eq(dup, 0);
  cr_assert_gt(s1, 0);
  /* a second create on the same subject conflicts (ExpectNoMessage) */
  sample(&f, &ev, id, 0);
  rc = bus_append(f.c, "lark.ev.sample.a", &ev, BUS_APPEND_CHECK, NULL, NULL);
  cr_assert_eq(rc, BUS_ECONFLICT, "%s %s", bus_err_name(rc), bus_last_error());
  /* an unrelated subject moves the stream on, not the aggregate */
  sample(&f, &ev, id, 0);
  cr_assert_eq(
      bus_append(f.c, "lark.ev.sample.b", &ev, BUS_APPEND_CHECK, &s2, NULL), 0);
  sample(&f, &ev, id, s1);
  ev.type = "sample.updated";
  rc = bus_append(f.c, "lark.ev.sample.a", &ev, BUS_APPEND_CHECK, &s3, NULL);
  cr_assert_eq(rc, 0, "%s", bus_last_error());
  /* stale prev */
  sample(&f, &ev, id, s1);
  ev.type = "sample.updated";
  rc = bus_append(f.c, "lark.ev.sample.a", &ev, BUS_APPEND_CHECK, NULL, NULL);
  cr_assert_eq(rc, BUS_ECONFLICT);
  /* without the check it lands */
  sample(&f, &ev, id, s1);
  cr_assert_eq(
      bus_append(f.c, "lark.ev.sample.a", &ev, BUS_APPEND_NOCHECK, NULL, NULL),
      0);
  down(&f);
}

Test(append, dedupe_and_last_event) {
  fixture f;
  bus_event ev, got;
  char id[33];
  uint64_t s1 = 0, s2 = 0, last = 0;
  int dup = -1;
  msgpack_zone z;
  up(&f, 1);
  msgpack_zone_init(&z, 4096);
  sample(&f, &ev, id, 0);
  cr_assert_eq(bus_append(f.c, "lark.ev.sample.d", &ev, 0, &s1, &dup), 0);
  cr_assert_eq(dup, 0);
  cr_assert_eq(bus_append(f.c, "lark.ev.sample.d", &ev, 0, &s2, &dup), 0);
  cr_assert_eq(dup, 1);
  cr_assert_eq(s1, s2);
  cr_assert_eq(bus_stream_last_seq(f.c, "LARK_EVENTS", &last), 0);
  cr_assert_eq(last, s1, "one message only");
  int rc = bus_last_event(f.c, "LARK_EVENTS", "lark.ev.sample.d", &got, &z);
  cr_assert_eq(rc, 0, "%s", bus_last_error());
  cr_assert_str_eq(got.id, id);
  cr_assert_str_eq(got.subject, "lark.ev.sample.d");
  cr_assert_eq(got.seq, s1);
  cr_assert_gt(got.stored_ns, 0);
  rc = bus_last_event(f.c, "LARK_EVENTS", "lark.ev.sample.none", &got, &z);
  cr_assert_eq(rc, BUS_ENOT_FOUND, "%s", bus_err_name(rc));
  cr_assert_eq(bus_purge_subject(f.c, "LARK_EVENTS", "lark.ev.sample.d"), 0);
  rc = bus_last_event(f.c, "LARK_EVENTS", "lark.ev.sample.d", &got, &z);
  cr_assert_eq(rc, BUS_ENOT_FOUND);
  msgpack_zone_destroy(&z);
  down(&f);
}

/*
 * An observation appended by a writer whose view lags its subject lands
 * at the subject's own version; the same one again, once the dedupe
 * window has forgotten it, is found stored, not written twice; with one
 * try a moved subject is a conflict; and a subject whose version can
 * never be caught (read here from a stream that does not hold it) is
 * BUS_EBUSY once the tries run out: nothing stored, never a success.
 */
Test(append, rebased_lands_once_or_says_busy) {
  const char *subject = "lark.ev.sample.r";
  fixture f;
  bus_event ev;
  char id[33], mine[33];
  uint64_t theirs = 0, seq = 0, again = 0;
  up(&f, 0);
  cr_assert_eq(lt_streams(f.c, 300), 0, "%s", bus_last_error());
  sample(&f, &ev, id, 0);
  cr_assert_eq(bus_append(f.c, subject, &ev, BUS_APPEND_CHECK, &theirs, NULL),
               0, "%s", bus_last_error());
  sample(&f, &ev, mine, 0); /* the view has seen nothing */
  int rc = bus_append_rebased(f.c, "LARK_EVENTS", subject, &ev, 0, 3, &seq);
  cr_assert_eq(rc, 0, "%s", bus_last_error());
  cr_assert_gt(seq, theirs);
  cr_assert_eq(lt_last_on(f.c, "LARK_EVENTS", subject, NULL, 0), seq);
  lt_sleep_ms(700); /* past the 300 ms dedupe window */
  rc = bus_append_rebased(f.c, "LARK_EVENTS", subject, &ev, theirs, 3, &again);
  cr_assert_eq(rc, 0, "%s", bus_last_error());
  cr_expect_eq(again, seq, "found stored at its own sequence");
  cr_expect_eq(
      lt_count_events(f.c, "LARK_EVENTS", subject, "sample.created", subject),
      2, "stored once");
  sample(&f, &ev, id, 0);
  rc = bus_append_rebased(f.c, "LARK_EVENTS", subject, &ev, theirs, 1, NULL);
  cr_expect_eq(rc, BUS_ECONFLICT, "%s", bus_err_name(rc));
  rc = bus_append_rebased(f.c, "LARK_RUNS", subject, &ev, theirs, 3, &again);
  cr_expect_eq(rc, BUS_EBUSY, "%s", bus_err_name(rc));
  cr_expect(strstr(bus_last_error(), "3 tries"), "%s", bus_last_error());
  cr_expect_eq(
      lt_count_events(f.c, "LARK_EVENTS", subject, "sample.created", subject),
      2, "nothing stored");
  down(&f);
}

/*
 * Appends in flight together, each answered as bus_append answers it
 * alone: checked ones land at their prev or conflict, a repeat is a
 * duplicate at its first sequence, an unchecked one lands, one no stream
 * takes says so, and a bad one is refused as alone; the stream holds each
 * once, in order.
 */
Test(append, many_settled_each_as_alone) {
  enum { N = 8 };
  fixture f;
  bus_event ev[N], pre;
  char id[N][33], pre_id[33], subj[N][64];
  bus_append_item it[N];
  uint64_t seq = 0, last = 0;
  up(&f, 1);
  for (int i = 0; i < N; i++) {
    sample(&f, &ev[i], id[i], 0);
    snprintf(subj[i], sizeof subj[i], "lark.ev.sample.m%d", i);
    it[i] = (bus_append_item){subj[i], &ev[i], BUS_APPEND_CHECK, -1, 0, -1};
  }
  sample(&f, &pre, pre_id, 0);
  cr_assert_eq(bus_append(f.c, subj[1], &pre, 0, &seq, NULL), 0);
  ev[2].prev = seq + 100; /* m2 has no message: a conflict */
  /* m1's again, unchecked: a duplicate (checked, its prev is stale) */
  it[3].ev = &pre, it[3].subject = subj[1], it[3].flags = BUS_APPEND_NOCHECK;
  it[4].flags = BUS_APPEND_NOCHECK;
  it[5].subject = "lark.nostream.m5";
  ev[6].id = ""; /* refused before it goes */
  cr_assert_eq(bus_append_many(f.c, it, N), 0);
  cr_expect_eq(it[0].rc, 0, "%s", bus_err_name(it[0].rc));
  cr_expect_eq(it[1].rc, BUS_ECONFLICT, "m1 was there: prev 0 is stale");
  cr_expect_eq(it[2].rc, BUS_ECONFLICT);
  cr_expect_eq(it[3].rc, 0, "%s", bus_err_name(it[3].rc));
  cr_expect_eq(it[3].dup, 1);
  cr_expect_eq(it[3].seq, seq, "the first copy's sequence");
  cr_expect_eq(it[4].rc, 0);
  cr_expect_eq(it[5].rc, BUS_ENO_STREAM, "%s", bus_err_name(it[5].rc));
  cr_expect_lt(it[6].rc, 0);
  cr_expect_eq(it[7].rc, 0);
  cr_expect(it[0].seq > seq && it[4].seq > it[0].seq && it[7].seq > it[4].seq,
            "in order: %llu %llu %llu", (unsigned long long)it[0].seq,
            (unsigned long long)it[4].seq, (unsigned long long)it[7].seq);
  cr_assert_eq(bus_stream_last_seq(f.c, "LARK_EVENTS", &last), 0);
  cr_expect_eq(last, seq + 3, "m1, m0, m4, m7 once each");
  down(&f);
}

static void
silent(bus_conn *c, const char *subject, const char *reply, const void *data,
       size_t len, void *ud) {
  (void)c, (void)subject, (void)reply, (void)data, (void)len;
  atomic_fetch_add((_Atomic int *)ud, 1);
}

/* Appends whose subject a plain subscriber takes and never answers,
 * between appends the broker stores: those time out, each once, and
 * the stored ones around them are still read as stored (their answers
 * came while the pipe waited on the silent ones). */
Test(append, many_with_silent_takers_between, .timeout = 60) {
  enum { N = 5 };
  fixture f;
  bus_event ev[N];
  char id[N][33];
  const char *subj[N] = {"lark.ev.sample.s0", "lark.quiet.s1", "lark.quiet.s2",
                         "lark.quiet.s3", "lark.ev.sample.s4"};
  bus_append_item it[N];
  bus_serve *sv;
  _Atomic int heard = 0;
  up(&f, 1);
  cr_assert_eq(bus_conn_serve(f.c, "lark.quiet.>", NULL, silent, &heard, &sv),
               0);
  for (int i = 0; i < N; i++) {
    sample(&f, &ev[i], id[i], 0);
    it[i] = (bus_append_item){subj[i], &ev[i], BUS_APPEND_NOCHECK, -1, 0, -1};
  }
  cr_assert_eq(bus_append_many(f.c, it, N), 0);
  cr_expect_eq(it[0].rc, 0, "%s", bus_err_name(it[0].rc));
  cr_expect_eq(it[4].rc, 0, "%s", bus_err_name(it[4].rc));
  cr_expect(it[4].seq == it[0].seq + 1, "s0 then s4: %llu %llu",
            (unsigned long long)it[0].seq, (unsigned long long)it[4].seq);
  for (int i = 1; i < 4; i++)
    cr_expect_eq(it[i].rc, BUS_ETIMEOUT, "item %d: %s", i,
                 bus_err_name(it[i].rc));
  /* each silent one heard twice: in flight, then alone */
  cr_expect_eq(atomic_load(&heard), 6);
  bus_conn_unserve(sv);
  down(&f);
}

Test(append, no_stream) {
  fixture f;
  bus_event ev;
  char id[33];
  up(&f, 0);
  sample(&f, &ev, id, 0);
  int rc = bus_append(f.c, "lark.ev.sample.a", &ev, 0, NULL, NULL);
  cr_assert_eq(rc, BUS_ENO_STREAM, "%s %s", bus_err_name(rc), bus_last_error());
  down(&f);
}

Test(append, async_flush_counts_failures) {
  fixture f;
  bus_event ev;
  char id[33];
  uint64_t failed = 99, last = 0;
  up(&f, 1);
  for (int i = 0; i < 500; i++) {
    char subj[64];
    snprintf(subj, sizeof subj, "lark.ev.sample.n%d", i);
    sample(&f, &ev, id, 0);
    cr_assert_eq(bus_append_async(f.c, subj, &ev, BUS_APPEND_CHECK), 0);
  }
  int rc = bus_append_flush(f.c, 5000, &failed);
  cr_assert_eq(rc, 0, "%s", bus_last_error());
  cr_assert_eq(failed, 0);
  cr_assert_eq(bus_stream_last_seq(f.c, "LARK_EVENTS", &last), 0);
  cr_assert_eq(last, 500);
  /* creates on subjects that exist now: every one conflicts */
  for (int i = 0; i < 10; i++) {
    char subj[64];
    snprintf(subj, sizeof subj, "lark.ev.sample.n%d", i);
    sample(&f, &ev, id, 0);
    cr_assert_eq(bus_append_async(f.c, subj, &ev, BUS_APPEND_CHECK), 0);
  }
  sample(&f, &ev, id, 0);
  cr_assert_eq(bus_append_async(f.c, "lark.ev.sample.fresh", &ev, 0), 0);
  rc = bus_append_flush(f.c, 5000, &failed);
  cr_assert_eq(rc, BUS_ECONFLICT, "%s %s", bus_err_name(rc), bus_last_error());
  cr_assert_eq(failed, 10);
  rc = bus_append_flush(f.c, 1000, &failed);
  cr_assert_eq(rc, 0);
  cr_assert_eq(failed, 0);
  down(&f);
}

/* Append with the same id until it lands: a retry is harmless. */
static int
append_retry(fixture *f, const char *subj, bus_event *ev, uint64_t *seq) {
  int rc = -1;
  for (int tries = 0; tries < 200; tries++) {
    rc = bus_append(f->c, subj, ev, 0, seq, NULL);
    if (rc == 0 || (rc != BUS_ETIMEOUT && rc != BUS_ECONN &&
                    rc != BUS_ENO_STREAM && rc != BUS_EBROKER))
      return rc;
    lt_sleep_ms(50);
  }
  return rc;
}

Test(append, broker_restart) {
  fixture f;
  bus_event ev;
  char id[33];
  uint64_t seq = 0, last = 0;
  up(&f, 1);
  for (int i = 0; i < 40; i++) {
    if (i == 20)
      cr_assert_eq(lt_natsd_kill_restart(&f.s), 0);
    sample(&f, &ev, id, 0);
    int rc = append_retry(&f, "lark.run.job1", &ev, &seq);
    cr_assert_eq(rc, 0, "event %d: %s %s", i, bus_err_name(rc),
                 bus_last_error());
  }
  cr_assert_eq(bus_stream_last_seq(f.c, "LARK_RUNS", &last), 0);
  cr_assert_geq(last, 40);
  cr_assert_eq(last, seq);
  down(&f);
}
