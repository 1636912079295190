/*
 * manifest.c - YAML and JSON manifests into msgpack resources.
 *
 * Both front ends build the same small tree (lark_mnode, in an arena);
 * one packer turns it into msgpack, and the tree keeps each value's line
 * so a schema error's path can be mapped back to the file.
 *
 * Invariants: the tree is never deeper than LARK_MANIFEST_MAX_DEPTH
 * (checked as each container opens, before anything recurses) plus the
 * one level task_runtime may add, so every recursive walk here is bounded; the
 * node count and the input size bound memory; YAML aliases never reach the
 * tree, so no value is shared and packing is linear in the input. libyaml is
 * driven event by event (its document loader would build alias graphs first),
 * and every event is deleted on every path.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <yaml.h>

#include "manifest.h"

enum { MN_NULL, MN_BOOL, MN_INT, MN_UINT, MN_FLOAT, MN_STR, MN_SEQ, MN_MAP };

struct lark_mnode {
  int type;
  int line;
  union {
    int b;
    int64_t i;
    uint64_t u;
    double f;
    struct {
      const char *p;
      size_t n;
    } s;
  } v;
  uint32_t count; /* children; a map holds key, value, key, value ... */
  lark_mnode *first, *last, *next;
};

static const lark_kind kinds[] = {
    {"Job", "job", "jobs", NULL, "lark-scheduler"},
    {"Workflow", "workflow", "workflows", "wf", "lark-dag"},
    {"Node", "node", "nodes", NULL, "lark-scheduler"},
    {"Domain", "domain", "domains", NULL, "lark-ipam"},
};

const lark_kind *
lark_kind_find(const char *name) {
  for (size_t i = 0; name && i < sizeof kinds / sizeof kinds[0]; i++) {
    const lark_kind *k = &kinds[i];
    if (!strcasecmp(name, k->kind) || !strcasecmp(name, k->plural) ||
        (k->short_ && !strcasecmp(name, k->short_)))
      return k;
  }
  return NULL;
}

/* ------------------------------------------------------------------ arena */

typedef struct block {
  struct block *next;
  size_t used, cap;
  max_align_t data[];
} block;

struct lark_arena {
  block *head;
};

static void *
arena_alloc(lark_arena *a, size_t n) {
  size_t al = sizeof(max_align_t);
  n = (n + al - 1) / al * al;
  block *b = a->head;
  if (!b || b->cap - b->used < n) {
    size_t cap = n > 65536 ? n : 65536;
    b = malloc(sizeof *b + cap);
    if (!b)
      return NULL;
    b->next = a->head;
    b->used = 0;
    b->cap = cap;
    a->head = b;
  }
  void *p = (char *)b->data + b->used;
  b->used += n;
  return p;
}

static void
arena_free(lark_arena *a) {
  if (!a)
    return;
  for (block *b = a->head, *next; b; b = next) {
    next = b->next;
    free(b);
  }
  free(a);
}

/* ----------------------------------------------------------- parse state */

typedef struct pctx {
  const char *file;
  lark_arena *a;
  char *err;
  size_t errcap;
  int rc;  /* first error; the rest of the parse is abandoned */
  int pos; /* documents (YAML) or resources (JSON) started so far */
  size_t nodes;
  lark_doc *docs;
  size_t ndocs, cap;
} pctx;

static int fail(pctx *p, int rc, int doc, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int
fail(pctx *p, int rc, int doc, int line, const char *fmt, ...) {
  if (p->rc)
    return p->rc;
  p->rc = rc;
  if (!p->err || !p->errcap)
    return rc;
  char what[384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  char where[64] = "";
  int used = 0;
  if (doc > 0)
    used = snprintf(where, sizeof where, " doc %d", doc);
  if (line > 0)
    snprintf(where + used, sizeof where - (size_t)used, " line %d", line);
  snprintf(p->err, p->errcap, "%s%s: %s", p->file, where, what);
  return rc;
}

static lark_mnode *
node_new(pctx *p, int type, int line) {
  if (++p->nodes > LARK_MANIFEST_MAX_NODES) {
    fail(p, BUS_ETOO_BIG, p->pos, line, "more than %d values in the file",
         LARK_MANIFEST_MAX_NODES);
    return NULL;
  }
  lark_mnode *n = arena_alloc(p->a, sizeof *n);
  if (!n) {
    fail(p, -ENOMEM, p->pos, line, "out of memory");
    return NULL;
  }
  memset(n, 0, sizeof *n);
  n->type = type;
  n->line = line;
  return n;
}

static lark_mnode *
str_new(pctx *p, const char *s, size_t len, int line) {
  lark_mnode *n = node_new(p, MN_STR, line);
  char *copy = n ? arena_alloc(p->a, len + 1) : NULL;
  if (n && !copy) {
    fail(p, -ENOMEM, p->pos, line, "out of memory");
    return NULL;
  }
  if (!n)
    return NULL;
  memcpy(copy, s, len);
  copy[len] = 0;
  n->v.s.p = copy;
  n->v.s.n = len;
  return n;
}

static const lark_mnode *
map_find(const lark_mnode *map, const char *key, size_t len) {
  if (!map || map->type != MN_MAP)
    return NULL;
  for (const lark_mnode *k = map->first; k && k->next; k = k->next->next)
    if (k->v.s.n == len && !memcmp(k->v.s.p, key, len))
      return k->next;
  return NULL;
}

/* Append child to parent; a map's keys must be unique strings. */
static int
node_add(pctx *p, lark_mnode *parent, lark_mnode *child) {
  if (parent->type == MN_MAP && parent->count % 2 == 0) {
    if (child->type != MN_STR)
      return fail(p, BUS_EMALFORMED, p->pos, child->line,
                  "a mapping key must be a scalar");
    if (parent->count / 2 >= LARK_MANIFEST_MAX_KEYS)
      return fail(p, BUS_ETOO_BIG, p->pos, child->line,
                  "more than %d keys in one mapping", LARK_MANIFEST_MAX_KEYS);
    if (map_find(parent, child->v.s.p, child->v.s.n))
      return fail(p, BUS_EMALFORMED, p->pos, child->line,
                  "duplicate key '%.*s'",
                  (int)(child->v.s.n > 64 ? 64 : child->v.s.n), child->v.s.p);
  }
  if (parent->last)
    parent->last->next = child;
  else
    parent->first = child;
  parent->last = child;
  parent->count++;
  return 0;
}

static int
eq(const char *s, size_t n, const char *lit) {
  return strlen(lit) == n && !memcmp(s, lit, n);
}

/* ---------------------------------------------------------------- packing */

static int
pack_node(msgpack_packer *pk, const lark_mnode *n) {
  int rc = 0;
  switch (n->type) {
  case MN_BOOL:
    return n->v.b ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
  case MN_INT:
    return msgpack_pack_int64(pk, n->v.i);
  case MN_UINT:
    return msgpack_pack_uint64(pk, n->v.u);
  case MN_FLOAT:
    return msgpack_pack_double(pk, n->v.f);
  case MN_STR:
    return msgpack_pack_str_with_body(pk, n->v.s.p, n->v.s.n);
  case MN_SEQ:
    rc = msgpack_pack_array(pk, n->count);
    break;
  case MN_MAP:
    rc = msgpack_pack_map(pk, n->count / 2);
    break;
  default:
    return msgpack_pack_nil(pk);
  }
  for (const lark_mnode *c = n->first; c && !rc; c = c->next)
    rc = pack_node(pk, c);
  return rc;
}

static void
copy_str(const lark_mnode *map, const char *key, char *out, size_t cap) {
  const lark_mnode *v = map_find(map, key, strlen(key));
  out[0] = 0;
  if (v && v->type == MN_STR && v->v.s.n < cap &&
      !memchr(v->v.s.p, 0, v->v.s.n))
    memcpy(out, v->v.s.p, v->v.s.n + 1);
}

/* ---------------------------------------------------- task runtimes */

/*
 * The reference platform writes a task's runtime directly in the task
 * (`raw: {...}` next to `name`); larkbus has always stored it wrapped,
 * `runtime: {raw: {...}}`. The wrapped form stays the one stored: every
 * job.submitted and workflow.submitted already in a log has it, so the
 * scheduler, lark-dag, the edge and the replay of old events keep one
 * shape, and the reader alone knows the other.
 */
static const char *const task_runtimes[] = {"raw", "kubernetes", "docker"};

static int
is_runtime_key(const lark_mnode *k) {
  for (size_t i = 0; i < sizeof task_runtimes / sizeof task_runtimes[0]; i++)
    if (eq(k->v.s.p, k->v.s.n, task_runtimes[i]))
      return 1;
  return 0;
}

/* A value of map, mutable: the tree is the reader's own until packed. */
static lark_mnode *
map_get(lark_mnode *map, const char *key) {
  if (!map || map->type != MN_MAP)
    return NULL;
  for (lark_mnode *k = map->first; k && k->next; k = k->next->next)
    if (eq(k->v.s.p, k->v.s.n, key))
      return k->next;
  return NULL;
}

/*
 * One task: a runtime written directly in it becomes `runtime: {<rt>:
 * value}` in place (the key node renamed, the value wrapped in a new map
 * at the same position), so both forms pack to the same bytes and a
 * schema error's path still finds the value's line. This adds one level
 * below the task, within the depth libbus accepts (see
 * LARK_MANIFEST_MAX_DEPTH). A task with both forms, or with two runtimes
 * in either, is refused here, naming it: which one was meant is the
 * user's call.
 */
static int
task_runtime(pctx *p, lark_mnode *task, const char *who, int index) {
  if (task->type != MN_MAP)
    return 0; /* the schema check says what is wrong */
  char name[BUS_NAME_MAX + 1];
  copy_str(task, "name", name, sizeof name);
  if (!name[0])
    snprintf(name, sizeof name, "(unnamed)");
  const lark_mnode *wrap = map_find(task, "runtime", 7);
  lark_mnode *key = NULL;
  for (lark_mnode *k = task->first; k && k->next; k = k->next->next) {
    if (!is_runtime_key(k))
      continue;
    if (wrap)
      return fail(p, BUS_EFIELD, index, k->line,
                  "%stask %s: both runtime and %s given; write the runtime "
                  "once",
                  who, name, k->v.s.p);
    if (key)
      return fail(p, BUS_EFIELD, index, k->line,
                  "%stask %s: two runtimes (%s and %s); a task has one", who,
                  name, key->v.s.p, k->v.s.p);
    key = k;
  }
  if (wrap && wrap->type == MN_MAP && wrap->count > 2)
    return fail(p, BUS_EFIELD, index, wrap->line,
                "%stask %s: two runtimes (%s and %s) in runtime; a task has "
                "one",
                who, name, wrap->first->v.s.p, wrap->first->next->next->v.s.p);
  if (!key)
    return 0;
  lark_mnode *val = key->next;
  lark_mnode *m = node_new(p, MN_MAP, key->line);
  lark_mnode *inner = m ? str_new(p, key->v.s.p, key->v.s.n, key->line) : NULL;
  if (!inner)
    return p->rc;
  m->next = val->next;
  if (task->last == val)
    task->last = m;
  key->next = m;
  key->v.s.p = "runtime";
  key->v.s.n = 7;
  val->next = NULL;
  m->first = inner;
  inner->next = val;
  m->last = val;
  m->count = 2;
  return 0;
}

/* Every task of a Job, or of each template of a Workflow. */
static int
normalise_tasks(pctx *p, lark_mnode *root, const char *kind, int index) {
  lark_mnode *spec = map_get(root, "spec");
  if (!strcmp(kind, "Job")) {
    lark_mnode *ts = map_get(spec, "tasks");
    for (lark_mnode *t = ts && ts->type == MN_SEQ ? ts->first : NULL; t;
         t = t->next)
      if (task_runtime(p, t, "", index))
        return p->rc;
    return 0;
  }
  if (strcmp(kind, "Workflow"))
    return 0;
  lark_mnode *jt = map_get(spec, "jobTemplates");
  for (lark_mnode *j = jt && jt->type == MN_SEQ ? jt->first : NULL; j;
       j = j->next) {
    char who[BUS_NAME_MAX + 16], tmpl[BUS_NAME_MAX + 1];
    copy_str(j, "name", tmpl, sizeof tmpl);
    snprintf(who, sizeof who, "template %s, ", tmpl);
    lark_mnode *ts = map_get(map_get(j, "spec"), "tasks");
    for (lark_mnode *t = ts && ts->type == MN_SEQ ? ts->first : NULL; t;
         t = t->next)
      if (task_runtime(p, t, who, index))
        return p->rc;
  }
  return 0;
}

/* One resource from a mapping node: its identity and its msgpack. */
static int
add_doc(pctx *p, lark_mnode *root, int index) {
  if (root->type != MN_MAP)
    return fail(p, BUS_EMALFORMED, index, root->line,
                "a resource must be a mapping (apiVersion, kind, metadata, "
                "spec)");
  if (p->ndocs >= LARK_MANIFEST_MAX_DOCS)
    return fail(p, BUS_ETOO_BIG, index, root->line,
                "more than %d resources in one file", LARK_MANIFEST_MAX_DOCS);
  if (p->ndocs == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 8;
    lark_doc *d = realloc(p->docs, cap * sizeof *d);
    if (!d)
      return fail(p, -ENOMEM, index, root->line, "out of memory");
    p->docs = d;
    p->cap = cap;
  }
  lark_doc *d = &p->docs[p->ndocs];
  memset(d, 0, sizeof *d);
  d->index = index;
  d->line = root->line;
  d->root = root;
  copy_str(root, "kind", d->kind, sizeof d->kind);
  copy_str(root, "apiVersion", d->api_version, sizeof d->api_version);
  copy_str(map_find(root, "metadata", 8), "name", d->name, sizeof d->name);
  if (normalise_tasks(p, root, d->kind, index))
    return p->rc;

  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  int rc = pack_node(&pk, root) ? -ENOMEM : 0;
  if (!rc && sb.size > LARK_MANIFEST_MAX_PACKED)
    rc = fail(p, BUS_ETOO_BIG, index, root->line,
              "resource is %zu bytes packed; at most %d fit in a command",
              sb.size, LARK_MANIFEST_MAX_PACKED);
  void *mp = rc ? NULL : arena_alloc(p->a, sb.size ? sb.size : 1);
  if (!rc && !mp)
    rc = -ENOMEM;
  if (mp) {
    memcpy(mp, sb.data, sb.size);
    d->mp = mp;
    d->mp_len = sb.size;
    p->ndocs++;
  }
  msgpack_sbuffer_destroy(&sb);
  if (rc == -ENOMEM)
    return fail(p, rc, index, root->line, "out of memory");
  return rc;
}

/* A document's top value: a resource, a list of resources, or nothing. */
static int
add_top(pctx *p, lark_mnode *root, int index, int json) {
  if (root->type == MN_NULL)
    return 0; /* an empty YAML document */
  if (root->type != MN_SEQ)
    return add_doc(p, root, index);
  int i = 0, rc = 0;
  for (lark_mnode *c = root->first; c && !rc; c = c->next, i++)
    rc = add_doc(p, c, json ? index + i : index);
  if (json && i > 0)
    p->pos += i - 1;
  return rc;
}

/* ------------------------------------------------------------------- YAML */

#define YTAG "tag:yaml.org,2002:"

static int
is_null(const char *s, size_t n) {
  return n == 0 || eq(s, n, "~") || eq(s, n, "null") || eq(s, n, "Null") ||
         eq(s, n, "NULL");
}

static int
is_bool(const char *s, size_t n, int *v) {
  if (eq(s, n, "true") || eq(s, n, "True") || eq(s, n, "TRUE"))
    return *v = 1, 1;
  if (eq(s, n, "false") || eq(s, n, "False") || eq(s, n, "FALSE"))
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
  if (eq(s + i, len - i, ".inf") || eq(s + i, len - i, ".Inf") ||
      eq(s + i, len - i, ".INF"))
    return *f = s[0] == '-' ? -HUGE_VAL : HUGE_VAL, 1;
  if (eq(s, len, ".nan") || eq(s, len, ".NaN") || eq(s, len, ".NAN"))
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

/* A plain scalar's type under the core schema (tag NULL) or its tag. */
static int
resolve(pctx *p, lark_mnode *n, const char *tag, const char *s, size_t len) {
  int r;
  if (!tag || !strcmp(tag, YTAG "int")) {
    r = parse_int(s, len, n);
    if (r < 0)
      return fail(p, BUS_EMALFORMED, p->pos, n->line,
                  "integer %.*s does not fit 64 bits",
                  (int)(len > 40 ? 40 : len), s);
    if (r > 0)
      return 0;
    if (tag)
      return fail(p, BUS_EMALFORMED, p->pos, n->line, "!!int: not an integer");
  }
  if (!tag || !strcmp(tag, YTAG "float")) {
    if (parse_float(s, len, &n->v.f))
      return n->type = MN_FLOAT, 0;
    if (tag)
      return fail(p, BUS_EMALFORMED, p->pos, n->line, "!!float: not a number");
  }
  if (!tag || !strcmp(tag, YTAG "bool")) {
    if (is_bool(s, len, &n->v.b))
      return n->type = MN_BOOL, 0;
    if (tag)
      return fail(p, BUS_EMALFORMED, p->pos, n->line,
                  "!!bool: not true or false");
  }
  if (!tag || !strcmp(tag, YTAG "null")) {
    if (is_null(s, len))
      return n->type = MN_NULL, 0;
    if (tag)
      return fail(p, BUS_EMALFORMED, p->pos, n->line, "!!null: not null");
  }
  if (!tag)
    return 0;
  return fail(p, BUS_EMALFORMED, p->pos, n->line, "tag %.64s is not supported",
              tag);
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
  return node_add(p, y->stack[y->depth - 1], n);
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
  lark_mnode *n = str_new(p, s, len, line);
  if (!n)
    return p->rc;
  int key = ykey_position(y);
  int plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
  if (tag && (!strcmp(tag, "!") || !strcmp(tag, YTAG "str")))
    tag = NULL; /* a string, whatever it looks like */
  else if (key && tag)
    return fail(p, BUS_EMALFORMED, p->pos, line,
                "a mapping key must be a plain string");
  else if (!key && (tag || plain) && resolve(p, n, tag, s, len))
    return p->rc;
  return yadd(p, y, n);
}

static int
yopen(pctx *p, ystate *y, int type, const char *tag, int line) {
  const char *want = type == MN_MAP ? YTAG "map" : YTAG "seq";
  if (tag && strcmp(tag, want) && strcmp(tag, "!"))
    return fail(p, BUS_EMALFORMED, p->pos, line, "tag %.64s is not supported",
                tag);
  if (y->depth >= LARK_MANIFEST_MAX_DEPTH)
    return fail(p, BUS_ETOO_BIG, p->pos, line, "nested deeper than %d",
                LARK_MANIFEST_MAX_DEPTH);
  lark_mnode *n = node_new(p, type, line);
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
      return fail(p, BUS_ETOO_BIG, p->pos, line,
                  "more than %d documents in one file", LARK_MANIFEST_MAX_DOCS);
    y->in_doc = 1;
    y->root = NULL;
    return 0;
  case YAML_DOCUMENT_END_EVENT:
    y->in_doc = 0;
    return y->root ? add_top(p, y->root, p->pos, 0) : 0;
  case YAML_ALIAS_EVENT:
    return fail(p, BUS_EMALFORMED, p->pos, line,
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
      return fail(p, BUS_EMALFORMED, p->pos, line,
                  "anchors (&%.64s) are not supported: write the value out",
                  (const char *)anchor);
    if (ev->type == YAML_SCALAR_EVENT)
      return yscalar(p, y, ev, line);
    if (ykey_position(y))
      return fail(p, BUS_EMALFORMED, p->pos, line,
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
line_of_offset(const char *buf, size_t len, size_t off) {
  int line = 1;
  for (size_t i = 0; i < off && i < len; i++)
    line += buf[i] == '\n';
  return line;
}

static int
yfail(pctx *p, const ystate *y, const yaml_parser_t *yp, const char *buf,
      size_t len) {
  int doc = y->in_doc ? p->pos : p->pos + 1;
  if (yp->error == YAML_MEMORY_ERROR)
    return fail(p, -ENOMEM, doc, 0, "out of memory");
  int line = yp->error == YAML_READER_ERROR
                 ? line_of_offset(buf, len, yp->problem_offset)
                 : (int)yp->problem_mark.line + 1;
  const char *problem = yp->problem ? yp->problem : "invalid YAML";
  int from = (int)yp->context_mark.line + 1;
  if (yp->context && from != line)
    return fail(p, BUS_EMALFORMED, doc, line, "%s started on line %d, %s",
                yp->context, from, problem);
  if (yp->context)
    return fail(p, BUS_EMALFORMED, doc, line, "%s, %s", yp->context, problem);
  return fail(p, BUS_EMALFORMED, doc, line, "%s", problem);
}

static int
parse_yaml(pctx *p, const char *buf, size_t len) {
  yaml_parser_t yp;
  ystate y;
  memset(&y, 0, sizeof y);
  if (!yaml_parser_initialize(&yp))
    return fail(p, -ENOMEM, 0, 0, "out of memory");
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

/* ------------------------------------------------------------------- JSON */

static lark_mnode *from_json(pctx *p, json_t *j, int line, int depth);

static int
json_children(pctx *p, lark_mnode *n, json_t *j, int line, int depth) {
  if (json_is_object(j)) {
    const char *k;
    json_t *v;
    if (json_object_size(j) > LARK_MANIFEST_MAX_KEYS)
      return fail(p, BUS_ETOO_BIG, p->pos, line,
                  "more than %d keys in one object", LARK_MANIFEST_MAX_KEYS);
    json_object_foreach(j, k, v) {
      lark_mnode *key = str_new(p, k, strlen(k), line);
      lark_mnode *val = key ? from_json(p, v, line, depth + 1) : NULL;
      if (!val || node_add(p, n, key) || node_add(p, n, val))
        return p->rc;
    }
    return 0;
  }
  size_t i;
  json_t *v;
  json_array_foreach(j, i, v) {
    lark_mnode *c = from_json(p, v, line, depth + 1);
    if (!c || node_add(p, n, c))
      return p->rc;
  }
  return 0;
}

static lark_mnode *
from_json(pctx *p, json_t *j, int line, int depth) {
  lark_mnode *n;
  if (depth >= LARK_MANIFEST_MAX_DEPTH) {
    fail(p, BUS_ETOO_BIG, p->pos, line, "nested deeper than %d",
         LARK_MANIFEST_MAX_DEPTH);
    return NULL;
  }
  switch (json_typeof(j)) {
  case JSON_STRING:
    return str_new(p, json_string_value(j), json_string_length(j), line);
  case JSON_OBJECT:
  case JSON_ARRAY:
    n = node_new(p, json_is_object(j) ? MN_MAP : MN_SEQ, line);
    return n && !json_children(p, n, j, line, depth) ? n : NULL;
  case JSON_INTEGER: {
    json_int_t v = json_integer_value(j);
    n = node_new(p, v < 0 ? MN_INT : MN_UINT, line);
    if (n && v < 0)
      n->v.i = v;
    else if (n)
      n->v.u = (uint64_t)v;
    return n;
  }
  case JSON_REAL:
    n = node_new(p, MN_FLOAT, line);
    if (n)
      n->v.f = json_real_value(j);
    return n;
  case JSON_TRUE:
  case JSON_FALSE:
    n = node_new(p, MN_BOOL, line);
    if (n)
      n->v.b = json_is_true(j);
    return n;
  default:
    return node_new(p, MN_NULL, line);
  }
}

static int
parse_json(pctx *p, const char *buf, size_t len) {
  size_t off = 0;
  int line = 1;
  for (;;) {
    for (; off < len && isspace((unsigned char)buf[off]); off++)
      line += buf[off] == '\n';
    if (off >= len)
      return 0;
    json_error_t je;
    int flags = JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES;
    json_t *j = json_loadb(buf + off, len - off, (size_t)flags, &je);
    p->pos++;
    if (!j)
      return fail(p, BUS_EMALFORMED, p->pos,
                  line + (je.line > 0 ? je.line - 1 : 0), "%s", je.text);
    lark_mnode *root = from_json(p, j, line, 0);
    json_decref(j);
    if (!root || add_top(p, root, p->pos, 1))
      return p->rc;
    size_t used = (size_t)je.position;
    if (used == 0 || used > len - off)
      return fail(p, BUS_EMALFORMED, p->pos, line,
                  "JSON reader lost its place");
    line = line_of_offset(buf + off, used, used) + line - 1;
    off += used;
  }
}

/* ---------------------------------------------------------------- public */

static int
looks_like_json(const char *buf, size_t len) {
  size_t i = 0;
  if (len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3))
    i = 3;
  while (i < len && isspace((unsigned char)buf[i]))
    i++;
  return i < len && (buf[i] == '{' || buf[i] == '[');
}

int
lark_manifest_parse(lark_manifest *m, const char *file, const void *buf,
                    size_t len, char *err, size_t errcap) {
  pctx p;
  memset(&p, 0, sizeof p);
  memset(m, 0, sizeof *m);
  snprintf(m->file, sizeof m->file, "%s", file ? file : "<manifest>");
  p.file = m->file;
  p.err = err;
  p.errcap = errcap;
  if (err && errcap)
    err[0] = 0;
  if (len > LARK_MANIFEST_MAX_BYTES)
    return fail(&p, BUS_ETOO_BIG, 0, 0, "larger than %d bytes",
                LARK_MANIFEST_MAX_BYTES);
  p.a = calloc(1, sizeof *p.a);
  if (!p.a)
    return fail(&p, -ENOMEM, 0, 0, "out of memory");
  int rc = looks_like_json(buf, len) ? parse_json(&p, buf, len)
                                     : parse_yaml(&p, buf, len);
  if (rc) {
    free(p.docs);
    arena_free(p.a);
    return rc;
  }
  m->docs = p.docs;
  m->ndocs = p.ndocs;
  m->arena = p.a;
  return 0;
}

int
lark_manifest_load(lark_manifest *m, const char *path, char *err,
                   size_t errcap) {
  int std = !strcmp(path, "-");
  const char *name = std ? "<stdin>" : path;
  memset(m, 0, sizeof *m);
  FILE *f = std ? stdin : fopen(path, "rb");
  if (!f) {
    int e = errno;
    snprintf(err, errcap, "%s: %s", name, strerror(e));
    return -e;
  }
  size_t cap = 65536, len = 0, got;
  char *buf = malloc(cap);
  while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
    len += got;
    if (len == cap && cap <= LARK_MANIFEST_MAX_BYTES) {
      char *nb = realloc(buf, cap * 2);
      if (!nb)
        free(buf);
      buf = nb;
      cap *= 2;
    } else if (len == cap) {
      break;
    }
  }
  int rerr = buf && ferror(f) ? errno : 0;
  if (!std)
    fclose(f);
  int rc;
  if (!buf) {
    snprintf(err, errcap, "%s: out of memory", name);
    rc = -ENOMEM;
  } else if (rerr) {
    snprintf(err, errcap, "%s: %s", name, strerror(rerr));
    rc = -rerr;
  } else {
    rc = lark_manifest_parse(m, name, buf, len, err, errcap);
  }
  free(buf);
  return rc;
}

void
lark_manifest_free(lark_manifest *m) {
  if (!m)
    return;
  free(m->docs);
  arena_free(m->arena);
  m->docs = NULL;
  m->ndocs = 0;
  m->arena = NULL;
}

int
lark_doc_check(const lark_doc *d, bus_field_err *errs, int max, int *n) {
  const lark_kind *k = NULL;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (!strcmp(d->kind, kinds[i].kind))
      k = &kinds[i];
  if (!k) {
    *n = 1;
    if (max > 0) {
      snprintf(errs[0].path, sizeof errs[0].path, "kind");
      snprintf(errs[0].reason, sizeof errs[0].reason,
               "%s: must be one of Job, Workflow, Node, Domain",
               d->kind[0] ? "unknown kind" : "missing or not a string");
    }
    return d->kind[0] ? BUS_EFIELD : BUS_EMISSING;
  }
  msgpack_zone z;
  msgpack_object o;
  if (!msgpack_zone_init(&z, 4096))
    return -ENOMEM;
  int rc =
      msgpack_unpack(d->mp, d->mp_len, NULL, &z, &o) == MSGPACK_UNPACK_SUCCESS
          ? bus_schema_check(k->kind, &o, errs, max, n)
          : BUS_EMALFORMED;
  msgpack_zone_destroy(&z);
  return rc;
}

/* The key of map that path starts with (the longest: keys may hold dots,
 * "rlinf.io/device"), followed by the end, '.' or '['. */
static const lark_mnode *
path_key(const lark_mnode *map, const char **path) {
  const lark_mnode *best = NULL;
  size_t best_len = 0, left = strlen(*path);
  for (const lark_mnode *k = map->first; k && k->next; k = k->next->next) {
    size_t n = k->v.s.n;
    if (n > left || memcmp(*path, k->v.s.p, n))
      continue;
    char end = (*path)[n];
    if ((end == 0 || end == '.' || end == '[') && (!best || n > best_len)) {
      best = k->next;
      best_len = n;
    }
  }
  if (best)
    *path += best_len;
  return best;
}

int
lark_doc_line(const lark_doc *d, const char *path) {
  const lark_mnode *n = d->root;
  if (!n || !path || !strncmp(path, "...", 3))
    return d->line;
  while (*path) {
    const lark_mnode *next = NULL;
    if (*path == '.') {
      path++;
      continue;
    }
    if (*path == '[' && n->type == MN_SEQ) {
      char *end;
      unsigned long i = strtoul(path + 1, &end, 10);
      if (*end != ']')
        break;
      next = n->first;
      for (unsigned long k = 0; next && k < i; k++)
        next = next->next;
      path = end + 1;
    } else if (n->type == MN_MAP) {
      next = path_key(n, &path);
    }
    if (!next)
      break;
    n = next;
  }
  return n->line;
}

/* ------------------------------------------------------------ clashes */

/* room for any derived name, even one too long (the schema refuses it) */
#define CLAIM_NAME_SZ (2 * BUS_DERIVED_NAME_MAX + 32)

/* One name a document holds or derives: the resource itself or a Job's
 * Task (each kind is a namespace of its own). */
typedef struct claim {
  char kind[32]; /* "Job", "Domain", ..., "task" */
  char name[CLAIM_NAME_SZ];
  char via[BUS_NAME_MAX + 1]; /* the template it comes from ("" for a doc) */
  int file;
  const lark_doc *d;
} claim;

typedef struct claims {
  claim *c;
  size_t n, cap;
} claims;

static int
claim_add(claims *cs, const char *kind, const char *name, const char *via,
          int file, const lark_doc *d) {
  if (cs->n == cs->cap) {
    size_t cap = cs->cap ? cs->cap * 2 : 64;
    claim *c = realloc(cs->c, cap * sizeof *c);
    if (!c)
      return -ENOMEM;
    cs->c = c;
    cs->cap = cap;
  }
  claim *c = &cs->c[cs->n++];
  snprintf(c->kind, sizeof c->kind, "%s", kind);
  snprintf(c->name, sizeof c->name, "%s", name);
  snprintf(c->via, sizeof c->via, "%s", via);
  c->file = file;
  c->d = d;
  return 0;
}

/*
 * A Job's Tasks `<job>-<template>`, named as the scheduler names them.
 * Its Pods `<task>-<i>` meet only when their Tasks do (the index after
 * the last '-' is digits alone), so the Tasks say it all.
 */
static int
claim_derived(claims *cs, int file, const lark_doc *d) {
  msgpack_zone z;
  msgpack_zone_init(&z, 4096);
  msgpack_object o;
  int rc = 0;
  if (msgpack_unpack(d->mp, d->mp_len, NULL, &z, &o) < 0)
    goto out;
  const msgpack_object *ts = bus_obj_get(bus_obj_get(&o, "spec"), "tasks");
  for (uint32_t i = 0;
       !rc && ts && ts->type == MSGPACK_OBJECT_ARRAY && i < ts->via.array.size;
       i++) {
    char tmpl[BUS_NAME_MAX + 1], task[CLAIM_NAME_SZ];
    if (!bus_obj_str(&ts->via.array.ptr[i], "name", tmpl, sizeof tmpl))
      continue;
    snprintf(task, sizeof task, "%s-%s", d->name, tmpl);
    rc = claim_add(cs, "task", task, tmpl, file, d);
  }
out:
  msgpack_zone_destroy(&z);
  return rc;
}

static int
claim_cmp(const void *a, const void *b) {
  const claim *x = a, *y = b;
  int c = strcmp(x->kind, y->kind);
  if (!c)
    c = strcmp(x->name, y->name);
  if (!c)
    c = x->file - y->file;
  return c ? c : x->d->index - y->d->index;
}

/* "rl.yaml doc 2 line 14 (job col-a, task b-c)" */
static void
where(char *buf, size_t cap, const lark_manifest *ms, const claim *c) {
  const lark_kind *k = lark_kind_find(c->d->kind);
  snprintf(buf, cap, "%s doc %d line %d (%s %s%s%s)", ms[c->file].file,
           c->d->index, c->d->line, k ? k->cmd : c->d->kind, c->d->name,
           c->via[0] ? ", task " : "", c->via);
}

static void
report_clash(const lark_manifest *ms, const claim *a, const claim *b,
             lark_clash_fn report, void *ud) {
  char wa[BUS_DERIVED_NAME_MAX + 400], wb[BUS_DERIVED_NAME_MAX + 400];
  char line[2 * sizeof wa + 2 * BUS_DERIVED_NAME_MAX + 128];
  where(wa, sizeof wa, ms, a);
  where(wb, sizeof wb, ms, b);
  if (!a->via[0] && !b->via[0] && a->d->mp_len == b->d->mp_len &&
      !memcmp(a->d->mp, b->d->mp, a->d->mp_len))
    snprintf(line, sizeof line, "%s: the same %s as %s, given twice", wb,
             a->kind, wa);
  else if (!a->via[0] && !b->via[0])
    snprintf(line, sizeof line, "%s: another %s %s than %s", wb, a->kind,
             a->name, wa);
  else
    snprintf(line, sizeof line, "%s: makes %s %s, as %s does", wb, a->kind,
             a->name, wa);
  report(line, ud);
}

int
lark_manifests_clashes(const lark_manifest *ms, int nfiles,
                       lark_clash_fn report, void *ud) {
  claims cs = {0};
  int rc = 0, found = 0;
  for (int f = 0; !rc && f < nfiles; f++)
    for (size_t i = 0; !rc && i < ms[f].ndocs; i++) {
      const lark_doc *d = &ms[f].docs[i];
      rc = claim_add(&cs, d->kind, d->name, "", f, d);
      if (!rc && !strcmp(d->kind, "Job"))
        rc = claim_derived(&cs, f, d);
    }
  if (!rc && cs.n)
    qsort(cs.c, cs.n, sizeof *cs.c, claim_cmp);
  for (size_t i = 1; !rc && i < cs.n; i++) {
    const claim *a = &cs.c[i - 1], *b = &cs.c[i];
    if (strcmp(a->kind, b->kind) || strcmp(a->name, b->name))
      continue;
    if (a->via[0] && !strcmp(a->d->kind, b->d->kind) &&
        !strcmp(a->d->name, b->d->name) && a->d != b->d)
      continue; /* one Job given twice: said once, of the Job */
    found++;
    report_clash(ms, a, b, report, ud);
  }
  free(cs.c);
  return rc ? rc : found;
}
