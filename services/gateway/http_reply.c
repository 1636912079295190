/*
 * http_reply.c - how lark-gateway answers: a body with its status, the
 * JSON error form {"error":{"code","message","details":[{path,reason}]}}
 * whose code is a bus_err_name, and the dashboard's static files.
 *
 * Static files are served from --www only: a path with a ".." segment or
 * one that resolves (symbolic links followed) outside the directory is
 * 404, and so is a directory (no listing); "/" is index.html.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http.h"

static const char *
safe(const char *s) {
  return s ? s : "";
}

void
gw_cookie_on(gw_req *r, struct MHD_Response *resp) {
  if (r->auth != GW_AUTH_BEARER && r->auth != GW_AUTH_QUERY)
    return;
  char c[GW_TOKEN_MAX + 96];
  snprintf(c, sizeof c, "lark_token=%s; HttpOnly; SameSite=Strict; Path=/%s",
           r->h->token, r->tls ? "; Secure" : "");
  MHD_add_response_header(resp, MHD_HTTP_HEADER_SET_COOKIE, c);
}

enum MHD_Result
gw_queue(gw_req *r, unsigned status, struct MHD_Response *resp,
         const char *type) {
  if (!resp)
    return MHD_NO;
  if (type)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  enum MHD_Result res = MHD_queue_response(r->conn, status, resp);
  MHD_destroy_response(resp);
  return res;
}

enum MHD_Result
gw_reply(gw_req *r, unsigned status, const char *type, const void *body,
         size_t len) {
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
  return gw_queue(r, status, resp, type);
}

enum MHD_Result
gw_reply_error(gw_req *r, unsigned status, int err, const char *message,
               const bus_field_err *details, int ndetails) {
  gw_buf b = {0};
  gw_buf_printf(&b,
                "{\"error\":{\"code\":\"%s\",\"message\":", bus_err_name(err));
  gw_buf_json_str(&b, safe(message));
  gw_buf_add(&b, ",\"details\":[", 12);
  for (int i = 0; i < ndetails; i++) {
    gw_buf_add(&b, i ? ",{\"path\":" : "{\"path\":", i ? 9 : 8);
    gw_buf_json_str(&b, details[i].path);
    gw_buf_add(&b, ",\"reason\":", 10);
    gw_buf_json_str(&b, details[i].reason);
    gw_buf_add(&b, "}", 1);
  }
  gw_buf_add(&b, "]}}\n", 4);
  enum MHD_Result res =
      b.p ? gw_reply(r, status, "application/json", b.p, b.len) : MHD_NO;
  gw_buf_free(&b);
  return res;
}

unsigned
gw_status_of(int err) {
  switch (err) {
  case BUS_EINVAL:
  case BUS_EMALFORMED:
  case BUS_EMISSING:
  case BUS_EFIELD:
  case BUS_ENAME:
  case BUS_EUNKNOWN_TYPE:
  case BUS_EVERSION:
    return MHD_HTTP_BAD_REQUEST;
  case BUS_ENOT_FOUND:
    return MHD_HTTP_NOT_FOUND;
  case BUS_ECONFLICT:
  case BUS_EEXISTS:
    return MHD_HTTP_CONFLICT;
  case BUS_EAUTH:
    return MHD_HTTP_UNAUTHORIZED;
  case BUS_EDENIED:
    return MHD_HTTP_FORBIDDEN;
  case BUS_ETOO_BIG:
    return MHD_HTTP_CONTENT_TOO_LARGE;
  case BUS_ETIMEOUT:
  case BUS_ECONN:
  case BUS_ENO_STREAM:
  case BUS_EBROKER:
    return MHD_HTTP_SERVICE_UNAVAILABLE;
  default:
    return MHD_HTTP_INTERNAL_SERVER_ERROR;
  }
}

enum MHD_Result
gw_reply_bus(gw_req *r, int err, const char *message) {
  return gw_reply_error(r, gw_status_of(err), err, message, NULL, 0);
}

static const struct {
  const char *ext, *type;
} types[] = {{".html", "text/html; charset=utf-8"},
             {".js", "text/javascript; charset=utf-8"},
             {".css", "text/css; charset=utf-8"},
             {".json", "application/json"},
             {".svg", "image/svg+xml"},
             {".png", "image/png"},
             {".ico", "image/x-icon"},
             {".txt", "text/plain; charset=utf-8"},
             {NULL, NULL}};

static const char *
type_of(const char *path) {
  const char *dot = strrchr(path, '.');
  for (size_t i = 0; dot && types[i].ext; i++)
    if (!strcmp(dot, types[i].ext))
      return types[i].type;
  return "application/octet-stream";
}

/* The file under www for url; -1 when it is none to serve. */
static int
open_static(gw_req *r, char *full, size_t cap) {
  const char *url = r->url;
  if (!r->h->www[0] || url[0] != '/' || strstr(url, "/..") || strchr(url, '\\'))
    return -1;
  char want[PATH_MAX];
  if (snprintf(want, sizeof want, "%s%s", r->h->www,
               strcmp(url, "/") ? url : "/index.html") >= (int)sizeof want)
    return -1;
  if (!realpath(want, full))
    return -1;
  size_t n = strlen(r->h->www);
  if (strncmp(full, r->h->www, n) || full[n] != '/')
    return -1;
  (void)cap;
  int fd = open(full, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
    close(fd);
    fd = -1;
  }
  return fd;
}

enum MHD_Result
gw_reply_static(gw_req *r) {
  char full[PATH_MAX];
  int fd = open_static(r, full, sizeof full);
  if (fd < 0)
    return gw_reply_error(r, MHD_HTTP_NOT_FOUND, BUS_ENOT_FOUND, "no such page",
                          NULL, 0);
  struct stat st;
  fstat(fd, &st);
  struct MHD_Response *resp =
      MHD_create_response_from_fd((uint64_t)st.st_size, fd);
  if (!resp) {
    close(fd);
    return MHD_NO;
  }
  gw_cookie_on(r, resp);
  return gw_queue(r, MHD_HTTP_OK, resp, type_of(full));
}
