/*
 * test_outbox_chain.c - several decisions on one checked subject from one
 * pass (BUS_APPEND_CHAIN), against a real broker: the chain lands whole,
 * each event on top of the one before, while other writers append to the
 * stream; a chain decided on a version that has moved on lands not at
 * all; a chain published again after a crash lands once; and a view
 * applying the log accepts every event of it (none stale).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bed.h"
#include "events.h"
#include "natsd.h"
#include "stream.h"

#define SUBJECT "lark.ev.sample.chain"
#define CHAIN 6

static const char *const tables[] = {"items", NULL};

/* Count what the view accepts (stale ones are counted by libbus). */
static int
apply_items(bus_txn *t, const bus_event *ev, void *ud) {
  (void)ud;
  return bus_txn_put(t, "items", ev->id, strlen(ev->id), "", 0);
}

static lt_natsd srv;
static bus_conn *conn;
static char dir[256];

static void
setup(void) {
  lt_bed_up(&srv, &conn, dir, sizeof dir, "chain", 1000);
}

static void
teardown(void) {
  lt_bed_down(&srv, conn, dir, NULL, 0);
}

TestSuite(outbox_chain, .init = setup, .fini = teardown, .timeout = 60);

static bus_view *
open_view(const char *sub, int effects) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, sub);
  bus_view_def d = {.name = "items", .tables = tables, .apply = apply_items};
  return lt_must_open_view(&d, path, effects);
}

/* An event on subject by another writer, checked at prev (0: none). */
static uint64_t
other_writer(const char *subject, uint64_t prev) {
  char id[33];
  bus_event ev;
  uint64_t seq = 0;
  lt_event(&ev, id, "sample.updated", "someone", 7, prev, NULL);
  cr_assert_eq(
      bus_append(conn, subject, &ev, prev ? BUS_APPEND_CHECK : 0, &seq, NULL),
      0, "%s", bus_last_error());
  return seq;
}

/* Emit a chain of n events on SUBJECT into v's outbox, decided on
 * version prev (ids chain-<tag>-<i>), in one write transaction. */
static void
emit_chain(bus_view *v, const char *tag, int n, uint64_t prev) {
  bus_txn *t;
  cr_assert_eq(bus_view_write(v, &t), 0, "%s", bus_last_error());
  for (int i = 0; i < n; i++) {
    char id[64];
    snprintf(id, sizeof id, "chain-%s-%d", tag, i);
    bus_event ev = {.type = "sample.updated",
                    .id = id,
                    .actor = "decider",
                    .ts = 42,
                    .prev = prev};
    int flags = i ? BUS_APPEND_CHECK | BUS_APPEND_CHAIN : BUS_APPEND_CHECK;
    cr_assert_eq(bus_txn_emit(t, SUBJECT, &ev, flags), 0, "%s",
                 bus_last_error());
  }
  cr_assert_eq(bus_txn_commit(t), 0, "%s", bus_last_error());
}

typedef struct seen {
  int n;
  uint64_t seq[64], prev[64];
  char id[64][64];
} seen;

static void
collect(const bus_event *ev, void *arg) {
  seen *s = arg;
  if (s->n >= 64 || strcmp(ev->subject, SUBJECT))
    return;
  s->seq[s->n] = ev->seq;
  s->prev[s->n] = ev->prev;
  snprintf(s->id[s->n], sizeof s->id[s->n], "%s", ev->id);
  s->n++;
}

static void
read_subject(seen *s) {
  memset(s, 0, sizeof *s);
  cr_assert_eq(lt_read_stream(conn, "LARK_EVENTS", NULL, 500, 1, collect, s), 0,
               "%s", bus_last_error());
}

static void
apply_batch(bus_batch *b, void *v) {
  cr_assert_eq(bus_view_apply_batch(v, b), 0, "%s", bus_last_error());
}

static void
drain(bus_view *v, uint64_t want_pub, uint64_t want_drop) {
  uint64_t pub = 0, drop = 0;
  cr_assert_eq(bus_outbox_drain(v, conn, "LARK_EVENTS", &pub, &drop), 0, "%s",
               bus_last_error());
  cr_expect_eq(pub, want_pub, "published %llu", (unsigned long long)pub);
  cr_expect_eq(drop, want_drop, "dropped %llu", (unsigned long long)drop);
  bus_view_stats st;
  bus_view_stats_get(v, &st);
  cr_expect_eq(st.outbox, 0);
}

Test(outbox_chain, lands_whole_each_on_top_of_the_one_before) {
  bus_view *v = open_view("a", 1);
  uint64_t head = other_writer(SUBJECT, 0);
  other_writer("lark.ev.sample.elsewhere", 0); /* the stream moves on */
  emit_chain(v, "a", CHAIN, head);
  other_writer("lark.ev.sample.more", 0); /* and again before the drain */
  drain(v, CHAIN, 0);
  seen s;
  read_subject(&s);
  cr_assert_eq(s.n, CHAIN + 1);
  cr_expect_eq(s.prev[1], head, "the head is checked at its own prev");
  for (int i = 2; i <= CHAIN; i++) {
    cr_expect_eq(s.prev[i], s.seq[i - 1], "event %d: prev %llu, before %llu", i,
                 (unsigned long long)s.prev[i],
                 (unsigned long long)s.seq[i - 1]);
    cr_expect_eq(s.seq[i], s.seq[i - 1] + 1, "the chain is contiguous");
  }
  bus_view_close(v);

  /* a view reading the log accepts every event of it */
  bus_view *r = open_view("reader", 0);
  cr_assert_eq(
      lt_read_batches(conn, "LARK_EVENTS", NULL, 500, 1, apply_batch, r), 0,
      "%s", bus_last_error());
  bus_view_stats st;
  bus_view_stats_get(r, &st);
  cr_expect_eq(st.stale, 0, "%llu events of the chain were stale",
               (unsigned long long)st.stale);
  bus_view_close(r);
}

Test(outbox_chain, decided_on_a_moved_version_lands_not_at_all) {
  bus_view *v = open_view("a", 1);
  uint64_t head = other_writer(SUBJECT, 0);
  emit_chain(v, "a", CHAIN, head);
  other_writer(SUBJECT, head); /* someone else writes the subject first */
  drain(v, 0, CHAIN);
  seen s;
  read_subject(&s);
  cr_expect_eq(s.n, 2, "nothing of the chain landed");
  bus_view_close(v);
}

Test(outbox_chain, published_again_after_a_crash_lands_once) {
  char snap[512];
  bus_view *v = open_view("a", 1);
  emit_chain(v, "a", CHAIN, 0);
  snprintf(snap, sizeof snap, "%s/crashed", dir);
  cr_assert_eq(bus_view_snapshot(v, snap), 0, "%s", bus_last_error());
  drain(v, CHAIN, 0);
  bus_view_close(v);
  v = open_view("crashed", 1); /* the outbox as before the drain */
  drain(v, CHAIN, 0);          /* found landed: published, once */
  seen s;
  read_subject(&s);
  cr_expect_eq(s.n, CHAIN, "the chain landed %d times", s.n / CHAIN);
  bus_view_close(v);
}

Test(outbox_chain, a_chained_entry_without_its_head_is_dropped) {
  bus_view *v = open_view("a", 1);
  bus_txn *t;
  cr_assert_eq(bus_view_write(v, &t), 0, "%s", bus_last_error());
  bus_event ev = {.type = "sample.updated", .id = "orphan", .actor = "d"};
  cr_assert_eq(
      bus_txn_emit(t, SUBJECT, &ev, BUS_APPEND_CHECK | BUS_APPEND_CHAIN), 0);
  cr_assert_eq(bus_txn_commit(t), 0, "%s", bus_last_error());
  drain(v, 0, 1);
  seen s;
  read_subject(&s);
  cr_expect_eq(s.n, 0);
  bus_view_close(v);
}
