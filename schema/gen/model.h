/*
 * model.h - schemagen's model of schema/schema.yaml: the types, fields,
 * event types and resources model.c reads, and what the writers share
 * (tables.c: libbus's validator tables; docs.c: docs/events.md;
 * ctypes.c and cfuncs.c: the C types, decoders, packers and subject
 * builders).
 */
#ifndef SCHEMAGEN_MODEL_H
#define SCHEMAGEN_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include <yaml.h>

#define MAX_TYPES 1024
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

/* The YAML spelling of each kind ("" for those with none), and the
 * validator table's constant. */
extern const char *const kind_yaml[];
extern const char *const kind_c[];

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
  /* What the C types call a struct: its struct name, resource kind or
   * event type (NULL for element types). */
  const char *label;
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

extern const char *schema_path;
extern gtype *types[MAX_TYPES];
extern int ntypes;
extern gtype *structs[MAX_TYPES];
extern int nstructs;
extern entry events[MAX_ENTRIES], resources[MAX_ENTRIES];
extern int nevents, nresources; /* both sorted by name once loaded */
extern gtype envelope;
extern header headers[8];
extern int nheaders;
extern long version;

/* Print "schema.yaml:LINE: message" and exit 1. */
void die(const yaml_node_t *at, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
/* Read and check path into the model above; dies on any problem. */
void load(const char *path);
/* Free what load keeps. */
void unload(void);

/* out.c. A generated file: opened for writing, or closed (a failed write shows
 * there); each dies on failure. */
FILE *out_open(const char *path);
void out_close(FILE *o, const char *path);
/* out_open for a generated C file, which starts with a comment saying so
 * (and note, a line of its own, when not NULL). */
FILE *out_open_c(const char *path, const char *note);
/* s as a C string literal. */
void emit_str(FILE *o, const char *s);
/* 1 for string, token, name and derived-name. */
int is_string(const gtype *t);
/* s upper-cased into out. */
void upper(const char *s, char *out, size_t cap);

/* The generated C types (ctypes.c). cname: a struct's C type
 * ("bus_job_spec", "bus_job_res", "bus_ev_job_placed"); ctype: a field's
 * ("bus_str", "uint64_t", "bus_binding_list"); snake: an event type or a
 * struct name as a C identifier ("job_placed", "job_spec"). Each dies on
 * a type the C types do not cover. */
const char *cname(const gtype *t);
const char *ctype(const gtype *t);
const char *snake(const char *s);
int nrequired(const gtype *t);
/* An event's subject patterns (split at " | "), each builder's name and
 * its prototype without the ';'. */
int subject_alts(const entry *e, char alts[][256], int max);
void subject_fn(const entry *e, const char *alt, int nalts, char *out,
                size_t cap);
void subject_proto(FILE *o, const char *fn, const char *alt);

void write_tables(const char *path);
void write_header(const char *path);
void write_docs(const char *path);
void write_types_h(const char *path);
void write_types_c(const char *path);

#endif
