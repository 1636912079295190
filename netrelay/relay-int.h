/*
 * relay-int.h - what larkrelay's files share and nobody else sees.
 */
#ifndef LARK_RELAY_INT_H
#define LARK_RELAY_INT_H

#include <stddef.h>
#include <stdint.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <unistd.h>

#include "bus.h"

/* One formatted line to a relay's log callback (hublog.c); nothing when
 * log is NULL. */
void relay__vlog(void (*log)(void *ud, const char *line), void *ud,
                 const char *fmt, va_list ap);

/* *v read under mu: a flag another thread sets. */
static inline int
relay__locked_int(pthread_mutex_t *mu, const int *v) {
  pthread_mutex_lock(mu);
  int x = *v;
  pthread_mutex_unlock(mu);
  return x;
}

/* Empty the eventfd that woke a loop: -1 on an error but EAGAIN. */
static inline int
relay__wake_drain(int fd) {
  uint64_t n;
  return read(fd, &n, sizeof n) < 0 && errno != EAGAIN ? -1 : 0;
}

/* A TCP connection to numeric ip:port (non-blocking once made) within
 * timeout_ms, or -errno: -EINVAL for an address that is not numeric. */
int relay__dial(const char *ip, int port, int timeout_ms);
/* Close fd with a reset (SO_LINGER 0), so the peer sees the cut at once. */
void relay__reset_fd(int fd);

/* What the followers' consumers are named: "relay-<the principal's nkey
 * public key>" (bus_consumer_name). The relay roles' broker rules in
 * deploy/policy.c name exactly these consumers. */
#define RELAY_CONSUMER_PREFIX "relay"
/* The hub's second follower on LARK_EVENTS (lark.ev.engine.>, beside
 * lark.ev.cert.>): a name of its own per filter. */
#define RELAY_ENGINE_PREFIX "relay-engine"

/*
 * A thread that follows one filter of a stream with ephemeral, ack-none
 * consumers, starting over with a fresh one whenever a fetch or a
 * liveness check fails (a broker outage can drop an ephemeral
 * consumer). The consumer is named <prefix>-<key> (prefix
 * RELAY_CONSUMER_PREFIX unless the hooks name another), so a principal
 * has one follower per stream and prefix: a second one would take over
 * the first one's consumer. Hooks run in that thread: begin when a consumer
 * starts, apply for each message (ev NULL when it did not decode; return 1 when
 * it changed something), caught_up once per consumer when nothing is
 * left pending, changed after a batch in which apply returned 1 (or
 * caught_up did).
 */
typedef struct relay__tail_hooks {
  const char *stream, *filter;
  const char *prefix; /* the consumer's name prefix; NULL: the relay's */
  int deliver;        /* BUS_DELIVER_* */
  void (*begin)(void *ud);
  int (*apply)(const char *subject, const bus_event *ev, void *ud);
  int (*caught_up)(void *ud); /* returns 1 when it changed something */
  void (*changed)(void *ud);
  void *ud;
} relay__tail_hooks;

typedef struct relay__tail relay__tail;

int relay__tail_start(bus_conn *c, const relay__tail_hooks *h,
                      relay__tail **out);
/* Whether a consumer has caught up at least once. */
int relay__tail_synced(relay__tail *t);
void relay__tail_stop(relay__tail *t);

#endif
