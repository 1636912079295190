/*
 * catalog.h - the catalog view: every aggregate the platform has seen.
 *
 * For each aggregate subject lark.ev.<kind>.<id> the catalog keeps its
 * kind, id, version (the seq of its last accepted event), generation,
 * event count, last event type, time and actor; and the history of its
 * accepted events. It backs `larkctl get` and `larkctl describe`, and is
 * the first view rebuilt by `larkctl replay`.
 *
 * Tables:
 *   aggregates  "<kind>/<id>"           -> msgpack {kind, id, version,
 *                                          generation, events, type, ts,
 *                                          actor, deleted}
 *   history     "<kind>/<id>/" u64be(seq) -> msgpack {seq, type, ts, actor,
 *                                          cause, generation}
 *
 * Queries are answered on lark.cmd.<user>.catalog.list and
 * lark.cmd.<user>.catalog.describe (request and reply in msgpack), and the
 * same functions read a local view (a replay for `--at`).
 */
#ifndef LARK_CATALOG_H
#define LARK_CATALOG_H

#include "bus.h"

/* The view definition (no decisions: the catalog only observes). */
void catalog_view_def(bus_view_def *def);

/*
 * Pack into pk an array of the aggregates of kind (NULL or "": all), at
 * most limit (0: no limit). Reads through t.
 */
int catalog_list(bus_txn *t, const char *kind, size_t limit,
                 msgpack_packer *pk);

/*
 * Pack {aggregate: {...}, history: [{...}, ...]} for kind/id, the history
 * newest last and at most limit entries (the newest; 0: all).
 * BUS_ENOT_FOUND when the catalog has never seen it.
 */
int catalog_describe(bus_txn *t, const char *kind, const char *id, size_t limit,
                     msgpack_packer *pk);

/* The catalog's bus_query_fn: verbs "list" and "describe". */
int catalog_query(bus_txn *t, const char *kind, const char *verb,
                  const msgpack_object *req, msgpack_packer *pk, void *ud);

/* The catalog's verbs (commands.c): list and describe, answered by
 * catalog_query; served by bus_verbs_serve with the view. */
extern const bus_verbs catalog_verbs;

#endif
