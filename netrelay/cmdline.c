/*
 * cmdline.c - what lark-relay's commands share (cmdline.h).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"

void
relay_cmd_log(void *ud, const char *line) {
  (void)ud;
  fprintf(stderr, "lark-relay: %s\n", line);
}

void
relay_cmd_signals(void (*on)(int), int hup) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  if (hup)
    sigaction(SIGHUP, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
}

int
relay_cmd_hostport(char *arg, int need_host, int min_port, const char **host,
                   int *port) {
  char *colon = strrchr(arg, ':'), *end;
  if (!colon || (need_host && colon == arg))
    return -1;
  *colon = 0;
  long p = strtol(colon + 1, &end, 10);
  if (*end || p < min_port || p > 65535)
    return -1;
  if (arg[0] == '[' && colon > arg + 1 && colon[-1] == ']') {
    colon[-1] = 0;
    arg++;
  }
  *host = arg;
  *port = (int)p;
  return 0;
}
