/*
 * manifest_yaml.c - the YAML front end: libyaml driven event by event
 * (its document loader would build alias graphs first), every event
 * deleted on every path, into the value of manifest_value.c. Plain
 * scalars take their type under the YAML 1.2 core schema, the supported
 * tags are honoured and others refused, anchors and aliases are refused,
 * nesting is checked as each container opens, and libyaml's errors become
 * "FILE doc N line L: ..." with the line of the problem.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "manifest-int.h"

#define YTAG "tag:yaml.org,2002:"

static int
is_null(const char *s, size_t n) {
  return n == 0 || mf_eq(s, n, "~") || mf_eq(s, n, "null") ||
         mf_eq(s, n, "Null") || mf_eq(s, n, "NULL");
}

static int
is_bool(const char *s, size_t n, int *v) {
  if (mf_eq(s, n, "true") || mf_eq(s, n, "True") || mf_eq(s, n, "TRUE"))
    return *v = 1, 1;
  if (mf_eq(s, n, "false") || mf_eq(s, n, "False") || mf_eq(s, n, "FALSE"))
    return *v = 0, 1;
  return 0;
}

static size_t
digits(const char *s, size_t n, int (*cls)(int)) {
  size_t i = 0;
  while (i < n && cls((unsigned char)s[i]))
    i++;
  return i;
}

static int
is_octal(int c) {
  return c >= '0' && c <= '7';
}

/*
 * An integer of the core schema into n: 1 when s is one, 0 when it is not,
 * -1 when it is one but does not fit 64 bits.
 */
static int
parse_int(const char *s, size_t len, lark_mnode *n) {
  char buf[80];
  int base = 10;
  size_t skip = 0;
  if (len > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
    base = s[1] == 'o' ? 8 : 16;
    skip = 2;
    if (digits(s + 2, len - 2, base == 8 ? is_octal : isxdigit) != len - 2)
      return 0;
  } else {
    size_t sign = len && (s[0] == '-' || s[0] == '+');
    if (len == sign || digits(s + sign, len - sign, isdigit) != len - sign)
      return 0;
  }
  if (len - skip >= sizeof buf)
    return -1;
  memcpy(buf, s + skip, len - skip);
  buf[len - skip] = 0;
  errno = 0;
  if (buf[0] == '-') {
    n->type = MN_INT;
    n->v.i = strtoll(buf, NULL, 10);
  } else {
    n->type = MN_UINT;
    n->v.u = strtoull(buf, NULL, base);
  }
  return errno == ERANGE ? -1 : 1;
}

static int
parse_float(const char *s, size_t len, double *f) {
  size_t i = len && (s[0] == '-' || s[0] == '+');
  if (mf_eq(s + i, len - i, ".inf") || mf_eq(s + i, len - i, ".Inf") ||
      mf_eq(s + i, len - i, ".INF"))
    return *f = s[0] == '-' ? -HUGE_VAL : HUGE_VAL, 1;
  if (mf_eq(s, len, ".nan") || mf_eq(s, len, ".NaN") || mf_eq(s, len, ".NAN"))
    return *f = NAN, 1;
  size_t d = digits(s + i, len - i, isdigit), frac = 0;
  i += d;
  if (i < len && s[i] == '.') {
    frac = digits(s + i + 1, len - i - 1, isdigit);
    i += 1 + frac;
  }
  if (d + frac == 0)
    return 0;
  if (i < len && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1 + (i + 1 < len && (s[i + 1] == '-' || s[i + 1] == '+'));
    size_t e = digits(s + j, len - j, isdigit);
    if (e == 0)
      return 0;
    i = j + e;
  }
  if (i != len)
    return 0;
  char buf[512];
  if (len >= sizeof buf)
    return 0;
  memcpy(buf, s, len);
  buf[len] = 0;
  *f = strtod(buf, NULL);
  return 1;
}

/* The core schema's scalars as resolvers: 1 when s is one (n then holds
 * it), 0 when not, -1 for an integer out of range. */
static int
res_float(const char *s, size_t len, lark_mnode *n) {
  return parse_float(s, len, &n->v.f) ? (n->type = MN_FLOAT, 1) : 0;
}

static int
res_bool(const char *s, size_t len, lark_mnode *n) {
  return is_bool(s, len, &n->v.b) ? (n->type = MN_BOOL, 1) : 0;
}

static int
res_null(const char *s, size_t len, lark_mnode *n) {
  return is_null(s, len) ? (n->type = MN_NULL, 1) : 0;
}

static const struct {
  const char *tag;
  int (*res)(const char *s, size_t len, lark_mnode *n);
  const char *refused; /* under the explicit tag */
} scalars[] = {
    {YTAG "int", parse_int, "!!int: not an integer"},
    {YTAG "float", res_float, "!!float: not a number"},
    {YTAG "bool", res_bool, "!!bool: not true or false"},
    {YTAG "null", res_null, "!!null: not null"},
};

/* A plain scalar's type under the core schema (tag NULL) or its tag. */
static int
resolve(pctx *p, lark_mnode *n, const char *tag, const char *s, size_t len) {
  for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
    if (tag && strcmp(tag, scalars[i].tag))
      continue;
    int r = scalars[i].res(s, len, n);
    if (r < 0)
      return mf_fail(p, BUS_EMALFORMED, p->pos, n->line,
                     "integer %.*s does not fit 64 bits",
                     (int)(len > 40 ? 40 : len), s);
    if (r > 0)
      return 0;
    if (tag)
      return mf_fail(p, BUS_EMALFORMED, p->pos, n->line, "%s",
                     scalars[i].refused);
  }
  if (!tag)
    return 0;
  return mf_fail(p, BUS_EMALFORMED, p->pos, n->line,
                 "tag %.64s is not supported", tag);
}

typedef struct ystate {
  lark_mnode *stack[LARK_MANIFEST_MAX_DEPTH];
  int depth;
  lark_mnode *root;
  int in_doc, done;
} ystate;

static int
yadd(pctx *p, ystate *y, lark_mnode *n) {
  if (y->depth == 0) {
    y->root = n;
    return 0;
  }
  return mf_node_add(p, y->stack[y->depth - 1], n);
}

static int
ykey_position(const ystate *y) {
  const lark_mnode *top = y->depth ? y->stack[y->depth - 1] : NULL;
  return top && top->type == MN_MAP && top->count % 2 == 0;
}

static int
yscalar(pctx *p, ystate *y, const yaml_event_t *ev, int line) {
  const char *s = (const char *)ev->data.scalar.value;
  size_t len = ev->data.scalar.length;
  const char *tag = (const char *)ev->data.scalar.tag;
  lark_mnode *n = mf_str_new(p, s, len, line);
  if (!n)
    return p->rc;
  int key = ykey_position(y);
  int plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
  if (tag && (!strcmp(tag, "!") || !strcmp(tag, YTAG "str")))
    tag = NULL; /* a string, whatever it looks like */
  else if (key && tag)
    return mf_fail(p, BUS_EMALFORMED, p->pos, line,
                   "a mapping key must be a plain string");
  else if (!key && (tag || plain) && resolve(p, n, tag, s, len))
    return p->rc;
  return yadd(p, y, n);
}

static int
yopen(pctx *p, ystate *y, int type, const char *tag, int line) {
  const char *want = type == MN_MAP ? YTAG "map" : YTAG "seq";
  if (tag && strcmp(tag, want) && strcmp(tag, "!"))
    return mf_fail(p, BUS_EMALFORMED, p->pos, line,
                   "tag %.64s is not supported", tag);
  if (y->depth >= LARK_MANIFEST_MAX_DEPTH)
    return mf_fail(p, BUS_ETOO_BIG, p->pos, line, "nested deeper than %d",
                   LARK_MANIFEST_MAX_DEPTH);
  lark_mnode *n = mf_node_new(p, type, line);
  if (!n || yadd(p, y, n))
    return p->rc;
  y->stack[y->depth++] = n;
  return 0;
}

static int
yevent(pctx *p, ystate *y, const yaml_event_t *ev) {
  int line = (int)ev->start_mark.line + 1;
  switch (ev->type) {
  case YAML_STREAM_END_EVENT:
    y->done = 1;
    return 0;
  case YAML_DOCUMENT_START_EVENT:
    if (++p->pos > LARK_MANIFEST_MAX_DOCS)
      return mf_fail(p, BUS_ETOO_BIG, p->pos, line,
                     "more than %d documents in one file",
                     LARK_MANIFEST_MAX_DOCS);
    y->in_doc = 1;
    y->root = NULL;
    return 0;
  case YAML_DOCUMENT_END_EVENT:
    y->in_doc = 0;
    return y->root ? p->add_top(p, y->root, p->pos, 0) : 0;
  case YAML_ALIAS_EVENT:
    return mf_fail(p, BUS_EMALFORMED, p->pos, line,
                   "aliases (*%.64s) are not supported: write the value out",
                   (const char *)ev->data.alias.anchor);
  case YAML_SCALAR_EVENT:
  case YAML_SEQUENCE_START_EVENT:
  case YAML_MAPPING_START_EVENT: {
    const yaml_char_t *anchor =
        ev->type == YAML_SCALAR_EVENT           ? ev->data.scalar.anchor
        : ev->type == YAML_SEQUENCE_START_EVENT ? ev->data.sequence_start.anchor
                                                : ev->data.mapping_start.anchor;
    if (anchor)
      return mf_fail(p, BUS_EMALFORMED, p->pos, line,
                     "anchors (&%.64s) are not supported: write the value out",
                     (const char *)anchor);
    if (ev->type == YAML_SCALAR_EVENT)
      return yscalar(p, y, ev, line);
    if (ykey_position(y))
      return mf_fail(p, BUS_EMALFORMED, p->pos, line,
                     "a mapping key must be a scalar");
    if (ev->type == YAML_SEQUENCE_START_EVENT)
      return yopen(p, y, MN_SEQ, (const char *)ev->data.sequence_start.tag,
                   line);
    return yopen(p, y, MN_MAP, (const char *)ev->data.mapping_start.tag, line);
  }
  case YAML_SEQUENCE_END_EVENT:
  case YAML_MAPPING_END_EVENT:
    if (y->depth > 0)
      y->depth--;
    return 0;
  default:
    return 0;
  }
}

static int
yfail(pctx *p, const ystate *y, const yaml_parser_t *yp, const char *buf,
      size_t len) {
  int doc = y->in_doc ? p->pos : p->pos + 1;
  if (yp->error == YAML_MEMORY_ERROR)
    return mf_fail(p, -ENOMEM, doc, 0, "out of memory");
  int line = yp->error == YAML_READER_ERROR
                 ? mf_line_of_offset(buf, len, yp->problem_offset)
                 : (int)yp->problem_mark.line + 1;
  const char *problem = yp->problem ? yp->problem : "invalid YAML";
  int from = (int)yp->context_mark.line + 1;
  if (yp->context && from != line)
    return mf_fail(p, BUS_EMALFORMED, doc, line, "%s started on line %d, %s",
                   yp->context, from, problem);
  if (yp->context)
    return mf_fail(p, BUS_EMALFORMED, doc, line, "%s, %s", yp->context,
                   problem);
  return mf_fail(p, BUS_EMALFORMED, doc, line, "%s", problem);
}

int
mf_parse_yaml(pctx *p, const char *buf, size_t len) {
  yaml_parser_t yp;
  ystate y;
  memset(&y, 0, sizeof y);
  if (!yaml_parser_initialize(&yp))
    return mf_fail(p, -ENOMEM, 0, 0, "out of memory");
  yaml_parser_set_input_string(&yp, (const unsigned char *)buf, len);
  while (!y.done && !p->rc) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&yp, &ev)) {
      yfail(p, &y, &yp, buf, len);
      break;
    }
    yevent(p, &y, &ev);
    yaml_event_delete(&ev);
  }
  yaml_parser_delete(&yp);
  return p->rc;
}
