/*
 * reqline.c - what the controller sockets' request parsers share
 * (reqline.h). Nothing here trusts the line.
 */
#include <stdio.h>
#include <string.h>

#include "reqline.h"

int
edge_reqline_bad(char *why, size_t whylen, const char *reason) {
  snprintf(why, whylen, "%s", reason);
  return -1;
}

int
edge_reqline_op(const json_t *o, const char *const *names, int n) {
  const char *op = json_string_value(json_object_get(o, "op"));
  for (int i = 0; op && i < n; i++)
    if (!strcmp(op, names[i]))
      return i;
  return -1;
}

int
edge_reqline_parse(const char *line, size_t len, edge_reqline_fn fn, void *req,
                   char *why, size_t whylen) {
  json_error_t e;
  json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &e);
  if (!o || !json_is_object(o)) {
    json_decref(o);
    return edge_reqline_bad(why, whylen,
                            "a request is one JSON object on a line");
  }
  int rc = fn(o, req, why, whylen);
  json_decref(o);
  return rc;
}
