/*
 * test_gateway_up.c - `larkctl up` and lark-gateway: the real larkctl,
 * copied into a directory of its own beside a stand-in lark-gateway (a
 * shell script recording how it was started and writing its port file
 * as the real one does after binding), so what is checked is larkctl's
 * side of the contract: the flags, a fresh 0600 login token per run that
 * never appears on a command line, the gateway's credentials, and the
 * `dashboard: http://127.0.0.1:PORT/?token=TOKEN` line printed before
 * the ready line; --gateway-port and --no-gateway; no line without the
 * binary. Then the real lark-gateway under the real larkctl: its line's
 * address, its token, and a Job applied through it recorded as the user
 * who ran up, via the gateway.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "natsd.h"
#include "platform.h"
#include "proc.h"
#include "wait.h"

/* The stand-in: one line of arguments and the token file's and its
 * directory's modes per start, in <dir>/gw-runs; port 0 reads as 45999. */
static const char stub[] =
    "#!/bin/sh\n"
    "out=$(dirname \"$0\")/../gw-runs\n"
    "printf '%s\\n' \"$*\" >> \"$out\"\n"
    "while [ $# -gt 0 ]; do\n"
    "  case \"$1\" in\n"
    "    --token-file) tok=$2; shift;;\n"
    "    --http) port=${2##*:}; shift;;\n"
    "    --port-file) pf=$2; shift;;\n"
    "  esac\n"
    "  shift\n"
    "done\n"
    "stat -c 'modes %a' \"$tok\" >> \"$out\"\n"
    "stat -c 'dir %a' \"$(dirname \"$tok\")\" >> \"$out\"\n"
    "[ \"$port\" = 0 ] && port=45999\n"
    "printf 'http %s\\n' \"$port\" > \"$pf\"\n"
    "exec sleep 600\n";

static lt_platform p;
static char out[16384], err[4096];

#define sh(...) lt_sh(out, sizeof out, err, sizeof err, __VA_ARGS__)

static void
setup(void) {
  char real[512];
  lt_platform_init(&p, "gwup");
  snprintf(real, sizeof real, "%s", p.larkctl);
  cr_assert_eq(
      sh("mkdir -p %s/bin && cp %s %s/bin/larkctl", p.dir, real, p.dir), 0,
      "%s", err);
  snprintf(p.larkctl, sizeof p.larkctl, "%s/bin/larkctl", p.dir);
  char path[600];
  snprintf(path, sizeof path, "%s/bin/lark-gateway", p.dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(stub, f);
  fclose(f);
  chmod(path, 0755);
  setenv("USER", "tester", 1);
}

static void
teardown(void) {
  lt_platform_stop(&p);
  lt_platform_remove(&p);
}

TestSuite(gateway_up, .init = setup, .fini = teardown, .timeout = 180);

/* One `larkctl up` to its ready line, logging to <dir>/<log>, and its
 * output into out; left running. */
static void
up_start(const char *log, const char *const extra[]) {
  snprintf(p.up_log, sizeof p.up_log, "%s/%s", p.dir, log);
  const char *args[8] = {"--nodes", "0"};
  for (int i = 0; extra && extra[i]; i++)
    args[2 + i] = extra[i];
  int rc = lt_platform_start(&p, args, 120);
  cr_assert_eq(sh("cat %s", p.up_log), 0);
  cr_assert_eq(rc, 0, "not ready: %s", out);
}

/* The same, stopped again. */
static void
up_once(const char *log, const char *const extra[]) {
  up_start(log, extra);
  cr_assert_eq(lt_platform_stop(&p), 0, "%s", out);
}

/* The token in the dashboard line, which must come before the ready
 * line and name port. */
static void
dashboard_token(int port, char tok[65]) {
  char want[96];
  snprintf(want, sizeof want, "dashboard: http://127.0.0.1:%d/?token=", port);
  const char *d = strstr(out, want), *ready = strstr(out, "larkbus ready:");
  cr_assert(d && ready && d < ready, "%s", out);
  cr_assert(d == out || d[-1] == '\n', "a line of its own: %s", out);
  d += strlen(want);
  cr_assert_eq(strspn(d, "0123456789abcdef"), 64, "%s", out);
  cr_assert_eq(d[64], '\n');
  memcpy(tok, d, 64);
  tok[64] = 0;
  cr_assert(strstr(ready, " gateway;"), "%s", ready);
}

static void
read_file(const char *name, char *buf, size_t cap) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s", p.dir, name);
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f, "%s", path);
  size_t n = fread(buf, 1, cap - 1, f);
  buf[n] = 0;
  fclose(f);
}

Test(gateway_up, starts_the_gateway_and_prints_the_dashboard) {
  char tok[65], tok2[65], file[256], url[512], runs[8192], want[4096];
  up_once("up1.log", NULL);
  dashboard_token(45999, tok);
  read_file("gateway/token", file, sizeof file);
  cr_assert_eq(strlen(file), 65, "one line: %s", file);
  cr_assert_eq(strncmp(file, tok, 64), 0, "the line's token is the file's");
  read_file("url", url, sizeof url);
  url[strcspn(url, "\n")] = 0;
  read_file("gw-runs", runs, sizeof runs);
  snprintf(want, sizeof want,
           "--url %s --creds %s/creds/gateway.nk --data %s/views/gateway "
           "--http 127.0.0.1:0 --token-file %s/gateway/token --token-user "
           "tester --port-file %s/run/gateway.port\nmodes 600\ndir 700\n",
           url, p.dir, p.dir, p.dir, p.dir);
  cr_assert_str_eq(runs, want);
  cr_assert_null(strstr(runs, tok), "the token is never an argument");
  /* its principal, role gateway */
  cr_assert_eq(sh("grep -c '^gateway gateway U' %s/creds/users", p.dir), 0,
               "%s", out);

  /* another run: a fresh token, and the port asked for */
  const char *port[] = {"--gateway-port", "45123", NULL};
  up_once("up2.log", port);
  dashboard_token(45123, tok2);
  cr_assert_str_neq(tok, tok2, "a fresh token per up");
  read_file("gw-runs", runs, sizeof runs);
  cr_assert(strstr(runs, "--http 127.0.0.1:45123 "), "%s", runs);
}

Test(gateway_up, no_gateway_and_no_binary_print_no_dashboard) {
  const char *none[] = {"--no-gateway", NULL};
  up_once("up1.log", none);
  cr_assert_null(strstr(out, "dashboard"), "%s", out);
  char path[600];
  snprintf(path, sizeof path, "%s/gw-runs", p.dir);
  cr_assert_neq(access(path, F_OK), 0, "the gateway was started");
  /* without the binary next to larkctl, up runs as before */
  snprintf(path, sizeof path, "%s/bin/lark-gateway", p.dir);
  cr_assert_eq(unlink(path), 0);
  up_once("up2.log", NULL);
  cr_assert_null(strstr(out, "dashboard"), "%s", out);
  /* both flags at once are a usage error */
  cr_assert_eq(
      sh("%s --data %s up --no-gateway --gateway-port 1", p.larkctl, p.dir), 2,
      "%s%s", out, err);
}

/* The real lark-gateway under the real `larkctl up`: the line's address
 * answers with its token and only with it, and a Job applied through it
 * is recorded as the user who ran up, via the gateway. */
Test(gateway_up, the_real_gateway_acts_as_the_user, .timeout = 240) {
  char tok[65], url[256];
  lt_bin("larkctl", p.larkctl, sizeof p.larkctl);
  up_start("up.log", NULL);
  const char *d = strstr(out, "dashboard: ");
  cr_assert(d, "%s", out);
  int n = 0;
  cr_assert_eq(sscanf(d, "dashboard: http://127.0.0.1:%d/?token=%64s", &n, tok),
               2, "%s", out);
  snprintf(url, sizeof url, "http://127.0.0.1:%d", n);
  cr_assert_eq(sh("curl -s %s/healthz", url), 0, "%s", err);
  cr_assert_eq(strncmp(out, "ok", 2), 0, "%s", out);
  cr_assert_eq(
      sh("curl -s -o /dev/null -w '%%{http_code}' %s/api/v1/status", url), 0);
  cr_assert_str_eq(out, "401");
  cr_assert_eq(sh("curl -s -o /dev/null -w '%%{http_code}' "
                  "'%s/api/v1/status?token=%s'",
                  url, tok),
               0);
  cr_assert_str_eq(out, "200");
  const char *src = getenv("LARK_SOURCE_DIR");
  cr_assert_eq(sh("curl -s -X POST -H 'Authorization: Bearer %s' -H "
                  "'Content-Type: application/yaml' --data-binary "
                  "@%s/examples/job.yaml %s/api/v1/rlinf.io/v1alpha1/jobs",
                  tok, src ? src : ".", url),
               0, "%s", err);
  cr_assert(strstr(out, "\"ok\":true"), "%s", out);
  cr_assert_eq(lt_larkctl(&p, out, sizeof out, err, sizeof err,
                          "tail lark.ev.job.train-1"),
               0, "%s", err);
  cr_assert(strstr(out, "job.submitted actor=tester via=gateway "), "%s", out);
  cr_assert_eq(lt_platform_stop(&p), 0);
}
