/*
 * schemagen.c - turns schema/schema.yaml into libbus's validator tables
 * and into docs/events.md.
 *
 *   schemagen SCHEMA.yaml [--tables OUT.c] [--header OUT.h] [--docs OUT.md]
 *
 * The YAML is read whole (libyaml's document API, so anchors and aliases
 * work) into a small model: named structs, inline element types, the
 * resources (each a synthesised struct {apiVersion, kind, metadata, spec})
 * and the event types. Everything the file says is checked here: an
 * unknown key, type or struct is an error with its line, so a typo never
 * turns into a silently laxer validator. Output is deterministic (sorted
 * tables, no timestamps), so the committed docs can be compared byte for
 * byte.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#define MAX_TYPES 512
#define MAX_FIELDS 64
#define MAX_ENTRIES 128
#define API_VERSION "rlinf.io/v1alpha1"

enum kind {
  K_STRING,
  K_TOKEN,
  K_NAME,
  K_DNAME,
  K_INT,
  K_UINT,
  K_BOOL,
  K_FLOAT,
  K_STRUCT,
  K_MAP,
  K_ARRAY,
  K_VALUES,
  K_ANY,
  K_OBJECT /* envelope `data`: a map checked by its type */
};

static const char *const kind_yaml[] = {
    "string", "token", "name", "derived-name", "int",    "uint", "bool",
    "float",  "",      "map",  "array",        "values", "any",  ""};
static const char *const kind_c[] = {
    "BUS__K_STRING", "BUS__K_TOKEN", "BUS__K_NAME",  "BUS__K_DNAME",
    "BUS__K_INT",    "BUS__K_UINT",  "BUS__K_BOOL",  "BUS__K_FLOAT",
    "BUS__K_STRUCT", "BUS__K_MAP",   "BUS__K_ARRAY", "BUS__K_VALUES",
    "BUS__K_ANY",    "BUS__K_ANY"};

typedef struct gtype gtype;

typedef struct gfield {
  const char *name;
  int required;
  gtype *type;
  const char *desc;
} gfield;

struct gtype {
  int id;
  enum kind kind;
  const char *struct_name; /* named structs only */
  const char *desc;
  const char *format; /* NULL, "ip", "cidr" */
  uint32_t min_len, max_len, min_items, max_items;
  int has_len, has_items, has_range, has_min_len;
  int64_t imin, imax;
  uint64_t umin, umax;
  const char *enums[32];
  int nenums;
  gfield fields[MAX_FIELDS];
  int nfields;
  gtype *elem;
  int line;
};

typedef struct entry {
  const char *name;
  const char *desc;
  const char *subject;
  const char *owner;
  const char *resource; /* events carrying a resource */
  gtype *type;
} entry;

typedef struct header {
  const char *name;
  const char *desc;
} header;

static yaml_document_t doc;
static const char *schema_path;
static gtype *types[MAX_TYPES];
static int ntypes;
static gtype *structs[MAX_TYPES];
static int nstructs;
static entry events[MAX_ENTRIES], resources[MAX_ENTRIES];
static int nevents, nresources;
static gtype envelope;
static header headers[8];
static int nheaders;
static long version;

/* ------------------------------------------------------------ utilities */

static void
die(const yaml_node_t *at, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "%s", schema_path);
  if (at)
    fprintf(stderr, ":%lu", (unsigned long)at->start_mark.line + 1);
  fprintf(stderr, ": ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}

static void *
xcalloc(size_t n, size_t size) {
  void *p = calloc(n, size);
  if (!p)
    die(NULL, "out of memory");
  return p;
}

static yaml_node_t *
node(int id) {
  return yaml_document_get_node(&doc, id);
}

static const char *
scalar(const yaml_node_t *n, const char *what) {
  if (!n || n->type != YAML_SCALAR_NODE)
    die(n, "%s must be a scalar", what);
  return (const char *)n->data.scalar.value;
}

static yaml_node_t *
get(const yaml_node_t *map, const char *key) {
  yaml_node_pair_t *p;
  if (!map || map->type != YAML_MAPPING_NODE)
    return NULL;
  for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
       p++) {
    yaml_node_t *k = node(p->key);
    if (k && k->type == YAML_SCALAR_NODE &&
        strcmp((const char *)k->data.scalar.value, key) == 0)
      return node(p->value);
  }
  return NULL;
}

/* Refuse keys of map that are not in allowed (NULL-terminated). */
static void
only_keys(const yaml_node_t *map, const char *const *allowed) {
  yaml_node_pair_t *p;
  for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
       p++) {
    const char *k = scalar(node(p->key), "a key");
    const char *const *a;
    for (a = allowed; *a && strcmp(*a, k) != 0; a++)
      ;
    if (!*a)
      die(node(p->key), "unknown key '%s'", k);
  }
}

static const char *
opt_str(const yaml_node_t *map, const char *key) {
  yaml_node_t *n = get(map, key);
  return n ? scalar(n, key) : NULL;
}

static const char *
req_str(const yaml_node_t *map, const char *key) {
  const char *s = opt_str(map, key);
  if (!s)
    die(map, "'%s' is required", key);
  return s;
}

static int
opt_int(const yaml_node_t *map, const char *key, int64_t *out) {
  yaml_node_t *n = get(map, key);
  const char *s;
  char *end;
  if (!n)
    return 0;
  s = scalar(n, key);
  errno = 0;
  *out = strtoll(s, &end, 10);
  if (errno || *end || end == s)
    die(n, "'%s' must be an integer", key);
  return 1;
}

static int
opt_bool(const yaml_node_t *map, const char *key) {
  const char *s = opt_str(map, key);
  if (!s || strcmp(s, "false") == 0)
    return 0;
  if (strcmp(s, "true") == 0)
    return 1;
  die(get(map, key), "'%s' must be true or false", key);
  return 0;
}

static uint32_t
bound32(const yaml_node_t *at, int64_t v) {
  if (v < 0 || v > UINT32_MAX)
    die(at, "limit %" PRId64 " out of range", v);
  return (uint32_t)v;
}

static gtype *
new_type(enum kind k, const yaml_node_t *at) {
  gtype *t;
  if (ntypes == MAX_TYPES)
    die(at, "too many types");
  t = xcalloc(1, sizeof *t);
  t->kind = k;
  t->id = ntypes;
  t->line = at ? (int)at->start_mark.line + 1 : 0;
  types[ntypes++] = t;
  return t;
}

static gtype *
find_struct(const char *name) {
  int i;
  for (i = 0; i < nstructs; i++)
    if (strcmp(structs[i]->struct_name, name) == 0)
      return structs[i];
  return NULL;
}

/* ---------------------------------------------------------------- types */

static gtype *parse_type(const yaml_node_t *spec, const char *tname);
static void parse_fields(gtype *t, const yaml_node_t *list);

static enum kind
kind_of(const yaml_node_t *at, const char *tname) {
  int k;
  for (k = 0; k <= K_ANY; k++)
    if (kind_yaml[k][0] && strcmp(kind_yaml[k], tname) == 0)
      return (enum kind)k;
  die(at, "unknown type '%s'", tname);
  return K_ANY;
}

static void
set_defaults(gtype *t) {
  if (!t->has_len) {
    t->max_len = t->kind == K_NAME    ? 63
                 : t->kind == K_DNAME ? 253
                 : t->kind == K_TOKEN ? 64
                 : t->kind == K_MAP   ? 253
                                      : 1024;
    if (t->kind == K_VALUES)
      t->max_len = 253;
  }
  if (!t->has_items)
    t->max_items = t->kind == K_VALUES ? 256 : 64;
  if (!t->has_range) {
    t->imin = INT64_MIN;
    t->imax = INT64_MAX;
    t->umax = UINT64_MAX;
  }
}

static void
parse_limits(gtype *t, const yaml_node_t *spec) {
  int64_t v;
  if (opt_int(spec, "min_len", &v))
    t->min_len = bound32(spec, v), t->has_min_len = 1;
  if (opt_int(spec, "max_len", &v))
    t->max_len = bound32(spec, v), t->has_len = 1;
  if (opt_int(spec, "max_key", &v))
    t->max_len = bound32(spec, v), t->has_len = 1;
  if (opt_int(spec, "min_items", &v))
    t->min_items = bound32(spec, v);
  if (opt_int(spec, "max_items", &v))
    t->max_items = bound32(spec, v), t->has_items = 1;
  set_defaults(t);
  if (opt_int(spec, "min", &v)) {
    t->imin = v;
    t->umin = v < 0 ? 0 : (uint64_t)v;
    t->has_range = 1;
  }
  if (opt_int(spec, "max", &v)) {
    t->imax = v;
    t->umax = v < 0 ? 0 : (uint64_t)v;
    t->has_range = 1;
  }
  if ((t->kind == K_NAME && t->max_len > 63) ||
      (t->kind == K_DNAME && t->max_len > 253))
    die(spec, "a name's max_len cannot exceed its kind's");
  if (t->min_len > t->max_len || t->min_items > t->max_items)
    die(spec, "min exceeds max");
}

static void
parse_enum(gtype *t, const yaml_node_t *spec) {
  yaml_node_t *e = get(spec, "enum");
  yaml_node_item_t *i;
  if (!e)
    return;
  if (e->type != YAML_SEQUENCE_NODE || t->kind != K_STRING)
    die(e, "enum must be a list on a string");
  for (i = e->data.sequence.items.start; i < e->data.sequence.items.top; i++) {
    if (t->nenums == 32)
      die(e, "too many enum values");
    t->enums[t->nenums++] = scalar(node(*i), "an enum value");
  }
}

static void
parse_format(gtype *t, const yaml_node_t *spec) {
  t->format = opt_str(spec, "format");
  if (!t->format)
    return;
  if (t->kind != K_STRING ||
      (strcmp(t->format, "ip") != 0 && strcmp(t->format, "cidr") != 0))
    die(spec, "format must be ip or cidr, on a string");
  if (!t->has_len)
    t->max_len = 64;
}

static void
parse_container(gtype *t, const yaml_node_t *spec) {
  yaml_node_t *of = get(spec, "of"), *fields = get(spec, "fields");
  if (t->kind == K_ARRAY) {
    if (!of || fields)
      die(spec, "an array needs `of` (and no `fields`)");
    t->elem = parse_type(of, NULL);
    if (!get(spec, "max_items"))
      die(spec, "an array needs max_items");
  } else if (t->kind == K_MAP && fields) {
    if (of)
      die(spec, "a map has `of` or `fields`, not both");
    t->kind = K_STRUCT;
    parse_fields(t, fields);
  } else if (t->kind == K_MAP && of) {
    t->elem = parse_type(of, NULL);
  } else if (t->kind == K_MAP) {
    t->kind = K_OBJECT;
  } else if (of || fields) {
    die(spec, "only arrays and maps have `of` or `fields`");
  }
}

/*
 * A type: a scalar node naming a builtin or a struct, or a mapping with
 * `type` and its limits. tname overrides the mapping's `type` (fields pass
 * theirs in, since a field's mapping holds the field's own keys too).
 */
static gtype *
parse_type(const yaml_node_t *spec, const char *tname) {
  static const char *const keys[] = {
      "type", "min_len", "max_len", "max_key", "min_items", "max_items", "min",
      "max",  "enum",    "format",  "of",      "fields",    NULL};
  gtype *t;
  if (spec->type == YAML_SCALAR_NODE && !tname)
    tname = scalar(spec, "a type");
  else if (!tname) {
    only_keys(spec, keys);
    tname = req_str(spec, "type");
  }
  if ((t = find_struct(tname)))
    return t;
  t = new_type(kind_of(spec, tname), spec);
  if (spec->type != YAML_MAPPING_NODE) {
    set_defaults(t);
    return t;
  }
  parse_limits(t, spec);
  parse_enum(t, spec);
  parse_format(t, spec);
  parse_container(t, spec);
  return t;
}

static int
cmp_field(const void *a, const void *b) {
  return strcmp(((const gfield *)a)->name, ((const gfield *)b)->name);
}

static void
parse_field(gtype *t, const yaml_node_t *f) {
  static const char *const keys[] = {
      "name",      "type",      "required", "desc", "min_len", "max_len",
      "max_key",   "min",       "max",      "enum", "format",  "of",
      "min_items", "max_items", "fields",   NULL};
  gfield *g;
  int i;
  if (f->type != YAML_MAPPING_NODE)
    die(f, "a field must be a mapping");
  only_keys(f, keys);
  if (t->nfields == MAX_FIELDS)
    die(f, "more than %d fields", MAX_FIELDS);
  g = &t->fields[t->nfields];
  g->name = req_str(f, "name");
  for (i = 0; i < t->nfields; i++)
    if (strcmp(t->fields[i].name, g->name) == 0)
      die(f, "field '%s' defined twice", g->name);
  g->desc = req_str(f, "desc");
  g->required = opt_bool(f, "required");
  g->type = parse_type(f, req_str(f, "type"));
  if (g->type->struct_name && get(f, "max_len"))
    die(f, "limits go on the struct's fields, not on a reference to it");
  t->nfields++;
}

static void
parse_fields(gtype *t, const yaml_node_t *list) {
  yaml_node_item_t *i;
  if (!list || list->type != YAML_SEQUENCE_NODE)
    die(list, "fields must be a list");
  for (i = list->data.sequence.items.start; i < list->data.sequence.items.top;
       i++)
    parse_field(t, node(*i));
}

/* ------------------------------------------------------------- sections */

static void
parse_structs(const yaml_node_t *sec) {
  yaml_node_pair_t *p;
  if (!sec || sec->type != YAML_MAPPING_NODE)
    die(sec, "`structs` must be a mapping");
  /* Names first, so a struct may use one defined after it. */
  for (p = sec->data.mapping.pairs.start; p < sec->data.mapping.pairs.top;
       p++) {
    gtype *t = new_type(K_STRUCT, node(p->value));
    t->struct_name = scalar(node(p->key), "a struct name");
    if (find_struct(t->struct_name))
      die(node(p->key), "struct %s defined twice", t->struct_name);
    structs[nstructs++] = t;
  }
  for (p = sec->data.mapping.pairs.start; p < sec->data.mapping.pairs.top;
       p++) {
    static const char *const keys[] = {"desc", "fields", NULL};
    yaml_node_t *v = node(p->value);
    gtype *t = find_struct(scalar(node(p->key), "a struct name"));
    only_keys(v, keys);
    t->desc = req_str(v, "desc");
    parse_fields(t, get(v, "fields"));
  }
}

static void
add_field(gtype *t, const char *name, gtype *ft, const char *desc) {
  gfield *f = &t->fields[t->nfields++];
  f->name = name;
  f->required = 1;
  f->type = ft;
  f->desc = desc;
}

/* {apiVersion, kind, metadata, spec} for one resource kind. */
static gtype *
resource_type(const char *kind, gtype *spec, const yaml_node_t *at) {
  gtype *t = new_type(K_STRUCT, at), *api, *k;
  gtype *meta = find_struct("Metadata");
  if (!meta)
    die(at, "struct Metadata is missing");
  api = new_type(K_STRING, at);
  set_defaults(api);
  api->enums[api->nenums++] = API_VERSION;
  k = new_type(K_STRING, at);
  set_defaults(k);
  k->enums[k->nenums++] = kind;
  add_field(t, "apiVersion", api, "`" API_VERSION "`.");
  add_field(t, "kind", k, "The resource kind.");
  add_field(t, "metadata", meta, "Name and labels.");
  add_field(t, "spec", spec, "What is wanted.");
  return t;
}

static void
parse_resources(const yaml_node_t *sec) {
  static const char *const keys[] = {"kind", "spec", "owner", "desc", NULL};
  yaml_node_item_t *i;
  if (!sec || sec->type != YAML_SEQUENCE_NODE)
    die(sec, "`resources` must be a list");
  for (i = sec->data.sequence.items.start; i < sec->data.sequence.items.top;
       i++) {
    yaml_node_t *r = node(*i);
    entry *e = &resources[nresources++];
    gtype *spec;
    only_keys(r, keys);
    e->name = req_str(r, "kind");
    e->desc = req_str(r, "desc");
    e->owner = req_str(r, "owner");
    spec = find_struct(req_str(r, "spec"));
    if (!spec)
      die(r, "unknown struct '%s'", req_str(r, "spec"));
    e->resource = spec->struct_name;
    e->type = resource_type(e->name, spec, r);
  }
}

static const entry *
find_resource(const char *kind) {
  int i;
  for (i = 0; i < nresources; i++)
    if (strcmp(resources[i].name, kind) == 0)
      return &resources[i];
  return NULL;
}

static void
check_event_name(const yaml_node_t *at, const char *s) {
  const char *dot = strchr(s, '.');
  size_t i;
  if (!dot || dot == s || !dot[1] || strchr(dot + 1, '.'))
    die(at, "event type '%s' is not <kind>.<verb>", s);
  for (i = 0; s[i]; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
          s[i] == '.'))
      die(at, "event type '%s' has a character outside [a-z0-9.]", s);
}

static void
parse_event(entry *e, const yaml_node_t *key, const yaml_node_t *v) {
  static const char *const keys[] = {"subject", "desc", "fields", "resource",
                                     NULL};
  const char *res;
  only_keys(v, keys);
  e->name = scalar(key, "an event type");
  check_event_name(key, e->name);
  e->desc = req_str(v, "desc");
  e->subject = req_str(v, "subject");
  res = opt_str(v, "resource");
  if (res) {
    const entry *r = find_resource(res);
    if (!r || get(v, "fields"))
      die(v, "resource '%s' unknown, or given with fields", res);
    e->resource = r->name;
    e->type = r->type;
    return;
  }
  e->type = new_type(K_STRUCT, v);
  if (get(v, "fields"))
    parse_fields(e->type, get(v, "fields"));
}

static void
parse_events(const yaml_node_t *sec) {
  yaml_node_pair_t *p;
  if (!sec || sec->type != YAML_MAPPING_NODE)
    die(sec, "`events` must be a mapping");
  for (p = sec->data.mapping.pairs.start; p < sec->data.mapping.pairs.top;
       p++) {
    if (nevents == MAX_ENTRIES)
      die(sec, "too many event types");
    parse_event(&events[nevents++], node(p->key), node(p->value));
  }
}

static void
parse_headers(const yaml_node_t *sec) {
  static const char *const keys[] = {"name", "desc", NULL};
  yaml_node_item_t *i;
  if (!sec || sec->type != YAML_SEQUENCE_NODE)
    die(sec, "`headers` must be a list");
  for (i = sec->data.sequence.items.start; i < sec->data.sequence.items.top;
       i++) {
    if (nheaders == 8)
      die(sec, "too many headers");
    only_keys(node(*i), keys);
    headers[nheaders].name = req_str(node(*i), "name");
    headers[nheaders++].desc = req_str(node(*i), "desc");
  }
}

static int
cmp_entry(const void *a, const void *b) {
  return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

static void
parse_root(void) {
  static const char *const keys[] = {
      "version", "headers", "envelope", "structs", "resources", "events", NULL};
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  int64_t v;
  if (!root || root->type != YAML_MAPPING_NODE)
    die(root, "the document must be a mapping");
  only_keys(root, keys);
  if (!opt_int(root, "version", &v) || v < 1)
    die(root, "`version` must be a positive integer");
  version = (long)v;
  parse_headers(get(root, "headers"));
  envelope.kind = K_STRUCT;
  parse_fields(&envelope, get(root, "envelope"));
  parse_structs(get(root, "structs"));
  parse_resources(get(root, "resources"));
  parse_events(get(root, "events"));
  qsort(events, (size_t)nevents, sizeof(entry), cmp_entry);
}

static void
load(const char *path) {
  yaml_parser_t parser;
  FILE *f = fopen(path, "rb");
  if (!f)
    die(NULL, "cannot open: %s", strerror(errno));
  if (!yaml_parser_initialize(&parser))
    die(NULL, "out of memory");
  yaml_parser_set_input_file(&parser, f);
  if (!yaml_parser_load(&parser, &doc))
    die(NULL, "line %lu: %s", (unsigned long)parser.problem_mark.line + 1,
        parser.problem ? parser.problem : "parse error");
  yaml_parser_delete(&parser);
  fclose(f);
  parse_root();
}

/* ------------------------------------------------------------ C tables */

static void
emit_str(FILE *o, const char *s) {
  fputc('"', o);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\')
      fputc('\\', o);
    fputc(*s, o);
  }
  fputc('"', o);
}

/* Field lists in the tables are sorted by name (bsearch); the docs keep
 * the order of schema.yaml. */
static void
emit_fields(FILE *o, const gtype *t) {
  gfield sorted[MAX_FIELDS];
  int i;
  if (t->nenums) {
    fprintf(o, "static const char *const enums_%d[] = {", t->id);
    for (i = 0; i < t->nenums; i++) {
      emit_str(o, t->enums[i]);
      fputs(i + 1 < t->nenums ? ", " : "};\n", o);
    }
  }
  if (!t->nfields)
    return;
  memcpy(sorted, t->fields, sizeof sorted);
  qsort(sorted, (size_t)t->nfields, sizeof(gfield), cmp_field);
  fprintf(o, "static const bus__field fields_%d[] = {\n", t->id);
  for (i = 0; i < t->nfields; i++) {
    const gfield *f = &sorted[i];
    fputs("    {", o);
    emit_str(o, f->name);
    fprintf(o, ", %zu, %d, &types[%d]},\n", strlen(f->name), f->required,
            f->type->id);
  }
  fputs("};\n", o);
}

static void
emit_type(FILE *o, const gtype *t) {
  fprintf(o, "    {%s, %s, %" PRIu32 ", %" PRIu32 ", %" PRIu32 ", %" PRIu32,
          kind_c[t->kind],
          !t->format                     ? "BUS__F_NONE"
          : strcmp(t->format, "ip") == 0 ? "BUS__F_IP"
                                         : "BUS__F_CIDR",
          t->min_len, t->max_len, t->min_items, t->max_items);
  if (t->imin == INT64_MIN)
    fputs(", INT64_MIN", o);
  else
    fprintf(o, ", INT64_C(%" PRId64 ")", t->imin);
  fprintf(
      o, ", INT64_C(%" PRId64 "), UINT64_C(%" PRIu64 "), UINT64_C(%" PRIu64 ")",
      t->imax, t->umin, t->umax);
  if (t->nenums)
    fprintf(o, ", enums_%d, %d", t->id, t->nenums);
  else
    fputs(", NULL, 0", o);
  if (t->nfields)
    fprintf(o, ", fields_%d, %d", t->id, t->nfields);
  else
    fputs(", NULL, 0", o);
  if (t->elem)
    fprintf(o, ", &types[%d]},\n", t->elem->id);
  else
    fputs(", NULL},\n", o);
}

static void
emit_entries(FILE *o, const char *name, const char *count, const entry *e,
             int n) {
  int i;
  fprintf(o, "const bus__schema_entry %s[] = {\n", name);
  for (i = 0; i < n; i++) {
    fputs("    {", o);
    emit_str(o, e[i].name);
    fprintf(o, ", &types[%d]},\n", e[i].type->id);
  }
  fprintf(o, "};\nconst size_t %s = %d;\n", count, n);
}

static void
write_tables(const char *path) {
  FILE *o = fopen(path, "w");
  int i;
  if (!o)
    die(NULL, "cannot write %s: %s", path, strerror(errno));
  fprintf(o,
          "/* Generated by schemagen from schema/schema.yaml: do not "
          "edit. */\n#include \"schema-int.h\"\n#include \"schema_gen.h\"\n"
          "\nstatic const bus__type types[%d];\n\n",
          ntypes);
  for (i = 0; i < ntypes; i++)
    emit_fields(o, types[i]);
  fprintf(o, "\nstatic const bus__type types[%d] = {\n", ntypes);
  for (i = 0; i < ntypes; i++)
    emit_type(o, types[i]);
  fputs("};\n\n", o);
  qsort(resources, (size_t)nresources, sizeof(entry), cmp_entry);
  emit_entries(o, "bus__schema_events", "bus__schema_nevents", events, nevents);
  emit_entries(o, "bus__schema_resources", "bus__schema_nresources", resources,
               nresources);
  if (fclose(o) != 0)
    die(NULL, "cannot write %s", path);
}

static int is_string(const gtype *t);

static void
upper(const char *s, char *out, size_t cap) {
  size_t i;
  for (i = 0; s[i] && i + 1 < cap; i++)
    out[i] = (s[i] >= 'a' && s[i] <= 'z') ? (char)(s[i] - 32) : s[i];
  out[i] = 0;
}

static void
write_header(const char *path) {
  FILE *o = fopen(path, "w");
  int i;
  if (!o)
    die(NULL, "cannot write %s: %s", path, strerror(errno));
  fprintf(o,
          "/* Generated by schemagen from schema/schema.yaml: do not "
          "edit. */\n#ifndef LARK_SCHEMA_GEN_H\n#define "
          "LARK_SCHEMA_GEN_H\n\n#define BUS__SCHEMA_VERSION %ld\n",
          version);
  for (i = 0; i < envelope.nfields; i++) {
    const gfield *f = &envelope.fields[i];
    char u[64];
    if (!is_string(f->type))
      continue;
    upper(f->name, u, sizeof u);
    fprintf(o, "#define BUS__ENV_%s_MIN_LEN %" PRIu32 "\n", u,
            f->type->min_len);
    fprintf(o, "#define BUS__ENV_%s_MAX_LEN %" PRIu32 "\n", u,
            f->type->max_len);
  }
  fputs("\n#endif\n", o);
  if (fclose(o) != 0)
    die(NULL, "cannot write %s", path);
}

/* ---------------------------------------------------------------- docs */

static void
anchor(const char *s, char *out, size_t cap) {
  size_t i, j = 0;
  for (i = 0; s[i] && j + 1 < cap; i++) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z')
      out[j++] = (char)(c + 32);
    else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')
      out[j++] = c;
  }
  out[j] = 0;
}

static void
doc_type(FILE *o, const gtype *t) {
  char a[64];
  if (t->struct_name) {
    anchor(t->struct_name, a, sizeof a);
    fprintf(o, "[%s](#%s)", t->struct_name, a);
  } else if (t->kind == K_ARRAY || t->kind == K_MAP) {
    fputs(t->kind == K_ARRAY ? "array of " : "map of ", o);
    doc_type(o, t->elem);
  } else if (t->kind == K_OBJECT) {
    fputs("map", o);
  } else {
    fputs(kind_yaml[t->kind], o);
  }
}

static int
is_string(const gtype *t) {
  return t->kind == K_STRING || t->kind == K_TOKEN || t->kind == K_NAME ||
         t->kind == K_DNAME;
}

static void
doc_scalar_limits(FILE *o, const gtype *t, const char **sep) {
  int i;
  if (t->nenums) {
    fprintf(o, "%sone of", *sep);
    for (i = 0; i < t->nenums; i++)
      fprintf(o, "%s`%s`", i ? ", " : " ", t->enums[i]);
    *sep = "; ";
  } else if (t->format) {
    fprintf(o, "%s%s", *sep,
            strcmp(t->format, "ip") == 0 ? "an IP address"
                                         : "a CIDR (v4 or v6)");
    *sep = "; ";
  } else if (is_string(t)) {
    fprintf(o, "%s%" PRIu32 "..%" PRIu32 " chars", *sep,
            t->kind == K_STRING || t->has_min_len ? t->min_len : 1, t->max_len);
    *sep = "; ";
  }
  if (t->kind == K_INT && t->has_range) {
    fprintf(o, "%s%" PRId64 "..%" PRId64, *sep, t->imin, t->imax);
    *sep = "; ";
  } else if (t->kind == K_UINT && t->has_range) {
    fprintf(o, "%s%" PRIu64 "..%" PRIu64, *sep, t->umin, t->umax);
    *sep = "; ";
  }
}

static void
doc_limits(FILE *o, const gtype *t) {
  const char *sep = "";
  if (t->struct_name || t->kind == K_OBJECT || t->kind == K_ANY) {
    fputs("", o);
    return;
  }
  if (t->kind == K_ARRAY || t->kind == K_MAP || t->kind == K_VALUES) {
    fprintf(o, "%" PRIu32 "..%" PRIu32 " items", t->min_items, t->max_items);
    sep = "; ";
    if (t->kind != K_ARRAY) {
      fprintf(o, "; keys 1..%" PRIu32 " chars", t->max_len);
      if (t->kind == K_VALUES)
        fputs("; values int, finite float, bool, nil or a string of 0..1024 "
              "chars",
              o);
    }
    if (t->elem && !t->elem->struct_name) {
      fputs(t->kind == K_ARRAY ? "; each " : "; values ", o);
      sep = "";
      doc_scalar_limits(o, t->elem, &sep);
    }
    return;
  }
  doc_scalar_limits(o, t, &sep);
}

static void
doc_table(FILE *o, const gtype *t) {
  int i;
  if (!t->nfields) {
    fputs("No fields: `data` is `{}`.\n\n", o);
    return;
  }
  fputs("| field | type | required | limits | description |\n"
        "|---|---|---|---|---|\n",
        o);
  for (i = 0; i < t->nfields; i++) {
    const gfield *f = &t->fields[i];
    fprintf(o, "| `%s` | ", f->name);
    doc_type(o, f->type);
    fprintf(o, " | %s | ", f->required ? "yes" : "no");
    doc_limits(o, f->type);
    fprintf(o, " | %s |\n", f->desc);
  }
  fputc('\n', o);
}

static void
doc_intro(FILE *o) {
  int i;
  fprintf(o,
          "# Events and resources\n\n"
          "<!-- Generated by schemagen from schema/schema.yaml: do not edit. "
          "Regenerate with `cmake --build <build> --target schema-docs`. "
          "-->\n\n"
          "Schema version %ld. Every event is one msgpack map, the "
          "envelope below, published with two NATS headers. Fields are "
          "checked on encode and decode; unknown fields are refused, and a "
          "problem is reported with its path (`data.spec.tasks[0]."
          "replicas`).\n\n"
          "Names are `[a-z0-9-]`, not starting or ending with `-`: at most "
          "63 characters for a `name`, 253 for a `derived-name`. A `token` "
          "is printable ASCII without spaces. Events, as a whole, are at "
          "most 1 MiB.\n\n## Headers\n\n| header | description |\n"
          "|---|---|\n",
          version);
  for (i = 0; i < nheaders; i++)
    fprintf(o, "| `%s` | %s |\n", headers[i].name, headers[i].desc);
  fputs("\n## Envelope\n\nKeys in this order; all are required.\n\n", o);
  doc_table(o, &envelope);
}

static void
doc_events(FILE *o) {
  int i;
  fputs("## Event types\n\n| type | subject | description |\n|---|---|---|\n",
        o);
  for (i = 0; i < nevents; i++) {
    char a[64];
    anchor(events[i].name, a, sizeof a);
    fprintf(o, "| [`%s`](#%s) | `%s` | %s |\n", events[i].name, a,
            events[i].subject, events[i].desc);
  }
  fputc('\n', o);
  for (i = 0; i < nevents; i++) {
    const entry *e = &events[i];
    fprintf(o, "### %s\n\n%s Subject `%s`.\n\n", e->name, e->desc, e->subject);
    if (e->resource) {
      char a[64];
      anchor(e->resource, a, sizeof a);
      fprintf(o, "`data` is a [%s](#%s) resource.\n\n", e->resource, a);
    } else {
      doc_table(o, e->type);
    }
  }
}

static void
doc_resources(FILE *o) {
  int i;
  fputs("## Resources\n\nA resource is `{apiVersion: " API_VERSION
        ", kind, metadata, spec}`; unknown fields are refused, naming the "
        "field.\n\n",
        o);
  for (i = 0; i < nresources; i++) {
    const entry *e = &resources[i];
    fprintf(o, "### %s\n\n%s Owned by `%s`.\n\n", e->name, e->desc, e->owner);
    doc_table(o, e->type);
  }
  fputs("## Structs\n\n", o);
  for (i = 0; i < nstructs; i++) {
    fprintf(o, "### %s\n\n%s\n\n", structs[i]->struct_name, structs[i]->desc);
    doc_table(o, structs[i]);
  }
}

static void
write_docs(const char *path) {
  FILE *o = fopen(path, "w");
  if (!o)
    die(NULL, "cannot write %s: %s", path, strerror(errno));
  doc_intro(o);
  doc_events(o);
  qsort(resources, (size_t)nresources, sizeof(entry), cmp_entry);
  doc_resources(o);
  if (fclose(o) != 0)
    die(NULL, "cannot write %s", path);
}

int
main(int argc, char **argv) {
  const char *tables = NULL, *hdr = NULL, *docs = NULL;
  int i;
  if (argc < 2) {
    fprintf(stderr, "usage: schemagen SCHEMA.yaml [--tables OUT.c] "
                    "[--header OUT.h] [--docs OUT.md]\n");
    return 2;
  }
  schema_path = argv[1];
  for (i = 2; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--tables") == 0)
      tables = argv[i + 1];
    else if (strcmp(argv[i], "--header") == 0)
      hdr = argv[i + 1];
    else if (strcmp(argv[i], "--docs") == 0)
      docs = argv[i + 1];
    else
      die(NULL, "unknown option %s", argv[i]);
  }
  if (i != argc)
    die(NULL, "option %s needs a value", argv[i]);
  load(schema_path);
  if (tables)
    write_tables(tables);
  if (hdr)
    write_header(hdr);
  if (docs)
    write_docs(docs);
  yaml_document_delete(&doc);
  return 0;
}
