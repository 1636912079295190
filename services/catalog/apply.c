/*
 * apply.c - apply for the catalog view, and its definition.
 *
 * apply is pure: it reads the event and the aggregate's version record
 * (already advanced by the view, libbus view_apply.c) and writes two entries.
 * It never reads the previous catalog record, so a rebuild costs three puts per
 * event. Keys are "<kind>/<id>": names hold no '/', so a prefix scan on
 * "<kind>/" lists a kind, and "<kind>/<id>/" one history.
 */
#include <string.h>

#include "catalog-int.h"

static const char *const tables[] = {T_AGG, T_HIST, NULL};

/* A small stack buffer for msgpack_packer: no malloc on the hot path. */
typedef struct sbuf {
  char data[1024];
  size_t len;
  int overflow;
} sbuf;

static int
sbuf_write(void *ud, const char *p, size_t n) {
  sbuf *b = ud;
  if (b->len + n > sizeof b->data) {
    b->overflow = 1;
    return -1;
  }
  memcpy(b->data + b->len, p, n);
  b->len += n;
  return 0;
}

static int
catalog_apply(bus_txn *t, const bus_event *ev, void *ud) {
  (void)ud;
  char key[KEY_MAX];
  size_t klen;
  bus_version ver;
  if (catalog__split_subject(ev->subject, key, sizeof key - 9, &klen))
    return BUS_EINVAL;
  int rc = bus_txn_version(t, ev->subject, &ver);
  if (rc)
    return rc;
  sbuf b = {.len = 0};
  msgpack_packer pk;
  msgpack_packer_init(&pk, &b, sbuf_write);
  catalog__pack_aggregate(&pk, key, klen, ev, &ver);
  if (b.overflow)
    return BUS_EFIELD;
  if ((rc = bus_txn_put(t, T_AGG, key, klen, b.data, b.len)))
    return rc;
  key[klen] = '/';
  unsigned char *seqp = (unsigned char *)key + klen + 1;
  for (int i = 7; i >= 0; i--)
    seqp[7 - i] = (unsigned char)(ev->seq >> (8 * i));
  b.len = 0;
  catalog__pack_history(&pk, ev, ver.generation);
  if (b.overflow)
    return BUS_EFIELD;
  return bus_txn_put(t, T_HIST, key, klen + 9, b.data, b.len);
}

void
catalog_view_def(bus_view_def *def) {
  *def = (bus_view_def){.name = "catalog",
                        .tables = tables,
                        .apply = catalog_apply,
                        .stream = "LARK_EVENTS",
                        .filter = "lark.ev.>"};
}
