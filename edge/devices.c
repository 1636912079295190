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
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "devices-int.h"

void
dp_fail(dparse *p, int line, const char *fmt, ...) {
  if (p->rc)
    return;
  p->rc = -1;
  int n = snprintf(p->err, p->errlen, "line %d: ", line);
  if (n < 0 || (size_t)n >= p->errlen)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
  va_end(ap);
}

int
dp_problem(dparse *p, int line, const char *fmt, ...) {
  if (p->pline)
    return -1;
  p->pline = line;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->pmsg, sizeof p->pmsg, fmt, ap);
  va_end(ap);
  return -1;
}

int
dp_line(const dparse *p) {
  return (int)p->ev.start_mark.line + 1;
}

/* libyaml's own error, with the line it names. */
static int
yaml_fail(dparse *p) {
  const yaml_parser_t *y = &p->y;
  if (y->error == YAML_MEMORY_ERROR) {
    dp_fail(p, 0, "out of memory");
    return -1;
  }
  int line = (int)y->problem_mark.line + 1;
  if (y->context)
    dp_fail(p, line, "%s (line %d), %s", y->context,
            (int)y->context_mark.line + 1,
            y->problem ? y->problem : "invalid YAML");
  else
    dp_fail(p, line, "%s", y->problem ? y->problem : "invalid YAML");
  return -1;
}

int
dp_next(dparse *p) {
  if (p->rc)
    return -1;
  if (p->have)
    yaml_event_delete(&p->ev);
  p->have = 0;
  if (!yaml_parser_parse(&p->y, &p->ev))
    return yaml_fail(p);
  p->have = 1;
  if (p->ev.type == YAML_ALIAS_EVENT) {
    dp_fail(p, dp_line(p), "aliases (*%.64s) are not supported",
            (const char *)p->ev.data.alias.anchor);
    return -1;
  }
  return 0;
}

int
dp_each(dparse *p, yaml_event_type_t end) {
  if (dp_next(p))
    return -1;
  return p->ev.type != end;
}

int
dp_skip(dparse *p) {
  int depth = 0;
  for (;;) {
    switch (p->ev.type) {
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
      depth++;
      break;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
      depth--;
      break;
    default:
      break;
    }
    if (depth <= 0)
      return 0;
    if (dp_next(p))
      return -1;
  }
}

int
dp_is_empty(const dparse *p) {
  const yaml_event_t *e = &p->ev;
  if (e->type != YAML_SCALAR_EVENT ||
      e->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
    return 0;
  const char *s = (const char *)e->data.scalar.value;
  return !*s || !strcmp(s, "~") || !strcmp(s, "null");
}

int
dp_str(dparse *p, const char *what, char *dst, size_t cap) {
  if (p->ev.type != YAML_SCALAR_EVENT) {
    dp_problem(p, dp_line(p), "%s must be a string", what);
    return dp_skip(p);
  }
  const char *s = (const char *)p->ev.data.scalar.value;
  size_t n = p->ev.data.scalar.length;
  if (memchr(s, 0, n))
    dp_problem(p, dp_line(p), "%s holds a NUL byte", what);
  else if (n >= cap)
    dp_problem(p, dp_line(p), "%s is longer than %zu bytes", what, cap - 1);
  else
    memcpy(dst, s, n + 1);
  return 0;
}

int
dp_uint(dparse *p, const char *what, unsigned max, unsigned *dst) {
  char buf[16] = "";
  int line = dp_line(p), was = p->pline;
  if (dp_str(p, what, buf, sizeof buf))
    return -1;
  if (p->pline != was)
    return 0;
  char *end;
  errno = 0;
  unsigned long v = strtoul(buf, &end, 10);
  if (!*buf || *buf < '0' || *buf > '9' || *end || errno || v > max)
    dp_problem(p, line, "%s must be a whole number from 0 to %u", what, max);
  else
    *dst = (unsigned)v;
  return 0;
}

/* One more string on a NULL-terminated argv. */
static int
argv_push(char ***argv, int *argc, const char *s, size_t n) {
  char **v = realloc(*argv, (size_t)(*argc + 2) * sizeof *v);
  if (!v)
    return -1;
  *argv = v;
  if (!(v[*argc] = malloc(n + 1)))
    return -1;
  memcpy(v[*argc], s, n + 1);
  v[++*argc] = NULL;
  return 0;
}

void
dp_argv_free(char **argv) {
  for (char **a = argv; a && *a; a++)
    free(*a);
  free(argv);
}

int
dp_argv(dparse *p, const char *what, char ***argv, int *argc) {
  int line = dp_line(p);
  if (p->ev.type != YAML_SEQUENCE_START_EVENT) {
    dp_problem(p, line, "%s must be a list of strings", what);
    return dp_skip(p);
  }
  int more;
  while ((more = dp_each(p, YAML_SEQUENCE_END_EVENT)) > 0) {
    const yaml_event_t *e = &p->ev;
    if (e->type != YAML_SCALAR_EVENT) {
      dp_problem(p, dp_line(p), "%s must be a list of strings", what);
      if (dp_skip(p))
        return -1;
      continue;
    }
    const char *s = (const char *)e->data.scalar.value;
    size_t n = e->data.scalar.length;
    if (memchr(s, 0, n) || n >= EDGE_DEV_PATH_SZ)
      dp_problem(p, dp_line(p),
                 "%s: an argument holds a NUL byte or is "
                 "longer than %d bytes",
                 what, EDGE_DEV_PATH_SZ - 1);
    else if (*argc >= EDGE_DEV_ARGV_MAX)
      dp_problem(p, dp_line(p), "%s has more than %d arguments", what,
                 EDGE_DEV_ARGV_MAX);
    else if (argv_push(argv, argc, s, n)) {
      dp_fail(p, line, "out of memory");
      return -1;
    }
  }
  return more;
}

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
