/*
 * camera_req.c - a request line of the camera socket (camera_req.h):
 *
 *   {"op":"list"}
 *   {"op":"open"|"watch"|"close","camera":C}
 *   {"op":"capture","camera":C,"count":N}      N: 1 to 1000000, default 1
 *
 * Anything else gets its reason; nothing here trusts the line.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "bus.h"
#include "camera_req.h"
#include "reqline.h"

static const char *const op_names[] = {"list", "open", "capture", "watch",
                                       "close"};

static int
parse_obj(const json_t *o, void *req, char *why, size_t whylen) {
  edge_cam_req *r = req;
  int i = edge_reqline_op(o, op_names, sizeof op_names / sizeof *op_names);
  if (i < 0)
    return edge_reqline_bad(why, whylen,
                            "op must be list, open, capture, watch or close");
  r->op = (edge_cam_op)i;
  r->count = 1;
  if (r->op == EDGE_CAM_LIST)
    return 0;
  const char *cam = json_string_value(json_object_get(o, "camera"));
  if (!cam || !bus_name_valid(cam, sizeof r->camera - 1))
    return edge_reqline_bad(why, whylen, "camera must be a camera's name");
  snprintf(r->camera, sizeof r->camera, "%s", cam);
  const json_t *count = json_object_get(o, "count");
  if (r->op != EDGE_CAM_CAPTURE || !count || json_is_null(count))
    return 0;
  json_int_t c = json_is_integer(count) ? json_integer_value(count) : 0;
  if (c < 1 || c > EDGE_CAM_COUNT_MAX)
    return edge_reqline_bad(why, whylen,
                            "count must be a whole number from 1 to 1000000");
  r->count = (uint32_t)c;
  return 0;
}

int
edge_cam_req_parse(const char *line, size_t len, edge_cam_req *r, char *why,
                   size_t whylen) {
  memset(r, 0, sizeof *r);
  return edge_reqline_parse(line, len, parse_obj, r, why, whylen);
}
