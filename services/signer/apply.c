/*
 * apply.c - the signer's apply, dispatched from a table indexed by event
 * type (bus_apply_dispatch), each handler reading its event's generated
 * struct, and its view:
 * certificates by serial, the revocation list, the published CA, and issuing
 * event ids.
 *
 * apply is pure: it reads the event and the view, never a clock or a
 * file. A cert.issued's serial must be its subject's last token, so the
 * broker's per-subject version check (prev) guards each certificate; a
 * cert.revoked must name a certificate the view holds. Records are the
 * event's data plus {seq, ts, actor}, so `cert show` returns what the
 * signer published, certificate included. The CRL and KRL files are not
 * written here: apply raises a flag (signer_hook) and the service writes
 * them after the transaction commits, from the committed view.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "signer-int.h"

static const char *const tables[] = {T_CERTS, T_REVOKED, T_CA, T_REQ, NULL};

static int
apply_issued(bus_txn *t, const bus_event *ev, const bus_ev_cert_issued *c) {
  char serial[SIGNER_SERIAL_MAX + 1];
  if (signer__serial_of(ev, c->serial, serial, sizeof serial))
    return BUS_EINVAL;
  int rc = signer__put_record(t, T_CERTS, serial, ev);
  if (!rc && ev->id && *ev->id)
    rc = bus_txn_put(t, T_REQ, ev->id, strlen(ev->id), serial, strlen(serial));
  return rc;
}

static int
apply_revoked(bus_txn *t, const bus_event *ev, const bus_ev_cert_revoked *r,
              signer_hook *hook) {
  char serial[SIGNER_SERIAL_MAX + 1], format[8] = "";
  const void *val;
  size_t len;
  if (signer__serial_of(ev, r->serial, serial, sizeof serial))
    return BUS_EINVAL;
  int rc = bus_txn_get(t, T_CERTS, serial, strlen(serial), &val, &len);
  if (rc == BUS_ENOT_FOUND)
    return BUS_EINVAL; /* revokes nothing we issued */
  if (rc)
    return rc;
  const void *rv;
  size_t rlen;
  if (bus_txn_get(t, T_REVOKED, serial, strlen(serial), &rv, &rlen) == 0)
    return 0; /* the first revocation stands */
  char reason[1025] = "";
  signer__row_get(val, len, "format", format, sizeof format, NULL);
  if (r->has_reason)
    bus_str_copy(r->reason, reason, sizeof reason);
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 6);
  bus_pack_kv_str(&b.pk, "serial", serial);
  bus_pack_kv_str(&b.pk, "format", format);
  bus_pack_kv_str(&b.pk, "reason", reason);
  bus_pack_kv_uint(&b.pk, "seq", ev->seq);
  bus_pack_kv_int(&b.pk, "ts", ev->ts);
  bus_pack_kv_str(&b.pk, "actor", ev->actor ? ev->actor : "");
  rc = b.sb.data ? bus_txn_put(t, T_REVOKED, serial, strlen(serial), b.sb.data,
                               b.sb.size)
                 : -ENOMEM;
  bus_packbuf_destroy(&b);
  if (!rc && hook)
    hook->dirty = 1;
  return rc;
}

/* A record keeps the event's data as it was written (signer__put_record),
 * so the handlers read only what they check from the typed struct. */
static int
on_issued(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)ud;
  return apply_issued(t, ev, data);
}

static int
on_published(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  (void)data, (void)ud;
  return signer__put_record(t, T_CA, "ca", ev);
}

static int
on_revoked(bus_txn *t, const bus_event *ev, const void *data, void *ud) {
  return apply_revoked(t, ev, data, ud);
}

/* The types the view applies, indexed by the event's type (BUS_T_*);
 * others are not ours and are passed over. */
static const bus_apply_table apply_table = {
    .on = {
        [BUS_T_CA_PUBLISHED] = on_published,
        [BUS_T_CERT_ISSUED] = on_issued,
        [BUS_T_CERT_REVOKED] = on_revoked,
    }};

static int
signer_apply(bus_txn *t, const bus_event *ev, void *ud) {
  return bus_apply_dispatch(&apply_table, t, ev, ud);
}

void
signer_view_def(bus_view_def *def) {
  memset(def, 0, sizeof *def);
  def->name = "signer";
  def->tables = tables;
  def->apply = signer_apply;
  def->stream = "LARK_EVENTS";
  def->filter = "lark.ev.cert.>";
}
