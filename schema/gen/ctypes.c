/*
 * ctypes.c - the header of the generated event types (bus_types.h, in the
 * build tree, included by libbus/include/bus.h): the bus_type enum, one
 * struct per schema struct, resource and event type, and the prototypes
 * of the functions cfuncs.c writes. The C forms of the field types are in
 * bus.h ("typed data"); this file picks among them.
 */
#include <stdlib.h>
#include <string.h>

#include "model.h"

static char *names[MAX_TYPES];

static char *
xstrdup(const char *s) {
  char *r = strdup(s);
  if (!r)
    die(NULL, "out of memory");
  return r;
}

/* "JobSpec" -> "job_spec", "job.placed" -> "job_placed". */
const char *
snake(const char *s) {
  static char out[8][128];
  static int next;
  char *o = out[next++ % 8];
  size_t j = 0;
  for (size_t i = 0; s[i] && j + 2 < sizeof out[0]; i++) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') {
      if (i && s[i - 1] >= 'a' && s[i - 1] <= 'z')
        o[j++] = '_';
      o[j++] = (char)(c + 32);
    } else
      o[j++] = (c == '.' || c == '-') ? '_' : c;
  }
  o[j] = 0;
  return o;
}

const char *
cname(const gtype *t) {
  char buf[160];
  if (names[t->id])
    return names[t->id];
  if (t->kind != K_STRUCT || !t->label)
    die(NULL, "schema.yaml:%d: the C types need a named struct here", t->line);
  if (t->struct_name)
    snprintf(buf, sizeof buf, "bus_%s", snake(t->label));
  else if (strchr(t->label, '.'))
    snprintf(buf, sizeof buf, "bus_ev_%s", snake(t->label));
  else
    snprintf(buf, sizeof buf, "bus_%s_res", snake(t->label));
  return names[t->id] = xstrdup(buf);
}

static const char *
scalar_ctype(const gtype *t) {
  if (is_string(t))
    return "bus_str";
  switch (t->kind) {
  case K_INT:
    return "int64_t";
  case K_UINT:
    return "uint64_t";
  case K_BOOL:
    return "bool";
  case K_FLOAT:
    return "double";
  case K_VALUES:
    return "bus_values";
  case K_ANY:
    return "bus_raw";
  default:
    return NULL;
  }
}

const char *
ctype(const gtype *t) {
  static char buf[8][160];
  static int next;
  const char *s = scalar_ctype(t);
  const gtype *e = t->elem;
  if (s)
    return s;
  if (t->kind == K_STRUCT)
    return cname(t);
  if (t->kind == K_ARRAY && is_string(e))
    return "bus_str_list";
  if (t->kind == K_ARRAY && (e->kind == K_UINT || e->kind == K_INT))
    return e->kind == K_UINT ? "bus_u64_list" : "bus_i64_list";
  if (t->kind == K_ARRAY && e->kind == K_STRUCT) {
    char *o = buf[next++ % 8];
    snprintf(o, sizeof buf[0], "%s_list", cname(e));
    return o;
  }
  if (t->kind == K_MAP && (is_string(e) || e->kind == K_UINT))
    return is_string(e) ? "bus_str_map" : "bus_u64_map";
  die(NULL, "schema.yaml:%d: no C type for this field's type", t->line);
}

int
nrequired(const gtype *t) {
  int i, n = 0;
  for (i = 0; i < t->nfields; i++)
    n += t->fields[i].required;
  return n;
}

/* ------------------------------------------------------------- structs */

static void
check_member(const gfield *f) {
  static const char *const reserved[] = {
      "auto",     "break",  "case",    "char",   "const",    "continue",
      "default",  "do",     "double",  "else",   "enum",     "extern",
      "float",    "for",    "goto",    "if",     "int",      "long",
      "register", "return", "short",   "signed", "sizeof",   "static",
      "struct",   "switch", "typedef", "union",  "unsigned", "void",
      "volatile", "while",  "bool",    "inline", "restrict", NULL};
  for (const char *const *r = reserved; *r; r++)
    if (strcmp(*r, f->name) == 0)
      die(NULL, "field '%s' is a C keyword", f->name);
}

static void emit_struct(FILE *o, const gtype *t, char *done);

/* 1 when some array holds t. */
static int
is_listed(const gtype *t) {
  for (int i = 0; i < ntypes; i++)
    if (types[i]->kind == K_ARRAY && types[i]->elem == t)
      return 1;
  return 0;
}

/* Structs a struct's fields use, first. */
static void
emit_deps(FILE *o, const gtype *t, char *done) {
  for (int i = 0; i < t->nfields; i++) {
    const gtype *f = t->fields[i].type;
    if (f->kind == K_STRUCT)
      emit_struct(o, f, done);
    else if (f->kind == K_ARRAY && f->elem->kind == K_STRUCT)
      emit_struct(o, f->elem, done);
  }
}

static void
emit_struct(FILE *o, const gtype *t, char *done) {
  const char *c = cname(t);
  if (done[t->id])
    return;
  done[t->id] = 1;
  emit_deps(o, t, done);
  if (t->desc)
    fprintf(o, "/* %s */\n", t->desc);
  fprintf(o, "typedef struct %s {\n", c);
  for (int i = 0; i < t->nfields; i++) {
    const gfield *f = &t->fields[i];
    check_member(f);
    if (!f->required)
      fprintf(o, "  bool has_%s;\n", f->name);
    fprintf(o, "  %s %s;\n", ctype(f->type), f->name);
  }
  if (!t->nfields)
    fputs("  char none_; /* no fields: data is {} */\n", o);
  fprintf(o, "} %s;\n", c);
  if (is_listed(t))
    fprintf(o,
            "typedef struct %s_list {\n  const %s *v;\n  uint32_t n;\n} "
            "%s_list;\n",
            c, c, c);
  fprintf(o, "int %s_write(msgpack_packer *pk, const %s *d);\n\n", c, c);
}

/* ---------------------------------------------------------------- enum */

static void
emit_enum(FILE *o) {
  char u[128];
  fputs("typedef enum bus_type {\n  BUS_T_UNKNOWN,\n", o);
  for (int i = 0; i < nevents; i++) {
    upper(snake(events[i].name), u, sizeof u);
    fprintf(o, "  BUS_T_%s, /* %s */\n", u, events[i].name);
  }
  fputs("  BUS_T__COUNT\n} bus_type;\n\n", o);
}

/* "lark.ev.job.<job> | ..." split at " | ", the n-th alternative (0..). */
int
subject_alts(const entry *e, char alts[][256], int max) {
  int n = 0;
  const char *s = e->subject;
  while (s && n < max) {
    const char *bar = strstr(s, " | ");
    size_t len = bar ? (size_t)(bar - s) : strlen(s);
    if (len >= 256)
      die(NULL, "%s: subject too long", e->name);
    memcpy(alts[n], s, len);
    alts[n++][len] = 0;
    s = bar ? bar + 3 : NULL;
  }
  return n;
}

/* The builder's name for alternative alt: bus_subj_<type>, with the
 * alternative's second token when there are several (bus_subj_log_batch_in). */
void
subject_fn(const entry *e, const char *alt, int nalts, char *out, size_t cap) {
  const char *dot = strchr(alt, '.'), *end;
  if (nalts == 1 || !dot) {
    snprintf(out, cap, "bus_subj_%s", snake(e->name));
    return;
  }
  end = strchr(dot + 1, '.');
  snprintf(out, cap, "bus_subj_%s_%.*s", snake(e->name),
           (int)(end ? end - dot - 1 : (long)strlen(dot + 1)), dot + 1);
}

/* The subject builder's prototype, without the ';'. */
void
subject_proto(FILE *o, const char *fn, const char *alt) {
  fprintf(o, "int %s(char *out, size_t cap", fn);
  for (const char *p = strchr(alt, '<'); p; p = strchr(p + 1, '<'))
    fprintf(o, ", const char *%.*s", (int)(strchr(p, '>') - p - 1), p + 1);
  fputc(')', o);
}

static void
emit_event_protos(FILE *o, const entry *e) {
  const char *s = snake(e->name), *c = cname(e->type);
  char alts[4][256], fn[160];
  int n = subject_alts(e, alts, 4);
  fprintf(o, "/* %s: %s */\n", e->name, e->subject);
  if (e->resource)
    fprintf(o, "typedef %s bus_ev_%s;\n", c, s);
  fprintf(o,
          "int bus_%s_unpack(const msgpack_object *data, msgpack_zone *zone,\n"
          "    bus_ev_%s *out);\n",
          s, s);
  fprintf(o, "int bus_%s_pack(msgpack_sbuffer *out, const bus_ev_%s *d);\n", s,
          s);
  fprintf(o, "const bus_ev_%s *bus_as_%s(const struct bus_event *ev);\n", s, s);
  for (int i = 0; i < n; i++) {
    subject_fn(e, alts[i], n, fn, sizeof fn);
    subject_proto(o, fn, alts[i]);
    fputs(";\n", o);
  }
  fputc('\n', o);
}

void
write_types_h(const char *path) {
  char done[MAX_TYPES] = {0};
  FILE *o = out_open_c(
      path, "Included by bus.h, which says how to use it (\"typed data\").");
  fputs("#ifndef LARK_BUS_TYPES_H\n#define LARK_BUS_TYPES_H\n\n"
        "#include <stdbool.h>\n\n",
        o);
  emit_enum(o);
  for (int i = 0; i < nstructs; i++)
    emit_struct(o, structs[i], done);
  for (int i = 0; i < nresources; i++)
    emit_struct(o, resources[i].type, done);
  for (int i = 0; i < nevents; i++)
    emit_struct(o, events[i].type, done);
  for (int i = 0; i < nevents; i++)
    emit_event_protos(o, &events[i]);
  fputs("#endif\n", o);
  out_close(o, path);
}
