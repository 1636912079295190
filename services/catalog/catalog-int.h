/*
 * catalog-int.h - what the catalog's files share: the tables and the row
 * codecs of records.c.
 */
#ifndef LARK_CATALOG_INT_H
#define LARK_CATALOG_INT_H

#include "catalog.h"

#define T_AGG "aggregates"
#define T_HIST "history"
#define KEY_MAX (BUS_SUBJECT_MAX + 16)

/* lark.ev.<kind>.<id> as "<kind>/<id>" into key; BUS_EINVAL otherwise. */
int catalog__split_subject(const char *subject, char *key, size_t cap,
                           size_t *klen);
/* The aggregates row of the event's subject (key "<kind>/<id>"). */
void catalog__pack_aggregate(msgpack_packer *pk, const char *key, size_t klen,
                             const bus_event *ev, const bus_version *ver);
/* The history row of one accepted event. */
void catalog__pack_history(msgpack_packer *pk, const bus_event *ev,
                           uint64_t generation);

#endif
