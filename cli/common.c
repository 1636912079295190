/*
 * common.c - what subcommands share: connecting with resolved settings,
 * error lines, times given by users, JSON output of msgpack values.
 */
#include <ctype.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli.h"
#include "timearg.h"

static int
read_line_file(const char *path, char *out, size_t cap) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  char *ok = fgets(out, (int)cap, f);
  fclose(f);
  if (!ok)
    return -1;
  out[strcspn(out, "\r\n")] = 0;
  return out[0] ? 0 : -1;
}

static void
resolve(lark_cli *cli) {
  if (!cli->url)
    cli->url = getenv("LARK_URL");
  if (!cli->url) {
    char path[600];
    snprintf(path, sizeof path, "%s/url", cli->data);
    if (read_line_file(path, cli->url_buf, sizeof cli->url_buf) == 0)
      cli->url = cli->url_buf;
  }
  if (!cli->url)
    cli->url = "nats://127.0.0.1:4222";
  if (!cli->creds)
    cli->creds = getenv("LARK_CREDS");
  if (!cli->creds) {
    snprintf(cli->creds_buf, sizeof cli->creds_buf, "%s/creds/admin.nk",
             cli->data);
    FILE *f = fopen(cli->creds_buf, "r");
    if (f) {
      fclose(f);
      cli->creds = cli->creds_buf;
    }
  }
}

bus_conn *
cli_connect(lark_cli *cli) {
  resolve(cli);
  bus_conn_opts o;
  bus_conn_opts_init(&o);
  o.url = cli->url;
  o.creds = cli->creds;
  o.name = "larkctl";
  const char *wait = getenv("LARK_JS_WAIT_MS");
  if (wait)
    o.js_wait_ms = atoi(wait);
  bus_conn *c = NULL;
  int rc = bus_conn_open(&c, &o);
  if (rc < 0) {
    cli_fail("connect", rc, "cannot connect to %s%s%s", cli->url,
             cli->creds ? " with " : " without credentials",
             cli->creds ? cli->creds : "");
    return NULL;
  }
  return c;
}

static int quiet;

void
cli_quiet(int on) {
  quiet = on;
}

int
cli_fail(const char *cmd, int err, const char *fmt, ...) {
  va_list ap;
  if (quiet)
    return CLI_ERR;
  fprintf(stderr, "larkctl %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  if (err < 0) {
    const char *detail = bus_last_error();
    fprintf(stderr, ": %s", bus_strerror(err));
    if (detail && *detail)
      fprintf(stderr, " (%s)", detail);
  }
  fputc('\n', stderr);
  return CLI_ERR;
}

int
cli_usage(const char *usage) {
  fprintf(stderr, "usage: %s\n", usage);
  return CLI_USAGE;
}

int
cli_parse_time(const char *s, int64_t *ns) {
  return lark_time_parse(s, ns);
}

const char *
cli_user(lark_cli *cli) {
  static char user[BUS_NAME_MAX + 1];
  const char *env = getenv("LARK_USER");
  if (env && *env)
    return env;
  resolve(cli);
  if (!cli->creds)
    return "admin";
  const char *base = strrchr(cli->creds, '/');
  base = base ? base + 1 : cli->creds;
  snprintf(user, sizeof user, "%s", base);
  char *dot = strrchr(user, '.');
  if (dot)
    *dot = 0;
  return bus_name_valid(user, BUS_NAME_MAX) ? user : "admin";
}

static volatile sig_atomic_t interrupted;

static void
on_interrupt(int sig) {
  (void)sig;
  interrupted = 1;
}

void
cli_catch_interrupt(int term) {
  signal(SIGINT, on_interrupt);
  if (term)
    signal(SIGTERM, on_interrupt);
}

int
cli_interrupted(void) {
  return interrupted;
}

int
cli_take_args(int argc, char **argv, int from, const char *const *flags,
              const char **vals, const char **pos, int npos) {
  int n = 0;
  for (int i = from; i < argc; i++) {
    int k = 0;
    while (flags && flags[k] && strcmp(flags[k], argv[i]))
      k++;
    if (flags && flags[k] && i + 1 < argc)
      vals[k] = argv[++i];
    else if (argv[i][0] != '-' && n < npos)
      pos[n++] = argv[i];
    else
      return -1;
  }
  return n;
}

void
cli_put_json(const json_t *j, const char *fallback) {
  char *s = cli_json_dumps(j, 0);
  if (s || fallback)
    puts(s ? s : fallback);
  free(s);
}
