/*
 * platform.h - a whole platform from `larkctl up` (broker, every
 * service, edge nodes) in a temporary directory, for end-to-end tests;
 * and larkctl run against it.
 */
#ifndef LARK_TEST_PLATFORM_H
#define LARK_TEST_PLATFORM_H

#include <stddef.h>
#include <sys/types.h>

#include "bus.h"

typedef struct lt_platform {
  char dir[256];     /* larkctl --data */
  char larkctl[512]; /* the built binary */
  char up_log[512];  /* what `larkctl up` printed: dir/up.log */
  pid_t pid;         /* `larkctl up`, or 0 */
} lt_platform;

/* Find larkctl, make the temporary directory (named with tag). */
void lt_platform_init(lt_platform *p, const char *tag);

/*
 * Start `larkctl --data dir up --port 0` with the NULL-terminated extra
 * arguments (may be NULL) and wait up to seconds for its "larkbus ready"
 * line. 0, or -1 when it did not start (pid 0) or was not ready (pid
 * kept, for lt_platform_stop).
 */
int lt_platform_start(lt_platform *p, const char *const extra[], int seconds);

/* Stop `larkctl up` (SIGINT, reap): its wait status, or 0 when it was
 * not running. */
int lt_platform_stop(lt_platform *p);

/* Remove the directory, unless LARK_KEEP_TEST_DIR is set (then name it
 * on stderr). */
void lt_platform_remove(lt_platform *p);

/*
 * `larkctl --data dir ARGS` through /bin/sh (args: a printf format for
 * the shell words): its exit code, stdout in out and stderr in err; err
 * NULL: stderr joins stdout in out (2>&1).
 */
int lt_larkctl(const lt_platform *p, char *out, size_t cap, char *err,
               size_t errcap, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* lt_larkctl again every 100 ms, for up to seconds, until it succeeds
 * with needle in its stdout (as a user would retry a command whose
 * answer is on its way): 1 then, 0 when it never did (out and err hold
 * the last answer). */
int lt_larkctl_until(const lt_platform *p, char *out, size_t cap, char *err,
                     size_t errcap, const char *needle, int seconds,
                     const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));

/* A connection to the platform as its admin (dir/url, dir/creds/admin.nk),
 * as larkctl makes it; NULL with bus_last_error() when it cannot. */
bus_conn *lt_platform_admin(const lt_platform *p);

/*
 * The row of pod in `larkctl get routes DOMAIN --cluster CLUSTER -o json`
 * on p: its virtual ip, realIP and via ("hub" or "local") into ip, real
 * and via ("" when absent). 1 when the pod has a row with an ip, 0 when
 * not (or larkctl failed).
 */
int lt_route_of(const lt_platform *p, const char *domain, const char *cluster,
                const char *pod, char ip[64], char real[64], char via[16]);

/* Point larkctl, run from this process, at a test's broker: LARK_URL url,
 * LARK_DATA data and LARK_JS_WAIT_MS 500. */
void lt_larkctl_env(const char *url, const char *data);

#endif
