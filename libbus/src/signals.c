/*
 * signals.c - a process's stop flag, set from SIGINT and SIGTERM (bus.h,
 * bus_stop_on_signals).
 */
#include <signal.h>
#include <string.h>

#include "bus.h"

static atomic_int *stop_flag;

static void
on_signal(int sig) {
  (void)sig;
  atomic_int *f = stop_flag;
  if (f)
    atomic_store(f, 1);
}

void
bus_stop_on_signals(atomic_int *flag) {
  struct sigaction sa;
  stop_flag = flag;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
}
