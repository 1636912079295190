/*
 * http_rest.c - the API's routes and its reads:
 *
 *   /api/v1/rlinf.io/v1alpha1/KIND[/NAME[/stop|resume|logs]]
 *   /api/v1/events   /api/v1/status   /api/v1/certificates[/SERIAL]
 *
 * A read answers from the gateway's view (gw_list, gw_get): the object
 * JSON was rendered when an event changed it, so a list costs what
 * copying it costs. ?at= reads the platform as it was then; ?watch=1
 * streams the changes (http_stream.c).
 */
#include <stdlib.h>
#include <string.h>

#include "http.h"

#define API_PREFIX "/api/v1/rlinf.io/v1alpha1/"

static enum MHD_Result
bad_arg(gw_req *r, const char *key, const char *reason) {
  bus_field_err e;
  snprintf(e.path, sizeof e.path, "%s", key);
  snprintf(e.reason, sizeof e.reason, "%s", reason);
  return gw_reply_error(r, MHD_HTTP_BAD_REQUEST, BUS_EINVAL,
                        "a query argument is not valid", &e, 1);
}

static enum MHD_Result
list(gw_req *r, gw_kind k) {
  gw_list_opts o;
  gw_list_opts_init(&o);
  uint64_t limit = 0, rv = 0;
  if (gw_arg_count(r, "limit", &limit))
    return bad_arg(r, "limit", "must be a whole number");
  if (gw_arg_time(r, "at", &o.at_ns))
    return bad_arg(r, "at",
                   "must be an RFC 3339 time, unix seconds or a "
                   "duration back from now (5m)");
  o.limit = (size_t)limit;
  o.cont = gw_arg(r, "continue");
  o.job = gw_arg(r, "job");
  o.node = gw_arg(r, "node");
  o.workflow = gw_arg(r, "workflow");
  const char *w = gw_arg(r, "watch");
  if (w && (!strcmp(w, "1") || !strcmp(w, "true"))) {
    if (o.at_ns)
      return bad_arg(r, "at", "a watch follows the present");
    return gw_watch(r, k, &o);
  }
  gw_buf b = {0};
  int rc = gw_list(r->h->view, k, &o, &b, &rv);
  enum MHD_Result res =
      rc ? gw_reply_bus(r, rc,
                        rc == BUS_EINVAL ? "the continue token is not "
                                           "valid"
                                         : bus_last_error())
         : gw_reply(r, MHD_HTTP_OK, "application/json", b.p, b.len);
  gw_buf_free(&b);
  return res;
}

static enum MHD_Result
get_one(gw_req *r, gw_kind k, const char *name) {
  int64_t at = 0;
  if (gw_arg_time(r, "at", &at))
    return bad_arg(r, "at",
                   "must be an RFC 3339 time, unix seconds or a "
                   "duration back from now (5m)");
  gw_buf b = {0};
  int rc = gw_get(r->h->view, k, name, at, &b);
  enum MHD_Result res;
  if (rc == BUS_ENOT_FOUND) {
    char msg[300];
    snprintf(msg, sizeof msg, "%s %s not found%s", gw_kind_name(k), name,
             at ? " at that time" : "");
    res = gw_reply_error(r, MHD_HTTP_NOT_FOUND, rc, msg, NULL, 0);
  } else if (rc) {
    res = gw_reply_bus(r, rc, bus_last_error());
  } else {
    res = gw_reply(r, MHD_HTTP_OK, "application/json", b.p, b.len);
  }
  gw_buf_free(&b);
  return res;
}

enum MHD_Result
gw_rest_read(gw_req *r, gw_kind k, const char *name) {
  return name ? get_one(r, k, name) : list(r, k);
}

static int
is(gw_req *r, const char *method) {
  return !strcmp(r->method, method);
}

static enum MHD_Result
no_method(gw_req *r) {
  return gw_reply_error(r, MHD_HTTP_METHOD_NOT_ALLOWED, BUS_EINVAL,
                        "that method is not served here", NULL, 0);
}

/* KIND[/NAME[/VERB]] after the API prefix. */
static enum MHD_Result
route_kind(gw_req *r, const char *rest) {
  char kind[32], name[BUS_DERIVED_NAME_MAX + 2] = "", verb[16] = "";
  size_t kl = strcspn(rest, "/");
  if (kl >= sizeof kind)
    return gw_reply_bus(r, BUS_ENOT_FOUND, "no such kind");
  memcpy(kind, rest, kl);
  kind[kl] = 0;
  int k = gw_kind_parse(kind);
  if (k < 0)
    return gw_reply_bus(r, BUS_ENOT_FOUND, "no such kind");
  if (rest[kl] == '/') {
    const char *n = rest + kl + 1;
    size_t nl = strcspn(n, "/");
    if (nl >= sizeof name ||
        (n[nl] == '/' && strlen(n + nl + 1) >= sizeof verb))
      return gw_reply_bus(r, BUS_ENOT_FOUND, "no such object");
    memcpy(name, n, nl);
    name[nl] = 0;
    if (n[nl] == '/')
      snprintf(verb, sizeof verb, "%s", n + nl + 1);
    if (!bus_name_valid(name, BUS_DERIVED_NAME_MAX))
      return bad_arg(r, "metadata.name", "not a valid name ([a-z0-9-])");
  }
  if (!strcmp(verb, "logs") && k == GW_JOBS && is(r, "GET"))
    return gw_logs(r, name);
  if (verb[0] && strcmp(verb, "stop") && strcmp(verb, "resume"))
    return gw_reply_bus(r, BUS_ENOT_FOUND, "no such route");
  if (verb[0])
    return is(r, "POST") ? gw_rest_write(r, (gw_kind)k, name, verb)
                         : no_method(r);
  if (is(r, "GET") || is(r, "HEAD"))
    return gw_rest_read(r, (gw_kind)k, name[0] ? name : NULL);
  if ((is(r, "POST") && !name[0]) || is(r, "PUT"))
    return gw_rest_write(r, (gw_kind)k, name[0] ? name : NULL, "apply");
  if (is(r, "DELETE") && name[0])
    return gw_rest_write(r, (gw_kind)k, name, "delete");
  return no_method(r);
}

enum MHD_Result
gw_route_api(gw_req *r, const char *path) {
  if (!strncmp(path, API_PREFIX, strlen(API_PREFIX)))
    return route_kind(r, path + strlen(API_PREFIX));
  if (!strcmp(path, "/api/v1/events"))
    return is(r, "GET") ? gw_events(r) : no_method(r);
  if (!strcmp(path, "/api/v1/status"))
    return is(r, "GET") ? gw_status(r) : no_method(r);
  if (!strcmp(path, "/api/v1/certificates"))
    return is(r, "POST") ? gw_certificates(r, NULL) : no_method(r);
  if (!strncmp(path, "/api/v1/certificates/", 21))
    return is(r, "DELETE") ? gw_certificates(r, path + 21) : no_method(r);
  return gw_reply_bus(r, BUS_ENOT_FOUND, "no such route");
}
