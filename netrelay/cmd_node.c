/*
 * cmd_node.c - lark-relay node: flags into relay_node_opts.
 *
 *   lark-relay node --cluster C --node N --hub HOST:PORT
 *                   --hub-key HOSTKEY.pub --certs DIR --url NATS_URL
 *                   [--creds FILE] [--capture-port P]
 *
 * Runs until SIGINT or SIGTERM (exit 0). One log line per decision goes
 * to stderr.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node.h"

static volatile sig_atomic_t stop_flag;

static void
on_signal(int sig) {
  (void)sig;
  stop_flag = 1;
}

static void
log_line(void *ud, const char *line) {
  (void)ud;
  fprintf(stderr, "lark-relay: %s\n", line);
}

static int
usage(void) {
  fprintf(stderr, "usage: lark-relay node --cluster C --node N --hub HOST:PORT"
                  " --hub-key HOSTKEY.pub --certs DIR --url NATS_URL"
                  " [--creds FILE] [--capture-port P]\n");
  return 2;
}

/* "HOST:PORT" (an IPv6 host in brackets) into o. */
static int
hub_arg(char *arg, relay_node_opts *o) {
  char *colon = strrchr(arg, ':'), *end;
  if (!colon || colon == arg)
    return -1;
  *colon = 0;
  long p = strtol(colon + 1, &end, 10);
  if (*end || p <= 0 || p > 65535)
    return -1;
  if (arg[0] == '[' && colon[-1] == ']') {
    colon[-1] = 0;
    arg++;
  }
  o->hub_host = arg;
  o->hub_port = (int)p;
  return 0;
}

static int
set_opt(relay_node_opts *o, const char *flag, char *v) {
  if (!strcmp(flag, "--cluster"))
    o->cluster = v;
  else if (!strcmp(flag, "--node"))
    o->node = v;
  else if (!strcmp(flag, "--hub"))
    return hub_arg(v, o);
  else if (!strcmp(flag, "--hub-key"))
    o->hub_key = v;
  else if (!strcmp(flag, "--certs"))
    o->certs = v;
  else if (!strcmp(flag, "--url"))
    o->url = v;
  else if (!strcmp(flag, "--creds"))
    o->creds = v;
  else if (!strcmp(flag, "--capture-port"))
    o->capture_port = atoi(v);
  else
    return -1;
  return 0;
}

int
relay_cmd_node(int argc, char **argv) {
  relay_node_opts o;
  relay_node_opts_init(&o);
  for (int i = 2; i < argc; i += 2)
    if (i + 1 >= argc || set_opt(&o, argv[i], argv[i + 1]))
      return usage();
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  o.log = log_line;
  int rc = relay_node_run(&o, &stop_flag);
  if (rc)
    fprintf(stderr, "lark-relay: node: %s: %s\n", bus_strerror(rc),
            bus_last_error());
  return rc == BUS_EINVAL || rc == BUS_ENAME ? 2 : rc ? 1 : 0;
}
