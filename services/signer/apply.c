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
  if (bus_txn_get(t, T_REVOKED, serial, strlen(serial), &val, &len) == 0)
    return 0; /* the first revocation stands */
  msgpack_zone z;
  msgpack_zone_init(&z, 512);
  msgpack_object cert;
  bus_txn_get(t, T_CERTS, serial, strlen(serial), &val, &len);
  if (msgpack_unpack(val, len, NULL, &z, &cert) >= 0)
    bus_obj_str(&cert, "format", format, sizeof format);
  msgpack_zone_destroy(&z);
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 6);
  bus_pack_str(&pk, "serial");
  bus_pack_str(&pk, serial);
  bus_pack_str(&pk, "format");
  bus_pack_str(&pk, format);
  bus_pack_str(&pk, "reason");
  char reason[1025] = "";
  if (r->has_reason)
    bus_str_copy(r->reason, reason, sizeof reason);
  bus_pack_str(&pk, reason);
  bus_pack_str(&pk, "seq");
  msgpack_pack_uint64(&pk, ev->seq);
  bus_pack_str(&pk, "ts");
  msgpack_pack_int64(&pk, ev->ts);
  bus_pack_str(&pk, "actor");
  bus_pack_str(&pk, ev->actor ? ev->actor : "");
  rc = sb.data
           ? bus_txn_put(t, T_REVOKED, serial, strlen(serial), sb.data, sb.size)
           : -ENOMEM;
  msgpack_sbuffer_destroy(&sb);
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
