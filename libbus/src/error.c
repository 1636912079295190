/*
 * error.c - error names, messages and the per-thread last-error detail.
 *
 * Codes are negative: -errno from the system, BUS_E* from BUS_ERRNO_MAP.
 * Foreign codes (natsStatus, MDB_*) are translated where they arise, so
 * nothing outside libbus ever sees them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bus-int.h"

static _Thread_local char last_error[512];

#define BUS__ERR_NAME(name, msg) #name,
static const char *const err_names[] = {BUS_ERRNO_MAP(BUS__ERR_NAME)};
#undef BUS__ERR_NAME
#define BUS__ERR_MSG(name, msg) msg,
static const char *const err_msgs[] = {BUS_ERRNO_MAP(BUS__ERR_MSG)};
#undef BUS__ERR_MSG

static int
own_index(int err) {
  int i = BUS__ERR_BASE - err;
  return (i >= 0 && i < BUS__ERR_COUNT) ? i : -1;
}

const char *
bus_err_name(int err) {
  int i = own_index(err);
  if (i >= 0)
    return err_names[i];
  if (err == 0)
    return "OK";
  if (err < 0) {
    const char *n = strerrorname_np(-err);
    if (n)
      return n;
  }
  return "UNKNOWN";
}

const char *
bus_strerror(int err) {
  int i = own_index(err);
  if (i >= 0)
    return err_msgs[i];
  if (err == 0)
    return "success";
  if (err < 0)
    return strerror(-err);
  return "unknown error";
}

const char *
bus_last_error(void) {
  return last_error;
}

void
bus__clear_error(void) {
  last_error[0] = 0;
}

int
bus__set_error(int err, const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  (void)file; /* kept for a debugger; the message names the subject */
  (void)line;
  return err;
}

int
bus_error(int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return err;
}
