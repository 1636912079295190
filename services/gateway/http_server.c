/*
 * http_server.c - lark-gateway's server: the listening sockets (plain HTTP
 * on loopback only, HTTPS with client certificates), a request read whole
 * within the body limit, then authenticated and routed. It is the top of
 * the HTTP side: it calls the routes and authentication, none of which
 * calls it.
 *
 * libmicrohttpd runs a thread per connection, so a route may block (a
 * command's reply, a watch waiting for changes); gw_http_stop sets stop,
 * which every stream notices within GW_TICK_MS, before the daemons are
 * stopped (libmicrohttpd joins the connections' threads).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

/* Routes that need no authentication: a supervisor's probes. */
static enum MHD_Result
route_open(gw_req *r, const char *path, int *done) {
  *done = 1;
  if (!strcmp(path, "/healthz"))
    return gw_reply(r, MHD_HTTP_OK, "text/plain", "ok\n", 3);
  if (!strcmp(path, "/readyz"))
    return gw_readyz(r);
  *done = 0;
  return MHD_NO;
}

static enum MHD_Result
route(gw_req *r) {
  const char *path = r->url;
  int done;
  enum MHD_Result res = route_open(r, path, &done);
  if (done)
    return res;
  unsigned st = gw_authenticate(r);
  if (st)
    return gw_reply_error(r, st, BUS_EAUTH,
                          st == MHD_HTTP_FORBIDDEN
                              ? "forbidden"
                              : "a login token or a client certificate is "
                                "needed",
                          NULL, 0);
  if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD") &&
      (st = gw_csrf_check(r)))
    return gw_reply_error(r, st, BUS_EDENIED,
                          "a write authenticated by the cookie needs the "
                          "header X-Lark-Request: 1 and a same-origin Origin",
                          NULL, 0);
  if (r->too_big)
    return gw_reply_error(r, MHD_HTTP_CONTENT_TOO_LARGE, BUS_ETOO_BIG,
                          "the request body is larger than --max-body", NULL,
                          0);
  if (!strncmp(path, "/api/", 5))
    return gw_route_api(r, path);
  if (!strcmp(path, "/metrics"))
    return gw_metrics(r);
  if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD"))
    return gw_reply_error(r, MHD_HTTP_METHOD_NOT_ALLOWED, BUS_EINVAL,
                          "only GET here", NULL, 0);
  return gw_reply_static(r);
}

static gw_req *
req_new(gw_http *h, struct MHD_Connection *conn, const char *method,
        const char *url) {
  gw_req *r = calloc(1, sizeof *r);
  if (!r)
    return NULL;
  r->h = h;
  r->conn = conn;
  r->method = method;
  r->url = url;
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON);
  r->tls = ci && ci->daemon == h->tls;
  return r;
}

/* A body announced larger than the limit is refused before it is read. */
static int
announced_too_big(gw_req *r) {
  const char *cl = gw_header(r, MHD_HTTP_HEADER_CONTENT_LENGTH);
  return cl && strtoull(cl, NULL, 10) > r->h->cfg.max_body;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *conn, const char *url,
           const char *method, const char *version, const char *upload,
           size_t *upload_size, void **con_cls) {
  (void)version;
  gw_http *h = cls;
  gw_req *r = *con_cls;
  if (!r) {
    if (!(r = req_new(h, conn, method, url)))
      return MHD_NO;
    *con_cls = r;
    if (announced_too_big(r)) {
      r->too_big = 1;
      return gw_reply_error(r, MHD_HTTP_CONTENT_TOO_LARGE, BUS_ETOO_BIG,
                            "the request body is larger than --max-body", NULL,
                            0);
    }
    return MHD_YES;
  }
  if (*upload_size) {
    if (r->body.len + *upload_size > h->cfg.max_body)
      r->too_big = 1;
    else if (gw_buf_add(&r->body, upload, *upload_size))
      return MHD_NO;
    *upload_size = 0;
    return MHD_YES;
  }
  return route(r);
}

static void
on_done(void *cls, struct MHD_Connection *conn, void **con_cls,
        enum MHD_RequestTerminationCode why) {
  (void)cls, (void)conn, (void)why;
  gw_req *r = *con_cls;
  if (r) {
    gw_buf_free(&r->body);
    free(r);
    *con_cls = NULL;
  }
}

/* "ADDR:PORT" ("[::1]:8080" for IPv6) into a socket address. */
static int
parse_addr(const char *spec, struct sockaddr_storage *ss, socklen_t *len) {
  char host[256];
  const char *colon = strrchr(spec, ':');
  if (!colon || colon == spec)
    return -1;
  size_t hl = (size_t)(colon - spec);
  if (spec[0] == '[' && hl >= 2 && spec[hl - 1] == ']')
    snprintf(host, sizeof host, "%.*s", (int)(hl - 2), spec + 1);
  else
    snprintf(host, sizeof host, "%.*s", (int)hl, spec);
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
                           .ai_flags = AI_NUMERICSERV},
                  *ai = NULL;
  if (getaddrinfo(host, colon + 1, &hints, &ai) || !ai)
    return -1;
  memcpy(ss, ai->ai_addr, ai->ai_addrlen);
  *len = ai->ai_addrlen;
  freeaddrinfo(ai);
  return 0;
}

static uint16_t
bound_port(struct MHD_Daemon *d) {
  const union MHD_DaemonInfo *di =
      MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  return di ? di->port : 0;
}

static struct MHD_Daemon *
listen_on(gw_http *h, const char *spec, int tls) {
  struct sockaddr_storage ss;
  socklen_t len;
  if (parse_addr(spec, &ss, &len)) {
    SVC_LOG(h->s, SVC_ERROR, "-", 0, "%s: not ADDR:PORT", spec);
    return NULL;
  }
  /* poll, not select: a socket numbered past FD_SETSIZE still works */
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION |
                   MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
                   MHD_USE_ERROR_LOG;
  if (ss.ss_family == AF_INET6)
    flags |= MHD_USE_IPv6;
  struct MHD_OptionItem tlsopts[] = {
      {MHD_OPTION_HTTPS_MEM_CERT, 0, h->cert_pem},
      {MHD_OPTION_HTTPS_MEM_KEY, 0, h->key_pem},
      {MHD_OPTION_HTTPS_MEM_TRUST, 0, h->ca_pem},
      {MHD_OPTION_END, 0, NULL}};
  if (tls)
    flags |= MHD_USE_TLS;
  struct MHD_Daemon *d = MHD_start_daemon(
      flags, 0, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, &ss,
      MHD_OPTION_NOTIFY_COMPLETED, on_done, h, MHD_OPTION_CONNECTION_TIMEOUT,
      (unsigned)120, MHD_OPTION_CONNECTION_LIMIT, (unsigned)GW_MAX_CONNECTIONS,
      MHD_OPTION_ARRAY, tls ? tlsopts : tlsopts + 3, MHD_OPTION_END);
  if (!d)
    SVC_LOG(h->s, SVC_ERROR, "-", 0, "cannot listen on %s: %s", spec,
            strerror(errno));
  return d;
}

static int
write_port_file(gw_http *h) {
  char buf[64];
  int n = 0;
  if (h->plain)
    n += snprintf(buf + n, sizeof buf - (size_t)n, "http %u\n", h->http_port);
  if (h->tls)
    n += snprintf(buf + n, sizeof buf - (size_t)n, "https %u\n", h->https_port);
  return bus_file_write(h->cfg.port_file, buf, (size_t)n, 0644);
}

int
gw_http_start(gw_http *h, svc *s, bus_view *v) {
  h->s = s;
  h->view = v;
  if (h->cfg.http && !(h->plain = listen_on(h, h->cfg.http, 0)))
    return -1;
  if (h->cfg.https && !(h->tls = listen_on(h, h->cfg.https, 1))) {
    gw_http_stop(h);
    return -1;
  }
  h->http_port = h->plain ? bound_port(h->plain) : 0;
  h->https_port = h->tls ? bound_port(h->tls) : 0;
  if (h->cfg.port_file && write_port_file(h) < 0) {
    SVC_LOG(s, SVC_ERROR, "-", 0, "writing %s: %s", h->cfg.port_file,
            bus_last_error());
    gw_http_stop(h);
    return -1;
  }
  if (h->plain)
    SVC_LOG(s, SVC_INFO, "-", 0, "http on %s (port %u)", h->cfg.http,
            h->http_port);
  if (h->tls)
    SVC_LOG(s, SVC_INFO, "-", 0, "https on %s (port %u)", h->cfg.https,
            h->https_port);
  return 0;
}

void
gw_http_stop(gw_http *h) {
  atomic_store(&h->stop, 1);
  if (h->plain)
    MHD_stop_daemon(h->plain);
  if (h->tls)
    MHD_stop_daemon(h->tls);
  h->plain = h->tls = NULL;
}
