/*
 * commands.c - the signer's commands and the CA's publication.
 *
 * Bodies are outside input: every field is copied into a bounded buffer
 * larger than any valid value and then checked, so a long value is
 * refused rather than silently cut to something valid. Only the user
 * token of the subject (pinned by the broker) decides who may sign or
 * revoke. An issue appends cert.issued with ExpectNoMessage on its own
 * subject lark.ev.cert.<serial>; a revoke appends cert.revoked with the
 * certificate's version as prev, so two revocations cannot both land.
 * Event ids are libbus's one rule (bus_cmd_event_id): a retried sign is
 * dropped by the broker as a duplicate and answered with the certificate
 * the first attempt issued, read back from the view once it has applied
 * the first attempt's sequence. The verbs are the table near the end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "signer.h"

#define NS 1000000000LL
#define FIELD 256

static int
refuse(bus_conn *c, const bus_cmd *cmd, int err, const char *path,
       const char *msg) {
  bus_field_err d;
  memset(&d, 0, sizeof d);
  snprintf(d.path, sizeof d.path, "%s", path ? path : "");
  snprintf(d.reason, sizeof d.reason, "%s", msg);
  bus_cmd_reply_error(c, cmd, err, msg, path ? &d : NULL, path ? 1 : 0);
  return err;
}

static uint64_t
applied_seq(bus_view *v) {
  bus_view_stats st;
  return bus_view_stats_get(v, &st) ? 0 : st.applied_seq;
}

/* A string field as (ptr, len) without copying; NULL when absent. */
static const char *
raw_str(const msgpack_object *o, const char *k, size_t *len) {
  const msgpack_object *v = bus_obj_get(o, k);
  if (!v || v->type != MSGPACK_OBJECT_STR)
    return NULL;
  *len = v->via.str.size;
  return v->via.str.ptr;
}

/* -------------------------------------------------------------------- sign */

static const char *const reply_keys[] = {"serial",   "format",      "cert",
                                         "subject",  "principals",  "notBefore",
                                         "notAfter", "fingerprint", NULL};

/* The reply's extra entries, taken from a certificate record. */
static void
pack_reply(msgpack_packer *pk, const msgpack_object *rec, uint32_t *n) {
  *n = 0;
  for (int i = 0; reply_keys[i]; i++) {
    const msgpack_object *v = bus_obj_get(rec, reply_keys[i]);
    if (!v)
      continue;
    bus_pack_str(pk, reply_keys[i]);
    msgpack_pack_object(pk, *v);
    (*n)++;
  }
}

static int
reply_record(bus_conn *c, const bus_cmd *cmd, uint64_t seq, const void *rec,
             size_t len) {
  msgpack_zone z;
  msgpack_zone_init(&z, 2048);
  msgpack_object o;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  uint32_t n = 0;
  int rc = msgpack_unpack(rec, len, NULL, &z, &o) < 0 ? BUS_ECORRUPT : 0;
  if (!rc) {
    pack_reply(&pk, &o, &n);
    uint64_t s = (uint64_t)bus_obj_int(&o, "seq", (int64_t)seq);
    bus_cmd_reply_ok(c, cmd, s ? s : seq, sb.data, sb.size, n);
  }
  msgpack_sbuffer_destroy(&sb);
  msgpack_zone_destroy(&z);
  return rc;
}

/* Answer from the view when event id already issued a certificate. 1
 * when answered. */
static int
reply_existing(bus_conn *c, const bus_cmd *cmd, bus_view *v, const char *id) {
  char serial[SIGNER_SERIAL_MAX];
  bus_txn *t;
  int found = 0;
  if (bus_view_read(v, &t) == 0) {
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    found = signer_request_serial(t, id, serial) == 0 &&
            signer_show(t, serial, &pk) == 0;
    bus_txn_end(t);
    if (found)
      reply_record(c, cmd, 0, sb.data, sb.size);
    msgpack_sbuffer_destroy(&sb);
  }
  return found;
}

typedef struct sign_in {
  char role[FIELD], name[FIELD], domain[FIELD], cluster[FIELD], agent[FIELD];
} sign_in;

static void
pack_opt(msgpack_packer *pk, const char *k, const char *v, uint32_t *n) {
  if (!*v)
    return;
  bus_pack_str(pk, k);
  bus_pack_str(pk, v);
  (*n)++;
}

/* cert.issued's data: 10 fixed fields and the optional names. */
static void
pack_issued(msgpack_sbuffer *sb, const sign_in *in, const signer_cert *ct) {
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  uint32_t n = 10;
  n += !!in->domain[0] + !!in->cluster[0] + !!in->agent[0];
  msgpack_pack_map(&pk, n);
  bus_pack_str(&pk, "serial");
  bus_pack_str(&pk, ct->serial);
  bus_pack_str(&pk, "format");
  bus_pack_str(&pk, signer_format_name(ct->format));
  bus_pack_str(&pk, "role");
  bus_pack_str(&pk, in->role);
  bus_pack_str(&pk, "name");
  bus_pack_str(&pk, in->name);
  bus_pack_str(&pk, "subject");
  bus_pack_str(&pk, ct->subject);
  bus_pack_str(&pk, "principals");
  msgpack_pack_array(&pk, (uint32_t)ct->nprincipals);
  for (int i = 0; i < ct->nprincipals; i++)
    bus_pack_str(&pk, ct->principals[i]);
  bus_pack_str(&pk, "notBefore");
  msgpack_pack_int64(&pk, ct->not_before);
  bus_pack_str(&pk, "notAfter");
  msgpack_pack_int64(&pk, ct->not_after);
  bus_pack_str(&pk, "fingerprint");
  bus_pack_str(&pk, ct->fingerprint);
  bus_pack_str(&pk, "cert");
  bus_pack_str(&pk, ct->text);
  uint32_t extra = 0;
  pack_opt(&pk, "domain", in->domain, &extra);
  pack_opt(&pk, "cluster", in->cluster, &extra);
  pack_opt(&pk, "agent", in->agent, &extra);
}

static int
append_issued(bus_conn *c, const bus_cmd *cmd, bus_view *v, const char *id,
              const sign_in *in, const signer_cert *ct) {
  char subject[BUS_SUBJECT_MAX];
  uint64_t seq = 0;
  int dup = 0;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  pack_issued(&sb, in, ct);
  snprintf(subject, sizeof subject, "lark.ev.cert.%s", ct->serial);
  int rc = bus_cmd_append(c, cmd, subject, "cert.issued", 0, sb.data, sb.size,
                          &seq, &dup);
  if (rc)
    refuse(c, cmd, rc, NULL, bus_last_error());
  else if (dup && (bus_view_wait_applied(v, seq, 3000) ||
                   !reply_existing(c, cmd, v, id)))
    rc = refuse(c, cmd, BUS_ETIMEOUT, NULL,
                "a retried sign: the first certificate is not in view yet");
  else if (!dup)
    rc = reply_record(c, cmd, seq, sb.data, sb.size);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

static int
read_sign(const bus_cmd *cmd, sign_in *in, signer_req *r) {
  const msgpack_object *b = &cmd->body;
  memset(in, 0, sizeof *in);
  memset(r, 0, sizeof *r);
  bus_obj_str(b, "role", in->role, FIELD);
  bus_obj_str(b, "name", in->name, FIELD);
  bus_obj_str(b, "domain", in->domain, FIELD);
  bus_obj_str(b, "cluster", in->cluster, FIELD);
  bus_obj_str(b, "agent", in->agent, FIELD);
  r->role = in->role;
  r->name = in->name;
  r->domain = in->domain;
  r->cluster = in->cluster;
  r->agent = in->agent;
  r->csr = raw_str(b, "csr", &r->csr_len);
  r->ssh_key = raw_str(b, "sshKey", &r->ssh_key_len);
  const msgpack_object *valid = bus_obj_get(b, "valid");
  if (valid && valid->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
    return BUS_EFIELD;
  return 0;
}

/* admin only (BUS_VERB_ADMIN) */
static int
cmd_sign(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  const signer_env *env = ud;
  const signer_limits *l = env->limits;
  sign_in in;
  signer_req r;
  signer_cert ct;
  char id[33], err[256] = "";
  if (read_sign(cmd, &in, &r))
    return refuse(c, cmd, BUS_EFIELD, "valid", "seconds, a positive integer");
  bus_cmd_event_id(cmd, id);
  if (cmd->key[0] && reply_existing(c, cmd, v, id))
    return 0;
  int64_t want = bus_obj_int(&cmd->body, "valid", 0);
  if (want > l->max_ns / NS + 1)
    want = l->max_ns / NS + 1; /* refused below, without overflow */
  int rc = signer_validity(l, bus_wall_ns(), want * NS, &r.not_before,
                           &r.not_after, err, sizeof err);
  if (rc)
    return refuse(c, cmd, rc, "valid", err);
  if ((rc = signer_issue(env->ca, &r, &ct, err, sizeof err)))
    return refuse(c, cmd, rc, NULL, err);
  rc = append_issued(c, cmd, v, id, &in, &ct);
  signer_cert_clear(&ct);
  return rc;
}

/* ------------------------------------------------------------------ revoke */

/* The certificate's version as the view holds it. BUS_EEXISTS when
 * already revoked. */
static int
view_version(bus_view *v, const char *subject, const char *serial,
             uint64_t *prev) {
  {
    bus_txn *t;
    int rc = bus_view_read(v, &t);
    if (rc)
      return rc;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    bus_version ver;
    rc = signer_show(t, serial, &pk);
    if (!rc && !(rc = bus_txn_version(t, subject, &ver)))
      *prev = ver.seq;
    bus_txn_end(t);
    int revoked = 0;
    msgpack_zone z;
    msgpack_zone_init(&z, 2048);
    msgpack_object o;
    if (!rc && msgpack_unpack(sb.data, sb.size, NULL, &z, &o) >= 0) {
      const msgpack_object *r = bus_obj_get(&o, "revoked");
      revoked = r && r->type == MSGPACK_OBJECT_MAP;
    }
    msgpack_zone_destroy(&z);
    msgpack_sbuffer_destroy(&sb);
    return rc ? rc : revoked ? BUS_EEXISTS : 0;
  }
}

/* The certificate's version. One the view has not seen yet (issued just
 * before) is asked of the stream, and the view waited for, up to a
 * second. */
static int
cert_version(bus_conn *c, bus_view *v, const char *serial, uint64_t *prev) {
  char subject[BUS_SUBJECT_MAX];
  snprintf(subject, sizeof subject, "lark.ev.cert.%s", serial);
  int rc = view_version(v, subject, serial, prev);
  if (rc != BUS_ENOT_FOUND)
    return rc;
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  bus_event last;
  int got = bus_last_event(c, "LARK_EVENTS", subject, &last, &z);
  msgpack_zone_destroy(&z);
  if (got == 0 && bus_view_wait_applied(v, last.seq, 1000) == 0)
    rc = view_version(v, subject, serial, prev);
  return rc;
}

static int
serial_ok(const char *s) {
  size_t n = strlen(s);
  if (n != 16 && n != 32)
    return 0;
  return strspn(s, "0123456789abcdef") == n;
}

/* admin only (BUS_VERB_ADMIN) */
static int
cmd_revoke(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  (void)ud;
  char serial[FIELD] = "", reason[1100] = "", subject[BUS_SUBJECT_MAX];
  uint64_t prev = 0, seq = 0;
  bus_obj_str(&cmd->body, "serial", serial, sizeof serial);
  bus_obj_str(&cmd->body, "reason", reason, sizeof reason);
  if (!serial_ok(serial))
    return refuse(c, cmd, BUS_EFIELD, "serial",
                  "16 or 32 lowercase hex digits");
  int rc = cert_version(c, v, serial, &prev);
  if (rc == BUS_ENOT_FOUND)
    return refuse(c, cmd, rc, "serial", "no certificate with this serial");
  if (rc == BUS_EEXISTS)
    return refuse(c, cmd, rc, "serial", "already revoked");
  if (rc)
    return refuse(c, cmd, rc, NULL, bus_last_error());
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, reason[0] ? 2 : 1);
  bus_pack_str(&pk, "serial");
  bus_pack_str(&pk, serial);
  if (reason[0]) {
    bus_pack_str(&pk, "reason");
    bus_pack_str(&pk, reason);
  }
  snprintf(subject, sizeof subject, "lark.ev.cert.%s", serial);
  rc = bus_cmd_append(c, cmd, subject, "cert.revoked", prev, sb.data, sb.size,
                      &seq, NULL);
  msgpack_sbuffer_clear(&sb);
  if (rc) {
    refuse(c, cmd, rc, NULL, bus_last_error());
  } else {
    bus_pack_str(&pk, "serial");
    bus_pack_str(&pk, serial);
    bus_cmd_reply_ok(c, cmd, seq, sb.data, sb.size, 1);
  }
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

/* ---------------------------------------------------------------------- ca */

static int
cmd_ca(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  const signer_ca *ca = ((const signer_env *)ud)->ca;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  bus_pack_str(&pk, "pem");
  bus_pack_str(&pk, signer_ca_pem(ca));
  bus_pack_str(&pk, "sshPublicKey");
  bus_pack_str(&pk, signer_ca_ssh_pub(ca));
  bus_pack_str(&pk, "x509Fingerprint");
  bus_pack_str(&pk, signer_ca_x509_fp(ca));
  bus_pack_str(&pk, "sshFingerprint");
  bus_pack_str(&pk, signer_ca_ssh_fp(ca));
  bus_cmd_reply_ok(c, cmd, applied_seq(v), sb.data, sb.size, 4);
  msgpack_sbuffer_destroy(&sb);
  return 0;
}

/* ------------------------------------------------------------------- verbs */

static const bus_verb verbs[] = {
    {NULL, "sign", cmd_sign, NULL, BUS_VERB_ADMIN},
    {NULL, "revoke", cmd_revoke, NULL, BUS_VERB_ADMIN},
    {NULL, "list", NULL, signer_query, 0},
    {NULL, "show", NULL, signer_query, 0},
    {NULL, "ca", cmd_ca, NULL, 0},
    {0},
};

static const char *const kinds[] = {"cert", NULL};

const bus_verbs signer_verbs = {.kinds = kinds,
                                .verbs = verbs,
                                .unknown =
                                    "verbs: sign, revoke, list, show, ca"};

int
signer_command(bus_conn *c, const bus_cmd *cmd, bus_view *v,
               const signer_ca *ca, const signer_limits *l) {
  signer_env env = {.ca = ca, .limits = l};
  return bus_verbs_dispatch(&signer_verbs, c, v, &env, cmd);
}

/* ------------------------------------------------------------- publishing */

/* The x509Fingerprint of the last ca.published, "" when none. */
static int
last_published(bus_conn *c, char *fp, size_t cap, uint64_t *seq) {
  bus_reader_opts o;
  bus_reader_opts_init(&o);
  o.stream = "LARK_EVENTS";
  o.filter = "lark.ev.cert.ca";
  bus_reader *r = NULL;
  bus_batch *b = NULL;
  fp[0] = 0;
  *seq = 0;
  int rc = bus_reader_open(c, &o, &r);
  if (!rc)
    rc = bus_batch_new(&b);
  while (!rc) {
    rc = bus_reader_next(r, b, 1000);
    for (size_t i = 0; i < bus_batch_len(b); i++) {
      const bus_event *ev = bus_batch_event(b, i);
      if (ev && !strcmp(ev->type, "ca.published")) {
        bus_obj_str(&ev->data, "x509Fingerprint", fp, cap);
        *seq = ev->seq;
      }
    }
    if (!rc && bus_batch_len(b) == 0)
      break;
  }
  bus_batch_free(b);
  bus_reader_close(r);
  return rc == BUS_EEOF ? 0 : rc;
}

int
signer_publish_ca(bus_conn *c, const signer_ca *ca, int *published) {
  char fp[128], id[33];
  uint64_t prev = 0;
  *published = 0;
  int rc = last_published(c, fp, sizeof fp, &prev);
  if (rc || !strcmp(fp, signer_ca_x509_fp(ca)))
    return rc;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 4);
  bus_pack_str(&pk, "pem");
  bus_pack_str(&pk, signer_ca_pem(ca));
  bus_pack_str(&pk, "sshPublicKey");
  bus_pack_str(&pk, signer_ca_ssh_pub(ca));
  bus_pack_str(&pk, "x509Fingerprint");
  bus_pack_str(&pk, signer_ca_x509_fp(ca));
  bus_pack_str(&pk, "sshFingerprint");
  bus_pack_str(&pk, signer_ca_ssh_fp(ca));
  bus_event_derive_id(signer_ca_x509_fp(ca), (unsigned)prev, id);
  bus_event ev = {.v = BUS_SCHEMA_VERSION,
                  .type = "ca.published",
                  .id = id,
                  .ts = bus_wall_ns(),
                  .actor = "signer",
                  .cause = "",
                  .prev = prev,
                  .data_mp = sb.data,
                  .data_mp_len = sb.size};
  rc = bus_append(c, "lark.ev.cert.ca", &ev, BUS_APPEND_CHECK, NULL, NULL);
  msgpack_sbuffer_destroy(&sb);
  *published = rc == 0;
  return rc;
}
