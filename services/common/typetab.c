/*
 * typetab.c - the lookup of an apply table by event type (typetab.h).
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "typetab.h"

static const char *
name_at(const void *tab, size_t i, size_t size) {
  return *(const char *const *)((const char *)tab + i * size);
}

static int
by_name(const void *key, const void *entry) {
  return strcmp(key, *(const char *const *)entry);
}

const void *
svc_type_find(const void *tab, size_t n, size_t size, const char *type) {
#ifndef NDEBUG
  for (size_t i = 1; i < n; i++)
    assert(strcmp(name_at(tab, i - 1, size), name_at(tab, i, size)) < 0);
#else
  (void)name_at;
#endif
  if (!type)
    return NULL;
  return bsearch(type, tab, n, size, by_name);
}
