/*
 * svc.h - what every service's main.c shares: settings from one table
 * (flags over environment over defaults), one log line per event, signals,
 * connecting with the streams it needs checked, and the hooks several pass
 * as they are (a command's line, an ingress's line, making nodes' streams).
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

#include <stdatomic.h>

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
  atomic_int stop; /* set by a signal or any thread: the service ends */
  bus_conn *conn;
  const char *inbox;   /* the connection's inbox prefix; NULL: libbus's
                          (_INBOX_<key>). Set between svc_init and
                          svc_connect (lark-gateway: _INBOX_<principal>) */
  uint64_t logged_seq; /* the applied sequence last logged (svc_log_applied) */
} svc;

/*
 * Fill s from argv and the environment (LARK_URL, LARK_CREDS, LARK_DATA,
 * LARK_LOG_LEVEL). Returns 0, or 2 after printing usage (the exit code).
 */
int svc_init(svc *s, const char *name, int argc, char **argv);

/*
 * A service's own flags, beside the common ones: --flag VALUE, or its
 * environment variable env (may be NULL) when the flag is not given.
 * parse reads the value into out: 0, or -1 when it is not valid.
 */
typedef struct svc_flag {
  const char *flag;
  const char *env;
  int (*parse)(const char *v, void *out);
  void *out;
} svc_flag;

/* Take flags (ending with a NULL flag) and their values out of argv
 * (*argc shrinks), before svc_init sees the rest; -1 when one is bad. */
int svc_own_flags(int *argc, char **argv, const svc_flag *flags);

/* Route SIGINT and SIGTERM to s->stop. One svc per process. */
void svc_signals(svc *s);

/*
 * Connect (retrying every second until it works or s->stop) and check
 * that streams (NULL-terminated) exist; logs and returns the error when
 * they do not.
 */
int svc_connect(svc *s, const char *const *streams);
void svc_close(svc *s);

/* The service loop reads the view's own input: def's stream and filter
 * (docs/design.md section 5), the ones a rebuild reads too. */
void svc_service_input(bus_service_opts *so, const bus_view_def *def);

/*
 * Service loop options every view service starts from: so initialised,
 * its name the instance's (--name) or the service's, def's input, s's
 * stop flag, and its state reported by svc_on_state. The caller adds its
 * hooks (on_batch, ud, tick_ms, ...).
 */
void svc_service_opts(svc *s, bus_service_opts *so, const bus_view_def *def);

/* A debug line with the view's counters after a batch that applied
 * something new (*logged: the applied sequence last logged). */
void svc_log_applied(const svc *s, const bus_view_stats *st, uint64_t *logged);

/* bus_service_opts.on_state for a service whose state_ud is its svc: one
 * error line saying what is wrong and the way back (a rebuild). */
void svc_on_state(int state, const char *why, void *ud);

/*
 * The life of a view service: open its view in s->data, serve the command
 * kinds it owns, run the service loop (bus_service_run) until a signal,
 * then undo all of it. start and stop, when set, run with the open view
 * before the loop and after it (a thread of the service's own, say).
 */
typedef struct svc_view_opts {
  bus_view_def def;
  const char *const *kinds; /* lark.cmd.*.<kind>.* served; NULL-terminated */
  bus_cmd_cb on_command;    /* their handler, called with ud */
  /* or the service's table of verbs (its own kinds), served by
   * bus_verbs_serve with the view and ud by `workers` threads (0: 4) */
  const bus_verbs *verbs;
  int workers;
  void *ud;
  bus_view **view; /* set to the open view while it runs (handlers read it) */
  int tick_ms;     /* decide's timer ticks; 0: none */
  int (*start)(svc *s, bus_view *v, void *ud);
  void (*stop)(svc *s, bus_view *v, void *ud);
  /* the outbox found a stream missing: make it (bus_service_opts.repair) */
  int (*repair)(svc *s, bus_view *v, void *ud);
  /* after each batch and tick, once the outbox was drained (st: the
   * view's counters then): work on the broker that must follow what the
   * outbox sent; may be NULL */
  void (*after_batch)(svc *s, bus_view *v, const bus_view_stats *st, void *ud);
} svc_view_opts;

int svc_run_view(svc *s, const svc_view_opts *o);

/*
 * Hooks a service whose ud starts with its svc (its app struct's first
 * member) passes as they are: bus_verbs.on_done, one line per command
 * (info when it failed, debug when not); svc_queue_opts.log, an
 * ingress's line as a warning.
 */
void svc_on_cmd_done(const bus_cmd *cmd, int rc, void *ud);
void svc_on_ingress_log(const char *subject, const char *msg, void *ud);

/*
 * For svc_view_opts.repair of a service that sends to the nodes' streams
 * (called when its outbox found one missing, after a reconnection, and by
 * the scheduler at start): make the stream of every node in the view's
 * `nodes` table where it is missing (idempotent), and when one was made
 * anew (a restarted broker lost the streams it kept in memory), send
 * again everything the service's send queue holds: the queue walked by
 * bus_txn_sendq with the note SVC_SENDQ_NOTE, as each of these services
 * does (bus_view_node_streams_repair). A warning names what they are for.
 */
#define SVC_SENDQ_NOTE "o"
int svc_node_streams_repair(svc *s, bus_view *v, const char *what);

/*
 * A whole main(): settings, signals, connect (checking streams), run the
 * view service, close. Returns the process's exit code: 0 after a signal,
 * 1 after an error, 2 for bad flags.
 */
int svc_main(svc *s, const char *name, int argc, char **argv,
             const char *const *streams, const svc_view_opts *o);

/*
 * The same frame around a service's own run (one that is not
 * svc_run_view's shape), called once connected; its non-zero result is
 * an error (exit code 1).
 */
typedef int (*svc_run_fn)(svc *s, void *ud);
int svc_main_run(svc *s, const char *name, int argc, char **argv,
                 const char *const *streams, svc_run_fn run, void *ud);

/* One line: time, level, service, subject, seq, message. */
void svc_logf(const svc *s, int level, const char *subject, uint64_t seq,
              const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define SVC_LOG(s, lvl, subject, seq, ...)                                     \
  do {                                                                         \
    if ((lvl) <= (s)->log_level)                                               \
      svc_logf((s), (lvl), (subject), (seq), __VA_ARGS__);                     \
  } while (0)

#endif
