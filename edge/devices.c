/*
 * devices.c - the device file (devices.h) read with libyaml, event by
 * event: the file's shape is fixed, so each part of it is read by the
 * function that knows what may stand there, and anything else is refused
 * with the line it is on. Nothing of YAML beyond plain mappings,
 * sequences and scalars is taken (an alias is refused; tags and anchors
 * do not change what a value means).
 *
 * A problem inside one robot or camera is kept until its mapping ends,
 * so that the message can name the device even when its `name:` comes
 * after the bad line; a problem of the file's shape ends the parse at
 * once. Either way the first problem is the one reported, and every
 * event is deleted on every path.
 *
 * This is the parser's top: the stream, the document and its lists here,
 * each device read by devices_read.c (a robot's subnet by
 * devices_subnet.c), all of them on the event walking of devices_yaml.c.
 * None of those calls back up here; devices_use.c sits above.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "devices-int.h"

/* A list of robots or cameras: each a mapping read by one. */
static int
read_list(dparse *p, const char *what, int (*one)(dparse *p)) {
  if (dp_is_empty(p))
    return 0;
  if (p->ev.type != YAML_SEQUENCE_START_EVENT) {
    dp_fail(p, dp_line(p), "%s must be a list", what);
    return -1;
  }
  int more;
  while ((more = dp_each(p, YAML_SEQUENCE_END_EVENT)) > 0) {
    if (p->ev.type != YAML_MAPPING_START_EVENT) {
      dp_fail(p, dp_line(p), "%s: each item must be a mapping", what);
      return -1;
    }
    if (p->out->n >= EDGE_DEV_MAX) {
      dp_fail(p, dp_line(p), "more than %d devices", EDGE_DEV_MAX);
      return -1;
    }
    if (one(p))
      return -1;
  }
  return more;
}

/* The document's top mapping: robots: and cameras:, each at most once. */
static int
read_top(dparse *p) {
  int seen[2] = {0, 0};
  if (p->ev.type != YAML_MAPPING_START_EVENT) {
    dp_fail(p, dp_line(p),
            "the file must be a mapping of robots: and "
            "cameras:");
    return -1;
  }
  int more;
  while ((more = dp_each(p, YAML_MAPPING_END_EVENT)) > 0) {
    int line = dp_line(p);
    const char *k = p->ev.type == YAML_SCALAR_EVENT
                        ? (const char *)p->ev.data.scalar.value
                        : "";
    int i = !strcmp(k, "robots") ? 0 : !strcmp(k, "cameras") ? 1 : -1;
    if (i < 0) {
      dp_fail(p, line, "unknown key %.64s (robots and cameras are known)",
              *k ? k : "''");
      return -1;
    }
    if (seen[i]++) {
      dp_fail(p, line, "%s given twice", k);
      return -1;
    }
    if (dp_next(p) || read_list(p, i ? "cameras" : "robots",
                                i ? dp_read_camera : dp_read_robot))
      return -1;
  }
  return more;
}

/* The stream: no document (no devices) or one. */
static int
read_stream(dparse *p) {
  int docs = 0;
  for (;;) {
    if (dp_next(p))
      return -1;
    switch (p->ev.type) {
    case YAML_STREAM_END_EVENT:
      return 0;
    case YAML_DOCUMENT_START_EVENT:
      if (docs++) {
        dp_fail(p, dp_line(p), "one document only");
        return -1;
      }
      if (dp_next(p))
        return -1;
      if (!dp_is_empty(p) && read_top(p))
        return -1;
      break;
    default:
      break;
    }
  }
}

/* Robots first, then cameras, each in the file's order (the share rule of
 * `--device-share` counts in this order). */
static void
robots_first(edge_devices *d) {
  int r = 0;
  for (int i = 0; i < d->n; i++)
    if (d->v[i].kind != EDGE_DEV_CAMERA) {
      edge_device t = d->v[i];
      memmove(&d->v[r + 1], &d->v[r], (size_t)(i - r) * sizeof t);
      d->v[r++] = t;
    }
}

int
edge_devices_parse(const char *text, size_t len, edge_devices *out, char *err,
                   size_t errlen) {
  char spare[8];
  dparse p = {.out = out, .err = errlen ? err : spare};
  p.errlen = errlen ? errlen : sizeof spare;
  *p.err = 0;
  out->v = NULL;
  out->n = 0;
  if (!yaml_parser_initialize(&p.y)) {
    snprintf(p.err, p.errlen, "out of memory");
    return -1;
  }
  yaml_parser_set_input_string(&p.y, (const unsigned char *)text, len);
  read_stream(&p);
  if (p.have)
    yaml_event_delete(&p.ev);
  yaml_parser_delete(&p.y);
  if (p.rc) {
    edge_devices_free(out);
    return -1;
  }
  robots_first(out);
  return 0;
}

void
edge_devices_free(edge_devices *d) {
  for (int i = 0; i < d->n; i++)
    dp_device_free(&d->v[i]);
  free(d->v);
  d->v = NULL;
  d->n = 0;
}
