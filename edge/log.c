/*
 * log.c - the agent's log line (log.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "log.h"

void
edge_logf(const char *level, const char *subject, const char *fmt, ...) {
  char msg[1024], when[32];
  struct timespec ts;
  struct tm tm;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  fprintf(stderr, "%s.%03ldZ %s lark-edge subject=%s %s\n", when,
          ts.tv_nsec / 1000000, level, subject, msg);
}
