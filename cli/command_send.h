/*
 * command_send.h - the one path a command takes to the service that owns
 * its kind, for larkctl and lark-gateway alike (library larkmanifest):
 * the body of an apply ({key, resource}) and the request on
 * lark.cmd.<user>.<kind>.<verb> with its retries.
 *
 * Every command carries an idempotency key; a request that times out is
 * sent once more with the same body (its key makes it land once), and one
 * whose reply says the broker could not store it yet (a cluster electing
 * a leader) is sent again for a while. So whoever sends a manifest, the
 * service sees the same command and is the authority on it.
 */
#ifndef LARK_COMMAND_SEND_H
#define LARK_COMMAND_SEND_H

#include "bus.h"
#include "manifest.h"

/* How long one request waits for its reply. */
enum { LARK_CMD_TIMEOUT_MS = 5000 };

/*
 * Request lark.cmd.<user>.<kind>.<verb> with body (may be NULL) on c.
 * Returns 0 with the reply map (which may be {error}) unpacked into zone,
 * BUS_ENOT_FOUND or BUS_ETIMEOUT when nobody answers, BUS_EDENIED when the
 * broker refuses the publish, another code on transport failures.
 */
int lark_command_send(bus_conn *c, const char *user, const char *kind,
                      const char *verb, const msgpack_sbuffer *body,
                      msgpack_zone *zone, msgpack_object *reply);

/*
 * lark.cmd.<user>.logs.sync: ask lark-logs to take what the nodes' ingress
 * holds now, so a read of LARK_LOGS that follows finds every line printed
 * before it (a finished pod's last ones travel apart from its phase).
 * 0 when lark-logs said it has, else a code with bus_last_error() (it did
 * not answer, or its wait ran out): the read shows what is stored.
 */
int lark_logs_sync(bus_conn *c, const char *user);

/* The apply command's body for document d: {key, resource}, into sb. */
void lark_apply_body(msgpack_sbuffer *sb, const char *key, const lark_doc *d);

/* A {key, name} body (delete, stop, resume, ...), into sb. */
void lark_name_body(msgpack_sbuffer *sb, const char *key, const char *name);

/*
 * What an ok reply says was done: `unchanged: true` or `configured: true`,
 * else a `result` word the service names ("created", "stopped", ...),
 * else dflt. buf holds the word.
 */
const char *lark_reply_outcome(const msgpack_object *reply, const char *dflt,
                               char *buf, size_t cap);

#endif
