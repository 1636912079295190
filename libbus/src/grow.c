/*
 * grow.c - room for one more item in an array that grows by doubling
 * (bus.h, section grow).
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
