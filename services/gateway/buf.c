/*
 * buf.c - gw_buf, the gateway's growable byte buffer: the JSON of objects,
 * lists and changes is built in one, appended to and handed to the HTTP
 * layer as bytes. p is NUL-terminated after every append (so a buffer may
 * be read as a string); a failed append leaves the buffer as it was.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway.h"

/* Room for extra more bytes and the NUL. */
static int
reserve(gw_buf *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap)
    return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1)
    cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p)
    return -ENOMEM;
  b->p = p;
  b->cap = cap;
  return 0;
}

int
gw_buf_add(gw_buf *b, const void *data, size_t len) {
  if (reserve(b, len))
    return -ENOMEM;
  if (len)
    memcpy(b->p + b->len, data, len);
  b->len += len;
  b->p[b->len] = 0;
  return 0;
}

int
gw_buf_printf(gw_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char small[256];
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0)
    return -EINVAL;
  if ((size_t)n < sizeof small)
    return gw_buf_add(b, small, (size_t)n);
  if (reserve(b, (size_t)n))
    return -ENOMEM;
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return 0;
}

/* As JSON escapes a string (RFC 8259): quote, backslash and the control
 * characters; other bytes, UTF-8 included, as they are. */
int
gw_buf_json_str(gw_buf *b, const char *s) {
  size_t len0 = b->len;
  int rc = gw_buf_add(b, "\"", 1);
  for (const unsigned char *c = (const unsigned char *)s; !rc && *c; c++) {
    const unsigned char *run = c;
    while (*c && *c >= 0x20 && *c != '"' && *c != '\\')
      c++;
    if (c > run && (rc = gw_buf_add(b, run, (size_t)(c - run))))
      break;
    if (!*c)
      break;
    static const char esc[] = "\b\f\n\r\t";
    const char *e = strchr(esc, *c);
    if (*c == '"' || *c == '\\')
      rc = gw_buf_printf(b, "\\%c", *c);
    else if (e && *c)
      rc = gw_buf_printf(b, "\\%c", "bfnrt"[e - esc]);
    else
      rc = gw_buf_printf(b, "\\u%04x", *c);
  }
  if (!rc)
    rc = gw_buf_add(b, "\"", 1);
  if (rc && b->p) {
    b->len = len0;
    b->p[len0] = 0;
  }
  return rc;
}

void
gw_buf_reset(gw_buf *b) {
  b->len = 0;
  if (b->p)
    b->p[0] = 0;
}

void
gw_buf_free(gw_buf *b) {
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}
