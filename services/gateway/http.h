/*
 * http.h - lark-gateway's HTTP side (libmicrohttpd, a thread per
 * connection): the request's arguments and headers (http.c, the bottom),
 * authentication (http_auth.c, http_tls.c), replies and static files
 * (http_reply.c), REST reads and writes (http_rest.c, http_write.c),
 * streams (http_stream.c), the platform routes (http_misc.c), and on top
 * the server and its dispatcher (http_server.c). A file calls only files
 * below it.
 *
 * A request is read whole (its body at most max_body bytes) before it is
 * routed; every route then answers from the view the service loop keeps
 * (reads) or through the gateway's own connection (commands, feeds,
 * status). A stream's thread wakes at least every GW_TICK_MS to notice a
 * stopping server, a revoked certificate or an idle interval.
 */
#ifndef LARK_GATEWAY_HTTP_H
#define LARK_GATEWAY_HTTP_H

#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>

#include "gateway.h"
#include "svc.h"

enum {
  GW_TICK_MS = 250,           /* a stream's longest sleep */
  GW_BOOKMARK_MS = 10000,     /* idle watch: a BOOKMARK line this often */
  GW_TOKEN_MAX = 256,         /* the login token's longest */
  GW_USER_MAX = BUS_NAME_MAX, /* a token's or certificate's user */
  GW_MAX_CONNECTIONS = 1024   /* at once, watches included (a thread each) */
};

/* The gateway's own flags (main.c reads them). */
typedef struct gw_http_cfg {
  const char *http;       /* ADDR:PORT, plain, loopback only */
  const char *https;      /* ADDR:PORT */
  const char *token_file; /* the login token's file */
  const char *token_user; /* the token's actor; default "admin" */
  const char *tls_cert, *tls_key, *client_ca;
  const char *www;       /* the dashboard's files */
  const char *port_file; /* "http PORT\nhttps PORT\n" after bind */
  size_t max_body;       /* default 1 MiB */
} gw_http_cfg;

typedef struct gw_http {
  gw_http_cfg cfg;
  svc *s;
  bus_view *view;
  atomic_int stop;
  char token[GW_TOKEN_MAX + 1];
  size_t token_len;
  char www[PATH_MAX];
  struct MHD_Daemon *plain, *tls;
  char *cert_pem, *key_pem, *ca_pem;
  void *trust; /* gnutls_x509_trust_list_t of client_ca */
  uint16_t http_port, https_port;
} gw_http;

/* How a request was authenticated. */
enum {
  GW_AUTH_NONE,
  GW_AUTH_BEARER,
  GW_AUTH_QUERY,
  GW_AUTH_COOKIE,
  GW_AUTH_CERT
};

/* One request, kept by libmicrohttpd between calls (its con_cls). */
typedef struct gw_req {
  gw_http *h;
  struct MHD_Connection *conn;
  const char *method, *url; /* libmicrohttpd's, live for the request */
  int tls;
  gw_buf body;
  int too_big;
  int auth;
  char user[GW_USER_MAX + 1];
  char serial[80]; /* the client certificate's, lower-case hex */
} gw_req;

/* --- http_server.c */
int gw_http_start(gw_http *h, svc *s, bus_view *v);
void gw_http_stop(gw_http *h);

/* --- http.c: the request's basics */
/* A query argument, or NULL. */
const char *gw_arg(gw_req *r, const char *key);
const char *gw_header(gw_req *r, const char *key);
/* A whole-number argument into *out (left alone when absent); -1 when
 * given but not one. */
int gw_arg_count(gw_req *r, const char *key, uint64_t *out);
/* ?at= into *ns (0 when absent); -1 when given but not a time. */
int gw_arg_time(gw_req *r, const char *key, int64_t *ns);
/* Whether the client asked for Server-Sent Events. */
int gw_wants_sse(gw_req *r);

/* --- http_reply.c: every answer goes out through these. */
/* resp (destroyed here; NULL: MHD_NO) with status, content type and the
 * headers every answer carries. */
enum MHD_Result gw_queue(gw_req *r, unsigned status, struct MHD_Response *resp,
                         const char *type);
/* body (len bytes, copied) with status and content type. */
enum MHD_Result gw_reply(gw_req *r, unsigned status, const char *type,
                         const void *body, size_t len);
/* {"error":{"code","message","details":[...]}}; code bus_err_name(err). */
enum MHD_Result gw_reply_error(gw_req *r, unsigned status, int err,
                               const char *message,
                               const bus_field_err *details, int ndetails);
/* The HTTP status for a bus error code (400, 404, 409, 401, 403, 503...). */
unsigned gw_status_of(int err);
/* An error reply whose status follows err. */
enum MHD_Result gw_reply_bus(gw_req *r, int err, const char *message);
/* A file of the dashboard for url (no directory listing, no ".."). */
enum MHD_Result gw_reply_static(gw_req *r);
/* Add Set-Cookie lark_token when r authenticated by Bearer or ?token=. */
void gw_cookie_on(gw_req *r, struct MHD_Response *resp);

/* --- http_auth.c */
/* Fill r->auth and r->user; 0, or an HTTP status (401, 403) to refuse. */
unsigned gw_authenticate(gw_req *r);
/* 0, or 403 for a write that a cross-site page could have sent. */
unsigned gw_csrf_check(gw_req *r);
/* The token from token_file (refused when group or others may read it). */
int gw_token_load(gw_http *h);
/* 1 when ADDR of "ADDR:PORT" is a loopback address. */
int gw_addr_loopback(const char *addr);

/* --- http_tls.c */
int gw_tls_load(gw_http *h);
void gw_tls_free(gw_http *h);
/* The connection's client certificate: 0 with user (CN) and serial, or
 * a status (401) with why. */
unsigned gw_tls_user(gw_req *r, char *why, size_t cap);
/* Whether r's certificate has been revoked since (gw_cert_revoked). */
int gw_req_revoked(gw_req *r);

/* --- http_rest.c, http_write.c, http_stream.c, http_misc.c: routes */
enum MHD_Result gw_route_api(gw_req *r, const char *path);
enum MHD_Result gw_rest_read(gw_req *r, gw_kind k, const char *name);
enum MHD_Result gw_rest_write(gw_req *r, gw_kind k, const char *name,
                              const char *verb);
enum MHD_Result gw_watch(gw_req *r, gw_kind k, const gw_list_opts *o);
enum MHD_Result gw_events(gw_req *r);
enum MHD_Result gw_logs(gw_req *r, const char *job);
enum MHD_Result gw_status(gw_req *r);
enum MHD_Result gw_metrics(gw_req *r);
enum MHD_Result gw_readyz(gw_req *r);
enum MHD_Result gw_certificates(gw_req *r, const char *serial);

#endif
