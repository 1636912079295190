/*
 * emit.c - one decided event onto the view's outbox (decide.c and
 * decide_dispatch.c): the scheduler as its actor, its id derived from
 * what it was decided from, so deciding again after a crash gives the
 * same id and the broker drops the copy.
 */
#include "scheduler.h"

#define ACTOR "lark-scheduler"

int
sched_emit(bus_txn *t, const char *subject, const char *type,
           const char *id_src, const char *cause, uint64_t prev, int flags,
           const msgpack_sbuffer *data) {
  char id[33];
  bus_event_derive_id(id_src, 0, id);
  bus_event ev = {.type = type,
                  .id = id,
                  .actor = ACTOR,
                  .cause = cause,
                  .prev = prev,
                  .data_mp = data->data,
                  .data_mp_len = data->size};
  return bus_txn_emit(t, subject, &ev, flags);
}
