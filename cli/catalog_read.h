/*
 * catalog_read.h - get and describe read the catalog live or as it was.
 */
#ifndef LARK_CLI_CATALOG_READ_H
#define LARK_CLI_CATALOG_READ_H

#include "cli.h"

typedef struct cli_catalog_q {
  const char *kind; /* NULL or "": every kind (list) */
  const char *id;   /* describe */
  size_t limit;
  int64_t at_ns; /* 0: live */
} cli_catalog_q;

/*
 * verb "list": *out is an array of aggregate maps. verb "describe": *out
 * is {aggregate, history}. Allocated from zone. Prints its own errors and
 * returns a CLI exit code.
 */
int cli_catalog_fetch(lark_cli *cli, const char *verb, const cli_catalog_q *q,
                      msgpack_zone *zone, msgpack_object *out);

/* "jobs" -> "job": users type either. */
const char *cli_kind_singular(const char *kind, char *buf, size_t cap);

#endif
