/*
 * buf.c - the SSH wire types (RFC 4251 section 5): a growable writer and
 * a bounded reader, both with an error flag that sticks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "sshwire.h"

/* ---------------------------------------------------------------- writer */

void
sshwire_buf_free(sshwire_buf *b) {
  if (b->p && b->secret)
    sodium_memzero(b->p, b->cap);
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}

/* Room for n more bytes; a secret buffer is copied, never realloc'd, so
 * no unwiped copy is left behind. */
static int
reserve(sshwire_buf *b, size_t n) {
  if (b->err || n > SIZE_MAX / 2 - b->len) {
    b->err = 1;
    return -1;
  }
  if (b->len + n <= b->cap)
    return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + n)
    cap *= 2;
  uint8_t *p = malloc(cap);
  if (!p) {
    b->err = 1;
    return -1;
  }
  if (b->len)
    memcpy(p, b->p, b->len);
  if (b->p && b->secret)
    sodium_memzero(b->p, b->cap);
  free(b->p);
  b->p = p;
  b->cap = cap;
  return 0;
}

void
sshwire_put(sshwire_buf *b, const void *d, size_t n) {
  if (reserve(b, n))
    return;
  if (n)
    memcpy(b->p + b->len, d, n);
  b->len += n;
}

void
sshwire_put_u8(sshwire_buf *b, uint8_t v) {
  sshwire_put(b, &v, 1);
}

void
sshwire_put_u32(sshwire_buf *b, uint32_t v) {
  uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8),
                  (uint8_t)v};
  sshwire_put(b, x, 4);
}

void
sshwire_put_u64(sshwire_buf *b, uint64_t v) {
  sshwire_put_u32(b, (uint32_t)(v >> 32));
  sshwire_put_u32(b, (uint32_t)v);
}

void
sshwire_put_str(sshwire_buf *b, const void *d, size_t n) {
  if (n > UINT32_MAX) {
    b->err = 1;
    return;
  }
  sshwire_put_u32(b, (uint32_t)n);
  sshwire_put(b, d, n);
}

void
sshwire_put_cstr(sshwire_buf *b, const char *s) {
  sshwire_put_str(b, s, strlen(s));
}

void
sshwire_put_buf(sshwire_buf *b, const sshwire_buf *s) {
  b->err |= s->err;
  sshwire_put_str(b, s->p, s->len);
}

/* ---------------------------------------------------------------- reader */

sshwire_rd
sshwire_rd_of(const void *p, size_t n) {
  return (sshwire_rd){p, p ? n : 0, 0};
}

uint8_t
sshwire_get_u8(sshwire_rd *r) {
  if (r->err || r->len < 1) {
    r->err = 1;
    return 0;
  }
  r->len--;
  return *r->p++;
}

uint32_t
sshwire_get_u32(sshwire_rd *r) {
  if (r->err || r->len < 4) {
    r->err = 1;
    return 0;
  }
  uint32_t v = (uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 |
               (uint32_t)r->p[2] << 8 | r->p[3];
  r->p += 4;
  r->len -= 4;
  return v;
}

uint64_t
sshwire_get_u64(sshwire_rd *r) {
  uint64_t hi = sshwire_get_u32(r);
  return hi << 32 | sshwire_get_u32(r);
}

const uint8_t *
sshwire_get_str(sshwire_rd *r, size_t *n) {
  size_t l = sshwire_get_u32(r);
  *n = 0;
  if (r->err || l > r->len) {
    r->err = 1;
    return NULL;
  }
  const uint8_t *s = r->p;
  r->p += l;
  r->len -= l;
  *n = l;
  return s;
}

int
sshwire_get_str_is(sshwire_rd *r, const char *want) {
  size_t n;
  const uint8_t *s = sshwire_get_str(r, &n);
  return s && n == strlen(want) && !memcmp(s, want, n);
}

sshwire_rd
sshwire_get_sub(sshwire_rd *r) {
  size_t n;
  const uint8_t *s = sshwire_get_str(r, &n);
  sshwire_rd sub = sshwire_rd_of(s, n);
  sub.err = r->err;
  return sub;
}

int
sshwire_get_cstr(sshwire_rd *r, char *out, size_t cap) {
  size_t n;
  const uint8_t *s = sshwire_get_str(r, &n);
  if (!s || n >= cap || memchr(s, 0, n)) {
    r->err = 1;
    return -EBADMSG;
  }
  memcpy(out, s, n);
  out[n] = 0;
  return 0;
}

/* ----------------------------------------------------------------- lines */

int
sshwire_line_decode(const char *type, const char *line, size_t len,
                    uint8_t **blob, size_t *n) {
  size_t tl = strlen(type), i, j;
  *blob = NULL;
  *n = 0;
  if (!line || len <= tl || memcmp(line, type, tl) || line[tl] != ' ')
    return -EBADMSG;
  for (i = tl; i < len && line[i] == ' ';)
    i++;
  for (j = i; j < len && line[j] != ' ' && line[j] != '\n' && line[j] != '\r';)
    j++;
  if (j == i || j - i > SSHWIRE_LINE_MAX)
    return -EBADMSG;
  size_t cap = (j - i) / 4 * 3 + 3;
  uint8_t *b = malloc(cap);
  if (!b)
    return -ENOMEM;
  if (sodium_base642bin(b, cap, line + i, j - i, NULL, n, NULL,
                        sodium_base64_VARIANT_ORIGINAL)) {
    free(b);
    *n = 0;
    return -EBADMSG;
  }
  *blob = b;
  return 0;
}

char *
sshwire_line_encode(const char *type, const uint8_t *blob, size_t n,
                    const char *comment) {
  size_t bl = sodium_base64_encoded_len(n, sodium_base64_VARIANT_ORIGINAL);
  size_t tl = strlen(type), cl = comment ? strlen(comment) : 0;
  char *s = malloc(tl + 1 + bl + 1 + cl + 1);
  if (!s)
    return NULL;
  memcpy(s, type, tl);
  s[tl] = ' ';
  sodium_bin2base64(s + tl + 1, bl, blob, n, sodium_base64_VARIANT_ORIGINAL);
  if (comment) {
    size_t at = strlen(s);
    s[at] = ' ';
    memcpy(s + at + 1, comment, cl + 1);
  }
  return s;
}
