/*
 * http_write.c - writes: apply (POST or PUT of a manifest), delete, stop
 * and resume, sent as the authenticated user on the gateway's own
 * connection, by the path `larkctl apply` takes: the manifest parsed by
 * larkmanifest, checked against the schema (every problem with its field
 * path, 422), then lark_command_send with a fresh idempotency key. The
 * owning service checks again and is the authority; its refusal comes
 * back with its code and field paths.
 *
 * A write that succeeded is answered once the gateway's view has applied
 * its event (or after 2 s), so a read right after it sees the change.
 */
#include <string.h>

#include "command_send.h"
#include "http.h"
#include "manifest.h"

enum { MAX_ERRS = 64, APPLIED_WAIT_MS = 2000 };

/* Codes a service refuses a resource's content with: 422, as the local
 * check's. */
static int
validation_code(const char *code) {
  static const char *const v[] = {"INVAL", "FIELD",     "MISSING",
                                  "NAME",  "MALFORMED", NULL};
  for (size_t i = 0; v[i]; i++)
    if (!strcmp(code, v[i]))
      return 1;
  return 0;
}

static int
code_err(const char *code) {
  for (int i = 0; i < BUS__ERR_COUNT; i++)
    if (!strcmp(bus_err_name(BUS__ERR_BASE - i), code))
      return BUS__ERR_BASE - i;
  return BUS_EINVAL;
}

/* A service's {error: {code, message, details}} as the API's error. */
static enum MHD_Result
refusal(gw_req *r, const msgpack_object *err) {
  char code[32] = "", msg[512] = "";
  bus_obj_str(err, "code", code, sizeof code);
  bus_obj_str(err, "message", msg, sizeof msg);
  bus_field_err d[MAX_ERRS];
  int n = 0;
  const msgpack_object *a = bus_obj_get(err, "details");
  for (uint32_t i = 0; a && a->type == MSGPACK_OBJECT_ARRAY &&
                       i < a->via.array.size && n < MAX_ERRS;
       i++, n++) {
    d[n].path[0] = d[n].reason[0] = 0;
    bus_obj_str(&a->via.array.ptr[i], "path", d[n].path, sizeof d[n].path);
    bus_obj_str(&a->via.array.ptr[i], "reason", d[n].reason,
                sizeof d[n].reason);
  }
  int e = code_err(code);
  unsigned st =
      validation_code(code) ? MHD_HTTP_UNPROCESSABLE_CONTENT : gw_status_of(e);
  return gw_reply_error(r, st, e, msg, d, n);
}

static enum MHD_Result
send_failed(gw_req *r, int rc, const char *subject) {
  char msg[BUS_SUBJECT_MAX + 640];
  if (rc == BUS_ENOT_FOUND || rc == BUS_ETIMEOUT)
    snprintf(msg, sizeof msg,
             "no answer on %s%s: is the service that owns it running?", subject,
             rc == BUS_ETIMEOUT ? " in time (the outcome is unknown)" : "");
  else if (rc == BUS_EDENIED)
    snprintf(msg, sizeof msg, "the broker refused %s to the gateway", subject);
  else
    snprintf(msg, sizeof msg, "%s: %s", subject, bus_last_error());
  return gw_reply_error(
      r, rc == BUS_EDENIED ? MHD_HTTP_FORBIDDEN : MHD_HTTP_SERVICE_UNAVAILABLE,
      rc, msg, NULL, 0);
}

/* Send kind.verb with body as r's user and answer with the outcome. */
static enum MHD_Result
send_cmd(gw_req *r, const char *kind, const char *verb,
         const msgpack_sbuffer *sb, const char *dflt) {
  msgpack_zone zone;
  msgpack_zone_init(&zone, 4096);
  msgpack_object reply;
  char subject[BUS_SUBJECT_MAX], word[32];
  snprintf(subject, sizeof subject, "lark.cmd.%s.%s.%s", r->user, kind, verb);
  int rc =
      lark_command_send(r->h->s->conn, r->user, kind, verb, sb, &zone, &reply);
  const msgpack_object *err = rc ? NULL : bus_obj_get(&reply, "error");
  enum MHD_Result res;
  if (rc) {
    res = send_failed(r, rc, subject);
  } else if (err) {
    res = refusal(r, err);
  } else {
    uint64_t seq = (uint64_t)bus_obj_int(&reply, "seq", 0);
    const char *done = lark_reply_outcome(&reply, dflt, word, sizeof word);
    if (seq)
      bus_view_wait_applied(r->h->view, seq, APPLIED_WAIT_MS);
    gw_buf b = {0};
    gw_buf_printf(&b, "{\"ok\":true,\"seq\":%llu,\"result\":\"%s\"}\n",
                  (unsigned long long)seq, done);
    res = gw_reply(r, strcmp(done, "created") ? MHD_HTTP_OK : MHD_HTTP_CREATED,
                   "application/json", b.p, b.len);
    gw_buf_free(&b);
  }
  msgpack_zone_destroy(&zone);
  return res;
}

static enum MHD_Result
invalid(gw_req *r, const char *msg, const bus_field_err *e, int n) {
  return gw_reply_error(r, MHD_HTTP_UNPROCESSABLE_CONTENT, BUS_EINVAL, msg, e,
                        n < MAX_ERRS ? n : MAX_ERRS);
}

/* The one document of the body, checked as larkctl apply checks it. */
static enum MHD_Result
apply_doc(gw_req *r, gw_kind k, const char *name, const lark_doc *d) {
  bus_field_err errs[MAX_ERRS];
  int n = 0;
  if (name && strcmp(name, d->name)) {
    snprintf(errs[0].path, sizeof errs[0].path, "metadata.name");
    snprintf(errs[0].reason, sizeof errs[0].reason,
             "must be %s, the name in the path", name);
    return invalid(r, "the manifest names another object", errs, 1);
  }
  if (strcmp(d->kind, gw_kind_name(k)) || !lark_kind_find(d->kind)) {
    snprintf(errs[0].path, sizeof errs[0].path, "kind");
    snprintf(errs[0].reason, sizeof errs[0].reason,
             "must be %s to be applied at %s", gw_kind_name(k),
             gw_kind_plural(k));
    return invalid(r, "the manifest is not of this collection", errs, 1);
  }
  if (lark_doc_check(d, errs, MAX_ERRS, &n))
    return invalid(r, "the manifest is not valid", errs, n);
  char key[33];
  bus_event_new_id(key);
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  lark_apply_body(&sb, key, d);
  enum MHD_Result res =
      send_cmd(r, lark_kind_find(d->kind)->cmd, "apply", &sb, "created");
  msgpack_sbuffer_destroy(&sb);
  return res;
}

static enum MHD_Result
apply(gw_req *r, gw_kind k, const char *name) {
  lark_manifest m = {0};
  char err[640];
  int rc = lark_manifest_parse(&m, "body", r->body.p ? r->body.p : "",
                               r->body.len, err, sizeof err);
  enum MHD_Result res;
  if (rc)
    res = gw_reply_error(r, MHD_HTTP_BAD_REQUEST,
                         rc == BUS_ETOO_BIG ? BUS_ETOO_BIG : BUS_EMALFORMED,
                         err, NULL, 0);
  else if (m.ndocs != 1)
    res = gw_reply_error(r, MHD_HTTP_BAD_REQUEST, BUS_EINVAL,
                         "the body must hold exactly one resource", NULL, 0);
  else
    res = apply_doc(r, k, name, &m.docs[0]);
  lark_manifest_free(&m);
  return res;
}

/* "jobs" -> "job": the command kind of every collection served. */
static void
cmd_kind(gw_kind k, char *out, size_t cap) {
  const char *p = gw_kind_plural(k);
  snprintf(out, cap, "%.*s", (int)strlen(p) - 1, p);
}

enum MHD_Result
gw_rest_write(gw_req *r, gw_kind k, const char *name, const char *verb) {
  if (!strcmp(verb, "apply"))
    return apply(r, k, name);
  if ((!strcmp(verb, "stop") || !strcmp(verb, "resume")) && k != GW_JOBS &&
      k != GW_WORKFLOWS)
    return gw_reply_bus(r, BUS_ENOT_FOUND,
                        "only jobs and workflows stop "
                        "and resume");
  char kind[32], key[33];
  cmd_kind(k, kind, sizeof kind);
  bus_event_new_id(key);
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  lark_name_body(&sb, key, name);
  enum MHD_Result res = send_cmd(r, kind, verb, &sb,
                                 !strcmp(verb, "delete") ? "deleted"
                                 : !strcmp(verb, "stop") ? "stopped"
                                                         : "resumed");
  msgpack_sbuffer_destroy(&sb);
  return res;
}
