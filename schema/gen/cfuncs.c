/*
 * cfuncs.c - the functions of the generated event types (bus_types.c, in
 * the build tree, compiled into libbus): per struct a fill from a msgpack
 * object the schema tables have passed and a write that counts its map
 * from the has_ flags; per event type the validated unpack and pack, the
 * typed accessor and the subject builders; and the descriptor table
 * libbus's typed.c dispatches through (libbus/src/typed-int.h).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static char listed[MAX_TYPES]; /* structs used as array items */
static char wanted[MAX_TYPES]; /* structs reached from an event */

static void
mark(const gtype *t) {
  if (t->kind == K_ARRAY && t->elem->kind == K_STRUCT)
    listed[t->elem->id] = 1;
  if (t->kind == K_ARRAY)
    t = t->elem;
  if (t->kind != K_STRUCT || wanted[t->id])
    return;
  wanted[t->id] = 1;
  for (int i = 0; i < t->nfields; i++)
    mark(t->fields[i].type);
}

/*
 * The statement that fills member x from v (pack 0), or the expression
 * that packs it (pack 1), by the member's type: a scalar inline, a struct
 * through its generated function, the other shapes through libbus's
 * bus__fill_<shape> and bus__pack_<shape>.
 */
static void
member_expr(FILE *o, const gtype *t, const char *x, int pack) {
  static const struct {
    enum kind kind;
    const char *fill, *pack;
  } scalars[] = {
      {K_INT, "%s = bus__i64(v)", "msgpack_pack_int64(pk, %s)"},
      {K_UINT, "%s = v->via.u64", "msgpack_pack_uint64(pk, %s)"},
      {K_BOOL, "%s = v->via.boolean", "bus__pack_bool(pk, %s)"},
      {K_FLOAT, "%s = bus__f64(v)", "msgpack_pack_double(pk, %s)"},
  };
  const gtype *e = t->elem;
  const char *shape;
  if (is_string(t)) {
    fprintf(o, pack ? "bus__pack_bstr(pk, %s)" : "%s = bus__str(v)", x);
    return;
  }
  for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
    if (t->kind == scalars[i].kind) {
      fprintf(o, pack ? scalars[i].pack : scalars[i].fill, x);
      return;
    }
  if (t->kind == K_STRUCT)
    fprintf(o, pack ? "%s_write(pk, &%s)" : "bad |= fill_%s(z, v, &%s)",
            cname(t), x);
  else if (t->kind == K_ARRAY && e->kind == K_STRUCT)
    fprintf(o,
            pack ? "write_%s_list(pk, &%s)" : "bad |= fill_%s_list(z, v, &%s)",
            cname(e), x);
  else {
    if (t->kind == K_ARRAY)
      shape = is_string(e) ? "strs" : e->kind == K_UINT ? "u64s" : "i64s";
    else if (t->kind == K_MAP)
      shape = is_string(e) ? "str_map" : "u64_map";
    else
      shape = t->kind == K_VALUES ? "values" : "raw";
    fprintf(o,
            pack ? "bus__pack_%s(pk, &%s)" : "bad |= bus__fill_%s(z, v, &%s)",
            shape, x);
  }
}

static void
emit_fill(FILE *o, const gtype *t) {
  const char *c = cname(t);
  char x[96];
  fprintf(o,
          "static int\nfill_%s(msgpack_zone *z, const msgpack_object *o, "
          "%s *out) {\n  int bad = 0;\n  memset(out, 0, sizeof *out);\n"
          "  for (uint32_t i = 0; i < o->via.map.size; i++) {\n"
          "    const msgpack_object_str *k = &o->via.map.ptr[i].key.via.str;\n"
          "    const msgpack_object *v = &o->via.map.ptr[i].val;\n",
          c, c);
  for (int i = 0; i < t->nfields; i++) {
    const gfield *f = &t->fields[i];
    fprintf(o, "    %sif (bus__key(k, \"%s\", %zu))\n      ", i ? "else " : "",
            f->name, strlen(f->name));
    if (!f->required)
      fprintf(o, "out->has_%s = 1, ", f->name);
    snprintf(x, sizeof x, "out->%s", f->name);
    member_expr(o, f->type, x, 0);
    fputs(";\n", o);
  }
  if (!t->nfields)
    fputs("    (void)k, (void)v;\n", o);
  fputs("  }\n  (void)z;\n  return bad;\n}\n\n", o);
}

static void
emit_write(FILE *o, const gtype *t) {
  const char *c = cname(t);
  char x[96];
  fprintf(o, "int\n%s_write(msgpack_packer *pk, const %s *d) {\n", c, c);
  fprintf(o, "  uint32_t n = %d", nrequired(t));
  for (int i = 0; i < t->nfields; i++)
    if (!t->fields[i].required)
      fprintf(o, " + !!d->has_%s", t->fields[i].name);
  fputs(";\n  int bad = msgpack_pack_map(pk, n);\n", o);
  for (int i = 0; i < t->nfields; i++) {
    const gfield *f = &t->fields[i];
    if (!f->required)
      fprintf(o, "  if (d->has_%s)\n  ", f->name);
    fprintf(o, "  bad |= bus__pack_key(pk, \"%s\", %zu) || ", f->name,
            strlen(f->name));
    snprintf(x, sizeof x, "d->%s", f->name);
    member_expr(o, f->type, x, 1);
    fputs(";\n", o);
  }
  if (!t->nfields)
    fputs("  (void)d;\n", o);
  fputs("  return bad;\n}\n\n", o);
}

static void
emit_lists(FILE *o, const gtype *t) {
  const char *c = cname(t);
  fprintf(o,
          "static int\nfill_%s_list(msgpack_zone *z, const msgpack_object *o,"
          " %s_list *out) {\n"
          "  uint32_t n = o->via.array.size;\n"
          "  %s *v = bus__alloc(z, n, sizeof *v);\n  int bad = 0;\n"
          "  if (n && !v)\n    return -1;\n"
          "  for (uint32_t i = 0; i < n; i++)\n"
          "    bad |= fill_%s(z, &o->via.array.ptr[i], &v[i]);\n"
          "  out->v = v;\n  out->n = n;\n  return bad;\n}\n\n",
          c, c, c, c);
  fprintf(o,
          "static int\nwrite_%s_list(msgpack_packer *pk, const %s_list *l) {\n"
          "  int bad = msgpack_pack_array(pk, l->n);\n"
          "  for (uint32_t i = 0; i < l->n; i++)\n"
          "    bad |= %s_write(pk, &l->v[i]);\n  return bad;\n}\n\n",
          c, c, c);
}

/* The longest name a placeholder takes: the event's own field of that
 * name, a resource's metadata.name, another event's field, else a
 * derived name. */
static unsigned
placeholder_max(const entry *e, const char *name, size_t len) {
  unsigned best = 0;
  for (int j = -1; j < nevents; j++) {
    const gtype *t = j < 0 ? e->type : events[j].type;
    for (int i = 0; i < t->nfields; i++) {
      const gfield *f = &t->fields[i];
      if (strlen(f->name) == len && strncmp(f->name, name, len) == 0 &&
          (f->type->kind == K_NAME || f->type->kind == K_DNAME ||
           f->type->kind == K_TOKEN))
        best = f->type->max_len > best ? f->type->max_len : best;
    }
    if (j < 0 && (best || e->resource))
      return best ? best : 63;
  }
  return best ? best : 253;
}

static void
emit_subject(FILE *o, const entry *e, const char *alt, int nalts) {
  char fn[160];
  int n = 0;
  subject_fn(e, alt, nalts, fn, sizeof fn);
  subject_proto(o, fn, alt);
  fputs(" {\n", o);
  for (const char *p = strchr(alt, '<'); p; p = strchr(p + 1, '<'))
    n++;
  if (n) {
    fputs("  static const uint16_t max[] = {", o);
    for (const char *p = strchr(alt, '<'); p; p = strchr(p + 1, '<'))
      fprintf(o, "%s%u", p == strchr(alt, '<') ? "" : ", ",
              placeholder_max(e, p + 1, (size_t)(strchr(p, '>') - p - 1)));
    fputs("};\n  const char *const args[] = {", o);
    for (const char *p = strchr(alt, '<'); p; p = strchr(p + 1, '<'))
      fprintf(o, "%s%.*s", p == strchr(alt, '<') ? "" : ", ",
              (int)(strchr(p, '>') - p - 1), p + 1);
    fputs("};\n", o);
  }
  fprintf(o, "  return bus__subj(out, cap, \"%s\", %s, %s, %d);\n}\n\n", alt,
          n ? "args" : "NULL", n ? "max" : "NULL", n);
}

static void
emit_event(FILE *o, const entry *e) {
  const char *s = snake(e->name), *c = cname(e->type);
  char u[128], alts[4][256];
  int n = subject_alts(e, alts, 4);
  upper(s, u, sizeof u);
  fprintf(o,
          "int\nbus_%s_unpack(const msgpack_object *data, msgpack_zone *zone,"
          "\n    bus_ev_%s *out) {\n"
          "  return bus_data_unpack(BUS_T_%s, data, zone, out);\n}\n\n",
          s, s, u);
  fprintf(o,
          "int\nbus_%s_pack(msgpack_sbuffer *out, const bus_ev_%s *d) {\n"
          "  return bus_data_pack(BUS_T_%s, d, out);\n}\n\n",
          s, s, u);
  fprintf(o,
          "const bus_ev_%s *\nbus_as_%s(const struct bus_event *ev) {\n"
          "  return ev && ev->t == BUS_T_%s ? ev->typed : NULL;\n}\n\n",
          s, s, u);
  fprintf(o,
          "static int\ntfill_%s(msgpack_zone *z, const msgpack_object *o, "
          "void *out) {\n  return fill_%s(z, o, out);\n}\n\n"
          "static int\ntwrite_%s(msgpack_packer *pk, const void *d) {\n"
          "  return %s_write(pk, d);\n}\n\n",
          s, c, s, c);
  for (int i = 0; i < n; i++)
    emit_subject(o, e, alts[i], n);
}

static void
emit_tables(FILE *o) {
  fputs("const char *const bus__type_names[BUS_T__COUNT] = {\n    NULL,\n", o);
  for (int i = 0; i < nevents; i++) {
    fputs("    ", o);
    emit_str(o, events[i].name);
    fputs(",\n", o);
  }
  fputs("};\n\nconst bus__tdesc bus__tdescs[BUS_T__COUNT] = {\n"
        "    {0, NULL, NULL},\n",
        o);
  for (int i = 0; i < nevents; i++) {
    const char *s = snake(events[i].name);
    fprintf(o, "    {sizeof(bus_ev_%s), tfill_%s, twrite_%s},\n", s, s, s);
  }
  fputs("};\n", o);
}

static void
emit_protos(FILE *o) {
  for (int i = 0; i < ntypes; i++) {
    const char *c;
    if (!wanted[i])
      continue;
    c = cname(types[i]);
    fprintf(o,
            "static int fill_%s(msgpack_zone *z, const msgpack_object *o,\n"
            "    %s *out);\n",
            c, c);
    if (listed[i])
      fprintf(o,
              "static int fill_%s_list(msgpack_zone *z, "
              "const msgpack_object *o,\n    %s_list *out);\n"
              "static int write_%s_list(msgpack_packer *pk, "
              "const %s_list *l);\n",
              c, c, c, c);
  }
  fputc('\n', o);
}

void
write_types_c(const char *path) {
  for (int i = 0; i < nevents; i++)
    mark(events[i].type);
  FILE *o = out_open_c(
      path, "Long because it holds every event type; see bus.h, \"typed "
            "data\".");
  fputs("#include <string.h>\n\n#include \"bus.h\"\n"
        "#include \"typed-int.h\"\n\n",
        o);
  emit_protos(o);
  for (int i = 0; i < ntypes; i++) {
    if (!wanted[i])
      continue;
    emit_fill(o, types[i]);
    emit_write(o, types[i]);
    if (listed[i])
      emit_lists(o, types[i]);
  }
  for (int i = 0; i < nevents; i++)
    emit_event(o, &events[i]);
  emit_tables(o);
  out_close(o, path);
}
