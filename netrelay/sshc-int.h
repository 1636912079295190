/*
 * sshc-int.h - the inside of a node relay's hub session, shared by sshc.c
 * (the session thread: dialing, the loop, the public calls) and
 * sshc_chan.c (the channels it carries, inbound and outbound, and their
 * bridges).
 */
#ifndef LARK_RELAY_SSHC_INT_H
#define LARK_RELAY_SSHC_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include <libssh/libssh.h>

#include "bridge.h"
#include "relay-int.h"
#include "sshc.h"

typedef struct job {
  struct job *next;
  int fd;
  char ip[RELAY_IP_MAX];
  int port;
  char dest[RELAY_WREQ_MAX + 1]; /* a weights channel's; "" for a pod's */
  ssh_channel ch;                /* once the open is sent */
  time_t deadline;               /* for the hub's answer */
} job;

typedef struct blink {
  struct blink *next;
  relay_bridge *b;
  char what[256];
} blink;

struct relay_sshc {
  char domain[64], key[1024], cert[1024], host[256], cluster[64];
  int port;
  relay_routes *rt;
  relay_log_fn log;
  void *log_ud;
  ssh_key hub_key;
  pthread_t th;
  int wake; /* eventfd */
  atomic_int stop;
  pthread_mutex_t mu;
  job *queue; /* under mu */
  int ready;  /* under mu */
  /* session thread only */
  ssh_session ssh;
  ssh_event ev;
  job *opening;
  blink *bridges;
  int nbridges;
  char last_err[256];
};

/* A line to the session's log callback, if it has one. */
void sshc__log(relay_sshc *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The jobs queued by relay_sshc_submit, taken over (under mu). */
job *sshc__take_queue(relay_sshc *s);

/* libssh's message callback: a forwarded-tcpip channel from the hub is
 * delivered to its pod or refused. */
int sshc__on_message(ssh_session ssh, ssh_message m, void *ud);
/* Move queued jobs to `opening` and advance every open in flight. */
void sshc__progress_opens(relay_sshc *s);
/* Free the bridges that are done (all of them with all set), tick the
 * rest. */
void sshc__reap(relay_sshc *s, int all);
/* Free a job; its socket, if still held, is reset. */
void sshc__job_free(job *j);

#endif
