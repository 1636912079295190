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
#include <stddef.h>
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

/* Reply ok with the entries of the map mp (len bytes) that keys names,
 * in that order (NULL: all of them, in theirs), and seq, or the map's own
 * seq when it has one. */
static int
reply_map(bus_conn *c, const bus_cmd *cmd, uint64_t seq, const void *mp,
          size_t len, const char *const *keys) {
  msgpack_zone z;
  msgpack_zone_init(&z, 2048);
  msgpack_object o;
  bus_packbuf b;
  bus_packbuf_init(&b);
  uint32_t n = 0;
  int rc =
      msgpack_unpack(mp, len, NULL, &z, &o) < 0 || o.type != MSGPACK_OBJECT_MAP
          ? BUS_ECORRUPT
          : 0;
  for (uint32_t i = 0; !rc && keys && keys[i]; i++) {
    const msgpack_object *v = bus_obj_get(&o, keys[i]);
    if (v) {
      bus_pack_str(&b.pk, keys[i]);
      msgpack_pack_object(&b.pk, *v);
      n++;
    }
  }
  for (uint32_t i = 0; !rc && !keys && i < o.via.map.size; i++, n++) {
    msgpack_pack_object(&b.pk, o.via.map.ptr[i].key);
    msgpack_pack_object(&b.pk, o.via.map.ptr[i].val);
  }
  if (!rc) {
    uint64_t s = (uint64_t)bus_obj_int(&o, "seq", (int64_t)seq);
    bus_cmd_reply_ok(c, cmd, s ? s : seq, b.sb.data, b.sb.size, n);
  }
  bus_packbuf_destroy(&b);
  msgpack_zone_destroy(&z);
  return rc;
}

/* -------------------------------------------------------------------- sign */

/* What a sign's reply takes from the certificate's record. */
static const char *const reply_keys[] = {"serial",   "format",      "cert",
                                         "subject",  "principals",  "notBefore",
                                         "notAfter", "fingerprint", NULL};

/* Answer from the view when event id already issued a certificate. 1
 * when answered. */
static int
reply_existing(bus_conn *c, const bus_cmd *cmd, bus_view *v, const char *id) {
  char serial[SIGNER_SERIAL_MAX];
  bus_txn *t;
  int found = 0;
  if (bus_view_read(v, &t) == 0) {
    bus_packbuf b;
    bus_packbuf_init(&b);
    found = signer_request_serial(t, id, serial) == 0 &&
            signer_show(t, serial, &b.pk) == 0;
    bus_txn_end(t);
    if (found)
      reply_map(c, cmd, 0, b.sb.data, b.sb.size, reply_keys);
    bus_packbuf_destroy(&b);
  }
  return found;
}

/* The sign command's names, each copied into a bounded buffer. */
typedef struct sign_in {
  char role[FIELD], name[FIELD], domain[FIELD], cluster[FIELD], agent[FIELD];
  char hosts[SIGNER_MAX_HOSTS][FIELD];
  const char *hostp[SIGNER_MAX_HOSTS];
} sign_in;

static const struct {
  const char *key;
  size_t off;
} sign_names[] = {
    {"role", offsetof(sign_in, role)},
    {"name", offsetof(sign_in, name)},
    {"domain", offsetof(sign_in, domain)},
    {"cluster", offsetof(sign_in, cluster)},
    {"agent", offsetof(sign_in, agent)},
};

/* An optional name of cert.issued: present when given. */
static bus_str
opt_name(const char *v, bool *has) {
  *has = v[0] != 0;
  return bus_str_of(v);
}

/* cert.issued's data: the certificate and the names it was asked for. */
static int
pack_issued(msgpack_sbuffer *sb, const sign_in *in, const signer_cert *ct) {
  bus_str pr[SIGNER_MAX_PRINCIPALS];
  for (int i = 0; i < ct->nprincipals; i++)
    pr[i] = bus_str_of(ct->principals[i]);
  bus_ev_cert_issued d = {.serial = bus_str_of(ct->serial),
                          .format = bus_str_of(signer_format_name(ct->format)),
                          .role = bus_str_of(in->role),
                          .has_name = 1,
                          .name = bus_str_of(in->name),
                          .subject = bus_str_of(ct->subject),
                          .has_principals = 1,
                          .principals = {pr, (uint32_t)ct->nprincipals},
                          .notBefore = ct->not_before,
                          .notAfter = ct->not_after,
                          .has_fingerprint = 1,
                          .fingerprint = bus_str_of(ct->fingerprint),
                          .has_cert = 1,
                          .cert = bus_str_of(ct->text)};
  d.domain = opt_name(in->domain, &d.has_domain);
  d.cluster = opt_name(in->cluster, &d.has_cluster);
  d.agent = opt_name(in->agent, &d.has_agent);
  return bus_cert_issued_pack(sb, &d);
}

static int
append_issued(bus_conn *c, const bus_cmd *cmd, bus_view *v, const char *id,
              const sign_in *in, const signer_cert *ct) {
  char subject[BUS_SUBJECT_MAX];
  uint64_t seq = 0;
  int dup = 0;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  int rc = bus_subj_cert_issued(subject, sizeof subject, ct->serial);
  if (!rc)
    rc = pack_issued(&sb, in, ct);
  if (!rc)
    rc = bus_cmd_append(c, cmd, subject, "cert.issued", 0, sb.data, sb.size,
                        &seq, &dup);
  if (rc)
    refuse(c, cmd, rc, NULL, bus_last_error());
  else if (dup && (bus_view_wait_applied(v, seq, 3000) ||
                   !reply_existing(c, cmd, v, id)))
    rc = refuse(c, cmd, BUS_ETIMEOUT, NULL,
                "a retried sign: the first certificate is not in view yet");
  else if (!dup)
    rc = reply_map(c, cmd, seq, sb.data, sb.size, reply_keys);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

/* A gateway's hosts: an array of at most SIGNER_MAX_HOSTS strings, each
 * copied bounded (a longer one is kept long enough to be refused). */
static const char *
read_hosts(const msgpack_object *b, sign_in *in, signer_req *r) {
  const msgpack_object *h = bus_obj_get(b, "hosts");
  if (!h || h->type == MSGPACK_OBJECT_NIL)
    return NULL;
  if (h->type != MSGPACK_OBJECT_ARRAY || h->via.array.size > SIGNER_MAX_HOSTS)
    return "an array of at most 8 addresses or DNS names";
  for (uint32_t i = 0; i < h->via.array.size; i++) {
    const msgpack_object *e = &h->via.array.ptr[i];
    if (e->type != MSGPACK_OBJECT_STR || e->via.str.size >= FIELD)
      return "an array of at most 8 addresses or DNS names";
    memcpy(in->hosts[i], e->via.str.ptr, e->via.str.size);
    in->hosts[i][e->via.str.size] = 0;
    in->hostp[i] = in->hosts[i];
  }
  r->hosts = in->hostp;
  r->nhosts = (int)h->via.array.size;
  return NULL;
}

/* The request's fields; the path of a field of the wrong shape, with
 * *why saying what it should be. */
static const char *
read_sign(const bus_cmd *cmd, sign_in *in, signer_req *r, const char **why) {
  const msgpack_object *b = &cmd->body;
  memset(in, 0, sizeof *in);
  memset(r, 0, sizeof *r);
  for (size_t i = 0; i < sizeof sign_names / sizeof sign_names[0]; i++)
    bus_obj_str(b, sign_names[i].key, (char *)in + sign_names[i].off, FIELD);
  r->role = in->role;
  r->name = in->name;
  r->domain = in->domain;
  r->cluster = in->cluster;
  r->agent = in->agent;
  r->csr = raw_str(b, "csr", &r->csr_len);
  r->ssh_key = raw_str(b, "sshKey", &r->ssh_key_len);
  const msgpack_object *valid = bus_obj_get(b, "valid");
  if (valid && valid->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
    *why = "seconds, a positive integer";
    return "valid";
  }
  *why = read_hosts(b, in, r);
  return *why ? "hosts" : NULL;
}

/*
 * Who may sign what: admin anything; anyone else only a `user`
 * certificate in its own name (as step-ca's user provisioners do), which
 * gives it no power its own credentials lack: the way into lark-gateway's
 * HTTPS as itself. lark-gateway may send commands for any user but admin
 * (deploy/policy.c), so through it a user gets or revokes only its own.
 */
static int
self_service(const bus_cmd *cmd, const char *role, const char *name) {
  return !strcmp(cmd->user, "admin") ||
         (!strcmp(role, "user") && !strcmp(name, cmd->user));
}

static int
cmd_sign(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  const signer_env *env = ud;
  const signer_limits *l = env->limits;
  sign_in in;
  signer_req r;
  signer_cert ct;
  char id[33], err[256] = "";
  const char *why = NULL, *bad = read_sign(cmd, &in, &r, &why);
  if (!self_service(cmd, in.role, in.name))
    return refuse(c, cmd, BUS_EDENIED, "role",
                  "only admin may sign this; a user may ask for a user "
                  "certificate in its own name");
  if (bad)
    return refuse(c, cmd, BUS_EFIELD, bad, why);
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
  bus_txn *t;
  bus_version ver;
  int rc = bus_view_read(v, &t);
  if (rc)
    return rc;
  rc = signer_cert_state(t, serial);
  if (!rc && !(rc = bus_txn_version(t, subject, &ver)))
    *prev = ver.seq;
  bus_txn_end(t);
  return rc;
}

/* The certificate's version. One the view has not seen yet (issued just
 * before) is asked of the stream, and the view waited for, up to a
 * second. */
static int
cert_version(bus_conn *c, bus_view *v, const char *serial, uint64_t *prev) {
  char subject[BUS_SUBJECT_MAX];
  int rc = bus_subj_cert_issued(subject, sizeof subject, serial);
  if (!rc)
    rc = view_version(v, subject, serial, prev);
  if (rc != BUS_ENOT_FOUND)
    return rc;
  uint64_t last = 0;
  if (bus_last_event_seq(c, "LARK_EVENTS", subject, &last) == 0 &&
      bus_view_wait_applied(v, last, 1000) == 0)
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

/* Append cert.revoked at the certificate's version prev. */
static int
append_revoked(bus_conn *c, const bus_cmd *cmd, const char *serial,
               const char *reason, uint64_t prev, uint64_t *seq) {
  char subject[BUS_SUBJECT_MAX];
  bus_ev_cert_revoked d = {.serial = bus_str_of(serial),
                           .has_reason = reason[0] != 0,
                           .reason = bus_str_of(reason)};
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  int rc = bus_subj_cert_revoked(subject, sizeof subject, serial);
  if (!rc)
    rc = bus_cert_revoked_pack(&sb, &d);
  if (!rc)
    rc = bus_cmd_append(c, cmd, subject, "cert.revoked", prev, sb.data, sb.size,
                        seq, NULL);
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

/* The role and name of the certificate serial, as issued. */
static int
cert_owner(bus_view *v, const char *serial, char *role, char *name,
           size_t cap) {
  bus_txn *t;
  int rc = bus_view_read(v, &t);
  if (rc)
    return rc;
  rc = signer_cert_owner(t, serial, role, name, cap);
  bus_txn_end(t);
  return rc;
}

/* admin any certificate; anyone else its own user certificates */
static int
cmd_revoke(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  (void)ud;
  char serial[FIELD] = "", reason[1100] = "";
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
  char role[FIELD] = "", name[FIELD] = "";
  if (!rc && strcmp(cmd->user, "admin") &&
      (cert_owner(v, serial, role, name, sizeof role) ||
       !self_service(cmd, role, name)))
    return refuse(c, cmd, BUS_EDENIED, "serial",
                  "only admin may revoke this; a user may revoke its own "
                  "user certificates");
  if (!rc)
    rc = append_revoked(c, cmd, serial, reason, prev, &seq);
  if (rc)
    return refuse(c, cmd, rc, NULL, bus_last_error());
  bus_packbuf b;
  bus_packbuf_init(&b);
  bus_pack_kv_str(&b.pk, "serial", serial);
  bus_cmd_reply_ok(c, cmd, seq, b.sb.data, b.sb.size, 1);
  bus_packbuf_destroy(&b);
  return 0;
}

/* ---------------------------------------------------------------------- ca */

/* The CA's public parts: ca.published's data and the ca verb's reply. */
static bus_ev_ca_published
ca_parts(const signer_ca *ca) {
  return (bus_ev_ca_published){
      .pem = bus_str_of(signer_ca_pem(ca)),
      .sshPublicKey = bus_str_of(signer_ca_ssh_pub(ca)),
      .x509Fingerprint = bus_str_of(signer_ca_x509_fp(ca)),
      .sshFingerprint = bus_str_of(signer_ca_ssh_fp(ca))};
}

static int
cmd_ca(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  bus_ev_ca_published d = ca_parts(((const signer_env *)ud)->ca);
  bus_packbuf b;
  bus_packbuf_init(&b);
  int rc = bus_ev_ca_published_write(&b.pk, &d) ? -ENOMEM : 0;
  if (!rc)
    rc = reply_map(c, cmd, applied_seq(v), b.sb.data, b.sb.size, NULL);
  bus_packbuf_destroy(&b);
  return rc;
}

/* ------------------------------------------------------------------- verbs */

static const bus_verb verbs[] = {
    {NULL, "sign", cmd_sign, NULL, 0},
    {NULL, "revoke", cmd_revoke, NULL, 0},
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
last_published(bus_conn *c, const char *subject, char *fp, size_t cap,
               uint64_t *seq) {
  bus_reader_opts o;
  bus_reader_opts_init(&o);
  o.stream = "LARK_EVENTS";
  o.filter = subject;
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
      const bus_ev_ca_published *p = bus_as_ca_published(ev);
      if (p) {
        bus_str_copy(p->x509Fingerprint, fp, cap);
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
  char fp[128], id[33], subject[BUS_SUBJECT_MAX];
  uint64_t prev = 0;
  *published = 0;
  int rc = bus_subj_ca_published(subject, sizeof subject);
  if (!rc)
    rc = last_published(c, subject, fp, sizeof fp, &prev);
  if (rc || !strcmp(fp, signer_ca_x509_fp(ca)))
    return rc;
  bus_ev_ca_published d = ca_parts(ca);
  bus_event_derive_id(signer_ca_x509_fp(ca), (unsigned)prev, id);
  bus_event ev = {.v = BUS_SCHEMA_VERSION,
                  .type = "ca.published",
                  .t = BUS_T_CA_PUBLISHED,
                  .typed = &d,
                  .id = id,
                  .ts = bus_wall_ns(),
                  .actor = "signer",
                  .cause = "",
                  .prev = prev};
  rc = bus_append(c, subject, &ev, BUS_APPEND_CHECK, NULL, NULL);
  *published = rc == 0;
  return rc;
}
