/*
 * test_relay_hub.c - lark-relay hub as a process, reached with the real
 * OpenSSH client (ssh -W) on 127.0.0.1: bytes round-trip to an echo
 * server the test runs; no certificate, another CA, an expired
 * certificate, a target outside the allow-list and a certificate revoked
 * while the hub runs are refused, with the reason in the hub's log.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "certcheck.h"
#include "natsd.h"
#include "proc.h"
#include "signer.h"

static char dir[256], logpath[512];
static int echo_port, hub_port;
static pid_t hub_pid;
static char out[1 << 14], err[8192];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int
sh(const char *fmt, ...) {
  char cmd[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  char *argv[] = {(char *)"/bin/sh", (char *)"-c", cmd, NULL};
  return lt_run(argv, out, sizeof out, err, sizeof err);
}

static void *
echo_conn(void *arg) {
  int fd = (int)(intptr_t)arg;
  char buf[16384];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0)
    if (write(fd, buf, (size_t)n) != n)
      break;
  close(fd);
  return NULL;
}

static void *
echo_main(void *arg) {
  int ls = (int)(intptr_t)arg, fd;
  pthread_t t;
  while ((fd = accept(ls, NULL, NULL)) >= 0)
    if (pthread_create(&t, NULL, echo_conn, (void *)(intptr_t)fd) == 0)
      pthread_detach(t);
  return NULL;
}

static void
echo_start(void) {
  struct sockaddr_in sa = {.sin_family = AF_INET};
  socklen_t len = sizeof sa;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  cr_assert_geq(ls, 0);
  cr_assert_eq(bind(ls, (struct sockaddr *)&sa, sizeof sa), 0);
  cr_assert_eq(listen(ls, 16), 0);
  getsockname(ls, (struct sockaddr *)&sa, &len);
  echo_port = ntohs(sa.sin_port);
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, echo_main, (void *)(intptr_t)ls), 0);
  pthread_detach(t);
}

static void
sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Certificate for key `name` (made here) signed by `ca`, with opts. */
static void
cert(const char *ca, const char *name, const char *opts) {
  cr_assert_eq(sh("cd %s && rm -f %s %s.pub %s-cert.pub && ssh-keygen -q -t "
                  "ed25519 -N '' -f %s && ssh-keygen -q -s %s %s %s.pub",
                  dir, name, name, name, name, ca, opts, name),
               0, "%s", err);
}

static void
start_hub(void) {
  char bin[512], ca[512], key[512], krl[512], allow[128], pf[512], l[64];
  lt_bin("lark-relay", bin, sizeof bin);
  snprintf(ca, sizeof ca, "%s/ca.pub", dir);
  snprintf(key, sizeof key, "%s/hostkey", dir);
  snprintf(krl, sizeof krl, "%s/revoked_keys", dir);
  snprintf(pf, sizeof pf, "%s/port", dir);
  snprintf(allow, sizeof allow, "d1=127.0.0.1:%d", echo_port);
  snprintf(l, sizeof l, "127.0.0.1:0");
  char *argv[] = {bin,
                  (char *)"hub",
                  (char *)"--listen",
                  l,
                  (char *)"--ca",
                  ca,
                  (char *)"--host-key",
                  key,
                  (char *)"--revoked",
                  krl,
                  (char *)"--allow",
                  allow,
                  (char *)"--port-file",
                  pf,
                  (char *)"--reload-ms",
                  (char *)"200",
                  NULL};
  hub_pid = lt_spawn(argv, logpath);
  cr_assert_gt(hub_pid, 0);
  for (int i = 0; i < 300 && !hub_port; i++) {
    FILE *f = fopen(pf, "r");
    if (f) {
      if (fscanf(f, "%d", &hub_port) != 1)
        hub_port = 0;
      fclose(f);
    }
    if (!hub_port)
      sleep_ms(50);
  }
  cr_assert_gt(hub_port, 0, "the hub did not start");
}

static void
setup(void) {
  lt_tmpdir(dir, sizeof dir, "relayhub");
  snprintf(logpath, sizeof logpath, "%s/hub.log", dir);
  hub_port = 0;
  echo_start();
  cr_assert_eq(sh("cd %s && ssh-keygen -q -t ed25519 -N '' -f ca && "
                  "ssh-keygen -q -t ed25519 -N '' -f other && "
                  "ssh-keygen -q -t ed25519 -N '' -f hostkey && "
                  ": > revoked_keys && head -c 262144 /dev/urandom > in",
                  dir),
               0, "%s", err);
  start_hub();
}

static void
teardown(void) {
  if (hub_pid > 0) {
    int st = lt_kill(hub_pid, SIGTERM);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "hub exit %d", st);
  }
  lt_rmtree(dir);
}

TestSuite(relay_hub, .init = setup, .fini = teardown, .timeout = 120);

/* ssh -W through the hub with key `name` (and its -cert.pub when
 * with_cert) to 127.0.0.1:port, stdin from dir/in, stdout to dir/out. */
static int
via_hub(const char *name, int with_cert, int port) {
  char certopt[600] = "";
  if (with_cert)
    snprintf(certopt, sizeof certopt, "-o CertificateFile=%s/%s-cert.pub", dir,
             name);
  return sh("timeout 60 ssh -N -o BatchMode=yes -o StrictHostKeyChecking=no "
            "-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR "
            "-o ConnectTimeout=30 -F /dev/null -o IdentitiesOnly=yes "
            "-i %s/%s %s -p %d -W 127.0.0.1:%d anyuser@127.0.0.1 "
            "< %s/in > %s/out",
            dir, name, certopt, hub_port, port, dir, dir);
}

static int
same_bytes(void) {
  return sh("cmp -s %s/in %s/out", dir, dir) == 0;
}

static int
out_empty(void) {
  return sh("test ! -s %s/out", dir) == 0;
}

/* Wait (up to 10 s) for the hub's log to say what. */
static int
hub_said(const char *what) {
  for (int i = 0; i < 100; i++) {
    if (sh("grep -F -q -- '%s' %s", what, logpath) == 0)
      return 1;
    sleep_ms(100);
  }
  return 0;
}

Test(relay_hub, bytes_round_trip) {
  cert("ca", "u",
       "-I 'r1 role=domain domain=d1' -n domain:d1 -z 11 "
       "-V -1m:+1h");
  cr_assert_eq(via_hub("u", 1, echo_port), 0, "%s", err);
  cr_expect(same_bytes(), "bytes differ");
  cr_expect(hub_said("channel"));
  /* twice more: sessions come and go */
  for (int i = 0; i < 2; i++) {
    cr_expect_eq(via_hub("u", 1, echo_port), 0, "%s", err);
    cr_expect(same_bytes());
  }
}

Test(relay_hub, no_certificate_is_refused) {
  cert("ca", "u", "-I 'r1 role=domain domain=d1' -n domain:d1 -z 12");
  cr_assert_eq(sh("rm %s/u-cert.pub", dir), 0);
  cr_expect_neq(via_hub("u", 0, echo_port), 0);
  cr_expect(out_empty());
  cr_expect(hub_said("no certificate offered"));
}

Test(relay_hub, foreign_ca_is_refused) {
  cert("other", "u", "-I 'r1 role=domain domain=d1' -n domain:d1 -z 13");
  cr_expect_neq(via_hub("u", 1, echo_port), 0);
  cr_expect(out_empty());
  cr_expect(hub_said("signed by another CA"));
}

Test(relay_hub, expired_certificate_is_refused) {
  cert("ca", "u",
       "-I 'r1 role=domain domain=d1' -n domain:d1 -z 14 "
       "-V 20200101:20200102");
  cr_expect_neq(via_hub("u", 1, echo_port), 0);
  cr_expect(out_empty());
  cr_expect(hub_said("certificate expired"));
}

Test(relay_hub, wrong_domain_role_is_refused) {
  cert("ca", "u",
       "-I 'bob role=ssh-guest domain=d1' -n guest:bob,domain:d1 "
       "-z 15");
  cr_expect_neq(via_hub("u", 1, echo_port), 0);
  cr_expect(out_empty());
  cr_expect(hub_said("role is not the one required"));
}

Test(relay_hub, target_not_allowed_is_refused) {
  cert("ca", "u", "-I 'r1 role=domain domain=d1' -n domain:d1 -z 16");
  cr_expect_neq(via_hub("u", 1, echo_port + 1 > 65535 ? 1 : echo_port + 1), 0);
  cr_expect(out_empty());
  cr_expect(hub_said("target not allowed for domain d1"));
  /* another domain's certificate for the allowed target */
  cert("ca", "v", "-I 'r2 role=domain domain=d2' -n domain:d2 -z 17");
  cr_expect_neq(via_hub("v", 1, echo_port), 0);
  cr_expect(out_empty());
  cr_expect(hub_said("target not allowed for domain d2"));
}

Test(relay_hub, revoked_while_running_is_refused) {
  char path[512];
  uint8_t pk[32];
  cert("ca", "u", "-I 'r1 role=domain domain=d1' -n domain:d1 -z 77");
  cr_assert_eq(via_hub("u", 1, echo_port), 0, "%s", err);
  cr_expect(same_bytes());
  snprintf(path, sizeof path, "%s/ca.pub", dir);
  cr_assert_eq(relay_ca_load(path, pk), 0);
  snprintf(path, sizeof path, "%s/revoked_keys", dir);
  uint64_t serials[] = {5, 77};
  cr_assert_eq(signer_krl_write(path, pk, serials, 2, 2, time(NULL)), 0);
  cr_assert(hub_said("revoked set loaded from"));
  /* the load line above is from the start; wait for a second one */
  int loads = 0;
  for (int i = 0; i < 100 && loads < 2; i++) {
    sh("grep -c 'revoked set loaded' %s", logpath);
    loads = atoi(out);
    if (loads < 2)
      sleep_ms(100);
  }
  cr_assert_geq(loads, 2, "the hub did not reload the KRL");
  cr_assert_eq(sh("rm -f %s/out", dir), 0);
  cr_expect_neq(via_hub("u", 1, echo_port), 0);
  cr_expect(out_empty());
  cr_expect(hub_said("certificate revoked"));
}
