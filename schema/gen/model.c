/*
 * model.c - reads schema/schema.yaml into schemagen's model (model.h).
 *
 * The YAML is read whole (libyaml's document API, so anchors and aliases
 * work) into a small model: named structs, inline element types, the
 * resources (each a synthesised struct {apiVersion, kind, metadata, spec})
 * and the event types. Everything the file says is checked here: an
 * unknown key, type or struct is an error with its line, so a typo never
 * turns into a silently laxer validator.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

const char *const kind_yaml[] = {
    "string", "token", "name", "derived-name", "int",    "uint", "bool",
    "float",  "",      "map",  "array",        "values", "any",  ""};

static yaml_document_t doc;
const char *schema_path;
gtype *types[MAX_TYPES];
int ntypes;
gtype *structs[MAX_TYPES];
int nstructs;
entry events[MAX_ENTRIES], resources[MAX_ENTRIES];
int nevents, nresources;
gtype envelope;
header headers[8];
int nheaders;
long version;

void
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

/* The pairs of sec, which must be a mapping (else "<what> must be a
 * mapping"); *end is one past the last. */
static yaml_node_pair_t *
pairs_of(const yaml_node_t *sec, const char *what, yaml_node_pair_t **end) {
  if (!sec || sec->type != YAML_MAPPING_NODE)
    die(sec, "%s must be a mapping", what);
  *end = sec->data.mapping.pairs.top;
  return sec->data.mapping.pairs.start;
}

/* The items of sec, which must be a list (else "<what> must be a list");
 * *end is one past the last. */
static yaml_node_item_t *
items_of(const yaml_node_t *sec, const char *what, yaml_node_item_t **end) {
  if (!sec || sec->type != YAML_SEQUENCE_NODE)
    die(sec, "%s must be a list", what);
  *end = sec->data.sequence.items.top;
  return sec->data.sequence.items.start;
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
  yaml_node_item_t *i, *end;
  for (i = items_of(list, "fields", &end); i < end; i++)
    parse_field(t, node(*i));
}

/* ------------------------------------------------------------- sections */

static void
parse_structs(const yaml_node_t *sec) {
  yaml_node_pair_t *p, *end, *first = pairs_of(sec, "`structs`", &end);
  /* Names first, so a struct may use one defined after it. */
  for (p = first; p < end; p++) {
    gtype *t = new_type(K_STRUCT, node(p->value));
    t->struct_name = scalar(node(p->key), "a struct name");
    t->label = t->struct_name;
    if (find_struct(t->struct_name))
      die(node(p->key), "struct %s defined twice", t->struct_name);
    structs[nstructs++] = t;
  }
  for (p = first; p < end; p++) {
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
  t->label = kind;
  add_field(t, "apiVersion", api, "`" API_VERSION "`.");
  add_field(t, "kind", k, "The resource kind.");
  add_field(t, "metadata", meta, "Name and labels.");
  add_field(t, "spec", spec, "What is wanted.");
  return t;
}

static void
parse_resources(const yaml_node_t *sec) {
  static const char *const keys[] = {"kind", "spec", "owner", "desc", NULL};
  yaml_node_item_t *i, *end;
  for (i = items_of(sec, "`resources`", &end); i < end; i++) {
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
  e->type->label = e->name;
  if (get(v, "fields"))
    parse_fields(e->type, get(v, "fields"));
}

static void
parse_events(const yaml_node_t *sec) {
  yaml_node_pair_t *p, *end;
  for (p = pairs_of(sec, "`events`", &end); p < end; p++) {
    if (nevents == MAX_ENTRIES)
      die(sec, "too many event types");
    parse_event(&events[nevents++], node(p->key), node(p->value));
  }
}

static void
parse_headers(const yaml_node_t *sec) {
  static const char *const keys[] = {"name", "desc", NULL};
  yaml_node_item_t *i, *end;
  for (i = items_of(sec, "`headers`", &end); i < end; i++) {
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
  qsort(resources, (size_t)nresources, sizeof(entry), cmp_entry);
}

void
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

void
unload(void) {
  int i;
  for (i = 0; i < ntypes; i++)
    free(types[i]);
  yaml_document_delete(&doc);
}
