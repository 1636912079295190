/*
 * utf8.c - text from pods made fit for events (utf8.h).
 */
#include <stddef.h>

#include "utf8.h"

size_t
edge_utf8_cut(const char *s, size_t len, size_t max) {
  if (len <= max)
    return len;
  size_t n = max;
  /* back off continuation bytes, then the lead byte they belong to */
  while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80 && max - n < 4)
    n--;
  return n ? n : max;
}

static size_t
seq_len(const unsigned char *s, size_t left) {
  unsigned c = s[0];
  size_t n = c < 0x80         ? 1
             : (c >> 5) == 6  ? 2
             : (c >> 4) == 14 ? 3
             : (c >> 3) == 30 ? 4
                              : 0;
  if (!n || n > left || (n == 2 && c < 0xC2) || (n == 4 && c > 0xF4))
    return 0;
  for (size_t i = 1; i < n; i++)
    if ((s[i] & 0xC0) != 0x80)
      return 0;
  if (n == 3 && ((c == 0xE0 && s[1] < 0xA0) || (c == 0xED && s[1] > 0x9F)))
    return 0;
  if (n == 4 && ((c == 0xF0 && s[1] < 0x90) || (c == 0xF4 && s[1] > 0x8F)))
    return 0;
  return n;
}

void
edge_utf8_fix(char *s, size_t len) {
  unsigned char *u = (unsigned char *)s;
  for (size_t i = 0; i < len;) {
    size_t n = u[i] ? seq_len(u + i, len - i) : 0;
    if (!n) {
      u[i++] = '?';
      continue;
    }
    i += n;
  }
}
