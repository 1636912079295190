/*
 * platform.c - `larkctl up` as a test fixture.
 */
#include "platform.h"

#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "natsd.h"
#include "proc.h"
#include "wait.h"

void
lt_platform_init(lt_platform *p, const char *tag) {
  p->pid = 0;
  lt_bin("larkctl", p->larkctl, sizeof p->larkctl);
  lt_tmpdir(p->dir, sizeof p->dir, tag);
  snprintf(p->up_log, sizeof p->up_log, "%s/up.log", p->dir);
}

int
lt_platform_start(lt_platform *p, const char *const extra[], int seconds) {
  char *argv[32] = {p->larkctl,   (char *)"--data", p->dir,
                    (char *)"up", (char *)"--port", (char *)"0"};
  int n = 6;
  for (int i = 0; extra && extra[i] && n < 31; i++)
    argv[n++] = (char *)extra[i];
  argv[n] = NULL;
  p->pid = lt_spawn(argv, p->up_log);
  if (p->pid <= 0) {
    p->pid = 0;
    return -1;
  }
  return lt_file_says(p->up_log, "larkbus ready", seconds) ? 0 : -1;
}

int
lt_platform_stop(lt_platform *p) {
  int st = 0;
  if (p->pid > 0)
    st = lt_kill(p->pid, SIGINT);
  p->pid = 0;
  return st;
}

void
lt_platform_remove(lt_platform *p) {
  if (p->dir[0] && getenv("LARK_KEEP_TEST_DIR"))
    fprintf(stderr, "kept %s (LARK_KEEP_TEST_DIR)\n", p->dir);
  else if (p->dir[0])
    lt_rmtree(p->dir);
  p->dir[0] = 0;
}

int
lt_larkctl(const lt_platform *p, char *out, size_t cap, char *err,
           size_t errcap, const char *fmt, ...) {
  char args[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  return lt_sh(out, cap, err, errcap, "%s --data %s %s%s", p->larkctl, p->dir,
               args, err ? "" : " 2>&1");
}

int
lt_larkctl_until(const lt_platform *p, char *out, size_t cap, char *err,
                 size_t errcap, const char *needle, int seconds,
                 const char *fmt, ...) {
  char args[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  for (int i = 0; i < seconds * 10; i++, lt_sleep_ms(100))
    if (lt_larkctl(p, out, cap, err, errcap, "%s", args) == 0 &&
        strstr(out, needle))
      return 1;
  return 0;
}

void
lt_larkctl_env(const char *url, const char *data) {
  setenv("LARK_URL", url, 1);
  setenv("LARK_DATA", data, 1);
  setenv("LARK_JS_WAIT_MS", "500", 1);
}

bus_conn *
lt_platform_admin(const lt_platform *p) {
  char path[512], url[256] = "", creds[512];
  snprintf(path, sizeof path, "%s/url", p->dir);
  snprintf(creds, sizeof creds, "%s/creds/admin.nk", p->dir);
  FILE *f = fopen(path, "r");
  if (!f || !fgets(url, sizeof url, f)) {
    if (f)
      fclose(f);
    bus_error(BUS_ENOT_FOUND, "no url in %s", path);
    return NULL;
  }
  fclose(f);
  url[strcspn(url, "\n")] = 0;
  bus_conn_opts o;
  bus_conn_opts_init(&o);
  o.url = url;
  o.creds = creds;
  bus_conn *c = NULL;
  return bus_conn_open(&c, &o) ? NULL : c;
}

static void
row_str(json_t *row, const char *key, char *out, size_t cap) {
  const char *v = json_string_value(json_object_get(row, key));
  snprintf(out, cap, "%s", v ? v : "");
}

int
lt_route_of(const lt_platform *p, const char *domain, const char *cluster,
            const char *pod, char ip[64], char real[64], char via[16]) {
  static char out[1 << 16];
  char err[4096];
  ip[0] = real[0] = via[0] = 0;
  if (lt_larkctl(p, out, sizeof out, err, sizeof err,
                 "get routes %s --cluster %s -o json", domain, cluster) != 0)
    return 0;
  json_t *j = json_loads(out, 0, NULL), *row;
  size_t i;
  json_array_foreach(j, i, row) {
    const char *name = json_string_value(json_object_get(row, "pod"));
    if (name && !strcmp(name, pod)) {
      row_str(row, "ip", ip, 64);
      row_str(row, "realIP", real, 64);
      row_str(row, "via", via, 16);
    }
  }
  json_decref(j);
  return ip[0] != 0;
}
