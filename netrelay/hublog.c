/*
 * hublog.c - the hub's log: one formatted line to the callback the
 * hub's options name (lark-relay prints it to stderr), or nowhere.
 */
#include <stdarg.h>
#include <stdio.h>

#include "hub-int.h"

void
hub__log(hub *h, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  if (!h->o.log)
    return;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  h->o.log(h->o.log_ud, line);
}
