/*
 * gwbed.h - lark-gateway in a test: started on a `larkctl up` platform
 * (as its admin, with a login token of the test's) on a port it picks,
 * killed, started again on the same data; and requests to it through the
 * curl command line, as a user would send them. Each call fails the
 * Criterion test when it cannot do its part.
 */
#ifndef LARK_TEST_GWBED_H
#define LARK_TEST_GWBED_H

#include <stddef.h>
#include <sys/types.h>

#include "platform.h"

typedef struct lt_gw {
  const lt_platform *p;
  char name[64];       /* --name: its consumer and status name */
  char data[600];      /* --data: p->dir/<name> */
  char log[600];       /* its output: p->dir/<name>.log */
  char port_file[600]; /* p->dir/<name>.port */
  char token[64];
  char token_file[600]; /* p->dir/<name>.token, mode 0600 */
  pid_t pid;
  int http_port, https_port;
} lt_gw;

/* Name g, write its token file; nothing started. */
void lt_gw_init(lt_gw *g, const lt_platform *p, const char *name);

/*
 * Start lark-gateway for g with --http 127.0.0.1:0 (when http) and the
 * NULL-terminated extra arguments, and wait up to 15 s for its port
 * file. Fails the test when it does not come up.
 */
void lt_gw_start(lt_gw *g, int http, const char *const extra[]);

/* Send sig to the gateway and reap it (pid 0 after). */
void lt_gw_stop(lt_gw *g, int sig);

/* The base URL of its plain HTTP, "http://127.0.0.1:PORT". */
const char *lt_gw_url(const lt_gw *g, char *out, size_t cap);

/*
 * `curl -sS --max-time 20 ARGS` through /bin/sh (args a printf format of
 * shell words), the body into body (NUL-terminated, may be NULL): the
 * HTTP status, or -1 when curl failed.
 */
int lt_curl(char *body, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Start `curl -sN ARGS > out` in the background (a watch); its pid. */
pid_t lt_curl_bg(const char *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
