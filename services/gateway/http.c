/*
 * http.c - the request's basics every route shares: its query arguments
 * and headers, and the arguments read the same way wherever they appear
 * (a count, a time, whether the client wants Server-Sent Events).
 *
 * This is the bottom of the HTTP side: it calls no other http*.c file;
 * the routes (http_rest.c, http_stream.c, ...) and the server that
 * dispatches to them (http_server.c) build on it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "timearg.h"

const char *
gw_arg(gw_req *r, const char *key) {
  return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *
gw_header(gw_req *r, const char *key) {
  return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, key);
}

int
gw_arg_time(gw_req *r, const char *key, int64_t *ns) {
  const char *v = gw_arg(r, key);
  *ns = 0;
  return v && *v ? lark_time_parse(v, ns) : 0;
}

int
gw_wants_sse(gw_req *r) {
  const char *a = gw_header(r, MHD_HTTP_HEADER_ACCEPT);
  return a && strstr(a, "text/event-stream") != NULL;
}

int
gw_arg_count(gw_req *r, const char *key, uint64_t *out) {
  const char *v = gw_arg(r, key);
  char *end;
  if (!v || !*v)
    return 0;
  errno = 0;
  unsigned long long n = strtoull(v, &end, 10);
  if (errno || *end || *v == '-')
    return -1;
  *out = n;
  return 0;
}
