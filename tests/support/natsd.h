/*
 * natsd.h - a real nats-server for one test.
 *
 * Each test that needs a broker starts its own: a free port chosen by the
 * server (-p -1), a JetStream store in a fresh temporary directory, the
 * port read back from --ports_file_dir. Stopped with SIGINT and waitpid.
 */
#ifndef LARK_TEST_NATSD_H
#define LARK_TEST_NATSD_H

#include <sys/types.h>

#include "bus.h"

typedef struct lt_natsd {
  pid_t pid;
  int port;
  char dir[256];  /* temporary directory: store, ports file, config */
  char url[64];   /* nats://127.0.0.1:<port> */
  char conf[512]; /* config file given at start, or "" */
} lt_natsd;

/*
 * Start nats-server with JetStream. conf may be NULL (no auth) or a config
 * file path; extra_args (NULL-terminated, may be NULL) are appended. The
 * store and ports file live in a new directory under $TMPDIR. Returns 0 or
 * -1 with a message on stderr.
 */
int lt_natsd_start(lt_natsd *s, const char *conf, const char *const *extra);
/* Stop (SIGINT, wait) and remove the directory. */
void lt_natsd_stop(lt_natsd *s);
/* Stop hard (SIGKILL), keep the directory, and start again on the same
 * port and store: a broker crash. */
int lt_natsd_kill_restart(lt_natsd *s);
/* The same after stopping it with sig (SIGTERM: a shutdown, which tells
 * waiting pull requests "409 Server Shutdown"). */
int lt_natsd_restart(lt_natsd *s, int sig);

/* A temporary directory for the test (created); caller removes with
 * lt_rmtree, which first kills what still runs from it (pods and robots
 * that outlived their agent, with their process groups). */
void lt_tmpdir(char *out, size_t cap, const char *tag);
void lt_rmtree(const char *path);

/* Connect to s with test settings (JetStream wait 500 ms). */
int lt_connect(const lt_natsd *s, bus_conn **out);
/* Create the platform's streams with a short dedupe window (dedupe_ms). */
int lt_streams(bus_conn *c, int dedupe_ms);
/* A broker for one test: lt_natsd_start (no config), lt_connect and
 * lt_streams(dedupe_ms). 0, or -1 (detail on stderr or in
 * bus_last_error()). */
int lt_broker_up(lt_natsd *s, bus_conn **c, int dedupe_ms);

/* Send sig to pid and reap it, SIGKILL when it has not ended after
 * wait_ms: 1 when it had to be killed so, 0 when it ended, -1 when pid is
 * none. (The server's own stop; benchmarks stop their services so.) */
int lt_stop(pid_t pid, int sig, int wait_ms);

#endif
