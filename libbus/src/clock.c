/*
 * clock.c - the platform's one clock (bus.h, section clock): monotonic
 * time for timeouts and intervals, wall-clock time for what is stored or
 * shown, a sleep, and deadlines for timed condition waits.
 */
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
