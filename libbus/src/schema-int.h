/*
 * schema-int.h - the descriptor tables generated from schema/schema.yaml
 * and the helpers the codec shares with the schema checker.
 *
 * schemagen emits one bus__type per type it meets (named structs and the
 * inline element types) and sorts every field list and both name tables,
 * so lookups are binary searches over (pointer, length) keys.
 */
#ifndef LARK_SCHEMA_INT_H
#define LARK_SCHEMA_INT_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "bus.h"

enum bus__kind {
  BUS__K_STRING,
  BUS__K_TOKEN,
  BUS__K_NAME,
  BUS__K_DNAME,
  BUS__K_INT,
  BUS__K_UINT,
  BUS__K_BOOL,
  BUS__K_FLOAT,
  BUS__K_STRUCT, /* fields[] */
  BUS__K_MAP,    /* string keys to elem */
  BUS__K_ARRAY,  /* elem */
  BUS__K_VALUES, /* string keys to scalars */
  BUS__K_ANY
};

enum bus__format { BUS__F_NONE, BUS__F_IP, BUS__F_CIDR };

/* A struct has at most this many fields (one bit each while checking). */
#define BUS__MAX_FIELDS 64

typedef struct bus__type bus__type;

typedef struct bus__field {
  const char *name;
  uint32_t len;
  uint32_t required;
  const bus__type *type;
} bus__field;

struct bus__type {
  uint8_t kind;                  /* enum bus__kind */
  uint8_t format;                /* enum bus__format */
  uint32_t min_len, max_len;     /* strings; max_len bounds map keys too */
  uint32_t min_items, max_items; /* arrays, maps, values */
  int64_t imin, imax;            /* int */
  uint64_t umin, umax;           /* uint */
  const char *const *enums;      /* strings: the allowed values */
  uint32_t nenums;
  const bus__field *fields; /* struct: sorted by name */
  uint32_t nfields;
  const bus__type *elem; /* map values, array items */
};

typedef struct bus__schema_entry {
  const char *name;
  const bus__type *type;
} bus__schema_entry;

/* Generated (schema_tables.c): both tables sorted by name. */
extern const bus__schema_entry bus__schema_events[];
extern const size_t bus__schema_nevents;
extern const bus__schema_entry bus__schema_resources[];
extern const size_t bus__schema_nresources;

/* The event type named by (s, len), or NULL. */
const bus__schema_entry *bus__schema_event(const char *s, size_t len);

/*
 * Check obj against t, with path as the prefix of every reported path
 * ("data" for an event, "" for a resource). Same contract as
 * bus_schema_check.
 */
int bus__schema_walk(const bus__type *t, const char *path,
                     const msgpack_object *obj, bus_field_err *errs, int max,
                     int *n);

/* 1 if (s, len) is a name of at most max characters. */
int bus__name_valid(const char *s, size_t len, size_t max);
/* 1 if (s, len) is 1..max printable ASCII characters without spaces. */
int bus__token_valid(const char *s, size_t len, size_t max);

/*
 * Structural check of untrusted msgpack before msgpack_unpack sees it:
 * exactly one value spanning len bytes, nesting at most BUS__MP_MAX_DEPTH,
 * every length and count within the bytes left (so the unpacker's zone
 * allocations stay proportional to len). 0, or BUS_EMALFORMED with detail.
 */
#define BUS__MP_MAX_DEPTH 24
int bus__mp_scan(const void *buf, size_t len);

/* A thread's scratch zone, cleared; NULL when out of memory. */
msgpack_zone *bus__scratch_zone(void);

/* (s, len) as printable text for error messages, truncated to cap-1. */
const char *bus__printable(const char *s, size_t len, char *buf, size_t cap);

#endif
