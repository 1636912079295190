/*
 * splice.h - two TCP connections joined both ways on a libuv loop, for
 * lark-relay node's same-cluster routes (part of larkrelay).
 *
 * A splice reads from one side only while the other side's write queue
 * is under a limit, so a slow reader slows the writer instead of filling
 * the relay's memory. EOF is passed on as a shutdown of the other side's
 * writing half; the splice ends when both directions have ended or
 * either side fails, and then frees itself. Everything runs in the
 * loop's thread.
 */
#ifndef LARK_RELAY_SPLICE_H
#define LARK_RELAY_SPLICE_H

#include <stdint.h>

#include <uv.h>

/* The splices of one loop, for counting and stopping them. */
typedef struct relay_splices {
  struct relay_splice *head;
  int n; /* open right now */
} relay_splices;

/* Called once when a splice ends: bytes a->b and b->a, and why ("" when
 * both sides finished, else the first error). */
typedef void (*relay_splice_done_fn)(void *ud, uint64_t ab, uint64_t ba,
                                     const char *why);

/*
 * Connect to the numeric address ip:port and join that connection with
 * fd (a connected socket, owned by the splice from now on, even on
 * failure). When the connection cannot be made, fd is reset (the peer
 * sees a refusal) and done is called with why. Returns 0, or a negative
 * code (then done is not called and fd is closed). set is zeroed by the
 * caller before the first splice.
 */
int relay_splice_start(uv_loop_t *loop, relay_splices *set, int fd,
                       const char *ip, int port, relay_splice_done_fn done,
                       void *ud);

/* Reset every splice of set (at stop); their done callbacks still run
 * and set->n reaches 0 once the loop has run their close callbacks. */
void relay_splice_abort_all(relay_splices *set);

#endif
