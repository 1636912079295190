/*
 * sockline.h - private to edge/: the lines a pod writes to LARK_SOCKET,
 * parsed (sockline.c): JSON objects, a report {"kind", "values"} packed
 * as run.reported data, a log {"type": "log", "text", "stream"} handed
 * on. Pure: no loop, no store; the pod socket's fuzz harness
 * (fuzz/fuzz_sockline.c) runs it alone.
 */
#ifndef LARK_EDGE_SOCKLINE_H
#define LARK_EDGE_SOCKLINE_H

#include <stddef.h>

#include <jansson.h>
#include <msgpack.h>

#include "bus.h"

/*
 * The lines of one read: each one's answer in order (why NULL: ok), and
 * the reports among them (run.reported data), queued together before
 * any line is answered. A log line is handed to log(ud, stream, text,
 * len) at once. Exposed for the pod socket's fuzz harness.
 */
typedef struct edge_sock_line {
  const char *why;
  int report;
  int op; /* an engine request (a JSON object with "op"): not answered
             here, the socket hands it to engine_sock.c */
} edge_sock_line;

typedef struct edge_sock_batch {
  edge_sock_line *lines;
  size_t nlines, lcap;
  msgpack_sbuffer *reports;
  size_t nreports, rcap;
} edge_sock_batch;

typedef void (*edge_sock_log_fn)(void *ud, const char *stream, const char *text,
                                 size_t len);

/* Room for one more line and report in b; -1 when memory ran out. */
int edge_sock_batch_grow(edge_sock_batch *b);
/* One line (without its newline) into b, which has room for it. */
void edge_sock_line_parse(edge_sock_batch *b, const char *line, size_t len,
                          edge_sock_log_fn log, void *ud);
/* One JSON value as a report's value (strings point into v), or why it
 * cannot be one. */
const char *edge_sock_value(const json_t *v, bus_value *out);
/* Free b's reports and forget its lines (b stays usable). */
void edge_sock_batch_clear(edge_sock_batch *b);

#endif
