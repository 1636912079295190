/*
 * test_view.c - LMDB views without a broker: batches, the applied
 * sequence, `prev` checks, generations, refusals, digest, snapshot,
 * decisions written to the outbox, write transactions held across calls
 * and the definition's commit and abort hooks.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "bed.h"
#include "natsd.h"

static const char *const tables[] = {"items", NULL};

/* items: subject -> type of the last accepted event. Refuses type
 * "sample.updated" whose data text is "bad". */
static int
apply_items(bus_txn *t, const bus_event *ev, void *ud) {
  (void)ud;
  char text[16] = "";
  bus_obj_str(&ev->data, "text", text, sizeof text);
  if (!strcmp(text, "bad"))
    return BUS_EINVAL;
  return bus_txn_put(t, "items", ev->subject, strlen(ev->subject), ev->type,
                     strlen(ev->type));
}

/* On sample.created, decide a sample.updated on the same subject. */
static int
decide_items(bus_txn *t, const bus_event *cause, int64_t now, void *ud) {
  (void)now;
  (void)ud;
  if (!cause || strcmp(cause->type, "sample.created"))
    return 0;
  bus_event ev = {
      .type = "sample.updated", .actor = "test-view", .prev = cause->seq};
  return bus_txn_emit(t, cause->subject, &ev, BUS_APPEND_CHECK);
}

static bus_view_def
def_items(void) {
  bus_view_def d = {.name = "items",
                    .tables = tables,
                    .apply = apply_items,
                    .decide = decide_items};
  return d;
}

static char dir[256];

static void
setup(void) {
  lt_tmpdir(dir, sizeof dir, "view");
}

static void
teardown(void) {
  lt_rmtree(dir);
}

TestSuite(view, .init = setup, .fini = teardown, .timeout = 30);

/* The version of subject in v, read in a transaction of its own. */
static bus_version
version_of(bus_view *v, const char *subject) {
  bus_txn *t;
  bus_version ver;
  cr_assert_eq(bus_view_read(v, &t), 0);
  bus_txn_version(t, subject, &ver);
  bus_txn_end(t);
  return ver;
}

static bus_view *
open_view(const char *sub, int effects) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, sub);
  bus_view_def d = def_items();
  return lt_must_open_view(&d, path, effects);
}

static bus_event
ev_at(const char *subject, const char *type, uint64_t seq, uint64_t prev) {
  bus_event e = {.v = 1,
                 .type = type,
                 .id = "id",
                 .ts = 1000 + (int64_t)seq,
                 .actor = "tester",
                 .cause = "",
                 .prev = prev,
                 .subject = subject,
                 .seq = seq};
  e.data.type = MSGPACK_OBJECT_NIL;
  return e;
}

static void
apply_all(bus_view *v, bus_event *evs, size_t n) {
  const bus_event *p[16];
  for (size_t i = 0; i < n; i++)
    p[i] = &evs[i];
  cr_assert_eq(bus_view_apply(v, p, n), 0, "apply: %s", bus_last_error());
}

static bus_view_stats
stats(bus_view *v) {
  bus_view_stats s;
  cr_assert_eq(bus_view_stats_get(v, &s), 0);
  return s;
}

Test(view, applies_batch_and_records_sequence) {
  bus_view *v = open_view("a", 0);
  bus_event e[] = {ev_at("lark.ev.sample.a", "sample.created", 1, 0),
                   ev_at("lark.ev.sample.b", "sample.created", 2, 0),
                   ev_at("lark.ev.sample.a", "sample.updated", 3, 1)};
  apply_all(v, e, 3);
  bus_view_stats s = stats(v);
  cr_expect_eq(s.applied_seq, 3);
  cr_expect_eq(s.applied, 3);
  cr_expect_eq(s.stale, 0);
  bus_txn *t;
  cr_assert_eq(bus_view_read(v, &t), 0);
  bus_version ver;
  cr_assert_eq(bus_txn_version(t, "lark.ev.sample.a", &ver), 0);
  cr_expect_eq(ver.seq, 3);
  cr_expect_eq(ver.count, 2);
  cr_expect_eq(ver.generation, 1);
  const void *val;
  size_t len;
  cr_assert_eq(bus_txn_get(t, "items", "lark.ev.sample.a", 16, &val, &len), 0);
  cr_expect_eq(len, strlen("sample.updated"));
  cr_expect(!memcmp(val, "sample.updated", len));
  bus_txn_end(t);
  bus_view_close(v);
}

Test(view, redelivery_is_skipped) {
  bus_view *v = open_view("a", 0);
  bus_event e[] = {ev_at("lark.ev.sample.a", "sample.created", 1, 0),
                   ev_at("lark.ev.sample.a", "sample.updated", 2, 1)};
  apply_all(v, e, 2);
  apply_all(v, e, 2); /* the same batch again: a redelivery */
  bus_view_stats s = stats(v);
  cr_expect_eq(s.applied, 2);
  cr_expect_eq(s.stale, 0);
  cr_expect_eq(s.applied_seq, 2);
  bus_view_close(v);
}

Test(view, stale_prev_is_ignored_and_counted) {
  bus_view *v = open_view("a", 0);
  bus_event e[] = {ev_at("lark.ev.sample.a", "sample.created", 1, 0),
                   ev_at("lark.ev.sample.a", "sample.updated", 2, 1),
                   /* a writer that also saw version 1: loses */
                   ev_at("lark.ev.sample.a", "sample.deleted", 3, 1),
                   /* a second create while one exists: loses */
                   ev_at("lark.ev.sample.a", "sample.created", 4, 0)};
  apply_all(v, e, 4);
  bus_view_stats s = stats(v);
  cr_expect_eq(s.applied, 2);
  cr_expect_eq(s.stale, 2);
  cr_expect_eq(s.applied_seq, 4);
  bus_version ver = version_of(v, "lark.ev.sample.a");
  cr_expect_eq(ver.seq, 2);
  cr_expect_eq(ver.deleted, 0);
  bus_view_close(v);
}

Test(view, recreate_after_delete_starts_a_generation) {
  bus_view *v = open_view("a", 0);
  bus_event e[] = {ev_at("lark.ev.sample.a", "sample.created", 1, 0),
                   ev_at("lark.ev.sample.a", "sample.deleted", 2, 1),
                   ev_at("lark.ev.sample.a", "sample.created", 3, 2)};
  apply_all(v, e, 3);
  bus_version ver = version_of(v, "lark.ev.sample.a");
  cr_expect_eq(ver.generation, 2);
  cr_expect_eq(ver.count, 3);
  cr_expect_eq(ver.seq, 3);
  bus_view_close(v);
}

Test(view, refused_event_leaves_version_unchanged) {
  bus_view *v = open_view("a", 0);
  msgpack_zone z;
  msgpack_zone_init(&z, 256);
  msgpack_object bad;
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 1);
  bus_pack_kv_str(&b.pk, "text", "bad");
  cr_assert(msgpack_unpack(b.sb.data, b.sb.size, NULL, &z, &bad) >= 0);
  bus_event e[] = {ev_at("lark.ev.sample.a", "sample.created", 1, 0),
                   ev_at("lark.ev.sample.a", "sample.updated", 2, 1),
                   ev_at("lark.ev.sample.a", "sample.updated", 3, 1)};
  e[1].data = bad;
  apply_all(v, e, 3);
  bus_view_stats s = stats(v);
  cr_expect_eq(s.rejected, 1);
  cr_expect_eq(s.applied, 2); /* seq 3 wins: its prev is still 1 */
  cr_expect_eq(s.stale, 0);
  bus_packbuf_destroy(&b);
  msgpack_zone_destroy(&z);
  bus_view_close(v);
}

Test(view, digest_depends_on_content_only) {
  bus_view *a = open_view("a", 0), *b = open_view("b", 0);
  bus_event e[] = {ev_at("lark.ev.sample.a", "sample.created", 1, 0),
                   ev_at("lark.ev.sample.b", "sample.created", 2, 0),
                   ev_at("lark.ev.sample.a", "sample.updated", 3, 1)};
  apply_all(a, e, 3);
  apply_all(b, e, 1); /* same events, other batch sizes */
  apply_all(b, e + 1, 2);
  uint8_t da[32], db[32];
  uint64_t sa, sb;
  cr_assert_eq(bus_view_digest(a, da, &sa), 0);
  cr_assert_eq(bus_view_digest(b, db, &sb), 0);
  cr_expect_eq(sa, 3);
  cr_expect_eq(sb, 3);
  cr_expect(!memcmp(da, db, 32), "same events must give the same digest");
  bus_event more[] = {ev_at("lark.ev.sample.c", "sample.created", 4, 0)};
  apply_all(b, more, 1);
  cr_assert_eq(bus_view_digest(b, db, &sb), 0);
  cr_expect(memcmp(da, db, 32), "different content, different digest");
  bus_view_close(a);
  bus_view_close(b);
}

Test(view, other_views_directory_is_refused) {
  bus_view *v = open_view("a", 0);
  bus_view_close(v);
  char path[512];
  snprintf(path, sizeof path, "%s/a", dir);
  bus_view_def d = {.name = "other", .tables = tables};
  bus_view_opts o;
  bus_view_opts_init(&o);
  o.dir = path;
  cr_expect_eq(bus_view_open(&v, &d, &o), BUS_ECORRUPT);
}

Test(view, snapshot_keeps_tables_and_sequence) {
  bus_view *v = open_view("a", 0);
  bus_event e[] = {ev_at("lark.ev.sample.a", "sample.created", 5, 0)};
  apply_all(v, e, 1);
  char snap[512];
  snprintf(snap, sizeof snap, "%s/snap", dir);
  cr_assert_eq(bus_view_snapshot(v, snap), 0, "%s", bus_last_error());
  cr_expect_eq(bus_view_snapshot(v, snap), BUS_EEXISTS);
  uint8_t d1[32], d2[32];
  uint64_t s1, s2;
  bus_view_digest(v, d1, &s1);
  bus_view_close(v);
  v = open_view("snap", 0);
  bus_view_digest(v, d2, &s2);
  cr_expect_eq(s2, 5);
  cr_expect_eq(s1, s2);
  cr_expect(!memcmp(d1, d2, 32));
  bus_view_close(v);
}

Test(view, decide_emits_into_outbox_only_with_effects) {
  bus_view *live = open_view("live", 1), *replay = open_view("replay", 0);
  bus_event e[] = {ev_at("lark.ev.sample.a", "sample.created", 1, 0)};
  apply_all(live, e, 1);
  apply_all(replay, e, 1);
  cr_expect_eq(stats(live).outbox, 1);
  cr_expect_eq(stats(replay).outbox, 0);
  uint8_t d1[32], d2[32];
  bus_view_digest(live, d1, NULL);
  bus_view_digest(replay, d2, NULL);
  cr_expect(!memcmp(d1, d2, 32), "the outbox is not part of the digest");
  bus_view_close(live);
  bus_view_close(replay);
}

Test(view, derived_ids_are_deterministic) {
  char a[33], b[33], c[33];
  bus_event_derive_id("cause-1", 0, a);
  bus_event_derive_id("cause-1", 0, b);
  bus_event_derive_id("cause-1", 1, c);
  cr_expect_str_eq(a, b);
  cr_expect_str_neq(a, c);
}

/* A write transaction held across calls: events applied one at a time,
 * read through it before it commits, nothing seen outside until then;
 * one dropped whole keeps nothing. */
Test(view, held_write_transaction) {
  bus_view *v = open_view("a", 0);
  bus_event e[] = {ev_at("lark.ev.sample.a", "sample.created", 1, 0),
                   ev_at("lark.ev.sample.a", "sample.updated", 2, 1),
                   ev_at("lark.ev.sample.a", "sample.updated", 3, 1),
                   ev_at("lark.ev.sample.b", "sample.created", 4, 0)};
  bus_txn *w;
  cr_assert_eq(bus_view_write(v, &w), 0, "%s", bus_last_error());
  for (int i = 0; i < 3; i++)
    cr_assert_eq(bus_txn_apply(w, &e[i]), 0, "%s", bus_last_error());
  cr_assert_eq(bus_txn_apply(w, &e[0]), 0, "a redelivery is skipped");
  const void *val;
  size_t len;
  cr_assert_eq(bus_txn_get(w, "items", "lark.ev.sample.a", 16, &val, &len), 0);
  cr_expect(len == 14 && !memcmp(val, "sample.updated", len));
  cr_expect_eq(stats(v).applied_seq, 0, "nothing outside before commit");
  cr_assert_eq(bus_txn_commit(w), 0, "%s", bus_last_error());
  bus_view_stats s = stats(v);
  cr_expect_eq(s.applied_seq, 3);
  cr_expect_eq(s.applied, 2);
  cr_expect_eq(s.stale, 1, "seq 3's prev 1 is not the version 2");
  cr_assert_eq(bus_view_write(v, &w), 0);
  cr_assert_eq(bus_txn_apply(w, &e[3]), 0);
  bus_txn_end(w);
  cr_expect_eq(stats(v).applied_seq, 3, "a dropped one keeps nothing");
  cr_expect_eq(version_of(v, "lark.ev.sample.b").seq, 0);
  bus_view_close(v);
}

/* def.commit runs once per batch before its commit, and its error aborts
 * the batch; def.abort runs after the abort. */
static int hook_commits, hook_aborts, hook_fail;

static int
count_commit(bus_txn *t, void *ud) {
  (void)t, (void)ud;
  hook_commits++;
  return hook_fail ? BUS_ESTORE : 0;
}

static void
count_abort(bus_view *v, void *ud) {
  (void)v, (void)ud;
  hook_aborts++;
}

Test(view, commit_and_abort_hooks) {
  char path[512];
  snprintf(path, sizeof path, "%s/h", dir);
  bus_view_def d = def_items();
  d.commit = count_commit;
  d.abort = count_abort;
  bus_view *v = lt_must_open_view(&d, path, 0);
  bus_event e[] = {ev_at("lark.ev.sample.a", "sample.created", 1, 0),
                   ev_at("lark.ev.sample.b", "sample.created", 2, 0)};
  apply_all(v, e, 2);
  cr_expect_eq(hook_commits, 1, "once per batch");
  cr_expect_eq(hook_aborts, 0);
  hook_fail = 1;
  bus_event more = ev_at("lark.ev.sample.c", "sample.created", 3, 0);
  const bus_event *p[1] = {&more};
  cr_expect_neq(bus_view_apply(v, p, 1), 0, "the hook's error aborts");
  cr_expect_eq(hook_aborts, 1);
  cr_expect_eq(stats(v).applied_seq, 2, "nothing of the aborted batch");
  bus_view_close(v);
}

/* The view opened under def_items with layout, at dir/sub. */
static bus_view *
open_layout(const char *sub, uint32_t layout) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, sub);
  bus_view_def d = def_items();
  d.layout = layout;
  return lt_must_open_view(&d, path, 1);
}

static size_t
rows(bus_view *v, const char *table) {
  bus_txn *t;
  size_t n = 0;
  cr_assert_eq(bus_view_read(v, &t), 0);
  const void *val;
  size_t len;
  n += bus_txn_get(t, table, "lark.ev.sample.a", 16, &val, &len) == 0;
  bus_txn_end(t);
  return n;
}

/* A view written under another layout is emptied at open, outbox and
 * counters too, so its service rebuilds it from sequence 1; the same
 * layout, or a view that holds nothing yet, is left as it is. */
Test(view, another_layout_is_emptied_for_a_rebuild) {
  bus_view *v = open_layout("l", 1);
  cr_expect_not(bus_view_relaid(v), "a new view has nothing to empty");
  bus_event e[] = {ev_at("lark.ev.sample.a", "sample.created", 1, 0),
                   ev_at("lark.ev.sample.b", "sample.created", 2, 0)};
  apply_all(v, e, 2);
  cr_assert_eq(stats(v).outbox, 2, "decide left its events to send");
  bus_view_close(v);

  v = open_layout("l", 1);
  cr_expect_not(bus_view_relaid(v));
  cr_expect_eq(stats(v).applied_seq, 2, "the same layout keeps the view");
  cr_expect_eq(rows(v, "items"), 1);
  bus_view_close(v);

  v = open_layout("l", 2);
  cr_expect(bus_view_relaid(v));
  bus_view_stats s = stats(v);
  cr_expect_eq(s.applied_seq, 0, "rebuilt from the start");
  cr_expect_eq(s.applied, 0);
  cr_expect_eq(s.outbox, 0);
  cr_expect_eq(rows(v, "items"), 0, "its rows are gone");
  cr_expect_eq(version_of(v, "lark.ev.sample.a").seq, 0, "and its versions");
  apply_all(v, e, 1);
  bus_view_close(v);

  v = open_layout("l", 2);
  cr_expect_not(bus_view_relaid(v), "emptied once, not at every open");
  cr_expect_eq(stats(v).applied_seq, 1);
  bus_view_close(v);

  v = open_layout("k", 0); /* written before layouts were kept */
  apply_all(v, e, 1);
  bus_view_close(v);
  v = open_layout("k", 0);
  cr_expect_not(bus_view_relaid(v), "no layout asked for: left as it is");
  bus_view_close(v);
  v = open_layout("k", 3);
  cr_expect(bus_view_relaid(v), "a view without a layout meets its first");
  cr_expect_eq(stats(v).applied_seq, 0);
  bus_view_close(v);
}
