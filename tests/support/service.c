/*
 * service.c - the platform's services beside a test's broker.
 */
#include "service.h"

#include <stdio.h>

#include "proc.h"
#include "wait.h"

pid_t
lt_start_named_service(const char *bin_name, const char *url, const char *dir,
                       const char *name) {
  char data[512], log[512];
  snprintf(data, sizeof data, "%s/%s", dir, name);
  snprintf(log, sizeof log, "%s/%s.log", dir, name);
  const char *extra[] = {"--name", name, NULL};
  return lt_start_service(bin_name, url, data, log, extra);
}

int
lt_service_answers(bus_conn *c, const char *service, int tries) {
  bus_status st;
  for (int i = 0; i < tries; i++) {
    if (bus_status_query(c, service, 200, &st) == 0)
      return 1;
    lt_sleep_ms(100);
  }
  return 0;
}
