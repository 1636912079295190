/*
 * emit.c - one decided event onto the view's outbox (decide.c and
 * decide_dispatch.c): the scheduler as its actor, its data the event
 * type's generated struct, its id derived from what it was decided from,
 * so deciding again after a crash gives the same id and the broker drops
 * the copy.
 */
#include <string.h>

#include "scheduler.h"

#define ACTOR "lark-scheduler"

/* The event with its id already derived. */
static int
emit_id(bus_txn *t, const char *subject, bus_type type, const void *data,
        const char *id, const char *cause, uint64_t prev, int flags) {
  bus_event ev = {.t = type,
                  .typed = data,
                  .id = id,
                  .actor = ACTOR,
                  .cause = cause,
                  .prev = prev};
  return bus_txn_emit(t, subject, &ev, flags);
}

int
sched_emit(bus_txn *t, const char *subject, bus_type type, const void *data,
           const char *id_src, const char *cause, uint64_t prev, int flags) {
  char id[33];
  bus_event_derive_id(id_src, 0, id);
  return emit_id(t, subject, type, data, id, cause, prev, flags);
}

int
sched_emit_once(bus_txn *t, const char *subject, bus_type type,
                const void *data, const char *id_src, const char *cause,
                uint64_t prev) {
  char id[33];
  bus_event_derive_id(id_src, 0, id);
  if (bus_txn_marked(t, id, strlen(id)) == 1)
    return 0;
  int rc = emit_id(t, subject, type, data, id, cause, prev, BUS_APPEND_CHECK);
  return rc ? rc : bus_txn_mark(t, id, strlen(id));
}
