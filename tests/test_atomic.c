/*
 * test_atomic.c - atomic batches (bus_append_atomic) against a real
 * nats-server: stored whole or not at all, the commit's ack, the limits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "bus.h"
#include "events.h"
#include "json.h"
#include "natsd.h"

#define MAXN (BUS_ATOMIC_MAX + 1)

typedef struct fixture {
  lt_natsd s;
  bus_conn *c;
  msgpack_sbuffer data;
  char dir[256];
  /* the batch being built */
  bus_event ev[MAXN];
  char id[MAXN][33];
  char subject[MAXN][64];
  bus_atomic_item it[MAXN];
} fixture;

static void
write_conf(fixture *f, const char *text, char *conf, size_t cap) {
  lt_tmpdir(f->dir, sizeof f->dir, "atomic");
  snprintf(conf, cap, "%s/nats.conf", f->dir);
  FILE *fp = fopen(conf, "w");
  cr_assert(fp);
  fputs(text, fp);
  fclose(fp);
}

/* A server with conf_text (NULL: none) and the platform's streams. */
static fixture *
up(const char *conf_text) {
  char conf[400];
  fixture *f = calloc(1, sizeof *f);
  cr_assert(f);
  if (conf_text)
    write_conf(f, conf_text, conf, sizeof conf);
  cr_assert_eq(lt_natsd_start(&f->s, conf_text ? conf : NULL, NULL), 0);
  /* a batch store is a directory on the server, made and removed per
   * batch: give commits queued behind many batches more than 500 ms */
  bus_conn_opts o;
  bus_conn_opts_init(&o);
  o.url = f->s.url;
  o.js_wait_ms = 10000;
  o.name = "test";
  cr_assert_eq(bus_conn_open(&f->c, &o), 0, "%s", bus_last_error());
  cr_assert_eq(lt_streams(f->c, 60000), 0, "%s", bus_last_error());
  lt_pack_text(&f->data, "hello");
  return f;
}

static void
down(fixture *f) {
  bus_conn_close(f->c);
  lt_natsd_stop(&f->s);
  if (*f->dir)
    lt_rmtree(f->dir);
  msgpack_sbuffer_destroy(&f->data);
  free(f);
}

/* n events on lark.ev.sample.<tag>.<i>, unchecked, new ids. */
static void
batch(fixture *f, size_t n, const char *tag) {
  for (size_t i = 0; i < n; i++) {
    bus_event *ev = &f->ev[i];
    lt_sample_event(ev, f->id[i], "sample.created", &f->data);
    snprintf(f->subject[i], sizeof f->subject[i], "lark.ev.sample.%s.%zu", tag,
             i);
    f->it[i] = (bus_atomic_item){f->subject[i], ev, BUS_APPEND_NOCHECK};
  }
}

static uint64_t
last_seq(fixture *f, const char *stream) {
  uint64_t seq = 0;
  cr_assert_eq(bus_stream_last_seq(f->c, stream, &seq), 0, "%s",
               bus_last_error());
  return seq;
}

Test(atomic, streams_allow_it_and_ensure_keeps_it) {
  fixture *f = up(NULL);
  const char *const names[] = {"LARK_EVENTS", "LARK_RUNS"};
  for (int k = 0; k < 2; k++) {
    cr_assert_eq(lt_streams(f->c, 30000), 0, "%s", bus_last_error());
    for (int i = 0; i < 2; i++) {
      char subject[64];
      snprintf(subject, sizeof subject, "$JS.API.STREAM.INFO.%s", names[i]);
      json_t *info = lt_request_json(f->c, subject, "");
      cr_assert(info);
      json_t *cfg = json_object_get(info, "config");
      cr_assert(json_is_true(json_object_get(cfg, "allow_atomic")), "%s",
                names[i]);
      /* the update that carried it changed nothing else */
      if (k == 1 && i == 0)
        cr_assert_eq(
            json_integer_value(json_object_get(cfg, "duplicate_window")),
            30000 * (json_int_t)1000000);
      json_decref(info);
    }
  }
  cr_assert_eq(bus_stream_allow_atomic(f->c, "NOPE"), BUS_ENO_STREAM);
  down(f);
}

Test(atomic, ack_names_the_batch_and_its_count) {
  fixture *f = up(NULL);
  uint64_t seq = 0;
  batch(f, 1, "one");
  cr_assert_eq(bus_append_atomic(f->c, "LARK_EVENTS", f->it, 1, &seq), 0, "%s",
               bus_last_error());
  cr_assert_eq(seq, 1);
  batch(f, BUS_ATOMIC_MAX, "full");
  cr_assert_eq(
      bus_append_atomic(f->c, "LARK_EVENTS", f->it, BUS_ATOMIC_MAX, &seq), 0,
      "%s", bus_last_error());
  cr_assert_eq(seq, 1 + BUS_ATOMIC_MAX);
  cr_assert_eq(last_seq(f, "LARK_EVENTS"), 1 + BUS_ATOMIC_MAX);
  /* in order and whole: the 500th event is at seq - 1000 + 500 */
  msgpack_zone z;
  bus_event got;
  msgpack_zone_init(&z, 1024);
  cr_assert_eq(bus_last_event(f->c, "LARK_EVENTS", f->subject[499], &got, &z),
               0, "%s", bus_last_error());
  cr_assert_str_eq(got.id, f->id[499]);
  cr_assert_eq(got.seq, 1 + 500);
  msgpack_zone_destroy(&z);
  down(f);
}

Test(atomic, one_bad_event_stores_none) {
  fixture *f = up(NULL);
  uint64_t seq = 0;
  /* event 7 of 10 expects its subject at sequence 3: it is empty */
  batch(f, 10, "bad");
  f->ev[6].prev = 3;
  f->it[6].flags = BUS_APPEND_CHECK;
  cr_assert_eq(bus_append_atomic(f->c, "LARK_EVENTS", f->it, 10, &seq),
               BUS_ECONFLICT, "%s", bus_last_error());
  cr_assert_eq(last_seq(f, "LARK_EVENTS"), 0);
  /* the same batch with the right expectation (empty) goes in */
  f->ev[6].prev = 0;
  cr_assert_eq(bus_append_atomic(f->c, "LARK_EVENTS", f->it, 10, &seq), 0, "%s",
               bus_last_error());
  cr_assert_eq(seq, 10);
  /* sent again (a retry after a lost answer): refused whole, said so */
  char stored[33];
  memcpy(stored, f->id[4], sizeof stored);
  batch(f, 3, "again");
  memcpy(f->id[1], stored, sizeof stored);
  cr_assert_eq(bus_append_atomic(f->c, "LARK_EVENTS", f->it, 3, &seq),
               BUS_EEXISTS, "%s", bus_last_error());
  cr_assert_eq(last_seq(f, "LARK_EVENTS"), 10);
  /* an event too big to encode, after two were sent: refused, and the
   * part sent is discarded at once (another batch goes in behind it) */
  size_t big = BUS_MAX_PAYLOAD + 1;
  char *blob = malloc(big);
  cr_assert(blob);
  memset(blob, 'x', big);
  batch(f, 5, "big");
  f->ev[2].data_mp = blob;
  f->ev[2].data_mp_len = big;
  /* more than the 50 batches the server keeps in flight per stream: each
   * was dropped, or the next batch would be refused */
  for (int k = 0; k < 60; k++)
    cr_assert_eq(bus_append_atomic(f->c, "LARK_EVENTS", f->it, 5, &seq),
                 BUS_ETOO_BIG, "%s", bus_last_error());
  cr_assert_eq(last_seq(f, "LARK_EVENTS"), 10);
  batch(f, 2, "after");
  cr_assert_eq(bus_append_atomic(f->c, "LARK_EVENTS", f->it, 2, &seq), 0, "%s",
               bus_last_error());
  cr_assert_eq(seq, 12);
  free(blob);
  down(f);
}

Test(atomic, limits_refused_clearly) {
  fixture *f = up("jetstream { limits { batch { max_msgs: 10 } } }\n");
  uint64_t seq = 0;
  /* over libbus's bound: refused before anything is sent */
  batch(f, MAXN, "over");
  cr_assert_eq(bus_append_atomic(f->c, "LARK_EVENTS", f->it, MAXN, &seq),
               BUS_ETOO_BIG);
  cr_assert(strstr(bus_last_error(), "at most"), "%s", bus_last_error());
  /* over this server's own limit (10) */
  batch(f, 11, "srv");
  cr_assert_eq(bus_append_atomic(f->c, "LARK_EVENTS", f->it, 11, &seq),
               BUS_ETOO_BIG, "%s", bus_last_error());
  cr_assert(strstr(bus_last_error(), "too large"), "%s", bus_last_error());
  cr_assert_eq(last_seq(f, "LARK_EVENTS"), 0);
  cr_assert_eq(bus_append_atomic(f->c, "LARK_EVENTS", f->it, 10, &seq), 0, "%s",
               bus_last_error());
  cr_assert_eq(seq, 10);
  /* nothing to send, and an event without an id */
  cr_assert_eq(bus_append_atomic(f->c, "LARK_EVENTS", f->it, 0, &seq),
               BUS_EINVAL);
  f->ev[3].id = "";
  cr_assert_eq(bus_append_atomic(f->c, "LARK_EVENTS", f->it, 5, &seq),
               BUS_EINVAL);
  down(f);
}

Test(atomic, wrong_or_unwilling_stream) {
  fixture *f = up(NULL);
  uint64_t seq = 0;
  /* the subjects are LARK_EVENTS': naming LARK_RUNS stores nothing */
  batch(f, 4, "where");
  cr_assert_eq(bus_append_atomic(f->c, "LARK_RUNS", f->it, 4, &seq),
               BUS_ENO_STREAM, "%s", bus_last_error());
  cr_assert_eq(last_seq(f, "LARK_EVENTS"), 0);
  cr_assert_eq(last_seq(f, "LARK_RUNS"), 0);
  /* a stream without allow_atomic refuses */
  json_t *made = lt_request_json(
      f->c, "$JS.API.STREAM.CREATE.PLAIN",
      "{\"name\":\"PLAIN\",\"subjects\":[\"plain.>\"],\"storage\":\"file\"}");
  cr_assert(made && json_object_get(made, "config"));
  json_decref(made);
  for (int i = 0; i < 4; i++)
    snprintf(f->subject[i], sizeof f->subject[i], "plain.%d", i);
  cr_assert_eq(bus_append_atomic(f->c, "PLAIN", f->it, 4, &seq), BUS_EBROKER);
  cr_assert(strstr(bus_last_error(), "disabled"), "%s", bus_last_error());
  cr_assert_eq(last_seq(f, "PLAIN"), 0);
  /* allowed, it takes the batch */
  cr_assert_eq(bus_stream_allow_atomic(f->c, "PLAIN"), 0, "%s",
               bus_last_error());
  cr_assert_eq(bus_stream_allow_atomic(f->c, "PLAIN"), 0, "%s",
               bus_last_error());
  cr_assert_eq(bus_append_atomic(f->c, "PLAIN", f->it, 4, &seq), 0, "%s",
               bus_last_error());
  cr_assert_eq(seq, 4);
  down(f);
}
