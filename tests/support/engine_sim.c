/*
 * engine_sim.c - see engine_sim.h.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bed.h"
#include "engine_sim.h"
#include "larkengine.h"

void
esim_open(esim *s, const char *tag) {
  memset(s, 0, sizeof *s);
  lt_tmpdir(s->dir, sizeof s->dir, tag);
  bus_view_def def;
  engine_view_def(&def);
  s->v = lt_must_open_view(&def, s->dir, 1);
  s->log = calloc(ESIM_LOG_MAX, sizeof *s->log);
  cr_assert(s->log);
}

void
esim_close(esim *s) {
  bus_view_close(s->v);
  lt_rmtree(s->dir);
  for (size_t i = 0; i < s->nlog; i++)
    msgpack_sbuffer_destroy(&s->log[i].data);
  for (int i = 0; i < s->nproj; i++)
    msgpack_sbuffer_destroy(&s->proj[i].data);
  free(s->log);
}

uint64_t
esim_version(esim *s, const char *subject) {
  bus_txn *t;
  bus_version ver = {0};
  cr_assert_eq(bus_view_read(s->v, &t), 0);
  bus_txn_version(t, subject, &ver);
  bus_txn_end(t);
  return ver.seq;
}

static int
apply_one(bus_view *v, const esim_ev *e) {
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object o;
  cr_assert(msgpack_unpack(e->data.data, e->data.size, NULL, &z, &o) >= 0);
  bus_event ev = {.v = 1,
                  .type = bus_type_name(e->type),
                  .id = e->id,
                  .ts = (int64_t)e->seq * 1000000,
                  .actor = "t",
                  .cause = "",
                  .prev = e->prev,
                  .data = o,
                  .subject = e->subject,
                  .seq = e->seq};
  const bus_event *evs[1] = {&ev};
  int rc = bus_view_apply(v, evs, 1);
  msgpack_zone_destroy(&z);
  return rc;
}

static esim_ev *
log_new(esim *s, const char *subject, bus_type type, const char *id) {
  cr_assert_lt(s->nlog, ESIM_LOG_MAX);
  esim_ev *e = &s->log[s->nlog++];
  snprintf(e->subject, sizeof e->subject, "%s", subject);
  if (id)
    snprintf(e->id, sizeof e->id, "%s", id);
  else
    bus_event_new_id(e->id);
  e->type = type;
  msgpack_sbuffer_init(&e->data);
  e->prev = esim_version(s, subject);
  e->seq = ++s->seq;
  return e;
}

uint64_t
esim_feed(esim *s, const char *subject, bus_type type, const void *data) {
  esim_ev *e = log_new(s, subject, type, NULL);
  cr_assert_eq(bus_data_pack(type, data, &e->data), 0, "%s", bus_last_error());
  cr_assert_eq(apply_one(s->v, e), 0, "%s", bus_last_error());
  return e->seq;
}

static void
keep_proj(esim *s, const char *subject, const bus_event *ev) {
  int i = 0;
  while (i < s->nproj && strcmp(s->proj[i].subject, subject))
    i++;
  cr_assert_lt(i, ESIM_PROJ_MAX);
  esim_proj *p = &s->proj[i];
  if (i == s->nproj) {
    s->nproj++;
    snprintf(p->subject, sizeof p->subject, "%s", subject);
    msgpack_sbuffer_init(&p->data);
  }
  msgpack_sbuffer_clear(&p->data);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &p->data, msgpack_sbuffer_write);
  msgpack_pack_object(&pk, ev->data);
}

/* One outbox entry landed (or dropped); 1 when something was applied. */
static int
land(esim *s, const unsigned char *p, size_t vl) {
  size_t slen = (size_t)p[1] << 8 | p[2], idlen = p[3], off = 4 + slen + idlen;
  char subject[256];
  snprintf(subject, sizeof subject, "%.*s", (int)slen, (const char *)p + 4);
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  bus_event ev;
  memset(&ev, 0, sizeof ev);
  cr_assert_eq(bus_event_decode(p + off, vl - off, &ev, &z), 0);
  int applied = 0;
  if (!strncmp(subject, "lark.node.", 10)) {
    keep_proj(s, subject, &ev);
  } else if ((p[0] & 1) == 0 || ev.prev == esim_version(s, subject)) {
    esim_ev *e = log_new(s, subject, bus_type_of(ev.type), ev.id);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &e->data, msgpack_sbuffer_write);
    msgpack_pack_object(&pk, ev.data);
    cr_assert_eq(apply_one(s->v, e), 0, "%s", bus_last_error());
    if (s->on_event) {
      ev.t = e->type;
      ev.typed = NULL;
      ev.seq = e->seq;
      s->on_event(&ev, s->ud);
    }
    applied = 1;
  }
  msgpack_zone_destroy(&z);
  return applied;
}

typedef struct pend {
  unsigned char key[8];
  unsigned char *val;
  size_t len;
  int have;
} pend;

static int
first_after(const void *k, size_t kl, const void *v, size_t vl, void *ud) {
  pend *p = ud;
  if (kl != 8)
    return 0;
  memcpy(p->key, k, 8);
  p->val = malloc(vl);
  memcpy(p->val, v, vl);
  p->len = vl;
  p->have = 1;
  return 1;
}

void
esim_settle(esim *s) {
  for (int rounds = 0; rounds < 1000000; rounds++) {
    pend p = {.have = 0};
    bus_txn *t;
    cr_assert_eq(bus_view_read(s->v, &t), 0);
    bus_txn_scan_after(t, "_outbox", s->outkey, s->has_outkey ? 8 : 0,
                       first_after, &p);
    bus_txn_end(t);
    if (!p.have)
      return;
    memcpy(s->outkey, p.key, 8);
    s->has_outkey = 1;
    land(s, p.val, p.len);
    free(p.val);
  }
  cr_assert_fail("the engine never settled");
}

const esim_proj *
esim_proj_get(esim *s, const char *subject) {
  for (int i = 0; i < s->nproj; i++)
    if (!strcmp(s->proj[i].subject, subject))
      return &s->proj[i];
  return NULL;
}

int
esim_replay_same(esim *s) {
  char dir[256];
  lt_tmpdir(dir, sizeof dir, "engreplay");
  bus_view_def def;
  engine_view_def(&def);
  bus_view *r = lt_must_open_view(&def, dir, 0);
  for (size_t i = 0; i < s->nlog; i++)
    cr_assert_eq(apply_one(r, &s->log[i]), 0, "%s", bus_last_error());
  uint8_t a[32], b[32];
  uint64_t sa, sb;
  cr_assert_eq(bus_view_digest(s->v, a, &sa), 0);
  cr_assert_eq(bus_view_digest(r, b, &sb), 0);
  bus_view_close(r);
  lt_rmtree(dir);
  return sa == sb && !memcmp(a, b, 32);
}
