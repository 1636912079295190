/*
 * test_clock.c - the one clock (bus_mono_*, bus_wall_ns, bus_sleep_ms,
 * bus_deadline_ms): units, monotony, and a sleep that sleeps.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <time.h>

#include "bus.h"

Test(clock, units_agree) {
  int64_t ns = bus_mono_ns(), ms = bus_mono_ms();
  cr_expect_geq(ms, ns / 1000000);
  cr_expect_lt(ms - ns / 1000000, 1000);
  int64_t wall = bus_wall_ns();
  cr_expect_lt(llabs(wall / 1000000000 - (int64_t)time(NULL)), 2);
}

Test(clock, sleep_sleeps_and_mono_grows) {
  int64_t t0 = bus_mono_ms();
  bus_sleep_ms(30);
  int64_t t1 = bus_mono_ms();
  cr_expect_geq(t1 - t0, 30);
  cr_expect_lt(t1 - t0, 2000);
  bus_sleep_ms(0);
  bus_sleep_ms(-5);
  cr_expect_lt(bus_mono_ms() - t1, 1000, "<= 0 returns at once");
}

Test(clock, deadline) {
  struct timespec now, d;
  clock_gettime(CLOCK_MONOTONIC, &now);
  d = bus_deadline_ms(CLOCK_MONOTONIC, 1999);
  int64_t diff =
      (d.tv_sec - now.tv_sec) * 1000000000LL + (d.tv_nsec - now.tv_nsec);
  cr_expect_geq(diff, 1999000000LL);
  cr_expect_lt(diff, 2999000000LL);
  cr_expect_lt(d.tv_nsec, 1000000000L, "normalised");
  d = bus_deadline_ms(CLOCK_REALTIME, -10);
  cr_expect_geq(d.tv_sec, time(NULL) - 1);
}
