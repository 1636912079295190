/*
 * test_cli_forms.c - larkctl reading and writing values in the forms other
 * tools use, against a real broker and real services: certificate serials
 * as openssl and ssh-keygen print them, floats as they were emitted, and
 * larkctl version (each service's own, as its status reports it).
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bed.h"
#include "natsd.h"
#include "platform.h"
#include "proc.h"
#include "service.h"

static lt_natsd srv;
static bus_conn *conn;
static char dir[256], larkctl[512];
static pid_t signer, reports;
static char out[1 << 16], err[8192];

/* Start one service with its view under dir; waits until it answers. */
static pid_t
start(const char *name, const char *service) {
  char data[512], log[512];
  snprintf(data, sizeof data, "%s/%s", dir, service);
  snprintf(log, sizeof log, "%s/%s.log", dir, service);
  pid_t pid = lt_start_service(name, srv.url, data, log, NULL);
  cr_assert(pid > 0, "%s did not start; see %s", name, log);
  cr_assert(lt_service_answers(conn, service, 100),
            "%s does not answer; see %s", name, log);
  return pid;
}

static void
setup(void) {
  lt_bed_up(&srv, &conn, dir, sizeof dir, "cli-forms", 1000);
  lt_bin("larkctl", larkctl, sizeof larkctl);
  lt_larkctl_env(srv.url, dir);
  unsetenv("LARK_USER");
}

static void
teardown(void) {
  if (signer > 0)
    lt_kill(signer, SIGTERM);
  if (reports > 0)
    lt_kill(reports, SIGTERM);
  signer = reports = 0;
  lt_bed_down(&srv, conn, dir, NULL, 0);
}

TestSuite(cli_forms, .init = setup, .fini = teardown, .timeout = 120);

/* Run the NULL-terminated arguments (the first a path); the exit code. */
#define run(...) lt_runl(out, sizeof out, err, sizeof err, __VA_ARGS__)

/* The first line of stdout, without its newline. */
static void
first_line(char *buf, size_t cap) {
  snprintf(buf, cap, "%.*s", (int)strcspn(out, "\n"), out);
}

/* Ask for a certificate; prefix names its files. */
static void
request(const char *role, const char *name, char *prefix, size_t cap) {
  snprintf(prefix, cap, "%s/%s", dir, name);
  const char *domain = strcmp(role, "domain") ? NULL : "--domain";
  cr_assert_eq(run(larkctl, "cert", "request", "--role", role, "--name", name,
                   "--out", prefix, domain, "d1", NULL),
               0, "%s", err);
}

/* ---------------------------------------------------------------- serials */

/* Whether cert show, given serial, reports it revoked within 5 s: revoke
 * returns once cert.revoked is stored, the signer's view follows. */
static int
shown_revoked(const char *serial) {
  for (int i = 0; i < 50; i++) {
    if (run(larkctl, "-o", "json", "cert", "show", serial, NULL) == 0 &&
        strstr(out, "\"revoked\":{"))
      return 1;
    usleep(100 * 1000);
  }
  return 0;
}

/* "serial=4A3B..." as openssl x509 -serial prints it for pem. */
static void
openssl_serial(const char *pem, char *buf, size_t cap) {
  cr_assert_eq(
      run("/usr/bin/openssl", "x509", "-serial", "-noout", "-in", pem, NULL), 0,
      "%s", err);
  first_line(buf, cap);
}

Test(cli_forms, revoke_takes_the_serial_as_openssl_prints_it) {
  signer = start("lark-signer", "signer");
  char prefix[512], pem[600], serial[128];
  request("admin", "alice", prefix, sizeof prefix);
  snprintf(pem, sizeof pem, "%s.pem", prefix);
  openssl_serial(pem, serial, sizeof serial);
  cr_assert(!strncmp(serial, "serial=", 7), "%s", serial);
  cr_assert_eq(run(larkctl, "cert", "revoke", serial, NULL), 0, "%s", err);
  cr_expect(shown_revoked(serial), "%s%s", out, err);
}

/* "Serial: 1234" from ssh-keygen -L, as the decimal alone. */
static void
ssh_serial(const char *cert, char *buf, size_t cap) {
  cr_assert_eq(run("/usr/bin/ssh-keygen", "-L", "-f", cert, NULL), 0, "%s",
               err);
  const char *s = strstr(out, "Serial: ");
  cr_assert_not_null(s, "%s", out);
  s += 8;
  snprintf(buf, cap, "%.*s", (int)strspn(s, "0123456789"), s);
}

Test(cli_forms, revoke_takes_the_serial_as_ssh_keygen_prints_it) {
  signer = start("lark-signer", "signer");
  char prefix[512], cert[600], serial[64];
  request("domain", "relay-1", prefix, sizeof prefix);
  snprintf(cert, sizeof cert, "%s-cert.pub", prefix);
  ssh_serial(cert, serial, sizeof serial);
  cr_assert_eq(run(larkctl, "cert", "revoke", serial, NULL), 0, "%s", err);
  cr_expect(shown_revoked(serial), "%s%s", out, err);
}

Test(cli_forms, revoke_takes_colons_and_any_case) {
  signer = start("lark-signer", "signer");
  char prefix[512], pem[600], serial[128], colons[160] = "SERIAL=";
  request("peer", "p1", prefix, sizeof prefix);
  snprintf(pem, sizeof pem, "%s.pem", prefix);
  openssl_serial(pem, serial, sizeof serial);
  size_t at = strlen(colons);
  for (const char *p = serial + 7; *p; p += 2) /* 4a:3b:... */
    at += (size_t)snprintf(colons + at, sizeof colons - at, "%s%c%c",
                           p == serial + 7 ? "" : ":", p[0] | 0x20, p[1]);
  cr_assert_eq(run(larkctl, "-o", "json", "cert", "revoke", colons, NULL), 0,
               "%s", err);
  cr_expect(strstr(out, "\"seq\""), "%s", out);
}

Test(cli_forms, an_unreadable_serial_names_the_forms) {
  const char *bad[] = {"xyz",
                       "12:zz",
                       "serial=",
                       "",
                       "123456789012345678901234567890", /* > 64 bits */
                       "0123456789abcdef0123456789abcdef0"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cr_expect_eq(run(larkctl, "cert", "revoke", bad[i], NULL), 2, "%s", bad[i]);
    cr_expect(strstr(err, "openssl x509 -serial") && strstr(err, "ssh-keygen"),
              "%s", err);
  }
}

/* ----------------------------------------------------------------- floats */

/* Wait until `tail subject -o json` shows needle (lark-reports moves
 * emitted reports asynchronously). */
static int
wait_tail(const char *subject, const char *needle) {
  for (int i = 0; i < 300; i++) {
    if (run(larkctl, "tail", subject, "-o", "json", NULL) == 0 &&
        strstr(out, needle))
      return 1;
    usleep(100 * 1000);
  }
  return 0;
}

Test(cli_forms, tail_prints_floats_as_emitted) {
  reports = start("lark-reports", "reports");
  cr_assert_eq(run(larkctl, "emit", "train-1", "metric", "--data",
                   "{\"a\":0.1,\"b\":1.5,\"c\":1e-7,\"d\":3.0,"
                   "\"e\":123456789.125,\"f\":-2.5e300,\"n\":7}",
                   NULL),
               0, "%s", err);
  cr_assert(wait_tail("lark.run.train-1", "run.reported"), "%s", out);
  const char *want[] = {
      "\"a\":0.1,",           "\"b\":1.5,",       "\"c\":1e-07,", "\"d\":3.0,",
      "\"e\":123456789.125,", "\"f\":-2.5e+300,", "\"n\":7"};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    cr_expect(strstr(out, want[i]), "%s not in %s", want[i], out);
  cr_assert_eq(run(larkctl, "tail", "lark.run.train-1", NULL), 0, "%s", err);
  cr_expect(strstr(out, "\"a\":0.1,") && strstr(out, "\"d\":3.0,"), "%s", out);
}

/* ---------------------------------------------------------------- version */

Test(cli_forms, version_names_client_broker_and_services) {
  signer = start("lark-signer", "signer");
  cr_assert_eq(run(larkctl, "version", NULL), 0, "%s", err);
  cr_expect(strstr(out, "larkctl ") && strstr(out, "nats-server "), "%s", out);
  cr_expect(strstr(out, "signer"), "%s", out);
  cr_assert_eq(run(larkctl, "-o", "json", "version", NULL), 0, "%s", err);
  json_t *j = json_loads(out, 0, NULL), *svc;
  cr_assert_not_null(j, "%s", out);
  json_t *srv = json_array_get(
      json_object_get(json_object_get(j, "broker"), "servers"), 0);
  cr_expect(json_string_length(
                json_object_get(json_object_get(j, "client"), "version")) > 0,
            "%s", out);
  cr_expect(json_string_length(json_object_get(srv, "version")) > 0, "%s", out);
  size_t i;
  int seen = 0;
  const char *client = json_string_value(
      json_object_get(json_object_get(j, "client"), "version"));
  json_array_foreach(json_object_get(j, "services"), i, svc) seen |=
      !strcmp(json_string_value(json_object_get(svc, "name")), "signer") &&
      !strcmp(json_string_value(json_object_get(svc, "state")), "up") &&
      json_string_value(json_object_get(svc, "version")) && client &&
      !strcmp(json_string_value(json_object_get(svc, "version")), client);
  cr_expect(seen, "%s", out);
  json_decref(j);
  cr_expect_eq(run(larkctl, "version", "extra", NULL), 2);
}

Test(cli_forms, version_without_a_broker_still_names_the_client) {
  setenv("LARK_URL", "nats://127.0.0.1:1", 1);
  cr_expect_eq(run(larkctl, "version", NULL), 1, "%s", out);
  cr_expect(!strncmp(out, "larkctl ", 8), "%s", out);
  cr_expect_eq(run(larkctl, "-o", "json", "version", NULL), 1, "%s", out);
  cr_expect(strstr(out, "\"client\":{") && strstr(out, "\"broker\":null"), "%s",
            out);
}
