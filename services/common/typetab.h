/*
 * typetab.h - the one lookup of a service's apply table: an event type to
 * the handler that applies it.
 *
 * Each service declares its table as an array of its own entry type whose
 * first member is the event type's name (const char *), sorted by strcmp
 * order of that name, and asks svc_type_find for the entry of an event's
 * type. A type missing from the table is one the view passes over.
 *
 *   typedef struct { const char *type; handler_fn fn; } entry;
 *   static const entry tab[] = {{"job.placed", on_placed}, ...};
 *   const entry *e = SVC_TYPE_FIND(tab, ev->type);
 */
#ifndef LARK_TYPETAB_H
#define LARK_TYPETAB_H

#include <stddef.h>

/* The entry (of n, each size bytes) whose first member names type, or
 * NULL. The table must be sorted; a debug build checks it. */
const void *svc_type_find(const void *tab, size_t n, size_t size,
                          const char *type);

#define SVC_TYPE_FIND(tab, type)                                               \
  svc_type_find((tab), sizeof(tab) / sizeof((tab)[0]), sizeof((tab)[0]), (type))

#endif
