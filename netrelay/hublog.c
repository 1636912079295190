/*
 * hublog.c - the relays' log: one formatted line to the callback the
 * hub's (or the node relay's) options name (lark-relay prints it to
 * stderr), or nowhere.
 */
#include <stdarg.h>
#include <stdio.h>

#include "hub-int.h"

void
relay__vlog(void (*log)(void *ud, const char *line), void *ud, const char *fmt,
            va_list ap) {
  char line[1024];
  if (!log)
    return;
  vsnprintf(line, sizeof line, fmt, ap);
  log(ud, line);
}

void
hub__log(hub *h, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  relay__vlog(h->o.log, h->o.log_ud, fmt, ap);
  va_end(ap);
}
