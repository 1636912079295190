/*
 * fuzz_sockline.c - libFuzzer harness for the lines a pod writes to its
 * LARK_SOCKET (edge/sockline.c): any bytes, split into lines as the
 * socket splits them (at '\n', a trailing '\r' dropped, empty lines
 * skipped, lines cut at 64 KiB). Every line must get exactly one answer:
 * a reason, a report or a log line. A report the socket accepts must be
 * one msgpack map that the schema takes as run.reported data, since the
 * pod hears "ok" for it and the node sends it on as it is; a log line
 * handed on must name stdout or stderr.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "bus.h"
#include "fuzz_map.h"
#include "sockline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { LINE_MAX_BYTES = 65536 };

static void
on_log(void *ud, const char *stream, const char *text, size_t len) {
  size_t *logs = ud;
  volatile char sink = 0;
  if (strcmp(stream, "stdout") && strcmp(stream, "stderr"))
    abort();
  for (size_t i = 0; i < len; i++) /* every byte readable */
    sink ^= text[i];
  (void)sink;
  (*logs)++;
}

static void
check_report(const msgpack_sbuffer *sb) {
  msgpack_zone z;
  msgpack_object o;
  bus_field_err errs[4];
  int n = 0;
  if (!msgpack_zone_init(&z, 1024))
    return;
  fuzz_unpack_map(sb->data, sb->size, &z, &o);
  if (bus_schema_check("run.reported", &o, errs, 4, &n) || n)
    abort(); /* "ok" to the pod, refused by the ingress */
  msgpack_zone_destroy(&z);
}

/* One line through the parser and its answer checked. */
static void
one_line(edge_sock_batch *b, const char *line, size_t len) {
  size_t logs = 0, reports = b->nreports;
  if (edge_sock_batch_grow(b))
    return;
  edge_sock_line_parse(b, line, len, on_log, &logs);
  const edge_sock_line *l = &b->lines[b->nlines - 1];
  if (l->why && (l->report || !*l->why || logs))
    abort();
  if (l->report != (b->nreports == reports + 1) || logs > 1)
    abort();
  if (!l->why && !l->report && logs != 1)
    abort();
  if (l->report)
    check_report(&b->reports[b->nreports - 1]);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  edge_sock_batch b = {0};
  const char *s = (const char *)data;
  size_t start = 0;
  for (size_t i = 0; i <= size; i++) {
    if (i < size && s[i] != '\n' && i - start < LINE_MAX_BYTES)
      continue;
    size_t len = i - start;
    if (len && s[start + len - 1] == '\r')
      len--;
    if (len) {
      char *line = malloc(len); /* exactly len: no terminator to lean on */
      if (line) {
        memcpy(line, s + start, len);
        one_line(&b, line, len);
        free(line);
      }
    }
    start = i + (i < size && s[i] == '\n');
  }
  edge_sock_batch_clear(&b);
  free(b.lines);
  free(b.reports);
  return 0;
}
