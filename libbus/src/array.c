/*
 * array.c - arrays of items (bus.h, section arrays): room for one more in
 * one that grows by doubling, and where a key is in one that is sorted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bus-int.h"

int
bus_grow(void *arr, size_t n, size_t *cap, size_t size, size_t first) {
  void *p;
  if (n < *cap)
    return 0;
  size_t want = *cap ? *cap * 2 : first ? first : 16;
  memcpy(&p, arr, sizeof p); /* arr: the address of the array's pointer */
  if (want > SIZE_MAX / size || !(p = realloc(p, want * size)))
    return BUS_ERR(-ENOMEM, "out of memory growing an array to %zu items",
                   want);
  memcpy(arr, &p, sizeof p);
  *cap = want;
  return 0;
}

size_t
bus_bsearch(const void *key, const void *base, size_t n, size_t size,
            int (*cmp)(const void *key, const void *item), int *found) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = cmp(key, (const char *)base + mid * size);
    if (c == 0) {
      *found = 1;
      return mid;
    }
    if (c > 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  *found = 0;
  return lo;
}
