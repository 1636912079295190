/*
 * view.c - the signer's view: certificates by serial, the revocation
 * list, the published CA, and issuing event ids.
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

#include "signer.h"

#define T_CERTS "certs"
#define T_REVOKED "revoked"
#define T_CA "ca"
#define T_REQ "requests"
#define SUBJ "lark.ev.cert."

static const char *const tables[] = {T_CERTS, T_REVOKED, T_CA, T_REQ, NULL};

static void
pack_str(msgpack_packer *pk, const char *s) {
  msgpack_pack_str_with_body(pk, s, strlen(s));
}

/* The event's data entries plus seq, ts and actor. */
static void
pack_record(msgpack_packer *pk, const bus_event *ev, const msgpack_object *d) {
  uint32_t n = d->type == MSGPACK_OBJECT_MAP ? d->via.map.size : 0;
  msgpack_pack_map(pk, n + 3);
  for (uint32_t i = 0; i < n; i++) {
    msgpack_pack_object(pk, d->via.map.ptr[i].key);
    msgpack_pack_object(pk, d->via.map.ptr[i].val);
  }
  pack_str(pk, "seq");
  msgpack_pack_uint64(pk, ev->seq);
  pack_str(pk, "ts");
  msgpack_pack_int64(pk, ev->ts);
  pack_str(pk, "actor");
  pack_str(pk, ev->actor ? ev->actor : "");
}

/* The serial the subject names, which must equal data.serial. */
static int
serial_of(const bus_event *ev, char *serial, size_t cap) {
  if (!ev->subject || strncmp(ev->subject, SUBJ, strlen(SUBJ)))
    return BUS_EINVAL;
  const char *tok = ev->subject + strlen(SUBJ);
  if (!bus_obj_str(&ev->data, "serial", serial, cap) || strcmp(serial, tok))
    return BUS_EINVAL;
  return 0;
}

static int
put_record(bus_txn *t, const char *table, const char *key,
           const bus_event *ev) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  pack_record(&pk, ev, &ev->data);
  int rc = sb.data ? bus_txn_put(t, table, key, strlen(key), sb.data, sb.size)
                   : -ENOMEM;
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

static int
apply_issued(bus_txn *t, const bus_event *ev) {
  char serial[SIGNER_SERIAL_MAX + 1];
  if (serial_of(ev, serial, sizeof serial))
    return BUS_EINVAL;
  int rc = put_record(t, T_CERTS, serial, ev);
  if (!rc && ev->id && *ev->id)
    rc = bus_txn_put(t, T_REQ, ev->id, strlen(ev->id), serial, strlen(serial));
  return rc;
}

static int
apply_revoked(bus_txn *t, const bus_event *ev, signer_hook *hook) {
  char serial[SIGNER_SERIAL_MAX + 1], format[8] = "";
  const void *val;
  size_t len;
  if (serial_of(ev, serial, sizeof serial))
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
  pack_str(&pk, "serial");
  pack_str(&pk, serial);
  pack_str(&pk, "format");
  pack_str(&pk, format);
  pack_str(&pk, "reason");
  char reason[1025] = "";
  pack_str(&pk, bus_obj_str(&ev->data, "reason", reason, sizeof reason) ? reason
                                                                        : "");
  pack_str(&pk, "seq");
  msgpack_pack_uint64(&pk, ev->seq);
  pack_str(&pk, "ts");
  msgpack_pack_int64(&pk, ev->ts);
  pack_str(&pk, "actor");
  pack_str(&pk, ev->actor ? ev->actor : "");
  rc = sb.data
           ? bus_txn_put(t, T_REVOKED, serial, strlen(serial), sb.data, sb.size)
           : -ENOMEM;
  msgpack_sbuffer_destroy(&sb);
  if (!rc && hook)
    hook->dirty = 1;
  return rc;
}

static int
signer_apply(bus_txn *t, const bus_event *ev, void *ud) {
  if (!strcmp(ev->type, "cert.issued"))
    return apply_issued(t, ev);
  if (!strcmp(ev->type, "cert.revoked"))
    return apply_revoked(t, ev, ud);
  if (!strcmp(ev->type, "ca.published"))
    return put_record(t, T_CA, "ca", ev);
  return 0; /* not ours: passed over */
}

void
signer_view_def(bus_view_def *def) {
  memset(def, 0, sizeof *def);
  def->name = "signer";
  def->tables = tables;
  def->apply = signer_apply;
}

/* ---------------------------------------------------------------- queries */

static int
unpack(const void *val, size_t len, msgpack_zone *z, msgpack_object *o) {
  size_t off = 0;
  if (msgpack_unpack(val, len, &off, z, o) != MSGPACK_UNPACK_SUCCESS ||
      o->type != MSGPACK_OBJECT_MAP)
    return BUS_ECORRUPT;
  return 0;
}

int
signer_show(bus_txn *t, const char *serial, msgpack_packer *pk) {
  const void *val, *rv;
  size_t len, rlen;
  if (!serial || strlen(serial) >= SIGNER_SERIAL_MAX)
    return BUS_ENOT_FOUND;
  int rc = bus_txn_get(t, T_CERTS, serial, strlen(serial), &val, &len);
  if (rc)
    return rc;
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object o;
  if (!(rc = unpack(val, len, &z, &o))) {
    msgpack_pack_map(pk, o.via.map.size + 1);
    for (uint32_t i = 0; i < o.via.map.size; i++) {
      msgpack_pack_object(pk, o.via.map.ptr[i].key);
      msgpack_pack_object(pk, o.via.map.ptr[i].val);
    }
    pack_str(pk, "revoked");
    if (bus_txn_get(t, T_REVOKED, serial, strlen(serial), &rv, &rlen) == 0)
      pk->callback(pk->data, rv, rlen);
    else
      msgpack_pack_nil(pk);
  }
  msgpack_zone_destroy(&z);
  return rc;
}

typedef struct lister {
  bus_txn *t;
  const char *role;
  size_t limit, n;
  msgpack_packer pk;
} lister;

static void
copy_field(msgpack_packer *pk, const msgpack_object *o, const char *k) {
  const msgpack_object *v = bus_obj_get(o, k);
  pack_str(pk, k);
  if (v)
    msgpack_pack_object(pk, *v);
  else
    msgpack_pack_nil(pk);
}

static int
list_one(const void *key, size_t klen, const void *val, size_t vlen, void *ud) {
  lister *l = ud;
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object o;
  char role[64] = "";
  const void *rv;
  size_t rlen;
  if (unpack(val, vlen, &z, &o) == 0 &&
      (!l->role || !*l->role ||
       (bus_obj_str(&o, "role", role, sizeof role) &&
        !strcmp(role, l->role)))) {
    static const char *const keys[] = {"serial",   "format",     "role",
                                       "name",     "subject",    "notBefore",
                                       "notAfter", "fingerprint"};
    msgpack_pack_map(&l->pk, 9);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
      copy_field(&l->pk, &o, keys[i]);
    pack_str(&l->pk, "revoked");
    if (bus_txn_get(l->t, T_REVOKED, key, klen, &rv, &rlen) == 0)
      msgpack_pack_true(&l->pk);
    else
      msgpack_pack_false(&l->pk);
    l->n++;
  }
  msgpack_zone_destroy(&z);
  return l->limit && l->n == l->limit ? 1 : 0;
}

int
signer_list(bus_txn *t, const char *role, size_t limit, msgpack_packer *pk) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  lister l = {.t = t, .role = role, .limit = limit};
  msgpack_packer_init(&l.pk, &sb, msgpack_sbuffer_write);
  int rc = bus_txn_scan(t, T_CERTS, NULL, 0, list_one, &l);
  if (rc >= 0) {
    msgpack_pack_array(pk, (uint32_t)l.n);
    if (sb.size)
      pk->callback(pk->data, sb.data, sb.size);
    rc = 0;
  }
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

int
signer_query(bus_txn *t, const char *kind, const char *verb,
             const msgpack_object *req, msgpack_packer *pk, void *ud) {
  char role[256] = "", serial[256] = "";
  (void)kind;
  (void)ud;
  int64_t limit = bus_obj_int(req, "limit", 0);
  bus_obj_str(req, "role", role, sizeof role);
  bus_obj_str(req, "serial", serial, sizeof serial);
  if (limit < 0)
    return bus_error(BUS_EFIELD, "limit: a count, 0 for all");
  if (!strcmp(verb, "list"))
    return signer_list(t, role, (size_t)limit, pk);
  if (strcmp(verb, "show"))
    return bus_error(BUS_EINVAL, "verbs: list {role?, limit?}, show {serial}");
  int rc = signer_show(t, serial, pk);
  if (rc == BUS_ENOT_FOUND)
    return bus_error(rc, "no certificate with serial %s", serial);
  return rc;
}

int
signer_request_serial(bus_txn *t, const char *event_id,
                      char serial[SIGNER_SERIAL_MAX]) {
  const void *val;
  size_t len;
  int rc = bus_txn_get(t, T_REQ, event_id, strlen(event_id), &val, &len);
  if (rc)
    return rc;
  if (len >= SIGNER_SERIAL_MAX)
    return BUS_ECORRUPT;
  memcpy(serial, val, len);
  serial[len] = 0;
  return 0;
}

/* ------------------------------------------------------------ revocations */

typedef struct revs {
  signer_revoked *x;
  uint64_t *s;
  size_t nx, ns, capx, caps;
  int err;
} revs;

static int
grow(void **p, size_t *cap, size_t n, size_t size) {
  if (n < *cap)
    return 0;
  size_t c = *cap ? 2 * *cap : 64;
  void *q = realloc(*p, c * size);
  if (!q)
    return -ENOMEM;
  *p = q;
  *cap = c;
  return 0;
}

static int
rev_one(const void *key, size_t klen, const void *val, size_t vlen, void *ud) {
  revs *r = ud;
  msgpack_zone z;
  msgpack_zone_init(&z, 512);
  msgpack_object o;
  char format[8] = "";
  int rc = 0;
  if (klen >= SIGNER_SERIAL_MAX || unpack(val, vlen, &z, &o))
    goto out;
  bus_obj_str(&o, "format", format, sizeof format);
  if (!strcmp(format, "x509")) {
    if ((rc = grow((void **)&r->x, &r->capx, r->nx, sizeof *r->x)))
      goto out;
    signer_revoked *e = &r->x[r->nx++];
    memcpy(e->serial, key, klen);
    e->serial[klen] = 0;
    e->when = bus_obj_int(&o, "ts", 0);
  } else if (!strcmp(format, "ssh")) {
    if ((rc = grow((void **)&r->s, &r->caps, r->ns, sizeof *r->s)))
      goto out;
    char hex[SIGNER_SERIAL_MAX];
    memcpy(hex, key, klen);
    hex[klen] = 0;
    r->s[r->ns++] = strtoull(hex, NULL, 16);
  }
out:
  msgpack_zone_destroy(&z);
  return rc;
}

int
signer_revoked_load(bus_txn *t, signer_revoked **x509, size_t *nx,
                    uint64_t **ssh, size_t *ns) {
  revs r = {0};
  int rc = bus_txn_scan(t, T_REVOKED, NULL, 0, rev_one, &r);
  if (rc) {
    free(r.x);
    free(r.s);
    return rc;
  }
  *x509 = r.x;
  *nx = r.nx;
  *ssh = r.s;
  *ns = r.ns;
  return 0;
}

int
signer_write_revocations(bus_view *v, const signer_ca *ca, const char *dir) {
  signer_revoked *x = NULL;
  uint64_t *s = NULL;
  size_t nx = 0, ns = 0;
  char path[4096];
  bus_view_stats st;
  bus_txn *t;
  int rc = bus_view_read(v, &t);
  if (rc)
    return rc;
  rc = signer_revoked_load(t, &x, &nx, &s, &ns);
  bus_txn_end(t);
  if (!rc)
    rc = bus_view_stats_get(v, &st);
  int64_t now = (int64_t)time(NULL);
  snprintf(path, sizeof path, "%s/crl.pem", dir);
  if (!rc)
    rc = signer_crl_write(ca, path, x, nx, st.applied_seq, now);
  snprintf(path, sizeof path, "%s/revoked_keys", dir);
  if (!rc)
    rc = signer_krl_write(path, signer_ca_ssh_pk(ca), s, ns, st.applied_seq,
                          now);
  free(x);
  free(s);
  return rc;
}
