/*
 * clock.c - the platform's one clock (bus.h, section clock): monotonic
 * time for timeouts and intervals, wall-clock time for what is stored or
 * shown, a sleep, deadlines for timed condition waits, and durations as
 * people write them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"

static int64_t
ns_of(clockid_t clk) {
  struct timespec ts;
  clock_gettime(clk, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t
bus_mono_ns(void) {
  return ns_of(CLOCK_MONOTONIC);
}

int64_t
bus_mono_ms(void) {
  return ns_of(CLOCK_MONOTONIC) / 1000000;
}

int64_t
bus_wall_ns(void) {
  return ns_of(CLOCK_REALTIME);
}

void
bus_sleep_ms(int ms) {
  struct timespec ts;
  if (ms <= 0)
    return;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (long)(ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}

struct timespec
bus_deadline_ms(clockid_t clk, int ms) {
  struct timespec ts;
  clock_gettime(clk, &ts);
  if (ms < 0)
    ms = 0;
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  return ts;
}

int
bus_duration_parse(const char *s, double bare_ns, int64_t *ns) {
  static const struct {
    const char *unit;
    double ns;
  } units[] = {
      {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}, {"d", 86400e9}};
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || errno || v < 0)
    return -1;
  double unit = !*end ? bare_ns : 0;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
    if (!strcmp(end, units[i].unit))
      unit = units[i].ns;
  if (unit <= 0 || v * unit > 9.2e18)
    return -1;
  *ns = (int64_t)(v * unit);
  return 0;
}
