/*
 * http_misc.c - the platform's routes beside the REST objects: /readyz,
 * /api/v1/status (each service's status record), /metrics (Prometheus,
 * gw_metrics_render) and certificates (a CSR signed by lark-signer as the
 * user asking, a serial revoked).
 *
 * Status asks every service larkctl up runs, and the gateway itself, at
 * once (a thread each), so one service that does not answer costs one
 * timeout, not one per service.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "command_send.h"
#include "deploy.h"
#include "http.h"

enum { STATUS_WAIT_MS = 1000, MAX_SERVICES = 32 };

enum MHD_Result
gw_readyz(gw_req *r) {
  gw_http *h = r->h;
  if (!h->s->conn || bus_conn_closed(h->s->conn) ||
      bus_view_catch_up(h->s->conn, h->view, "LARK_EVENTS", 500))
    return gw_reply(r, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain",
                    "not ready\n", 10);
  return gw_reply(r, MHD_HTTP_OK, "text/plain", "ready\n", 6);
}

typedef struct probe {
  bus_conn *c;
  char name[64];
  bus_status st;
  int rc;
  pthread_t t;
} probe;

static void *
ask(void *arg) {
  probe *p = arg;
  p->rc = bus_status_query(p->c, p->name, STATUS_WAIT_MS, &p->st);
  return NULL;
}

static size_t
probes(gw_req *r, probe *ps) {
  size_t n = 0;
  for (size_t i = 0; lark_up_services[i] && n < MAX_SERVICES - 1; i++) {
    const char *s = lark_up_services[i];
    snprintf(ps[n++].name, sizeof ps->name, "%s",
             strncmp(s, "lark-", 5) ? s : s + 5);
  }
  const char *own = r->h->s->instance ? r->h->s->instance : r->h->s->name;
  int have = 0;
  for (size_t i = 0; i < n; i++)
    have |= !strcmp(ps[i].name, own);
  if (!have)
    snprintf(ps[n++].name, sizeof ps->name, "%s", own);
  return n;
}

static void
status_json(gw_buf *b, const probe *p) {
  const bus_status *s = &p->st;
  gw_buf_add(b, "{\"name\":", 8);
  gw_buf_json_str(b, p->name);
  if (p->rc) {
    gw_buf_add(b, ",\"state\":\"down\",\"why\":", 22);
    gw_buf_json_str(b, bus_strerror(p->rc));
    gw_buf_add(b, "}", 1);
    return;
  }
  gw_buf_add(b, ",\"state\":", 9);
  gw_buf_json_str(b, s->state[0] ? s->state : "up");
  gw_buf_printf(b,
                ",\"seq\":%llu,\"lag\":%llu,\"applied\":%llu,\"stale\":%llu,"
                "\"rejected\":%llu,\"outbox\":%llu,\"repositions\":%llu,"
                "\"version\":",
                (unsigned long long)s->seq, (unsigned long long)s->lag,
                (unsigned long long)s->applied, (unsigned long long)s->stale,
                (unsigned long long)s->rejected, (unsigned long long)s->outbox,
                (unsigned long long)s->repositions);
  gw_buf_json_str(b, s->version);
  gw_buf_add(b, ",\"why\":", 7);
  gw_buf_json_str(b, s->why);
  gw_buf_add(b, "}", 1);
}

enum MHD_Result
gw_status(gw_req *r) {
  probe ps[MAX_SERVICES];
  memset(ps, 0, sizeof ps);
  size_t n = probes(r, ps);
  for (size_t i = 0; i < n; i++) {
    ps[i].c = r->h->s->conn;
    if (pthread_create(&ps[i].t, NULL, ask, &ps[i]))
      ask(&ps[i]), ps[i].t = 0;
  }
  gw_buf b = {0};
  gw_buf_add(&b, "[", 1);
  for (size_t i = 0; i < n; i++) {
    if (ps[i].t)
      pthread_join(ps[i].t, NULL);
    if (i)
      gw_buf_add(&b, ",", 1);
    status_json(&b, &ps[i]);
  }
  gw_buf_add(&b, "]\n", 2);
  enum MHD_Result res =
      gw_reply(r, MHD_HTTP_OK, "application/json", b.p, b.len);
  gw_buf_free(&b);
  return res;
}

enum MHD_Result
gw_metrics(gw_req *r) {
  gw_buf b = {0};
  int rc = gw_metrics_render(r->h->s->conn, r->h->view, 2000, &b);
  enum MHD_Result res =
      rc ? gw_reply_bus(r, rc, bus_last_error())
         : gw_reply(r, MHD_HTTP_OK, "text/plain; version=0.0.4", b.p, b.len);
  gw_buf_free(&b);
  return res;
}

/* One cert.<verb> as r's user; its reply or an error answered. */
static int
cert_call(gw_req *r, const char *verb, const msgpack_sbuffer *sb,
          msgpack_zone *z, msgpack_object *reply, enum MHD_Result *res) {
  int rc =
      lark_command_send(r->h->s->conn, r->user, "cert", verb, sb, z, reply);
  const msgpack_object *err = rc ? NULL : bus_obj_get(reply, "error");
  char code[32] = "", msg[512] = "";
  if (rc) {
    *res = gw_reply_bus(r, rc, "lark-signer did not answer");
    return -1;
  }
  if (err) {
    bus_obj_str(err, "code", code, sizeof code);
    bus_obj_str(err, "message", msg, sizeof msg);
    int e = !strcmp(code, "DENIED")      ? BUS_EDENIED
            : !strcmp(code, "NOT_FOUND") ? BUS_ENOT_FOUND
                                         : BUS_EINVAL;
    *res = gw_reply_error(r, gw_status_of(e), e, msg, NULL, 0);
    return -1;
  }
  return 0;
}

/* A command body {key, k1: v1, ...} (kv: NULL-terminated pairs) in b. */
static int
cert_body(bus_packbuf *b, const char *const *kv) {
  char key[33];
  bus_event_new_id(key);
  bus_packbuf_init(b);
  bus_map m;
  bus_map_begin(&m, &b->pk);
  bus_map_str(&m, "key", key);
  for (size_t i = 0; kv[i]; i += 2)
    bus_map_str(&m, kv[i], kv[i + 1]);
  return bus_map_end(&m);
}

/* The certificate, then the CA's (the chain a client presents). */
static enum MHD_Result
sign(gw_req *r) {
  const char *role = gw_arg(r, "role"), *name = gw_arg(r, "name");
  const char *const kv[] = {"role", role && *role ? role : "user",
                            "name", name && *name ? name : r->user,
                            "csr",  r->body.p ? r->body.p : "",
                            NULL};
  bus_packbuf b;
  enum MHD_Result res = MHD_NO;
  msgpack_zone z;
  msgpack_zone_init(&z, 8192);
  msgpack_object reply, ca;
  char cert[16400] = "", pem[16400] = "";
  if (cert_body(&b, kv) < 0)
    res = gw_reply_bus(r, BUS_ETOO_BIG, bus_last_error());
  else if (!cert_call(r, "sign", &b.sb, &z, &reply, &res) &&
           bus_obj_str(&reply, "cert", cert, sizeof cert) &&
           !cert_call(r, "ca", NULL, &z, &ca, &res)) {
    bus_obj_str(&ca, "pem", pem, sizeof pem);
    gw_buf out = {0};
    gw_buf_add(&out, cert, strlen(cert));
    if (cert[0] && cert[strlen(cert) - 1] != '\n')
      gw_buf_add(&out, "\n", 1);
    gw_buf_add(&out, pem, strlen(pem));
    res =
        gw_reply(r, MHD_HTTP_CREATED, "application/x-pem-file", out.p, out.len);
    gw_buf_free(&out);
  }
  msgpack_zone_destroy(&z);
  bus_packbuf_destroy(&b);
  return res;
}

/* A revoke answers once the gateway's view has applied it: the next
 * request with that certificate is refused. */
enum MHD_Result
gw_certificates(gw_req *r, const char *serial) {
  if (!serial)
    return sign(r);
  const char *const kv[] = {"serial", serial, NULL};
  bus_packbuf b;
  enum MHD_Result res = MHD_NO;
  msgpack_zone z;
  msgpack_zone_init(&z, 2048);
  msgpack_object reply;
  if (cert_body(&b, kv) < 0)
    res = gw_reply_bus(r, BUS_EINVAL, bus_last_error());
  else if (!cert_call(r, "revoke", &b.sb, &z, &reply, &res) &&
           bus_view_wait_applied(
               r->h->view, (uint64_t)bus_obj_int(&reply, "seq", 0), 2000) >= 0)
    res = gw_reply(r, MHD_HTTP_OK, "application/json",
                   "{\"ok\":true,\"result\":\"revoked\"}\n", 31);
  msgpack_zone_destroy(&z);
  bus_packbuf_destroy(&b);
  return res;
}
