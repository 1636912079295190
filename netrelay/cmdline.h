/*
 * cmdline.h - what lark-relay's commands (main.c, cmd_node.c) share: the
 * log line they print, their signals, and HOST:PORT arguments.
 */
#ifndef LARK_RELAY_CMDLINE_H
#define LARK_RELAY_CMDLINE_H

/* A log callback: "lark-relay: <line>" to stderr. */
void relay_cmd_log(void *ud, const char *line);

/* on for SIGINT and SIGTERM (and SIGHUP when hup); SIGPIPE ignored. */
void relay_cmd_signals(void (*on)(int), int hup);

/*
 * "HOST:PORT" (an IPv6 host in brackets) split in place into host and
 * port. need_host: an empty host is refused; the port is min_port to
 * 65535. -1 when arg is not that.
 */
int relay_cmd_hostport(char *arg, int need_host, int min_port,
                       const char **host, int *port);

#endif
