/*
 * test_signer_service.c - lark-signer end to end with real processes: a
 * real broker, larkctl cert, a real sshd trusting the signer's CA with
 * its revoked-keys file, openssl reading the CRL; kill -9 mid-work, then
 * the live view equals its replay; hostile command bodies answered with
 * errors while the service stays up.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "bed.h"
#include "natsd.h"
#include "platform.h"
#include "ports.h"
#include "proc.h"
#include "service.h"
#include "replay.h"
#include "signer.h"
#include "root.h"

#define NS 1000000000LL
#ifdef LARK_SANITIZE
#define SLOW 3
#else
#define SLOW 1
#endif

static lt_natsd srv;
static bus_conn *conn;
static char dir[256], data[512], logpath[512], larkctl[512];
static pid_t signer;
static char out[1 << 16], err[8192];

static pid_t
start_signer(void) {
  pid_t pid =
      lt_must_start("lark-signer", srv.url, dir, "signer", "signer.log", NULL);
  cr_assert(lt_service_answers(conn, "signer", 100 * SLOW),
            "lark-signer did not start; see %s", logpath);
  return pid;
}

static void
setup(void) {
  lt_bed_up(&srv, &conn, dir, sizeof dir, "signer-svc", 1000);
  snprintf(data, sizeof data, "%s/signer", dir);
  snprintf(logpath, sizeof logpath, "%s/signer.log", dir);
  lt_bin("larkctl", larkctl, sizeof larkctl);
  lt_larkctl_env(srv.url, dir);
  unsetenv("LARK_USER");
  signer = start_signer();
}

static void
teardown(void) {
  lt_bed_down(&srv, conn, dir, &signer, 1);
}

TestSuite(signer_service, .init = setup, .fini = teardown, .timeout = 240);

/* Run the NULL-terminated arguments (the first a path); the exit code. */
#define run(...) lt_runl(out, sizeof out, err, sizeof err, __VA_ARGS__)

/* The string field of a JSON object printed on stdout. */
static void
json_field(const char *key, char *buf, size_t cap) {
  json_error_t je;
  json_t *j = json_loads(out, 0, &je);
  cr_assert_not_null(j, "not JSON: %s", out);
  const char *v = json_string_value(json_object_get(j, key));
  cr_assert_not_null(v, "%s missing in %s", key, out);
  snprintf(buf, cap, "%s", v);
  json_decref(j);
}

/* ------------------------------------------------------------------ sshd */

typedef struct sshd {
  pid_t pid;
  int port;
  char user[64];
} sshd;

/* A real sshd on a free loopback port trusting the signer's CA, with
 * principal domain:d1 mapped to the current user. */
static void
sshd_start(sshd *d) {
  cr_assert_eq(access("/usr/sbin/sshd", X_OK), 0,
               "sshd missing: ./ops/setup installs openssh-server");
  lt_need_root("an sshd that switches users");
  mkdir("/run/sshd", 0755);
  struct passwd *pw = getpwuid(getuid());
  cr_assert_not_null(pw);
  snprintf(d->user, sizeof d->user, "%s", pw->pw_name);
  char path[600], conf[600], log[600];
  snprintf(path, sizeof path, "%s/host_key", dir);
  cr_assert_eq(run("/usr/bin/ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                   path, NULL),
               0, "%s", err);
  snprintf(path, sizeof path, "%s/principals", dir);
  FILE *f = fopen(path, "w");
  fprintf(f, "domain:d1\n");
  fclose(f);
  d->port = lt_free_port();
  cr_assert_gt(d->port, 0);
  snprintf(conf, sizeof conf, "%s/sshd_config", dir);
  f = fopen(conf, "w");
  fprintf(f,
          "Port %d\nListenAddress 127.0.0.1\nHostKey %s/host_key\n"
          "PidFile %s/sshd.pid\nUsePAM no\nStrictModes no\n"
          "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
          "PubkeyAuthentication yes\nAuthorizedKeysFile none\n"
          "TrustedUserCAKeys %s/ca.pub\nRevokedKeys %s/revoked_keys\n"
          "AuthorizedPrincipalsFile %s/principals\n"
          "PermitRootLogin prohibit-password\nLogLevel VERBOSE\n",
          d->port, dir, dir, data, data, dir);
  fclose(f);
  snprintf(log, sizeof log, "%s/sshd.log", dir);
  char *argv[] = {(char *)"/usr/sbin/sshd",
                  (char *)"-D",
                  (char *)"-e",
                  (char *)"-f",
                  conf,
                  NULL};
  d->pid = lt_spawn(argv, log);
  cr_assert(lt_wait_port(d->port, 5), "sshd did not listen; see %s", log);
}

/* ssh in with key and certificate; 0 when the login ran `true`. */
static int
ssh_login(const sshd *d, const char *key, const char *cert) {
  char port[16], certopt[600], target[128];
  snprintf(port, sizeof port, "%d", d->port);
  snprintf(certopt, sizeof certopt, "CertificateFile=%s", cert);
  snprintf(target, sizeof target, "%s@127.0.0.1", d->user);
  return run("/usr/bin/ssh", "-F", "/dev/null", "-i", key, "-o", certopt, "-o",
             "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o",
             "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
             "-o", "ConnectTimeout=5", "-p", port, target, "true", NULL);
}

/* Wait until cmd (a shell line) prints want; returns the seconds it took. */
static double
wait_for(const char *cmd, const char *want, double limit) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    run("/bin/sh", "-c", cmd, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) +
               (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (strstr(out, want))
      return s;
    cr_assert(s < limit, "'%s' did not print '%s' within %.0f s: %s%s", cmd,
              want, limit, out, err);
    usleep(50 * 1000);
  }
}

/* An expired certificate for a fresh key, signed with the CA's files. */
static void
expired_cert(char *key, char *cert, size_t cap) {
  signer_ca *ca;
  cr_assert_eq(signer_ca_open(data, &ca, NULL), 0);
  uint8_t pk[32], sk[64];
  crypto_sign_keypair(pk, sk);
  char line[256], *priv, e[256];
  size_t len;
  cr_assert_eq(signer_ssh_pub_format(pk, "old", line, sizeof line), 0);
  cr_assert_eq(signer_ssh_private_format(pk, sk, "old", &priv, &len), 0);
  sodium_memzero(sk, sizeof sk);
  int64_t now = (int64_t)time(NULL) * NS;
  signer_req r = {.role = "domain",
                  .name = "old",
                  .domain = "d1",
                  .ssh_key = line,
                  .ssh_key_len = strlen(line),
                  .not_before = now - 7200 * NS,
                  .not_after = now - 3600 * NS};
  signer_cert c;
  cr_assert_eq(signer_issue(ca, &r, &c, e, sizeof e), 0, "%s", e);
  snprintf(key, cap, "%s/old.key", dir);
  snprintf(cert, cap, "%s/old-cert.pub", dir);
  FILE *f = fopen(key, "w");
  fwrite(priv, 1, len, f);
  fclose(f);
  chmod(key, 0600);
  f = fopen(cert, "w");
  fprintf(f, "%s\n", c.text);
  fclose(f);
  sodium_free(priv);
  signer_cert_clear(&c);
  signer_ca_free(ca);
}

Test(signer_service, sshd_and_openssl_accept_then_refuse_revoked) {
  char prefix[600], key[700], cert[700], serial[64], cmd[2048];
  snprintf(prefix, sizeof prefix, "%s/relay", dir);
  cr_assert_eq(run(larkctl, "-o", "json", "cert", "request", "--role", "domain",
                   "--name", "relay-1", "--domain", "d1", "--out", prefix,
                   "--valid", "1h", NULL),
               0, "%s", err);
  json_field("serial", serial, sizeof serial);
  snprintf(key, sizeof key, "%s.key", prefix);
  snprintf(cert, sizeof cert, "%s-cert.pub", prefix);
  struct stat st;
  cr_assert_eq(stat(key, &st), 0);
  cr_expect_eq(st.st_mode & 0777, 0600);
  cr_assert_eq(run("/usr/bin/ssh-keygen", "-L", "-f", cert, NULL), 0, "%s",
               err);
  cr_expect(strstr(out, "domain:d1") &&
                strstr(out, "Key ID: \"relay-1 role=domain domain=d1\""),
            "%s", out);

  sshd d;
  sshd_start(&d);
  cr_expect_eq(ssh_login(&d, key, cert), 0, "valid certificate refused: %s",
               err);

  cr_assert_eq(run(larkctl, "cert", "revoke", serial, "--reason", "test", NULL),
               0, "%s", err);
  snprintf(cmd, sizeof cmd, "ssh-keygen -Q -f %s/revoked_keys %s", data, cert);
  double took = wait_for(cmd, "REVOKED", 5.0 * SLOW);
  cr_expect(took < 1.0 * SLOW, "KRL updated after %.2f s", took);
  cr_expect_neq(ssh_login(&d, key, cert), 0, "revoked certificate accepted");

  char okey[700], ocert[700];
  expired_cert(okey, ocert, sizeof okey);
  cr_expect_neq(ssh_login(&d, okey, ocert), 0, "expired certificate accepted");
  lt_kill(d.pid, SIGTERM);

  /* X.509: issued, verified, revoked, listed in the CRL */
  snprintf(prefix, sizeof prefix, "%s/alice", dir);
  cr_assert_eq(run(larkctl, "-o", "json", "cert", "request", "--role", "admin",
                   "--name", "alice", "--out", prefix, NULL),
               0, "%s", err);
  json_field("serial", serial, sizeof serial);
  snprintf(cmd, sizeof cmd, "openssl verify -CAfile %s/ca.pem %s.pem", data,
           prefix);
  cr_expect_eq(run("/bin/sh", "-c", cmd, NULL), 0, "%s%s", out, err);
  cr_assert_eq(run(larkctl, "cert", "revoke", serial, NULL), 0, "%s", err);
  char upper[40];
  for (int i = 0; serial[i] && i < 39; i++, upper[i] = 0)
    upper[i] = (char)(serial[i] >= 'a' ? serial[i] - 32 : serial[i]);
  snprintf(cmd, sizeof cmd, "openssl crl -in %s/crl.pem -noout -text", data);
  took = wait_for(cmd, upper, 5.0 * SLOW);
  cr_expect(took < 1.0 * SLOW, "CRL updated after %.2f s", took);

  cr_assert_eq(run(larkctl, "-o", "json", "cert", "show", serial, NULL), 0,
               "%s", err);
  cr_expect(strstr(out, "\"revoked\":{"), "%s", out);
  cr_assert_eq(run(larkctl, "cert", "list", NULL), 0, "%s", err);
  cr_expect(strstr(out, serial) && strstr(out, "relay-1"), "%s", out);
  cr_expect_neq(run(larkctl, "cert", "revoke", serial, NULL), 0,
                "revoked twice");
  cr_expect(strstr(err, "EXISTS"), "%s", err);
}

/* ------------------------------------------------------- kill -9, replay */

/* Sign over the command path with idempotency key k; retries while the
 * signer is down. Returns the serial in out. */
static void
sign_direct(int k, char serial[64]) {
  uint8_t pk[32], sk[64];
  crypto_sign_keypair(pk, sk);
  sodium_memzero(sk, sizeof sk);
  char line[256], key[32];
  signer_ssh_pub_format(pk, NULL, line, sizeof line);
  snprintf(key, sizeof key, "k-%d", k);
  bus_packbuf b;
  bus_packbuf_init(&b);
  const char *kv[] = {"key",  key, "role",   "ssh-guest",
                      "name", "g", "sshKey", line};
  msgpack_pack_map(&b.pk, 4);
  for (int i = 0; i < 8; i++)
    bus_pack_str(&b.pk, kv[i]);
  for (int attempt = 0; attempt < 100 * SLOW; attempt++) {
    void *rep = NULL;
    size_t len = 0;
    if (bus_conn_request(conn, "lark.cmd.admin.cert.sign", b.sb.data, b.sb.size,
                         2000, &rep, &len) == 0) {
      msgpack_zone z;
      msgpack_zone_init(&z, 4096);
      msgpack_object o;
      cr_assert(msgpack_unpack(rep, len, NULL, &z, &o) >= 0);
      int ok = bus_obj_str(&o, "serial", serial, 64) != NULL;
      char *j = ok ? NULL : strndup(rep, len);
      msgpack_zone_destroy(&z);
      free(rep);
      cr_assert(ok, "sign %d refused: %s", k, j);
      bus_packbuf_destroy(&b);
      return;
    }
    usleep(100 * 1000);
  }
  cr_assert_fail("sign %d: no answer", k);
}

static void
revoke_direct(const char *serial) {
  char body[128];
  bus_packbuf b;
  bus_packbuf_init(&b);
  msgpack_pack_map(&b.pk, 2);
  bus_pack_str(&b.pk, "key");
  snprintf(body, sizeof body, "r-%s", serial);
  bus_pack_str(&b.pk, body);
  bus_pack_kv_str(&b.pk, "serial", serial);
  void *rep = NULL;
  size_t len = 0;
  cr_assert_eq(bus_conn_request(conn, "lark.cmd.admin.cert.revoke", b.sb.data,
                                b.sb.size, 5000, &rep, &len),
               0);
  free(rep);
  bus_packbuf_destroy(&b);
}

Test(signer_service, kill9_mid_work_then_replay_matches) {
  char serials[90][64];
  for (int k = 0; k < 90; k++) {
    sign_direct(k, serials[k]);
    if (k % 7 == 3)
      revoke_direct(serials[k - 1]);
    if (k == 30 || k == 60) {
      lt_kill(signer, SIGKILL);
      signer = start_signer();
    }
  }
  /* a retried key gets the same certificate back */
  char again[64];
  sign_direct(5, again);
  cr_expect_str_eq(again, serials[5]);

  uint64_t last = 0;
  bus_stream_last_seq(conn, "LARK_EVENTS", &last);
  bus_status st = {0};
  for (int i = 0; i < 100 * SLOW && st.seq < last; i++) {
    bus_status_query(conn, "signer", 500, &st);
    usleep(100 * 1000);
  }
  cr_assert_eq(st.seq, last);
  lt_expect_replay(conn, "signer", 1, 1);
  cr_assert_eq(run(larkctl, "-o", "json", "cert", "list", NULL), 0, "%s", err);
  json_error_t je;
  json_t *items = json_loads(out, 0, &je);
  cr_expect_eq(json_array_size(items), 90, "one certificate per key");
  json_decref(items);
}

/* ----------------------------------------------------------- hostile input */

static void
expect_error(const char *subject, const void *body, size_t len,
             const char *code) {
  void *rep = NULL;
  size_t rlen = 0;
  cr_assert_eq(bus_conn_request(conn, subject, body, len, 5000, &rep, &rlen), 0,
               "%s: no answer", subject);
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object o;
  cr_assert(msgpack_unpack(rep, rlen, NULL, &z, &o) >= 0);
  char got[64] = "";
  bus_obj_str(bus_obj_get(&o, "error"), "code", got, sizeof got);
  cr_expect_str_eq(got, code, "%s", subject);
  msgpack_zone_destroy(&z);
  free(rep);
}

static void
pack_sign(msgpack_sbuffer *sb, const char *const *kv, int n) {
  msgpack_sbuffer_clear(sb);
  msgpack_packer p;
  msgpack_packer_init(&p, sb, msgpack_sbuffer_write);
  msgpack_pack_map(&p, (uint32_t)n);
  for (int i = 0; i < 2 * n; i++)
    bus_pack_str(&p, kv[i]);
}

Test(signer_service, hostile_commands_get_errors) {
  const char *sign = "lark.cmd.admin.cert.sign";
  expect_error(sign, "\xc1\xff", 2, "MALFORMED");
  expect_error(sign, "\x93\x01\x02\x03", 4, "MALFORMED");
  expect_error(sign, NULL, 0, "FIELD");
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  char longname[300];
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = 0;
  const char *a[] = {"role",   "domain", "name",   longname,
                     "domain", "d1",     "sshKey", "ssh-ed25519 AAAA"};
  pack_sign(&sb, a, 4);
  expect_error(sign, sb.data, sb.size, "FIELD");
  const char *b[] = {"role", "admin", "name", "x", "csr", "-----BEGIN junk"};
  pack_sign(&sb, b, 3);
  expect_error(sign, sb.data, sb.size, "FIELD");
  const char *c[] = {"role", "admin", "name", "x", "csr", "", "valid", "x"};
  pack_sign(&sb, c, 4);
  expect_error(sign, sb.data, sb.size, "FIELD");
  expect_error("lark.cmd.bob.cert.sign", sb.data, sb.size, "DENIED");
  expect_error("lark.cmd.bob.cert.revoke", sb.data, sb.size, "FIELD");
  const char *d[] = {"serial", "../../etc"};
  pack_sign(&sb, d, 1);
  expect_error("lark.cmd.admin.cert.revoke", sb.data, sb.size, "FIELD");
  const char *e[] = {"serial", "0123456789abcdef"};
  pack_sign(&sb, e, 1);
  expect_error("lark.cmd.admin.cert.revoke", sb.data, sb.size, "NOT_FOUND");
  expect_error("lark.cmd.admin.cert.show", sb.data, sb.size, "NOT_FOUND");
  expect_error("lark.cmd.admin.cert.explode", sb.data, sb.size, "INVAL");
  msgpack_sbuffer_destroy(&sb);
  bus_status st;
  cr_expect_eq(bus_status_query(conn, "signer", 1000, &st), 0, "still up");
}

/* Anyone but admin signs and revokes only user certificates in its own
 * name (the way into lark-gateway's HTTPS as itself): alice gets hers and
 * revokes it; she cannot get one for bob, nor another role for herself,
 * nor revoke bob's. */
Test(signer_service, users_sign_and_revoke_only_their_own) {
  char prefix[600], mine[64], bobs[64];
  snprintf(prefix, sizeof prefix, "%s/bob", dir);
  cr_assert_eq(run(larkctl, "-o", "json", "cert", "request", "--role", "user",
                   "--name", "bob", "--out", prefix, NULL),
               0, "admin signs any: %s", err);
  json_field("serial", bobs, sizeof bobs);
  setenv("LARK_USER", "alice", 1);
  snprintf(prefix, sizeof prefix, "%s/alice", dir);
  cr_assert_eq(run(larkctl, "-o", "json", "cert", "request", "--role", "user",
                   "--name", "alice", "--out", prefix, NULL),
               0, "her own user certificate: %s", err);
  json_field("serial", mine, sizeof mine);
  cr_expect_neq(run(larkctl, "cert", "request", "--role", "user", "--name",
                    "bob", "--out", prefix, NULL),
                0, "alice got a certificate for bob");
  cr_expect(strstr(err, "DENIED"), "%s", err);
  cr_expect_neq(run(larkctl, "cert", "request", "--role", "admin", "--name",
                    "alice", "--out", prefix, NULL),
                0, "alice got an admin certificate");
  cr_expect(strstr(err, "DENIED"), "%s", err);
  cr_expect_neq(run(larkctl, "cert", "revoke", bobs, NULL), 0,
                "alice revoked bob's certificate");
  cr_expect(strstr(err, "DENIED"), "%s", err);
  cr_expect_eq(run(larkctl, "cert", "revoke", mine, NULL), 0, "%s", err);
  unsetenv("LARK_USER");
  cr_assert_eq(run(larkctl, "-o", "json", "cert", "show", mine, NULL), 0, "%s",
               err);
  cr_expect(strstr(out, "\"revoked\":{"), "%s", out);
  cr_assert_eq(run(larkctl, "-o", "json", "cert", "show", bobs, NULL), 0, "%s",
               err);
  cr_expect(strstr(out, "\"revoked\":null"), "bob's still valid: %s", out);
}
