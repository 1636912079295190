/*
 * events.h - sample events for tests and benches: a small data map and
 * an event around it, ready to append.
 */
#ifndef LARK_TEST_EVENTS_H
#define LARK_TEST_EVENTS_H

#include <msgpack.h>

#include "bus.h"

/* Initialise sb and pack {key: value} into it, both strings
 * (msgpack_sbuffer_destroy it when done). */
void lt_pack_field(msgpack_sbuffer *sb, const char *key, const char *value);

/* Initialise sb and pack {"text": text} into it (msgpack_sbuffer_destroy
 * it when done). */
void lt_pack_text(msgpack_sbuffer *sb, const char *text);

/*
 * ev as a service or a user writes it: a fresh id (written into id, which
 * ev points at), type, the current schema version, ts, actor, no cause,
 * prev, and data the packed map in data (NULL: nil).
 */
void lt_event(bus_event *ev, char id[33], const char *type, const char *actor,
              int64_t ts, uint64_t prev, const msgpack_sbuffer *data);

/*
 * ev as a test writes it: a fresh id (written into id, which ev points
 * at), type, the current schema version, ts 1, actor "test", no cause, and
 * data the packed map in data (NULL: no data).
 */
void lt_sample_event(bus_event *ev, char id[33], const char *type,
                     const msgpack_sbuffer *data);

#endif
