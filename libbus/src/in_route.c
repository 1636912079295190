/*
 * in_route.c - the route of what a node sends on its ingress,
 * lark.in.<node>.<kind>.<what>.<name>. Tokens are split as strtok splits
 * them (empty ones skipped); the name is the rest of the subject, dots
 * and all. Nothing here is trusted beyond the shape: the service checks
 * the kind, the lengths and what the view says of the sender.
 */
#include <string.h>

#include "bus.h"

int
bus_in_route_parse(const char *subject, bus_in_route *r) {
  memset(r, 0, sizeof *r);
  if (strncmp(subject, "lark.in.", 8) || strlen(subject + 8) >= sizeof r->buf)
    return bus_error(BUS_EINVAL, "not an ingress subject");
  strcpy(r->buf, subject + 8);
  char *save = NULL;
  r->node = strtok_r(r->buf, ".", &save);
  r->kind = r->node ? strtok_r(NULL, ".", &save) : NULL;
  r->what = r->kind ? strtok_r(NULL, ".", &save) : NULL;
  r->name = r->what ? strtok_r(NULL, "", &save) : NULL;
  return 0;
}
