/*
 * robot_req.c - a request line of the robot controller sockets
 * (robot_req.h):
 *
 *   {"op":"list"}
 *   {"op":"status"|"modes"|"stop"|"reset","robot":R}
 *   {"op":"start","robot":R,"mode":M?}
 *   {"op":"switch","robot":R,"mode":M}
 *
 * Names are device names (bus_name_valid). Anything else gets its
 * reason; nothing here trusts the line.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "bus.h"
#include "reqline.h"
#include "robot_req.h"

static const char *const op_names[] = {"list", "status", "modes", "start",
                                       "stop", "reset",  "switch"};

const char *
edge_robot_op_name(edge_robot_op op) {
  return (unsigned)op < sizeof op_names / sizeof *op_names ? op_names[op] : "?";
}

/* Field key of o, a name, into out (cap bytes); "" when absent. */
static int
name_of(const json_t *o, const char *key, char *out, size_t cap) {
  const json_t *v = json_object_get(o, key);
  const char *s = json_string_value(v);
  if (!v || json_is_null(v))
    return 0;
  if (!s || !bus_name_valid(s, cap - 1))
    return -1;
  snprintf(out, cap, "%s", s);
  return 0;
}

static int
parse_obj(const json_t *o, void *req, char *why, size_t whylen) {
  edge_robot_req *r = req;
  int i = edge_reqline_op(o, op_names, sizeof op_names / sizeof *op_names);
  if (i < 0)
    return edge_reqline_bad(
        why, whylen,
        "op must be list, status, modes, start, stop, reset or switch");
  r->op = (edge_robot_op)i;
  if (r->op == EDGE_ROBOT_LIST)
    return 0;
  if (name_of(o, "robot", r->robot, sizeof r->robot) || !r->robot[0])
    return edge_reqline_bad(why, whylen, "robot must be a robot's name");
  if (name_of(o, "mode", r->mode, sizeof r->mode))
    return edge_reqline_bad(why, whylen, "mode must be a mode's name");
  if (r->op == EDGE_ROBOT_SWITCH && !r->mode[0])
    return edge_reqline_bad(why, whylen, "switch needs a mode");
  if (r->op != EDGE_ROBOT_START && r->op != EDGE_ROBOT_SWITCH)
    r->mode[0] = 0; /* no other op takes one */
  return 0;
}

int
edge_robot_req_parse(const char *line, size_t len, edge_robot_req *r, char *why,
                     size_t whylen) {
  memset(r, 0, sizeof *r);
  return edge_reqline_parse(line, len, parse_obj, r, why, whylen);
}
