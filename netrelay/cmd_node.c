/*
 * cmd_node.c - lark-relay node: flags into relay_node_opts.
 *
 *   lark-relay node --cluster C --node N --hub HOST:PORT
 *                   --hub-key HOSTKEY.pub --certs DIR --url NATS_URL
 *                   [--creds FILE] [--capture-port P]
 *                   [--weights-listen HOST:PORT]
 *
 * Runs until SIGINT or SIGTERM (exit 0). One log line per decision goes
 * to stderr.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"
#include "node.h"

static volatile sig_atomic_t stop_flag;

static void
on_signal(int sig) {
  (void)sig;
  stop_flag = 1;
}

static int
usage(void) {
  fprintf(stderr, "usage: lark-relay node --cluster C --node N --hub HOST:PORT"
                  " --hub-key HOSTKEY.pub --certs DIR --url NATS_URL"
                  " [--creds FILE] [--capture-port P]"
                  " [--weights-listen HOST:PORT]\n");
  return 2;
}

static int
set_opt(relay_node_opts *o, const char *flag, char *v) {
  if (!strcmp(flag, "--cluster"))
    o->cluster = v;
  else if (!strcmp(flag, "--node"))
    o->node = v;
  else if (!strcmp(flag, "--hub"))
    return relay_cmd_hostport(v, 1, 1, &o->hub_host, &o->hub_port);
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
  else if (!strcmp(flag, "--weights-listen"))
    return relay_cmd_hostport(v, 1, 0, &o->weights_host, &o->weights_port);
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
  relay_cmd_signals(on_signal, 0);
  o.log = relay_cmd_log;
  int rc = relay_node_run(&o, &stop_flag);
  if (rc)
    fprintf(stderr, "lark-relay: node: %s: %s\n", bus_strerror(rc),
            bus_last_error());
  return rc == BUS_EINVAL || rc == BUS_ENAME ? 2 : rc ? 1 : 0;
}
