/*
 * stream.h - read what a stream holds, from its first message to its end
 * (bus_reader), for tests that count or check the events stored.
 */
#ifndef LARK_TEST_STREAM_H
#define LARK_TEST_STREAM_H

#include "bus.h"

/* Called with each batch read (it may be empty). */
typedef void (*lt_batch_fn)(bus_batch *b, void *arg);

/* Called with each event read. */
typedef void (*lt_event_fn)(const bus_event *ev, void *arg);

/*
 * Read stream (subjects under filter; NULL: all) from its start, calling
 * fn with each batch, waiting up to wait_ms for each. to_end 1: 0 when
 * the reader reached the end (BUS_EEOF), -1 when it could not open or
 * stopped short of it; to_end 0: 0 once it opened, whatever stopped it
 * then. bus_last_error() says why when it is -1.
 */
int lt_read_batches(bus_conn *c, const char *stream, const char *filter,
                    int wait_ms, int to_end, lt_batch_fn fn, void *arg);

/* lt_read_batches calling fn with each event instead; a message that does
 * not decode is not passed on, and makes it -1 too. */
int lt_read_stream(bus_conn *c, const char *stream, const char *filter,
                   int wait_ms, int to_end, lt_event_fn fn, void *arg);

/* How many events of type there are in stream under filter (and, with
 * subject, on that subject exactly), read to its end; -1 when that could
 * not be read (lt_read_stream with to_end 1). */
long lt_count_events(bus_conn *c, const char *stream, const char *filter,
                     const char *type, const char *subject);

/* lt_read_stream of LARK_RUNS, the run reports of job (lark.run.<job>). */
int lt_read_runs(bus_conn *c, const char *job, int wait_ms, int to_end,
                 lt_event_fn fn, void *arg);

/* The last event on subject in stream: its sequence, 0 when there is none
 * (or it could not be read); its type into type (cap bytes, "" then;
 * type may be NULL). */
uint64_t lt_last_on(bus_conn *c, const char *stream, const char *subject,
                    char *type, size_t cap);

#endif
