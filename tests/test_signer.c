/*
 * test_signer.c - the signer's pure parts, without a broker: roles and
 * validity bounds, the CA's files, OpenSSH certificates read back by
 * ssh-keygen, X.509 certificates verified by openssl, the CRL and the
 * KRL read by the real tools, and hostile requests refused.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <sodium.h>

#include "natsd.h"
#include "proc.h"
#include "signer.h"

#define NS 1000000000LL

static char dir[256];
static signer_ca *ca;
static char out[1 << 16], err[8192];

static void
setup(void) {
  lt_tmpdir(dir, sizeof dir, "signer");
  int created = 0;
  cr_assert_eq(signer_ca_open(dir, &ca, &created), 0);
  cr_assert(created);
}

static void
teardown(void) {
  signer_ca_free(ca);
  lt_rmtree(dir);
}

TestSuite(signer, .init = setup, .fini = teardown, .timeout = 60);

static int64_t
now_ns(void) {
  return (int64_t)time(NULL) * NS;
}

/* a shell command line; stdout into out, stderr into err */
#define sh(...) lt_sh(out, sizeof out, err, sizeof err, __VA_ARGS__)

static void
put(const char *name, const char *text, char *path, size_t cap) {
  snprintf(path, cap, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fputc('\n', f);
  fclose(f);
}

static void
ssh_key(uint8_t pk[32], char *line, size_t cap) {
  uint8_t sk[64];
  crypto_sign_keypair(pk, sk);
  sodium_memzero(sk, sizeof sk);
  cr_assert_eq(signer_ssh_pub_format(pk, "t", line, cap), 0);
}

static void
ssh_req(signer_req *r, const char *role, const char *name, const char *domain,
        const char *key) {
  memset(r, 0, sizeof *r);
  r->role = role;
  r->name = name;
  r->domain = domain;
  r->ssh_key = key;
  r->ssh_key_len = strlen(key);
  r->not_before = now_ns() - 60 * NS;
  r->not_after = now_ns() + 3600 * NS;
}

Test(signer, roles_and_validity_bounds) {
  cr_expect_eq(signer_role_format("admin"), SIGNER_X509);
  cr_expect_eq(signer_role_format("peer"), SIGNER_X509);
  cr_expect_eq(signer_role_format("user"), SIGNER_X509);
  cr_expect_eq(signer_role_format("gateway"), SIGNER_X509);
  cr_expect_eq(signer_role_format("domain"), SIGNER_SSH);
  cr_expect_eq(signer_role_format("ssh-guest"), SIGNER_SSH);
  cr_expect_eq(signer_role_format("root"), 0);
  cr_expect_eq(signer_role_format(NULL), 0);
  signer_limits l;
  signer_limits_init(&l);
  int64_t nb, na, now = 1000 * 86400 * NS;
  char e[128];
  cr_assert_eq(signer_validity(&l, now, 0, &nb, &na, e, sizeof e), 0);
  cr_expect_eq(na - now, 24 * 3600 * NS, "default 24 h");
  cr_expect_eq(now - nb, 60 * NS, "backdated a minute");
  cr_expect_eq(signer_validity(&l, now, 30 * NS, &nb, &na, e, sizeof e),
               BUS_EFIELD);
  cr_expect_eq(signer_validity(&l, now, 31 * 86400 * NS, &nb, &na, e, sizeof e),
               BUS_EFIELD);
  cr_expect(strstr(e, "2592000s"), "%s", e);
  cr_expect_eq(signer_validity(&l, now, -5, &nb, &na, e, sizeof e), BUS_EFIELD);
  l.max_ns = 3600 * NS;
  cr_expect_eq(signer_validity(&l, now, 7200 * NS, &nb, &na, e, sizeof e),
               BUS_EFIELD, "configurable bound");
}

Test(signer, ca_files_are_private_and_reload) {
  char path[512];
  struct stat st;
  const char *keys[] = {"ca.key", "ca-ssh.key"};
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, keys[i]);
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0600, "%s", keys[i]);
  }
  char x509[64], ssh[64];
  snprintf(x509, sizeof x509, "%s", signer_ca_x509_fp(ca));
  snprintf(ssh, sizeof ssh, "%s", signer_ca_ssh_fp(ca));
  signer_ca *again = NULL;
  int created = 1;
  cr_assert_eq(signer_ca_open(dir, &again, &created), 0);
  cr_expect_eq(created, 0, "made once");
  cr_expect_str_eq(signer_ca_x509_fp(again), x509);
  cr_expect_str_eq(signer_ca_ssh_fp(again), ssh);
  signer_ca_free(again);
  /* the SSH fingerprint is the one ssh-keygen computes */
  cr_assert_eq(sh("ssh-keygen -l -f %s/ca.pub", dir), 0, "%s", err);
  cr_expect(strstr(out, ssh), "%s vs %s", out, ssh);
  /* a key file others can read is refused */
  snprintf(path, sizeof path, "%s/ca.key", dir);
  chmod(path, 0644);
  cr_expect_eq(signer_ca_open(dir, &again, NULL), BUS_EDENIED);
}

Test(signer, ssh_certificate_reads_back_with_ssh_keygen) {
  uint8_t pk[32];
  char line[256], path[512];
  ssh_key(pk, line, sizeof line);
  signer_req r;
  ssh_req(&r, "domain", "relay-1", "d1", line);
  r.cluster = "c2";
  signer_cert c;
  char e[256] = "";
  cr_assert_eq(signer_issue(ca, &r, &c, e, sizeof e), 0, "%s", e);
  cr_expect_eq(c.format, SIGNER_SSH);
  cr_expect_eq(strlen(c.serial), 16);
  cr_expect_str_eq(c.principals[0], "domain:d1");
  cr_expect_str_eq(c.subject, "relay-1 role=domain domain=d1 cluster=c2");
  put("relay-cert.pub", c.text, path, sizeof path);
  cr_assert_eq(sh("ssh-keygen -L -f %s", path), 0, "%s", err);
  cr_expect(strstr(out, "Type: ssh-ed25519-cert-v01@openssh.com user "
                        "certificate"),
            "%s", out);
  cr_expect(strstr(out, "Key ID: \"relay-1 role=domain domain=d1 cluster=c2\""),
            "%s", out);
  cr_expect(strstr(out, "domain:d1"), "%s", out);
  cr_expect(strstr(out, "role@larkbus"), "%s", out);
  cr_expect(strstr(out, "permit-pty"), "%s", out);
  char want[64];
  snprintf(want, sizeof want, "Serial: %llu",
           (unsigned long long)strtoull(c.serial, NULL, 16));
  cr_expect(strstr(out, want), "%s in %s", want, out);
  cr_expect(strstr(out, signer_ca_ssh_fp(ca)), "signed by the CA: %s", out);
  /* validity printed in local time: check the years and the span */
  char from[32], to[32];
  time_t nb = (time_t)(c.not_before / NS), na = (time_t)(c.not_after / NS);
  strftime(from, sizeof from, "from %Y-%m-%dT%H:%M:%S", localtime(&nb));
  strftime(to, sizeof to, "to %Y-%m-%dT%H:%M:%S", localtime(&na));
  cr_expect(strstr(out, from) && strstr(out, to), "%s %s in %s", from, to, out);
  signer_cert_clear(&c);
}

Test(signer, guest_certificate_principals) {
  uint8_t pk[32];
  char line[256];
  ssh_key(pk, line, sizeof line);
  signer_req r;
  ssh_req(&r, "ssh-guest", "bob", "d7", line);
  signer_cert c;
  char e[256];
  cr_assert_eq(signer_issue(ca, &r, &c, e, sizeof e), 0, "%s", e);
  cr_expect_eq(c.nprincipals, 2);
  cr_expect_str_eq(c.principals[0], "guest:bob");
  cr_expect_str_eq(c.principals[1], "domain:d7");
  signer_cert_clear(&c);
}

Test(signer, hostile_ssh_requests_are_refused) {
  uint8_t pk[32];
  char line[256], e[256];
  ssh_key(pk, line, sizeof line);
  signer_req r;
  signer_cert c;
  const char *bad_keys[] = {
      "",
      "ssh-ed25519",
      "ssh-ed25519 ",
      "ssh-ed25519 !!!!",
      "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ",
      "ssh-ed25519 AAAAC3NzaC1lZDI1",
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
      "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"};
  for (size_t i = 0; i < sizeof bad_keys / sizeof bad_keys[0]; i++) {
    ssh_req(&r, "domain", "x", "d1", bad_keys[i]);
    cr_expect_eq(signer_issue(ca, &r, &c, e, sizeof e), BUS_EFIELD, "%zu", i);
  }
  ssh_req(&r, "domain", "x", NULL, line);
  cr_expect_eq(signer_issue(ca, &r, &c, e, sizeof e), BUS_EFIELD,
               "domain role without a domain");
  ssh_req(&r, "domain", "Bad Name", "d1", line);
  cr_expect_eq(signer_issue(ca, &r, &c, e, sizeof e), BUS_EFIELD);
  ssh_req(&r, "domain", "x", "d1;rm", line);
  cr_expect_eq(signer_issue(ca, &r, &c, e, sizeof e), BUS_EFIELD);
  ssh_req(&r, "wizard", "x", "d1", line);
  cr_expect_eq(signer_issue(ca, &r, &c, e, sizeof e), BUS_EFIELD);
  ssh_req(&r, "domain", "x", "d1", line);
  r.not_after = r.not_before;
  cr_expect_eq(signer_issue(ca, &r, &c, e, sizeof e), BUS_EFIELD);
}

static void
x509_req(signer_req *r, const char *role, const char *name, char **key,
         char **csr) {
  size_t klen;
  cr_assert_eq(signer_x509_request(name, key, &klen, csr), 0);
  memset(r, 0, sizeof *r);
  r->role = role;
  r->name = name;
  r->csr = *csr;
  r->csr_len = strlen(*csr);
  r->not_before = now_ns() - 60 * NS;
  r->not_after = now_ns() + 3600 * NS;
}

Test(signer, x509_certificate_verifies_with_openssl) {
  const char *roles[] = {"admin", "agent", "peer"};
  for (int i = 0; i < 3; i++) {
    char *key, *csr, path[512], e[256] = "";
    signer_req r;
    signer_cert c;
    x509_req(&r, roles[i], "alice", &key, &csr);
    r.agent = "a-7";
    r.cluster = "c1";
    cr_assert_eq(signer_issue(ca, &r, &c, e, sizeof e), 0, "%s", e);
    cr_expect_eq(strlen(c.serial), 32);
    put("alice.pem", c.text, path, sizeof path);
    cr_assert_eq(sh("openssl verify -CAfile %s/ca.pem %s", dir, path), 0,
                 "%s%s", out, err);
    cr_expect(strstr(out, ": OK"), "%s", out);
    cr_assert_eq(sh("openssl x509 -in %s -noout -text", path), 0);
    cr_expect(strstr(out, "CN = alice"), "%s", out);
    char ou[32];
    snprintf(ou, sizeof ou, "OU = %s", roles[i]);
    cr_expect(strstr(out, ou), "%s", out);
    char uri[64];
    snprintf(uri, sizeof uri, "URI:urn:larkbus:role:%s", roles[i]);
    cr_expect(strstr(out, uri), "%s", out);
    cr_expect(strstr(out, "URI:urn:larkbus:agent:a-7"), "%s", out);
    cr_expect(strstr(out, SIGNER_OID ":"), "private extension: %s", out);
    cr_expect(!strstr(out, SIGNER_OID ": critical"), "non-critical");
    cr_expect(strstr(out, "CA:FALSE"), "%s", out);
    cr_expect(strstr(out, "prime256v1") || strstr(out, "P-256"), "%s", out);
    /* the extension's value: role and metadata */
    cr_assert_eq(
        sh("openssl asn1parse -in %s | grep -A1 %s", path, SIGNER_OID + 5), 0);
    sodium_free(key);
    free(csr);
    signer_cert_clear(&c);
  }
}

/* Issue role's certificate for name (hosts n), write it as <name>.pem and
 * print it with openssl into out. */
static void
issue_text(const char *role, const char *name, const char *const *hosts, int n,
           char *path, size_t cap) {
  char *key, *csr, e[256] = "";
  signer_req r;
  signer_cert c;
  x509_req(&r, role, name, &key, &csr);
  r.hosts = hosts;
  r.nhosts = n;
  cr_assert_eq(signer_issue(ca, &r, &c, e, sizeof e), 0, "%s", e);
  char file[80];
  snprintf(file, sizeof file, "%s.pem", name);
  put(file, c.text, path, cap);
  cr_assert_eq(sh("openssl x509 -in %s -noout -text", path), 0, "%s", err);
  sodium_free(key);
  free(csr);
  signer_cert_clear(&c);
}

/* A user certificate is a client's only, with no host name; a gateway's
 * is a TLS server's for loopback and the hosts asked, and a client's. */
Test(signer, user_and_gateway_roles) {
  char user[512], gw[512];
  issue_text("user", "alice", NULL, 0, user, sizeof user);
  cr_expect(strstr(out, "OU = user, CN = alice"), "%s", out);
  cr_expect(strstr(out, "TLS Web Client Authentication"), "%s", out);
  cr_expect(!strstr(out, "TLS Web Server Authentication"), "%s", out);
  cr_expect(!strstr(out, "DNS:"), "a person is not a host: %s", out);
  cr_expect(strstr(out, "URI:urn:larkbus:role:user"), "%s", out);
  cr_expect(!strstr(out, SIGNER_OID), "no 2.25 OID GnuTLS cannot read: %s",
            out);
  const char *hosts[] = {"lark.example.org", "10.1.2.3", "fd00::7",
                         "localhost"};
  issue_text("gateway", "gateway", hosts, 4, gw, sizeof gw);
  cr_expect(strstr(out, "OU = gateway, CN = gateway"), "%s", out);
  cr_expect(strstr(out, "TLS Web Server Authentication") &&
                strstr(out, "TLS Web Client Authentication"),
            "%s", out);
  const char *sans[] = {
      "IP Address:127.0.0.1", "IP Address:0:0:0:0:0:0:0:1",
      "DNS:localhost",        "DNS:lark.example.org",
      "IP Address:10.1.2.3",  "IP Address:FD00:0:0:0:0:0:0:7"};
  for (int i = 0; i < 6; i++)
    cr_expect(strstr(out, sans[i]), "%s in %s", sans[i], out);
  const char *lo = strstr(out, "DNS:localhost");
  cr_expect(lo && !strstr(lo + 1, "DNS:localhost"), "localhost named once");
  /* what a TLS peer checks: purpose and name */
  cr_expect_eq(
      sh("openssl verify -purpose sslserver -CAfile %s/ca.pem %s", dir, gw), 0,
      "%s%s", out, err);
  cr_expect_eq(
      sh("openssl verify -purpose sslclient -CAfile %s/ca.pem %s", dir, gw), 0,
      "%s%s", out, err);
  cr_expect_eq(
      sh("openssl verify -purpose sslclient -CAfile %s/ca.pem %s", dir, user),
      0, "%s%s", out, err);
  cr_expect_neq(
      sh("openssl verify -purpose sslserver -CAfile %s/ca.pem %s", dir, user),
      0, "a user's certificate serves nothing: %s", out);
  cr_expect_eq(sh("openssl x509 -in %s -noout -checkip 127.0.0.1 -checkhost "
                  "lark.example.org",
                  gw),
               0, "%s", err);
  cr_expect(strstr(out, "does match certificate") &&
                !strstr(out, "does NOT match"),
            "%s", out);
}

Test(signer, hostile_hosts_are_refused) {
  const char *bad[] = {"a,DNS:evil.example",
                       "-x.example",
                       "x-.example",
                       "a..b",
                       ".",
                       "Upper.example",
                       "1.2.3.4/8",
                       "fe80::1%eth0",
                       "a b",
                       "x\nDNS:y",
                       ""};
  char *key, *csr, e[256];
  signer_req r;
  signer_cert c;
  x509_req(&r, "gateway", "gateway", &key, &csr);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    r.hosts = &bad[i];
    r.nhosts = 1;
    e[0] = 0;
    cr_expect_eq(signer_issue(ca, &r, &c, e, sizeof e), BUS_EFIELD, "%s",
                 bad[i]);
    cr_expect(strstr(e, "hosts"), "%s: %s", bad[i], e);
  }
  const char *nine[9] = {"a", "b", "c", "d", "e", "f", "g", "h", "i"};
  r.hosts = nine;
  r.nhosts = 9;
  cr_expect_eq(signer_issue(ca, &r, &c, e, sizeof e), BUS_EFIELD, "9 hosts");
  /* hosts are a gateway's alone */
  r.role = "user";
  r.nhosts = 1;
  cr_expect_eq(signer_issue(ca, &r, &c, e, sizeof e), BUS_EFIELD);
  cr_expect(strstr(e, "only a gateway"), "%s", e);
  sodium_free(key);
  free(csr);
}

Test(signer, private_extension_contents) {
  char *key, *csr, path[512], e[256];
  signer_req r;
  signer_cert c;
  x509_req(&r, "agent", "edge-3", &key, &csr);
  r.cluster = "west";
  r.domain = "d2";
  cr_assert_eq(signer_issue(ca, &r, &c, e, sizeof e), 0, "%s", e);
  put("edge.pem", c.text, path, sizeof path);
  cr_assert_eq(sh("openssl x509 -in %s -outform DER | openssl asn1parse "
                  "-inform DER -strparse $(openssl x509 -in %s -outform DER | "
                  "openssl asn1parse -inform DER | grep -A1 '%s' | tail -1 | "
                  "cut -d: -f1)",
                  path, path, SIGNER_OID),
               0, "%s", err);
  cr_expect(strstr(out, "UTF8STRING") &&
                strstr(out, ":role=agent;name=edge-3;domain=d2;cluster=west"),
            "%s", out);
  sodium_free(key);
  free(csr);
  signer_cert_clear(&c);
}

Test(signer, hostile_csrs_are_refused) {
  char path[512], e[256];
  signer_req r;
  signer_cert c;
  memset(&r, 0, sizeof r);
  r.role = "admin";
  r.name = "x";
  r.not_before = now_ns();
  r.not_after = r.not_before + 3600 * NS;
  const char *bad[] = {"", "junk",
                       "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n"
                       "-----END CERTIFICATE REQUEST-----\n"};
  for (int i = 0; i < 3; i++) {
    r.csr = bad[i];
    r.csr_len = strlen(bad[i]);
    cr_expect_eq(signer_issue(ca, &r, &c, e, sizeof e), BUS_EFIELD, "%d", i);
  }
  /* a P-384 CSR made by openssl itself: wrong curve */
  cr_assert_eq(sh("cd %s && openssl req -new -newkey ec -pkeyopt "
                  "ec_paramgen_curve:P-384 -nodes -keyout k384 -subj /CN=x "
                  "-out r384 2>/dev/null && cat r384",
                  dir),
               0);
  r.csr = out;
  r.csr_len = strlen(out);
  cr_expect_eq(signer_issue(ca, &r, &c, e, sizeof e), BUS_EFIELD);
  cr_expect(strstr(e, "P-256"), "%s", e);
  /* a P-256 CSR whose signature was tampered with */
  char *key, *csr;
  x509_req(&r, "admin", "x", &key, &csr);
  char *mid = csr + strlen(csr) / 2;
  *mid = *mid == 'A' ? 'B' : 'A';
  r.csr_len = strlen(csr);
  int rc = signer_issue(ca, &r, &c, e, sizeof e);
  cr_expect_eq(rc, BUS_EFIELD, "tampered CSR: %s", e);
  if (!rc)
    signer_cert_clear(&c);
  sodium_free(key);
  free(csr);
  (void)path;
}

Test(signer, crl_lists_revoked_serials_for_openssl) {
  char *key, *csr, path[512], crl[512], e[256];
  signer_req r;
  signer_cert c;
  x509_req(&r, "peer", "p1", &key, &csr);
  cr_assert_eq(signer_issue(ca, &r, &c, e, sizeof e), 0, "%s", e);
  put("p1.pem", c.text, path, sizeof path);
  signer_revoked rv[2] = {{.when = now_ns()}, {.when = now_ns()}};
  snprintf(rv[0].serial, sizeof rv[0].serial, "%s", c.serial);
  snprintf(rv[1].serial, sizeof rv[1].serial,
           "4aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
  snprintf(crl, sizeof crl, "%s/crl.pem", dir);
  cr_assert_eq(signer_crl_write(ca, crl, rv, 2, 7, time(NULL)), 0);
  cr_assert_eq(sh("openssl crl -in %s -noout -text", crl), 0, "%s", err);
  char upper[40];
  for (int i = 0; c.serial[i]; i++)
    upper[i] = (char)(c.serial[i] >= 'a' ? c.serial[i] - 32 : c.serial[i]);
  upper[32] = 0;
  cr_expect(strstr(out, upper), "%s in %s", upper, out);
  cr_expect(strstr(out, "4AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), "%s", out);
  cr_expect(strstr(out, "X509v3 CRL Number: \n                7") ||
                strstr(out, "CRL Number"),
            "%s", out);
  cr_expect_eq(sh("openssl crl -in %s -noout -CAfile %s/ca.pem", crl, dir), 0,
               "CRL signature verifies: %s", err);
  cr_expect_neq(sh("openssl verify -crl_check -CRLfile %s -CAfile %s/ca.pem %s",
                   crl, dir, path),
                0, "a revoked certificate fails verification");
  cr_expect(strstr(out, "revoked") || strstr(err, "revoked"), "%s%s", out, err);
  sodium_free(key);
  free(csr);
  signer_cert_clear(&c);
}

Test(signer, krl_revokes_by_serial_for_ssh_keygen) {
  uint8_t pk[32];
  char line[256], cert[512], krl[512], e[256];
  signer_req r;
  signer_cert a, b;
  ssh_key(pk, line, sizeof line);
  ssh_req(&r, "domain", "n1", "d1", line);
  cr_assert_eq(signer_issue(ca, &r, &a, e, sizeof e), 0);
  cr_assert_eq(signer_issue(ca, &r, &b, e, sizeof e), 0);
  uint64_t s[2] = {strtoull(a.serial, NULL, 16), 12345};
  snprintf(krl, sizeof krl, "%s/revoked_keys", dir);
  cr_assert_eq(signer_krl_write(krl, signer_ca_ssh_pk(ca), s, 2, 3, time(NULL)),
               0);
  put("a-cert.pub", a.text, cert, sizeof cert);
  sh("ssh-keygen -Q -f %s %s", krl, cert);
  cr_expect(strstr(out, "REVOKED"), "%s %s", out, err);
  put("b-cert.pub", b.text, cert, sizeof cert);
  cr_expect_eq(sh("ssh-keygen -Q -f %s %s", krl, cert), 0, "%s", err);
  cr_expect(strstr(out, ": ok"), "%s", out);
  /* an empty KRL is valid too */
  cr_assert_eq(signer_krl_write(krl, signer_ca_ssh_pk(ca), NULL, 0, 1, 0), 0);
  cr_expect_eq(sh("ssh-keygen -Q -f %s %s", krl, cert), 0, "%s", err);
  signer_cert_clear(&a);
  signer_cert_clear(&b);
}

Test(signer, private_key_file_reads_with_ssh_keygen) {
  uint8_t pk[32], sk[64], pk2[32], sk2[64];
  char *text = NULL, path[512], pub[256];
  size_t len;
  crypto_sign_keypair(pk, sk);
  cr_assert_eq(signer_ssh_private_format(pk, sk, "me", &text, &len), 0);
  cr_assert_eq(signer_ssh_private_parse(text, len, pk2, sk2), 0);
  cr_expect(!memcmp(pk, pk2, 32) && !memcmp(sk, sk2, 64));
  put("id", text, path, sizeof path);
  chmod(path, 0600);
  sodium_free(text);
  cr_assert_eq(sh("ssh-keygen -y -f %s", path), 0, "%s", err);
  cr_assert_eq(signer_ssh_pub_format(pk, NULL, pub, sizeof pub), 0);
  cr_expect(!strncmp(out, pub, strlen(pub)), "%s vs %s", out, pub);
  cr_expect_neq(signer_ssh_private_parse("junk", 4, pk2, sk2), 0);
  sodium_memzero(sk, sizeof sk);
  sodium_memzero(sk2, sizeof sk2);
}
