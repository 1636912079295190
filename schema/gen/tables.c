/*
 * tables.c - libbus's validator tables (schema_tables.c) and the limits
 * codec.c needs as constants (schema_gen.h), from schemagen's model.
 * Field lists are sorted by name so libbus looks them up by binary search.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

const char *const kind_c[] = {"BUS__K_STRING", "BUS__K_TOKEN", "BUS__K_NAME",
                              "BUS__K_DNAME",  "BUS__K_INT",   "BUS__K_UINT",
                              "BUS__K_BOOL",   "BUS__K_FLOAT", "BUS__K_STRUCT",
                              "BUS__K_MAP",    "BUS__K_ARRAY", "BUS__K_VALUES",
                              "BUS__K_ANY",    "BUS__K_ANY"};

static int
cmp_field(const void *a, const void *b) {
  return strcmp(((const gfield *)a)->name, ((const gfield *)b)->name);
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

void
write_tables(const char *path) {
  FILE *o = out_open_c(path, NULL);
  int i;
  fprintf(o,
          "#include \"schema-int.h\"\n#include \"schema_gen.h\"\n"
          "\nstatic const bus__type types[%d];\n\n",
          ntypes);
  for (i = 0; i < ntypes; i++)
    emit_fields(o, types[i]);
  fprintf(o, "\nstatic const bus__type types[%d] = {\n", ntypes);
  for (i = 0; i < ntypes; i++)
    emit_type(o, types[i]);
  fputs("};\n\n", o);
  emit_entries(o, "bus__schema_events", "bus__schema_nevents", events, nevents);
  emit_entries(o, "bus__schema_resources", "bus__schema_nresources", resources,
               nresources);
  out_close(o, path);
}

void
write_header(const char *path) {
  FILE *o = out_open_c(path, NULL);
  int i;
  fprintf(o,
          "#ifndef LARK_SCHEMA_GEN_H\n#define LARK_SCHEMA_GEN_H\n\n"
          "#define BUS__SCHEMA_VERSION %ld\n",
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
  out_close(o, path);
}
