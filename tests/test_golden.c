/*
 * test_golden.c - the golden event log (tests/data/golden, recorded by
 * tests/golden/record from a platform put through every kind of change):
 *
 *  - every message of every stream in it decodes and passes the schema,
 *    whatever version of the code wrote it, and names its type in its
 *    Lark-Type header;
 *  - every message decodes into its generated type and packs from it
 *    again to the same values (docs/design.md section 4);
 *  - its LARK_EVENTS, published byte for byte into a fresh broker, rebuilds
 *    every view to the digest recorded beside it (digests), so a change to
 *    how events are read or applied that alters a view fails here; and to
 *    the same digest whether the events come one, seven or thousands to a
 *    transaction;
 *  - rebuilt to points all along the log, the scheduler's index of the
 *    pods booked on each node holds exactly its booked pods.
 *
 * With LARK_GOLDEN_WRITE=FILE the second test writes the digests to FILE
 * instead of comparing (the recorder uses it).
 */
#include <jansson.h>
#include <nats/nats.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "bed.h"
#include "bus.h"
#include "natsd.h"
#include "replay.h"
#include "scheduler.h"

enum { MAX_BYTES = 2 << 20 };

typedef struct blob {
  unsigned char *p;
  size_t n;
} blob;

static FILE *
golden_open(const char *name) {
  const char *src = getenv("LARK_SOURCE_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/tests/data/golden/%s", src ? src : ".", name);
  FILE *f = fopen(path, "r");
  cr_assert(f, "cannot open %s", path);
  return f;
}

/* base64 as the broker writes it (padded); n excludes the padding. */
static blob
unbase64(const char *s) {
  size_t len = strlen(s);
  blob b = {malloc(len / 4 * 3 + 4), 0};
  cr_assert(b.p && len % 4 == 0, "bad base64 length %zu", len);
  int n = EVP_DecodeBlock(b.p, (const unsigned char *)s, (int)len);
  cr_assert(n >= 0, "bad base64");
  b.n = (size_t)n - (len >= 1 && s[len - 1] == '=') -
        (len >= 2 && s[len - 2] == '=');
  return b;
}

typedef void (*record_fn)(json_t *rec, blob hdrs, blob data, void *ud);

/* Calls fn for every record of the log; returns how many. */
static size_t
each_record(record_fn fn, void *ud) {
  FILE *f = golden_open("events.jsonl");
  char *line = NULL;
  size_t cap = 0, n = 0;
  while (getline(&line, &cap, f) > 0) {
    json_error_t jerr;
    json_t *rec = json_loads(line, 0, &jerr);
    cr_assert(rec, "line %zu: %s", n + 1, jerr.text);
    blob h = unbase64(json_string_value(json_object_get(rec, "hdrs")));
    blob d = unbase64(json_string_value(json_object_get(rec, "data")));
    fn(rec, h, d, ud);
    free(h.p);
    free(d.p);
    json_decref(rec);
    n++;
  }
  free(line);
  fclose(f);
  return n;
}

/* The value of header key in a NATS/1.0 header block, or "". */
static void
header(blob h, const char *key, char *out, size_t cap) {
  out[0] = 0;
  char *block = strndup((const char *)h.p, h.n), *save = NULL;
  size_t kl = strlen(key);
  for (char *l = strtok_r(block, "\r\n", &save); l;
       l = strtok_r(NULL, "\r\n", &save)) {
    if (!strncasecmp(l, key, kl) && l[kl] == ':') {
      snprintf(out, cap, "%s", l + kl + 1 + (l[kl + 1] == ' '));
      break;
    }
  }
  free(block);
}

/* ------------------------------------------------------ every event reads */

typedef struct census {
  json_t *types; /* type -> count */
  size_t bad;
} census;

static void
check_record(json_t *rec, blob h, blob d, void *ud) {
  census *cs = ud;
  bus_event ev;
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  int rc = bus_event_decode(d.p, d.n, &ev, &z);
  char ltype[128];
  header(h, "Lark-Type", ltype, sizeof ltype);
  const char *where = json_string_value(json_object_get(rec, "subject"));
  if (rc || strcmp(ltype, ev.type)) {
    cs->bad++;
    cr_log_error("%s #%lld (%s): %s", where,
                 (long long)json_integer_value(json_object_get(rec, "seq")),
                 rc ? bus_last_error() : "Lark-Type differs from the type",
                 ltype);
  } else {
    json_t *c = json_object_get(cs->types, ev.type);
    json_object_set_new(cs->types, ev.type,
                        json_integer(c ? json_integer_value(c) + 1 : 1));
  }
  msgpack_zone_destroy(&z);
}

Test(golden, every_message_decodes_and_passes_the_schema) {
  census cs = {json_object(), 0};
  size_t n = each_record(check_record, &cs);
  cr_assert_gt(n, 1000, "the golden log holds %zu messages", n);
  cr_assert_eq(cs.bad, 0, "%zu of %zu messages did not read", cs.bad, n);
  /* The log covers every type the platform stores. Not in it: pod.report,
   * pod.forgotten and node.heartbeat live only in the ingress work queue
   * until taken; sample.* are the schema's own test types. */
  const char *must[] = {
      "job.submitted",      "job.placed",       "job.unplaced",
      "job.phase",          "job.stopped",      "job.resumed",
      "job.deleted",        "task.phase",       "pod.phase",
      "pod.desired",        "node.registered",  "node.ready",
      "node.notready",      "node.cordoned",    "node.uncordoned",
      "workflow.submitted", "workflow.phase",   "workflow.stopped",
      "workflow.resumed",   "workflow.deleted", "domain.created",
      "domain.allocated",   "domain.exhausted", "domain.released",
      "domain.deleted",     "route.set",        "route.deleted",
      "cert.issued",        "cert.revoked",     "ca.published",
      "run.reported",       "log.batch"};
  for (size_t i = 0; i < sizeof must / sizeof *must; i++)
    cr_expect(json_object_get(cs.types, must[i]), "no %s in the golden log",
              must[i]);
  json_decref(cs.types);
}

/* ------------------------------------- the generated types read them all */

/*
 * Every message through the generated types: decoded once into its
 * struct, packed again from the struct (map sizes counted from the has_
 * flags), and the packed data holds the same values as the stored data,
 * key for key; packing what that decodes to gives the same bytes again.
 * Where the whole re-encoded event equals the stored bytes is counted:
 * the generated packer writes fields in schema.yaml's order, the writers
 * of the log in their own.
 */
typedef struct typed_census {
  size_t n, same_bytes, same_keys_order, bad;
  json_t *reordered; /* type -> messages whose writer ordered differently */
} typed_census;

static int obj_same(const msgpack_object *a, const msgpack_object *b);

static const msgpack_object *
map_find(const msgpack_object *m, const msgpack_object_str *k) {
  for (uint32_t i = 0; i < m->via.map.size; i++) {
    const msgpack_object_str *p = &m->via.map.ptr[i].key.via.str;
    if (p->size == k->size && !memcmp(p->ptr, k->ptr, k->size))
      return &m->via.map.ptr[i].val;
  }
  return NULL;
}

/* Equal values, maps compared as sets of keys, floats whatever their
 * width. */
static int
obj_same(const msgpack_object *a, const msgpack_object *b) {
  int fa =
      a->type == MSGPACK_OBJECT_FLOAT32 || a->type == MSGPACK_OBJECT_FLOAT64;
  int fb =
      b->type == MSGPACK_OBJECT_FLOAT32 || b->type == MSGPACK_OBJECT_FLOAT64;
  if (fa && fb)
    return a->via.f64 == b->via.f64;
  if (a->type != b->type)
    return 0;
  if (a->type == MSGPACK_OBJECT_ARRAY) {
    if (a->via.array.size != b->via.array.size)
      return 0;
    for (uint32_t i = 0; i < a->via.array.size; i++)
      if (!obj_same(&a->via.array.ptr[i], &b->via.array.ptr[i]))
        return 0;
    return 1;
  }
  if (a->type != MSGPACK_OBJECT_MAP)
    return msgpack_object_equal(*a, *b);
  if (a->via.map.size != b->via.map.size)
    return 0;
  for (uint32_t i = 0; i < a->via.map.size; i++) {
    const msgpack_object *v = map_find(b, &a->via.map.ptr[i].key.via.str);
    if (!v || !obj_same(&a->via.map.ptr[i].val, v))
      return 0;
  }
  return 1;
}

/* 1 when the two maps list their keys in the same order, all the way
 * down. */
static int
same_order(const msgpack_object *a, const msgpack_object *b) {
  if (a->type == MSGPACK_OBJECT_ARRAY) {
    for (uint32_t i = 0; i < a->via.array.size; i++)
      if (!same_order(&a->via.array.ptr[i], &b->via.array.ptr[i]))
        return 0;
    return 1;
  }
  if (a->type != MSGPACK_OBJECT_MAP)
    return 1;
  for (uint32_t i = 0; i < a->via.map.size; i++)
    if (!msgpack_object_equal(a->via.map.ptr[i].key, b->via.map.ptr[i].key) ||
        !same_order(&a->via.map.ptr[i].val, &b->via.map.ptr[i].val))
      return 0;
  return 1;
}

/* Pack typed data of type t; unpack the bytes into z as *obj. */
static void
typed_repack(bus_type t, const void *typed, msgpack_sbuffer *sb,
             msgpack_zone *z, msgpack_object *obj) {
  msgpack_sbuffer_init(sb);
  cr_assert_eq(bus_data_pack(t, typed, sb), 0, "%s: pack: %s", bus_type_name(t),
               bus_last_error());
  cr_assert_eq(msgpack_unpack(sb->data, sb->size, NULL, z, obj),
               MSGPACK_UNPACK_SUCCESS);
}

static void
typed_record(json_t *rec, blob h, blob d, void *ud) {
  typed_census *tc = ud;
  msgpack_zone z;
  msgpack_sbuffer one, two, whole;
  msgpack_object obj, obj2;
  bus_event ev = {0}, again;
  (void)h;
  msgpack_zone_init(&z, 4096);
  tc->n++;
  cr_assert_eq(bus_event_decode_typed(d.p, d.n, &ev, &z), 0, "%s #%lld: %s",
               json_string_value(json_object_get(rec, "subject")),
               (long long)json_integer_value(json_object_get(rec, "seq")),
               bus_last_error());
  cr_assert(ev.typed && ev.t == bus_type_of(ev.type));
  typed_repack(ev.t, ev.typed, &one, &z, &obj);
  if (!obj_same(&ev.data, &obj)) {
    tc->bad++;
    cr_log_error("%s: the typed round trip changed the data", ev.type);
  }
  void *back = msgpack_zone_malloc(&z, bus_type_size(ev.t));
  cr_assert_eq(bus_data_unpack(ev.t, &obj, &z, back), 0, "%s",
               bus_last_error());
  typed_repack(ev.t, back, &two, &z, &obj2);
  cr_assert(one.size == two.size && !memcmp(one.data, two.data, one.size),
            "%s: packing is not stable", ev.type);
  again = ev;
  again.data.type = MSGPACK_OBJECT_NIL;
  msgpack_sbuffer_init(&whole);
  cr_assert_eq(bus_event_encode(&again, &whole), 0, "%s", bus_last_error());
  tc->same_bytes += whole.size == d.n && !memcmp(whole.data, d.p, d.n);
  if (same_order(&ev.data, &obj)) {
    tc->same_keys_order++;
  } else {
    json_t *c = json_object_get(tc->reordered, ev.type);
    json_object_set_new(tc->reordered, ev.type,
                        json_integer(c ? json_integer_value(c) + 1 : 1));
  }
  msgpack_sbuffer_destroy(&one);
  msgpack_sbuffer_destroy(&two);
  msgpack_sbuffer_destroy(&whole);
  msgpack_zone_destroy(&z);
}

Test(golden, every_message_round_trips_through_the_generated_types) {
  typed_census tc = {.reordered = json_object()};
  each_record(typed_record, &tc);
  char *re = json_dumps(tc.reordered, JSON_SORT_KEYS | JSON_COMPACT);
  cr_assert_gt(tc.n, 1000);
  cr_assert_eq(tc.bad, 0, "%zu of %zu messages changed", tc.bad, tc.n);
  cr_log_info("%zu messages: %zu re-encode to the stored bytes, %zu keep "
              "their fields' order; written in another order: %s",
              tc.n, tc.same_bytes, tc.same_keys_order, re);
  free(re);
  json_decref(tc.reordered);
}

/* ------------------------------------------------ the views, by digest */

typedef struct publisher {
  jsCtx *js;
  uint64_t events;
} publisher;

static void
publish_record(json_t *rec, blob h, blob d, void *ud) {
  publisher *p = ud;
  if (strcmp(json_string_value(json_object_get(rec, "stream")), "LARK_EVENTS"))
    return;
  natsMsg *m = NULL;
  const char *subject = json_string_value(json_object_get(rec, "subject"));
  cr_assert_eq(natsMsg_Create(&m, subject, NULL, (const char *)d.p, (int)d.n),
               NATS_OK);
  const char *keys[] = {"Nats-Msg-Id", "Lark-Type"};
  for (int i = 0; i < 2; i++) {
    char v[256];
    header(h, keys[i], v, sizeof v);
    if (v[0])
      natsMsgHeader_Set(m, keys[i], v);
  }
  jsPubAck *pa = NULL;
  jsErrCode jerr = 0;
  natsStatus s = js_PublishMsg(&pa, p->js, m, NULL, &jerr);
  cr_assert_eq(s, NATS_OK, "publish %s: %s (%d)", subject,
               natsStatus_GetText(s), (int)jerr);
  p->events++;
  /* The log was recorded without gaps, so each lands where it was. */
  cr_assert_eq(pa->Sequence,
               (uint64_t)json_integer_value(json_object_get(rec, "seq")),
               "%s landed at %llu", subject, (unsigned long long)pa->Sequence);
  jsPubAck_Destroy(pa);
  natsMsg_Destroy(m);
}

static void
publish_log(const lt_natsd *s, uint64_t *events) {
  natsConnection *nc = NULL;
  jsCtx *js = NULL;
  cr_assert_eq(natsConnection_ConnectTo(&nc, s->url), NATS_OK);
  cr_assert_eq(natsConnection_JetStream(&js, nc, NULL), NATS_OK);
  publisher p = {js, 0};
  each_record(publish_record, &p);
  *events = p.events;
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
}

/* "name seq digest" per view, from the file or as rebuilt now. */
/* Every view rebuilt, batch events a transaction (0: replay's default),
 * as "<view> <seq> <digest>" lines into out. */
static void
rebuild_all(bus_conn *c, int batch, char *out, size_t cap) {
  size_t used = 0;
  for (const lark_view_entry *ve = lark_views; ve->name; ve++) {
    char dir[512];
    lt_tmpdir(dir, sizeof dir, ve->name);
    lark_replay_opts o;
    lark_replay_opts_init(&o);
    o.out_dir = dir;
    if (batch)
      o.batch = batch;
    lark_replay_result r;
    cr_assert_eq(lark_replay_run(c, ve, &o, &r), 0, "%s: %s", ve->name,
                 bus_last_error());
    char hex[65];
    bus_digest_hex(r.digest, hex);
    used += (size_t)snprintf(out + used, cap - used, "%s %llu %s\n", ve->name,
                             (unsigned long long)r.seq, hex);
    cr_assert_lt(used, cap);
    lt_rmtree(dir);
  }
}

static void
read_digests(char *out, size_t cap) {
  FILE *f = golden_open("digests");
  size_t n = fread(out, 1, cap - 1, f);
  out[n] = 0;
  fclose(f);
}

/* A fresh broker holding the golden LARK_EVENTS, and a connection: how
 * many events it holds. */
static uint64_t
golden_broker(lt_natsd *s, bus_conn **c) {
  uint64_t events = 0;
  cr_assert_eq(lt_natsd_start(s, NULL, NULL), 0);
  cr_assert_eq(lt_connect(s, c), 0, "%s", bus_last_error());
  cr_assert_eq(lt_streams(*c, 2000), 0, "%s", bus_last_error());
  publish_log(s, &events);
  return events;
}

Test(golden, every_view_rebuilds_to_its_recorded_digest, .timeout = 240) {
  lt_natsd s;
  bus_conn *c;
  uint64_t events = golden_broker(&s, &c);
  cr_assert_gt(events, 500, "only %llu events in LARK_EVENTS",
               (unsigned long long)events);
  char now[4096], then[4096], cut[4096];
  rebuild_all(c, 0, now, sizeof now);
  /* cut into other batches (live batches are what the fetch brings), each
   * view is the same: apply and its end of batch depend on the stream
   * alone */
  static const int batches[] = {1, 7};
  for (size_t i = 0; i < sizeof batches / sizeof *batches; i++) {
    rebuild_all(c, batches[i], cut, sizeof cut);
    cr_expect_str_eq(cut, now, "%d event(s) a batch:\n%s\nand as one:\n%s",
                     batches[i], cut, now);
  }
  const char *write = getenv("LARK_GOLDEN_WRITE");
  if (write && write[0]) {
    FILE *f = fopen(write, "w");
    cr_assert(f && fputs(now, f) >= 0 && fclose(f) == 0, "cannot write %s",
              write);
  } else {
    read_digests(then, sizeof then);
    cr_assert_str_eq(now, then,
                     "the views rebuilt from the golden log differ from "
                     "their recorded digests:\nnow:\n%s\nrecorded:\n%s",
                     now, then);
  }
  bus_conn_close(c);
  lt_natsd_stop(&s);
}

/* ------------------------------------ the scheduler's pods on each node */

typedef struct booked {
  bus_txn *t;
  size_t pods;   /* bound and not released */
  size_t missed; /* of those, without their nodepods row */
  char first_missed[SCHED_NAME_SZ + SCHED_DNAME_SZ];
} booked;

static int
check_booked(void *rec, void *ud) {
  const pod_rec *p = rec;
  booked *b = ud;
  if (!p->bound || p->released)
    return 0;
  char key[SCHED_NAME_SZ + SCHED_DNAME_SZ];
  const void *v;
  size_t vl;
  b->pods++;
  snprintf(key, sizeof key, "%s/%s", p->node, p->name);
  if (bus_txn_get(b->t, SCHED_NODEPODS, key, strlen(key), &v, &vl) &&
      !b->missed++)
    snprintf(b->first_missed, sizeof b->first_missed, "%s", key);
  return 0;
}

static int
count_row(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  (void)k, (void)kl, (void)v, (void)vl;
  ++*(size_t *)ud;
  return 0;
}

/* The scheduler's view rebuilt to seq: how many pods it holds booked,
 * checked to have their rows, and how many rows there are. */
static size_t
booked_at(bus_conn *c, uint64_t seq) {
  char dir[512];
  lt_tmpdir(dir, sizeof dir, "nodepods");
  lark_replay_opts o;
  lark_replay_opts_init(&o);
  o.out_dir = dir;
  o.until_seq = seq;
  lark_replay_result r;
  cr_assert_eq(lark_replay_run(c, lark_view_find("scheduler"), &o, &r), 0, "%s",
               bus_last_error());
  bus_view_def d;
  sched_view_def(&d);
  bus_view *v = lt_must_open_view(&d, dir, 0);
  booked b = {0};
  size_t rows = 0;
  cr_assert_eq(bus_view_read(v, &b.t), 0);
  cr_assert_eq(
      sched_each_rec(b.t, "pods", NULL, sizeof(pod_rec), 1, check_booked, &b),
      0);
  cr_assert_eq(bus_txn_scan(b.t, SCHED_NODEPODS, NULL, 0, count_row, &rows), 0);
  bus_txn_end(b.t);
  bus_view_close(v);
  lt_rmtree(dir);
  cr_expect_eq(b.missed, 0, "at seq %llu, %zu booked pod(s) have no row (%s)",
               (unsigned long long)seq, b.missed, b.first_missed);
  cr_expect_eq(rows, b.pods, "at seq %llu, %zu rows for %zu booked pods",
               (unsigned long long)seq, rows, b.pods);
  return b.pods;
}

Test(golden, the_scheduler_indexes_each_nodes_booked_pods, .timeout = 240) {
  lt_natsd s;
  bus_conn *c;
  uint64_t events = golden_broker(&s, &c);
  size_t points = 0, busy = 0;
  for (uint64_t seq = 40; seq < events + 40; seq += 40, points++)
    busy += booked_at(c, seq < events ? seq : events) > 0;
  cr_log_info("%zu points, %zu with pods booked", points, busy);
  cr_expect_gt(busy, points / 4, "only %zu of %zu points had pods booked", busy,
               points);
  bus_conn_close(c);
  lt_natsd_stop(&s);
}
