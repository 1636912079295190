/*
 * fuzz_lines.h - for the harnesses of the line protocols pods speak to
 * the edge's sockets (fuzz_camera_req.c, fuzz_robot_req.c): any bytes,
 * split into lines as the socket splits them: at '\n', empty lines
 * skipped, and a '\r' before the '\n' dropped where the socket drops it
 * (the camera socket does; a robot socket hands it to the parser). Each
 * line is either refused with a reason or taken (fuzz_refused).
 */
#ifndef LARK_FUZZ_LINES_H
#define LARK_FUZZ_LINES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* fn on each non-empty line of data, without its '\n' (and, with
 * strip_cr, without a '\r' before it). */
static inline void
fuzz_each_line(const uint8_t *data, size_t size, int strip_cr,
               void (*fn)(const char *line, size_t len)) {
  const char *s = (const char *)data, *end = s + size;
  while (s < end) {
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    size_t len = (size_t)((nl ? nl : end) - s);
    if (strip_cr && len && s[len - 1] == '\r')
      len--;
    if (len)
      fn(s, len);
    s = nl ? nl + 1 : end;
  }
}

/* Whether the parser (its result rc) refused the line; a refusal without
 * a reason in why is the fuzzer's crash. */
static inline int
fuzz_refused(int rc, const char *why) {
  if (rc && !why[0])
    abort();
  return rc != 0;
}

#endif
