/*
 * commands.c - what users ask lark-ipam: apply and delete Domains, and
 * read domains, domain peers and routes.
 *
 * A Domain is checked against the view (schema, CIDR, name, overlap with
 * every other domain) in a read transaction, then domain.created is
 * appended on lark.ev.ipam.domains with prev = the version that check
 * saw. Every creation and deletion goes through that one subject, so of
 * two overlapping creations racing, the broker refuses the second; it is
 * checked again once the view has caught up, and then refused for the
 * overlap. The event id is libbus's one rule (bus_cmd_event_id): a
 * retried command lands once. The verbs are the table at the end.
 */
#include <stdio.h>
#include <string.h>

#include "ipam-int.h"

#define MAX_ERRS 16
#define RETRIES 40    /* conflicts retried, each after the view caught up */
#define CATCH_MS 2000 /* how long one catch-up may take */

/* The one subject every domain.created and domain.deleted goes on, into
 * buf (BUS_SUBJECT_MAX bytes). */
static const char *
domains_subject(char *buf) {
  bus_subj_domain_created(buf, BUS_SUBJECT_MAX);
  return buf;
}

/* Append type (its data packed in sb) on the domains' subject for cmd. */
static int
append(bus_conn *c, const bus_cmd *cmd, bus_type type, uint64_t prev,
       const msgpack_sbuffer *sb, uint64_t *seq, int *dup) {
  char subject[BUS_SUBJECT_MAX];
  return bus_cmd_append(c, cmd, domains_subject(subject), bus_type_name(type),
                        prev, sb->data, sb->size, seq, dup);
}

static void
reply_result(bus_conn *c, const bus_cmd *cmd, uint64_t seq, const char *what) {
  bus_packbuf b;
  bus_packbuf_init(&b);
  bus_pack_kv_str(&b.pk, "result", what);
  bus_cmd_reply_ok(c, cmd, seq, b.sb.data, b.sb.size, 1);
  bus_packbuf_destroy(&b);
}

static int
refuse(bus_conn *c, const bus_cmd *cmd, int err, const char *path,
       const char *reason) {
  bus_field_err fe;
  memset(&fe, 0, sizeof fe);
  /* cut to the field sizes: callers' texts may be longer */
  snprintf(fe.path, sizeof fe.path, "%.*s", (int)sizeof fe.path - 1, path);
  snprintf(fe.reason, sizeof fe.reason, "%.*s", (int)sizeof fe.reason - 1,
           reason);
  char msg[600];
  snprintf(msg, sizeof msg, "%s: %s", fe.path, fe.reason);
  bus_cmd_reply_error(c, cmd, err, msg, &fe, 1);
  return err;
}

/* ---------------------------------------------------------------- apply */

typedef struct check {
  char name[IPAM_NAME_SZ];
  ipam_cidr c;
  char cidr[IPAM_NAME_SZ];
  uint64_t prev; /* version of lark.ev.ipam.domains */
  int same;      /* exists with this cidr */
  char path[64]; /* a refusal: where, why */
  char reason[400];
  int err;
} check;

/* Check the new domain against the view; fills ck (err 0: may append). */
static int
check_domain(bus_view *v, check *ck) {
  bus_txn *t;
  int rc = bus_view_read(v, &t);
  if (rc)
    return rc;
  bus_version ver;
  dom_rec d;
  char subject[BUS_SUBJECT_MAX];
  if (!(rc = bus_txn_version(t, domains_subject(subject), &ver)))
    ck->prev = ver.seq;
  int got = rc ? rc : ipam_dom_get(t, ck->name, &d);
  if (got == 0) {
    ck->same = !strcmp(d.cidr, ck->cidr);
    if (!ck->same) {
      ck->err = BUS_EEXISTS;
      snprintf(ck->path, sizeof ck->path, "spec.cidr");
      snprintf(ck->reason, sizeof ck->reason,
               "domain %s exists with cidr %s: delete it first", ck->name,
               d.cidr);
    }
  } else if (got == BUS_ENOT_FOUND) {
    if (ipam__overlapping(t, &ck->c, ck->name, &d) == 1) {
      ck->err = BUS_EEXISTS;
      snprintf(ck->path, sizeof ck->path, "spec.cidr");
      snprintf(ck->reason, sizeof ck->reason, "%s overlaps domain %s (%s)",
               ck->cidr, d.name, d.cidr);
    }
  } else {
    rc = got;
  }
  bus_txn_end(t);
  return rc;
}

/* Schema, name and CIDR of the resource; 0 or the error replied. */
static int
validate(bus_conn *c, const bus_cmd *cmd, const msgpack_object *res,
         check *ck) {
  bus_field_err errs[MAX_ERRS];
  int n = 0;
  if (!res)
    return refuse(c, cmd, BUS_EMISSING, "resource", "a Domain is required");
  int rc = bus_schema_check("Domain", res, errs, MAX_ERRS, &n);
  if (rc) {
    char msg[400];
    snprintf(msg, sizeof msg, "the Domain is invalid: %s: %s", errs[0].path,
             errs[0].reason);
    bus_cmd_reply_error(c, cmd, rc, msg, errs, n < MAX_ERRS ? n : MAX_ERRS);
    return rc;
  }
  char cidr[128], err[200];
  bus_domain_res d;
  msgpack_zone z;
  msgpack_zone_init(&z, 256);
  rc = bus_domain_created_unpack(res, &z, &d);
  bus_str_copy(d.metadata.name, ck->name, sizeof ck->name);
  bus_str_copy(d.spec.cidr, cidr, sizeof cidr);
  msgpack_zone_destroy(&z);
  if (rc)
    return bus_cmd_reply_error(c, cmd, rc, bus_last_error(), NULL, 0), rc;
  if (ipam_cidr_parse(cidr, &ck->c, err, sizeof err) ||
      ipam_domain_cidr_check(&ck->c, err, sizeof err))
    return refuse(c, cmd, BUS_EFIELD, "spec.cidr", err);
  ipam_cidr_format(&ck->c, ck->cidr, sizeof ck->cidr);
  return 0;
}

/* The resource as stored: kind, metadata.name, spec.cidr (canonical). */
static int
pack_domain(msgpack_sbuffer *sb, const check *ck) {
  bus_ev_domain_created d = {.apiVersion = BUS_STR("rlinf.io/v1alpha1"),
                             .kind = BUS_STR("Domain"),
                             .metadata = {.name = bus_str_of(ck->name)},
                             .spec = {.cidr = bus_str_of(ck->cidr)}};
  return bus_domain_created_pack(sb, &d);
}

static int
cmd_apply(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  (void)ud;
  check ck;
  memset(&ck, 0, sizeof ck);
  int rc = validate(c, cmd, bus_obj_get(&cmd->body, "resource"), &ck);
  if (rc)
    return rc;
  bus_packbuf b;
  bus_packbuf_init(&b);
  int packed = rc = pack_domain(&b.sb, &ck);
  uint64_t seq = 0;
  int dup = 0;
  for (int i = 0; !packed && i < RETRIES; i++) {
    check again = ck;
    if ((rc = check_domain(v, &again)) || again.err || again.same) {
      ck = again;
      break;
    }
    rc = append(c, cmd, BUS_T_DOMAIN_CREATED, again.prev, &b.sb, &seq, &dup);
    if (rc != BUS_ECONFLICT)
      break;
    bus_view_catch_up(c, v, NULL, CATCH_MS); /* someone else's creation */
  }
  bus_packbuf_destroy(&b);
  if (!rc && ck.err)
    return refuse(c, cmd, ck.err, ck.path, ck.reason);
  if (rc)
    return bus_cmd_reply_error(c, cmd, rc, bus_last_error(), NULL, 0), rc;
  reply_result(c, cmd, seq, ck.same || dup ? "unchanged" : "created");
  return 0;
}

/* --------------------------------------------------------------- delete */

static int
cmd_delete(bus_conn *c, const bus_cmd *cmd, bus_view *v, void *ud) {
  (void)ud;
  char name[IPAM_NAME_SZ] = "";
  if (!bus_obj_str(&cmd->body, "name", name, sizeof name) ||
      !bus_name_valid(name, BUS_NAME_MAX))
    return refuse(c, cmd, BUS_ENAME, "name", "a domain name is required");
  char subject[BUS_SUBJECT_MAX];
  int rc = BUS_ECONFLICT;
  uint64_t seq = 0;
  for (int i = 0; i < RETRIES && rc == BUS_ECONFLICT; i++) {
    bus_txn *t;
    bus_version ver;
    dom_rec d;
    if ((rc = bus_view_read(v, &t)))
      break;
    rc = bus_txn_version(t, domains_subject(subject), &ver);
    int got = rc ? rc : ipam_dom_get(t, name, &d);
    bus_txn_end(t);
    if (got == BUS_ENOT_FOUND)
      return refuse(c, cmd, BUS_ENOT_FOUND, "name", "no such domain");
    if (got)
      return bus_cmd_reply_error(c, cmd, got, bus_last_error(), NULL, 0), got;
    if (d.used) {
      char why[160];
      snprintf(why, sizeof why,
               "%llu addresses are in use: delete or stop their Jobs first",
               (unsigned long long)d.used);
      return refuse(c, cmd, BUS_EEXISTS, "name", why);
    }
    bus_ev_domain_deleted e = {.domain = bus_str_of(name)};
    bus_packbuf b;
    bus_packbuf_init(&b);
    if (!(rc = bus_domain_deleted_pack(&b.sb, &e)))
      rc = append(c, cmd, BUS_T_DOMAIN_DELETED, ver.seq, &b.sb, &seq, NULL);
    bus_packbuf_destroy(&b);
    if (rc == BUS_ECONFLICT)
      bus_view_catch_up(c, v, NULL, CATCH_MS);
  }
  if (rc)
    return bus_cmd_reply_error(c, cmd, rc, bus_last_error(), NULL, 0), rc;
  reply_result(c, cmd, seq, "deleted");
  return 0;
}

/* ---------------------------------------------------------------- verbs */

static const bus_verb verbs[] = {
    {"domain", "apply", cmd_apply, NULL, BUS_VERB_SERIAL},
    {"domain", "delete", cmd_delete, NULL, BUS_VERB_SERIAL},
    {NULL, NULL, NULL, ipam_query, 0}, /* every other verb reads */
    {0},
};

static const char *const kinds[] = {"domain", "domainpeer", "route", NULL};

const bus_verbs ipam_verbs = {.kinds = kinds, .verbs = verbs};
