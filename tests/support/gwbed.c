/*
 * gwbed.c - lark-gateway in a test (gwbed.h).
 */
#include "gwbed.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "files.h"
#include "proc.h"
#include "wait.h"

void
lt_gw_init(lt_gw *g, const lt_platform *p, const char *name) {
  memset(g, 0, sizeof *g);
  g->p = p;
  snprintf(g->name, sizeof g->name, "%s", name);
  snprintf(g->data, sizeof g->data, "%s/%s", p->dir, name);
  snprintf(g->log, sizeof g->log, "%s/%s.log", p->dir, name);
  snprintf(g->port_file, sizeof g->port_file, "%s/%s.port", p->dir, name);
  snprintf(g->token_file, sizeof g->token_file, "%s/%s.token", p->dir, name);
  unsigned char r[16];
  FILE *f = fopen("/dev/urandom", "r");
  cr_assert(f && fread(r, 1, sizeof r, f) == sizeof r);
  fclose(f);
  for (size_t i = 0; i < sizeof r; i++)
    snprintf(g->token + 2 * i, 3, "%02x", r[i]);
  cr_assert_eq(lt_write_file(g->token_file, "%s\n", g->token), 0);
  cr_assert_eq(chmod(g->token_file, 0600), 0);
}

static void
read_ports(lt_gw *g) {
  char buf[256];
  cr_assert(lt_read_file(g->port_file, buf, sizeof buf), "%s", g->port_file);
  const char *h = strstr(buf, "http ");
  const char *s = strstr(buf, "https ");
  g->http_port = h ? atoi(h + 5) : 0;
  g->https_port = s ? atoi(s + 6) : 0;
}

void
lt_gw_start(lt_gw *g, int http, const char *const extra[]) {
  char bin[512], url[512], creds[600];
  cr_assert(lt_bin("lark-gateway", bin, sizeof bin));
  snprintf(creds, sizeof creds, "%s/url", g->p->dir);
  cr_assert(lt_read_file(creds, url, sizeof url), "%s", creds);
  url[strcspn(url, "\r\n")] = 0;
  snprintf(creds, sizeof creds, "%s/creds/admin.nk", g->p->dir);
  const char *argv[48] = {bin,     "--url",       url,         "--creds",
                          creds,   "--data",      g->data,     "--name",
                          g->name, "--port-file", g->port_file};
  int n = 11;
  if (http) {
    argv[n++] = "--http";
    argv[n++] = "127.0.0.1:0";
    argv[n++] = "--token-file";
    argv[n++] = g->token_file;
  }
  for (int i = 0; extra && extra[i] && n < 47; i++)
    argv[n++] = extra[i];
  argv[n] = NULL;
  unlink(g->port_file);
  g->pid = lt_spawn((char *const *)argv, g->log);
  cr_assert_gt(g->pid, 0);
  if (!lt_wait_file(g->port_file, 15)) {
    char tail[4096] = "";
    lt_read_file(g->log, tail, sizeof tail);
    cr_assert_fail("lark-gateway did not start: %s", tail);
  }
  lt_sleep_ms(50); /* the port file is written whole (rename) */
  read_ports(g);
}

void
lt_gw_stop(lt_gw *g, int sig) {
  if (g->pid > 0)
    lt_kill(g->pid, sig);
  g->pid = 0;
}

const char *
lt_gw_url(const lt_gw *g, char *out, size_t cap) {
  snprintf(out, cap, "http://127.0.0.1:%d", g->http_port);
  return out;
}

int
lt_curl(char *body, size_t cap, const char *fmt, ...) {
  char args[6000], out[1 << 16];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  int rc = lt_sh(out, sizeof out, NULL, 0,
                 "curl -sS --max-time 20 -w '\\n%%{http_code}' %s", args);
  char *nl = strrchr(out, '\n');
  int code = nl ? atoi(nl + 1) : -1;
  if (nl)
    *nl = 0;
  if (body)
    snprintf(body, cap, "%s", out);
  return rc ? -1 : code;
}

pid_t
lt_curl_bg(const char *out, const char *fmt, ...) {
  char args[4000], cmd[5000];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd, "exec curl -sN %s > '%s' 2>&1", args, out);
  char *argv[] = {(char *)"/bin/sh", (char *)"-c", cmd, NULL};
  return lt_spawn(argv, "/dev/null");
}
