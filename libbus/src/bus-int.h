/*
 * bus-int.h - what libbus's own files share and nobody else sees.
 */
#ifndef LARK_BUS_INT_H
#define LARK_BUS_INT_H

#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "bus.h"

/*
 * 1 if a message with this reply subject is a request: its answer goes to
 * the sender's inbox. Stream content that a push consumer delivers onto a
 * subject carries a $JS.ACK reply (the broker does not check a deliver
 * subject against its consumer's creator): it is no request, and an
 * answer to it would acknowledge it.
 */
static inline int
bus__is_request(const char *reply) {
  return reply && strncmp(reply, "_INBOX", 6) == 0;
}

/*
 * Record detail for bus_last_error() and return err, so a failure reads
 *   return BUS_ERR(BUS_ENO_STREAM, "stream %s is missing", name);
 * The file and line go in front of the message in debug builds only.
 */
int bus__set_error(int err, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define BUS_ERR(err, ...) bus__set_error((err), __FILE__, __LINE__, __VA_ARGS__)

/* bus_conn_serve whose ud is freed with free_ud when unserved. */
int bus__conn_serve_owned(bus_conn *c, const char *subject, const char *queue,
                          bus_serve_cb cb, void *ud, void (*free_ud)(void *),
                          bus_serve **out);

/* The last event on subject in stream: *seq its sequence, and 1 when its
 * id is id, 0 when another's; < 0 when it cannot be read (BUS_ENOT_FOUND:
 * none, *seq 0). */
int bus__last_is(bus_conn *c, const char *stream, const char *subject,
                 const char *id, uint64_t *seq);

/* Clear the last error of this thread. */
void bus__clear_error(void);

/* The user seed of a creds file, its first "SU..." line, into seed (wipe
 * it after use). BUS_EAUTH when there is none, -errno when unreadable. */
int bus__creds_seed(const char *path, char seed[BUS_NKEY_SEED_LEN + 1]);

/*
 * Sign nonce with the user seed in the creds file at path: the Ed25519
 * signature into sig. The seed is read for each signature and wiped at
 * once.
 */
int bus__nkey_sign(const char *path, const char *nonce, unsigned char sig[64]);

/*
 * Publish n outbox events (ids, encoded bodies) on one checked subject of
 * stream as a chain (outbox_chain.c): the first at its own prev, each
 * next one on top of the one before, all sent at once on pipe p. fate[i]:
 * 1 landed, 2 dropped, 0 kept. Returns 0 or an error no fate covers.
 */
typedef struct bus__pipe bus__pipe;
int bus__chain_publish(bus__pipe *p, bus_conn *c, const char *stream,
                       const char *subject, const char *const *ids,
                       const void *const *bodies, const size_t *lens, size_t n,
                       int *fate);

#endif
