/*
 * pipe.h - appends in flight, each answered on its own (pipe.c).
 *
 * A round publishes appends one after another without waiting, then reads
 * their answers in the order they were sent: each slot's answer is what
 * a synchronous bus_append would have said of it (0 with the sequence and
 * duplicate flag, BUS_ECONFLICT, BUS_ENO_STREAM, BUS_ETIMEOUT, ...). A
 * raw pipe carries JetStream API requests instead, and keeps each slot's
 * answer as the broker sent it. A pipe belongs to one thread.
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

/* Open a raw pipe: its slots are sent with bus__pipe_request and read
 * with bus__pipe_drain and bus__pipe_take, not bus__pipe_ack. */
int bus__pipe_open_raw(bus_conn *c, bus__pipe **out);

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
 * The answer of slot, once every slot sent so far is answered (the
 * caller settles them all in order: one wait for the lot, not one each),
 * or once no answer came for the connection's JetStream wait; a wait
 * that gave up makes the next give up at once unless an answer came
 * since. Returns a->rc; bus_last_error() tells why when it is not 0.
 */
int bus__pipe_ack(bus__pipe *p, int slot, bus__ack *a);

/* Send a request with body (NULL: empty) to subject on a raw pipe, as a
 * plain publish. Returns its slot, or < 0 when it could not be sent. */
int bus__pipe_request(bus__pipe *p, const char *subject, const char *body);

/*
 * Wait until at most most of this round's slots are unanswered. Returns
 * 0; BUS_ETIMEOUT when no answer at all came for the connection's
 * JetStream wait, BUS_ECONN when the connection closed first.
 */
int bus__pipe_drain(bus__pipe *p, size_t most);

/*
 * A raw pipe's answer in slot, handed to the caller to free: the text
 * the broker sent, "" for no responders (no one takes the subject), NULL
 * when no answer came. Take each slot's answer once; it does not wait.
 */
char *bus__pipe_take(bus__pipe *p, int slot);

#endif
