/*
 * devices_yaml.c - the bottom of the device file's parser: walking
 * libyaml's events (dp_next, dp_each, dp_skip; an alias refused), the
 * scalars and lists a value may be (a string, a whole number, a list of
 * strings), and keeping the parse's problems (dp_fail ends the parse,
 * dp_problem notes a device's first). It knows nothing of robots,
 * cameras or the file's shape, and calls none of the parser's other
 * files; devices-int.h states the reading convention they all keep.
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
