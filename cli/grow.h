/*
 * grow.h - room for one more item in a malloc'd array that doubles, for
 * larkctl and the manifest reader alike.
 */
#ifndef LARK_CLI_GROW_H
#define LARK_CLI_GROW_H

#include <stdlib.h>

/* Room for item n of array p of size-byte items, capacity *cap (first
 * when empty): p, moved maybe, or NULL when out of memory (p is then
 * still the caller's, unchanged). */
static inline void *
lark_grow(void *p, size_t *cap, size_t n, size_t size, size_t first) {
  if (n < *cap)
    return p;
  size_t c = *cap ? 2 * *cap : first;
  void *q = realloc(p, c * size);
  if (q)
    *cap = c;
  return q;
}

#endif
