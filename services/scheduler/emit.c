/*
 * emit.c - one decided event onto the view's outbox (decide.c and
 * decide_dispatch.c): the scheduler as its actor, its id derived from what
 * it was decided from (libbus's bus_txn_emit_decided), so deciding again
 * after a crash gives the same id and the broker drops the copy.
 */
#include "scheduler.h"

#define ACTOR "lark-scheduler"

int
sched_emit(bus_txn *t, const char *subject, bus_type type, const void *data,
           const char *id_src, const char *cause, uint64_t prev, int flags) {
  bus_decider by = {.actor = ACTOR, .cause = cause};
  return bus_txn_emit_decided(t, &by, subject, type, data, id_src, prev, flags);
}

int
sched_emit_once(bus_txn *t, const char *subject, bus_type type,
                const void *data, const char *id_src, const char *cause,
                uint64_t prev) {
  bus_decider by = {.actor = ACTOR, .cause = cause};
  return bus_txn_emit_once(t, &by, subject, type, data, id_src, prev);
}
