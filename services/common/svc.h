/*
 * svc.h - what every service's main.c shares: settings from one table
 * (flags over environment over defaults), one log line per event, signals,
 * and connecting with the streams it needs checked.
 *
 * A service is started as
 *   lark-<name> --url URL --creds FILE --data DIR [--name INSTANCE]
 *               [--log-level LEVEL]
 * and stops cleanly on SIGINT or SIGTERM.
 */
#ifndef LARK_SVC_H
#define LARK_SVC_H

#include <signal.h>
#include <stdint.h>

#include "bus.h"

enum { SVC_ERROR = 0, SVC_WARN = 1, SVC_INFO = 2, SVC_DEBUG = 3 };

typedef struct svc {
  const char *name; /* "catalog" */
  const char *url;
  const char *creds;
  const char *data;
  const char *instance; /* --name: the consumer and status name; default
                           the service's own */
  int log_level;
  volatile int stop;
  bus_conn *conn;
} svc;

/*
 * Fill s from argv and the environment (LARK_URL, LARK_CREDS, LARK_DATA,
 * LARK_LOG_LEVEL). Returns 0, or 2 after printing usage (the exit code).
 */
int svc_init(svc *s, const char *name, int argc, char **argv);

/* Route SIGINT and SIGTERM to s->stop. One svc per process. */
void svc_signals(svc *s);

/*
 * Connect (retrying every second until it works or s->stop) and check
 * that streams (NULL-terminated) exist; logs and returns the error when
 * they do not.
 */
int svc_connect(svc *s, const char *const *streams);
void svc_close(svc *s);

/* One line: time, level, service, subject, seq, message. */
void svc_logf(const svc *s, int level, const char *subject, uint64_t seq,
              const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define SVC_LOG(s, lvl, subject, seq, ...)                                     \
  do {                                                                         \
    if ((lvl) <= (s)->log_level)                                               \
      svc_logf((s), (lvl), (subject), (seq), __VA_ARGS__);                     \
  } while (0)

#endif
