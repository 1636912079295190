/*
 * log.c - the agent's log line (log.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "bus.h"
#include "log.h"

void
edge_logf(const char *level, const char *subject, const char *fmt, ...) {
  char msg[1024], when[32];
  struct tm tm;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int64_t now = bus_wall_ns();
  time_t sec = (time_t)(now / 1000000000);
  gmtime_r(&sec, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  fprintf(stderr, "%s.%03ldZ %s lark-edge subject=%s %s\n", when,
          (long)(now % 1000000000 / 1000000), level, subject, msg);
}
