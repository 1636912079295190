/*
 * test_gateway_tls.c - lark-gateway over HTTPS with client certificates
 * from the platform's CA (`larkctl up --nodes 1`, curl as the client):
 *
 *   - a role-`user` certificate lark-signer issued (`larkctl cert request
 *     --role user`) reads, and its CN is the actor of a write;
 *   - no certificate, one of another CA (even OU=user), or one of the
 *     platform's CA in another role: 401; /healthz needs none;
 *   - the certificate revoked while a watch is open: the watch is closed
 *     within a few seconds and the next request gets 401.
 *
 * The server's own certificate is made here with openssl (self-signed,
 * IP 127.0.0.1): what is under test is the gateway's check of its
 * clients.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bed.h"
#include "files.h"
#include "gwbed.h"
#include "proc.h"
#include "wait.h"

#define API "/api/v1/rlinf.io/v1alpha1"

static lt_platform plat;
static lt_gw gw;
static char base[128], body[1 << 16], out[1 << 14], err[1 << 14];
static char tlsdir[600];

#define ctl(...)                                                               \
  lt_larkctl(&plat, out, sizeof out, err, sizeof err, __VA_ARGS__)
#define sh(...) lt_sh(out, sizeof out, err, sizeof err, __VA_ARGS__)

/* openssl: a self-signed server certificate for 127.0.0.1, and another
 * CA with a certificate of its own that claims OU=user, CN=alice. */
static void
make_outside_certs(void) {
  int rc = sh("cd %s && "
              "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
              "-nodes -keyout srv.key -out srv.pem -days 2 -subj /CN=gw "
              "-addext subjectAltName=IP:127.0.0.1 && "
              "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
              "-nodes -keyout evilca.key -out evilca.pem -days 2 "
              "-subj /CN=evil-ca && "
              "openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
              "-keyout evil.key -out evil.csr "
              "-subj /O=larkbus/OU=user/CN=alice && "
              "openssl x509 -req -in evil.csr -CA evilca.pem -CAkey evilca.key "
              "-CAcreateserial -out evil.pem -days 2",
              tlsdir);
  cr_assert_eq(rc, 0, "openssl: %s", err);
}

/* A certificate from the platform's signer: PREFIX.pem and PREFIX.key. */
static void
request_cert(const char *role, const char *name) {
  int rc = ctl("cert request --role %s --name %s --out %s/%s", role, name,
               tlsdir, name);
  cr_assert_eq(rc, 0, "cert request %s %s: %s %s", role, name, out, err);
}

static void
up(void) {
  static const char *const nodes[] = {"--nodes", "1", NULL};
  lt_platform_ready(&plat, "gwtls", nodes);
  snprintf(tlsdir, sizeof tlsdir, "%s/tlsfiles", plat.dir);
  cr_assert_eq(sh("mkdir -p %s", tlsdir), 0);
  make_outside_certs();
  cr_assert_eq(ctl("cert ca > %s/ca.pem", tlsdir), 0, "%s", err);
  char https[16] = "127.0.0.1:0", cert[700], key[700], ca[700];
  snprintf(cert, sizeof cert, "%s/srv.pem", tlsdir);
  snprintf(key, sizeof key, "%s/srv.key", tlsdir);
  snprintf(ca, sizeof ca, "%s/ca.pem", tlsdir);
  const char *const extra[] = {"--https",     https,       "--tls-cert",
                               cert,          "--tls-key", key,
                               "--client-ca", ca,          NULL};
  lt_gw_init(&gw, &plat, "gw-tls");
  lt_gw_start(&gw, 0, extra);
  cr_assert_gt(gw.https_port, 0);
  snprintf(base, sizeof base, "https://127.0.0.1:%d", gw.https_port);
}

static void
down(void) {
  lt_gw_stop(&gw, SIGTERM);
  lt_platform_end(&plat);
}

TestSuite(gateway_tls, .init = up, .fini = down, .timeout = 240);

/* curl as the holder of PREFIX.pem/.key ("" for no certificate). */
static int
as(const char *who, const char *fmt_path) {
  char cert[1400] = "";
  if (who[0])
    snprintf(cert, sizeof cert, "--cert %s/%s.pem --key %s/%s.key", tlsdir, who,
             tlsdir, who);
  return lt_curl(body, sizeof body, "--cacert %s/srv.pem %s '%s%s'", tlsdir,
                 cert, base, fmt_path);
}

Test(gateway_tls, user_certificates) {
  request_cert("user", "alice");
  request_cert("admin", "root-ish");
  cr_assert_eq(as("", "/healthz"), 200, "%s", body);
  cr_assert_eq(as("alice", API "/nodes"), 200, "%s", body);
  cr_assert(strstr(body, "\"NodeList\""), "%s", body);
  cr_assert_eq(as("", API "/nodes"), 401, "%s", body);
  cr_assert_eq(as("evil", API "/nodes"), 401, "%s", body);
  /* the platform's own CA, another role: refused, by the handshake (the
   * admin role's certificates carry the signer's 2.25 extension, which
   * GnuTLS does not parse) or with 401 */
  int code = as("root-ish", API "/nodes");
  cr_assert(code == 401 || code == -1, "%d %s", code, body);
  /* a write as alice goes out as alice: the scheduler names her (she
   * may not stop a Job that does not exist either way) */
  code = lt_curl(body, sizeof body,
                 "--cacert %s/srv.pem --cert %s/alice.pem --key "
                 "%s/alice.key -X POST '%s" API "/jobs/nosuch/stop'",
                 tlsdir, tlsdir, tlsdir, base);
  cr_assert(code == 404 || code == 403, "%d %s", code, body);
}

Test(gateway_tls, revoked_mid_stream) {
  request_cert("user", "bob");
  cr_assert_eq(as("bob", API "/nodes"), 200, "%s", body);
  char watch[700];
  snprintf(watch, sizeof watch, "%s/watch.out", tlsdir);
  pid_t w = lt_curl_bg(watch,
                       "--cacert %s/srv.pem --cert %s/bob.pem --key "
                       "%s/bob.key '%s" API "/nodes?watch=1'",
                       tlsdir, tlsdir, tlsdir, base);
  cr_assert(lt_file_says(watch, "\"ADDED\"", 10), "the watch did not start");
  cr_assert_eq(sh("openssl x509 -in %s/bob.pem -noout -serial", tlsdir), 0);
  char serial[80];
  snprintf(serial, sizeof serial, "%s", strchr(out, '=') + 1);
  serial[strcspn(serial, "\n")] = 0;
  cr_assert_eq(ctl("cert revoke %s", serial), 0, "%s %s", out, err);
  int64_t t0 = lt_now_ms();
  int st, ended = 0;
  while (!ended && lt_now_ms() - t0 < 5000) {
    ended = waitpid(w, &st, WNOHANG) == w;
    if (!ended)
      lt_sleep_ms(20);
  }
  if (!ended)
    lt_kill(w, SIGKILL);
  cr_assert(ended, "the watch of a revoked certificate stayed open 5 s");
  cr_log_info("watch closed %lld ms after the revoke returned",
              (long long)(lt_now_ms() - t0));
  cr_assert_eq(as("bob", API "/nodes"), 401, "%s", body);
}
