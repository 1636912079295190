/*
 * pipe.h - appends in flight, each answered on its own (pipe.c).
 *
 * A round publishes appends one after another without waiting, then reads
 * their answers in the order they were sent: each slot's answer is what
 * a synchronous bus_append would have said of it (0 with the sequence and
 * duplicate flag, BUS_ECONFLICT, BUS_ENO_STREAM, BUS_ETIMEOUT, ...). A
 * pipe belongs to one thread.
 */
#ifndef LARK_BUS_PIPE_H
#define LARK_BUS_PIPE_H

#include <stddef.h>
#include <stdint.h>

#include "bus.h"

typedef struct bus__pipe bus__pipe;

typedef struct bus__ack {
  int rc;       /* 0, or what bus_append would have returned */
  uint64_t seq; /* the stream sequence it was stored at */
  int dup;      /* the broker had it already (same id) */
} bus__ack;

int bus__pipe_open(bus_conn *c, bus__pipe **out);
void bus__pipe_close(bus__pipe *p);

/* Start a round: slots count from 0 again; answers to an earlier round
 * still on their way are dropped when they come. */
void bus__pipe_round(bus__pipe *p);

/*
 * Publish one append of an encoded event (its id and type name for the
 * headers) to subject, with the broker's check when flags has
 * BUS_APPEND_CHECK (prev: the subject's last sequence, 0 for none).
 * Returns its slot, or < 0 when it could not be sent.
 */
int bus__pipe_send(bus__pipe *p, const char *subject, const char *id,
                   const char *type, const void *data, size_t len, int flags,
                   uint64_t prev);

/* The same, refused unless the stream's last message is the one whose id
 * is after (NULL: no such check): an append that must follow another. */
int bus__pipe_send_after(bus__pipe *p, const char *subject, const char *id,
                         const char *type, const void *data, size_t len,
                         int flags, uint64_t prev, const char *after);

/*
 * The answer of slot (waiting for it: at most the connection's JetStream
 * wait without any answer coming). Returns a->rc; bus_last_error() tells
 * why when it is not 0.
 */
int bus__pipe_ack(bus__pipe *p, int slot, bus__ack *a);

#endif
