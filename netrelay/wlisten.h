/*
 * wlisten.h - lark-relay node's weights listener (part of larkrelay): the
 * TCP port its cluster's lark-edge fetchers connect to for a weights
 * source in another cluster (`--weights-listen HOST:PORT`).
 *
 * Each connection first sends one line "WEIGHTS <job> <from-node>
 * <to-node> <to-address>\n" (wreq.h), within REQUEST_TIMEOUT_MS and at
 * most RELAY_WREQ_MAX bytes; nothing after the '\n' is read here, so the
 * TLS session that follows reaches the far end whole. A good line hands
 * the connection to submit; a bad one, a timeout or a refusal from
 * submit closes it, with a log line saying why.
 *
 * Everything runs on the loop's thread.
 */
#ifndef LARK_RELAY_WLISTEN_H
#define LARK_RELAY_WLISTEN_H

#include <uv.h>

#include "hub.h"
#include "wreq.h"

/* Carry fd (its request read) for r: 0 when fd was taken, else nonzero
 * with why (fd is then closed by the listener). */
typedef int (*relay_wsubmit_fn)(void *ud, int fd, const relay_wreq *r,
                                char *why, size_t cap);

typedef struct relay_wlisten relay_wlisten;

/* Listen on numeric host:port (port 0: any; relay_wlisten_port tells).
 * 0, or a negative code with detail in bus_last_error(). */
int relay_wlisten_start(uv_loop_t *loop, const char *host, int port,
                        relay_wsubmit_fn submit, void *ud, relay_log_fn log,
                        void *log_ud, relay_wlisten **out);
int relay_wlisten_port(const relay_wlisten *w);
/* Close the listener and every connection still sending its request;
 * the memory goes with the loop's close callbacks (NULL is fine). */
void relay_wlisten_stop(relay_wlisten *w);

#endif
