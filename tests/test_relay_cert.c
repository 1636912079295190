/*
 * test_relay_cert.c - the hub's certificate checks, without a broker:
 * certificates made by the signer's code and by ssh-keygen -s are
 * accepted; another CA, outside the validity window, the wrong role or
 * principal, critical options, revoked (the signer's KRL, ssh-keygen's
 * KRL, cert.revoked events) and truncated or corrupted blobs refused.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <msgpack.h>
#include <sodium.h>

#include "certcheck.h"
#include "natsd.h"
#include "proc.h"
#include "revoked.h"
#include "signer.h"

static char dir[256];
static uint8_t ca_pk[32], ca_sk[64];
static char out[1 << 14], err[4096];

static void
setup(void) {
  cr_assert_geq(sodium_init(), 0);
  lt_tmpdir(dir, sizeof dir, "relaycert");
  crypto_sign_keypair(ca_pk, ca_sk);
}

static void
teardown(void) {
  sodium_memzero(ca_sk, sizeof ca_sk);
  lt_rmtree(dir);
}

TestSuite(relay_cert, .init = setup, .fini = teardown, .timeout = 60);

/* a shell command line; stdout into out, stderr into err */
#define sh(...) lt_sh(out, sizeof out, err, sizeof err, __VA_ARGS__)

static uint64_t
now_s(void) {
  return (uint64_t)time(NULL);
}

/* A certificate spec for a domain relay, valid an hour around now. */
typedef struct spec {
  signer_ssh_cert_spec s;
  uint8_t pk[32];
  const char *pr[4];
  const char *ek[4], *ev[4];
} spec;

static void
spec_init(spec *p, const char *domain) {
  uint8_t sk[64];
  memset(p, 0, sizeof *p);
  crypto_sign_keypair(p->pk, sk);
  sodium_memzero(sk, sizeof sk);
  static char pr[64], id[128];
  snprintf(pr, sizeof pr, "domain:%s", domain);
  snprintf(id, sizeof id, "relay-1 role=domain domain=%s", domain);
  p->pr[0] = pr;
  p->ek[0] = "role";
  p->ev[0] = "domain";
  p->ek[1] = "domain";
  p->ev[1] = domain;
  p->s = (signer_ssh_cert_spec){.pk = p->pk,
                                .serial = 42,
                                .key_id = id,
                                .principals = p->pr,
                                .nprincipals = 1,
                                .valid_after = now_s() - 60,
                                .valid_before = now_s() + 3600,
                                .ext_keys = p->ek,
                                .ext_vals = p->ev,
                                .next = 2,
                                .comment = "t"};
}

/* Make the certificate (signed by sk) and decode its blob. */
static void
make(const spec *p, const uint8_t pk[32], const uint8_t sk[64], uint8_t **blob,
     size_t *n) {
  char *line = NULL;
  cr_assert_eq(signer_ssh_cert_make(pk, sk, &p->s, &line), 0);
  cr_assert_eq(relay_cert_decode(line, strlen(line), blob, n), 0);
  free(line);
}

static int
check(const uint8_t *blob, size_t n, const sshwire_krl *rev, char *why,
      size_t cap) {
  relay_cert c;
  relay_check chk = {
      .ca_pk = ca_pk, .now = now_s(), .role = "domain", .revoked = rev};
  return relay_cert_check(&chk, blob, n, &c, why, cap);
}

static void
expect_refused(const spec *p, const char *reason) {
  uint8_t *blob;
  size_t n;
  char why[256] = "";
  make(p, ca_pk, ca_sk, &blob, &n);
  cr_expect_eq(check(blob, n, NULL, why, sizeof why), BUS_EDENIED, "%s",
               reason);
  cr_expect(strstr(why, reason), "want \"%s\", got \"%s\"", reason, why);
  free(blob);
}

Test(relay_cert, signer_issued_certificate_is_accepted) {
  signer_ca *ca;
  char path[512], line[256], e[256] = "", why[256] = "";
  uint8_t pk[32], sk[64];
  cr_assert_eq(signer_ca_open(dir, &ca, NULL), 0);
  snprintf(path, sizeof path, "%s/ca.pub", dir);
  cr_assert_eq(relay_ca_load(path, ca_pk), 0);
  crypto_sign_keypair(pk, sk);
  cr_assert_eq(signer_ssh_pub_format(pk, "k", line, sizeof line), 0);
  signer_req r = {.role = "domain",
                  .name = "relay-1",
                  .domain = "d1",
                  .cluster = "c2",
                  .ssh_key = line,
                  .ssh_key_len = strlen(line),
                  .not_before = ((int64_t)now_s() - 60) * 1000000000LL,
                  .not_after = ((int64_t)now_s() + 600) * 1000000000LL};
  signer_cert sc;
  cr_assert_eq(signer_issue(ca, &r, &sc, e, sizeof e), 0, "%s", e);
  uint8_t *blob;
  size_t n;
  cr_assert_eq(relay_cert_decode(sc.text, strlen(sc.text), &blob, &n), 0);
  relay_cert c;
  relay_check chk = {.ca_pk = ca_pk, .now = now_s(), .role = "domain"};
  cr_assert_eq(relay_cert_check(&chk, blob, n, &c, why, sizeof why), 0, "%s",
               why);
  cr_expect_str_eq(c.domain, "d1");
  cr_expect_str_eq(c.cluster, "c2");
  cr_expect_str_eq(c.name, "relay-1");
  cr_expect_str_eq(c.role, "domain");
  cr_expect_eq(c.serial, strtoull(sc.serial, NULL, 16));
  cr_expect_eq(memcmp(c.key, pk, 32), 0);
  /* revoked through the signer's KRL file */
  uint64_t serials[] = {7, c.serial};
  snprintf(path, sizeof path, "%s/revoked_keys", dir);
  cr_assert_eq(signer_krl_write(path, ca_pk, serials, 2, 1, (int64_t)now_s()),
               0);
  sshwire_krl *rev;
  cr_assert_eq(relay_revoked_load_file(path, ca_pk, &rev, why, sizeof why), 0,
               "%s", why);
  chk.revoked = rev;
  cr_expect_eq(relay_cert_check(&chk, blob, n, &c, why, sizeof why),
               BUS_EDENIED);
  cr_expect_str_eq(why, "certificate revoked");
  sshwire_krl_free(rev);
  /* a KRL under another CA's key revokes nothing of ours */
  uint8_t other[32] = {1};
  cr_assert_eq(signer_krl_write(path, other, serials, 2, 2, 0), 0);
  cr_assert_eq(relay_revoked_load_file(path, ca_pk, &rev, why, sizeof why), 0);
  chk.revoked = rev;
  cr_expect_eq(relay_cert_check(&chk, blob, n, &c, why, sizeof why), 0, "%s",
               why);
  sshwire_krl_free(rev);
  free(blob);
  sodium_memzero(sk, sizeof sk);
  signer_cert_clear(&sc);
  signer_ca_free(ca);
}

Test(relay_cert, foreign_ca_is_refused) {
  uint8_t opk[32], osk[64], *blob;
  size_t n;
  char why[256] = "";
  spec p;
  spec_init(&p, "d1");
  crypto_sign_keypair(opk, osk);
  make(&p, opk, osk, &blob, &n);
  cr_expect_eq(check(blob, n, NULL, why, sizeof why), BUS_EDENIED);
  cr_expect_str_eq(why, "signed by another CA");
  /* our CA's key named, but signed by another: the signature fails */
  blob[n - 1] ^= 1;
  cr_expect_eq(check(blob, n, NULL, why, sizeof why), BUS_EDENIED);
  free(blob);
  sodium_memzero(osk, sizeof osk);
}

Test(relay_cert, validity_window) {
  spec p;
  spec_init(&p, "d1");
  p.s.valid_after = now_s() - 7200;
  p.s.valid_before = now_s() - 1;
  expect_refused(&p, "expired");
  p.s.valid_after = now_s() + 600;
  p.s.valid_before = now_s() + 3600;
  expect_refused(&p, "not yet valid");
  /* the edges: valid_after is inside, valid_before outside */
  uint8_t *blob;
  size_t n;
  relay_cert c;
  make(&p, ca_pk, ca_sk, &blob, &n);
  relay_check chk = {.ca_pk = ca_pk, .now = p.s.valid_after, .role = "domain"};
  cr_expect_eq(relay_cert_check(&chk, blob, n, &c, NULL, 0), 0);
  chk.now = p.s.valid_before;
  cr_expect_eq(relay_cert_check(&chk, blob, n, &c, NULL, 0), BUS_EDENIED);
  free(blob);
}

Test(relay_cert, identity_rules) {
  spec p;
  spec_init(&p, "d1");
  p.ev[0] = "ssh-guest";
  expect_refused(&p, "key id and extensions disagree");
  static char id[] = "bob role=ssh-guest domain=d1";
  p.s.key_id = id;
  expect_refused(&p, "role is not the one required");
  spec_init(&p, "d1");
  p.pr[0] = "domain:d2";
  expect_refused(&p, "principal");
  spec_init(&p, "d1");
  p.s.next = 0; /* role and domain from the key id alone still do */
  uint8_t *blob;
  size_t n;
  char why[256] = "";
  make(&p, ca_pk, ca_sk, &blob, &n);
  cr_expect_eq(check(blob, n, NULL, why, sizeof why), 0, "%s", why);
  free(blob);
  static char noid[] = "relay-1";
  p.s.key_id = noid; /* ... and with neither there is no role */
  expect_refused(&p, "role is not the one required");
  spec_init(&p, "BAD/dom");
  expect_refused(&p, "no valid domain");
}

/* Replace the u32 cert type in a blob made by make() and re-sign it. */
static void
resign(uint8_t *blob, size_t n) {
  /* body = everything before the trailing signature string (4+4+11+4+64) */
  size_t sig = 4 + 4 + 11 + 4 + 64;
  uint8_t s[64];
  crypto_sign_detached(s, NULL, blob, n - sig, ca_sk);
  memcpy(blob + n - 64, s, 64);
}

/* Sign u.pub with ssh-keygen (serial, options) and decode the cert. */
static void
keygen_cert(const char *opts, uint8_t **blob, size_t *n) {
  char key[512], line[4096];
  snprintf(key, sizeof key, "%s/ca", dir);
  struct stat st;
  if (stat(key, &st)) {
    char *text;
    size_t tl;
    cr_assert_eq(signer_ssh_private_format(ca_pk, ca_sk, "ca", &text, &tl), 0);
    FILE *f = fopen(key, "w");
    cr_assert_not_null(f);
    fwrite(text, 1, tl, f);
    fclose(f);
    sodium_free(text);
    chmod(key, 0600);
    cr_assert_eq(sh("ssh-keygen -q -t ed25519 -N '' -f %s/u && ssh-keygen -y "
                    "-f %s > %s.pub",
                    dir, key, key),
                 0, "%s", err);
  }
  cr_assert_eq(sh("ssh-keygen -q -s %s %s %s/u.pub", key, opts, dir), 0, "%s",
               err);
  snprintf(key, sizeof key, "%s/u-cert.pub", dir);
  FILE *f = fopen(key, "r");
  cr_assert_not_null(f);
  cr_assert_not_null(fgets(line, sizeof line, f));
  fclose(f);
  cr_assert_eq(relay_cert_decode(line, strlen(line), blob, n), 0);
}

Test(relay_cert, host_certificates_and_critical_options_are_refused) {
  spec p;
  uint8_t *blob;
  size_t n;
  char why[256] = "";
  spec_init(&p, "d1");
  make(&p, ca_pk, ca_sk, &blob, &n);
  /* type sits after: string type(4+32), nonce(4+32), key(4+32), serial 8 */
  size_t at = 36 + 36 + 36 + 8;
  cr_assert_eq(blob[at + 3], 1);
  blob[at + 3] = 2;
  resign(blob, n);
  cr_expect_eq(check(blob, n, NULL, why, sizeof why), BUS_EDENIED);
  cr_expect_str_eq(why, "not a user certificate");
  free(blob);
  /* ssh-keygen's force-command is a critical option */
  keygen_cert("-I 'u role=domain domain=d1' -n domain:d1 -O "
              "force-command=/bin/true",
              &blob, &n);
  cr_expect_eq(check(blob, n, NULL, why, sizeof why), BUS_EDENIED);
  cr_expect_str_eq(why, "certificate has critical options");
  free(blob);
}

Test(relay_cert, ssh_keygen_certificates_and_krls) {
  uint8_t *blob;
  size_t n;
  char why[256] = "", krl[512];
  keygen_cert("-I 'r1 role=domain domain=d1' -n domain:d1 -z 1000 "
              "-O extension:role@larkbus=domain "
              "-O extension:domain@larkbus=d1",
              &blob, &n);
  cr_assert_eq(check(blob, n, NULL, why, sizeof why), 0, "%s", why);
  /* ssh-keygen -k: a serial range, then a key id */
  snprintf(krl, sizeof krl, "%s/krl", dir);
  const char *specs[] = {"serial: 990-1010", "id: r1 role=domain domain=d1",
                         "serial: 7"};
  for (int i = 0; i < 3; i++) {
    char sp[512];
    snprintf(sp, sizeof sp, "%s/spec", dir);
    FILE *f = fopen(sp, "w");
    cr_assert_not_null(f);
    fprintf(f, "%s\n", specs[i]);
    fclose(f);
    cr_assert_eq(sh("ssh-keygen -k -f %s -s %s/ca.pub %s", krl, dir, sp), 0,
                 "%s", err);
    sshwire_krl *rev;
    cr_assert_eq(relay_revoked_load_file(krl, ca_pk, &rev, why, sizeof why), 0,
                 "%s", why);
    cr_expect_eq(check(blob, n, rev, why, sizeof why), i == 2 ? 0 : BUS_EDENIED,
                 "%s", specs[i]);
    sshwire_krl_free(rev);
  }
  free(blob);
}

Test(relay_cert, ssh_keygen_krl_by_key) {
  uint8_t *blob;
  size_t n;
  char why[256] = "", krl[512];
  keygen_cert("-I 'r1 role=domain domain=d1' -n domain:d1 -z 5", &blob, &n);
  snprintf(krl, sizeof krl, "%s/krl", dir);
  cr_assert_eq(sh("ssh-keygen -q -k -f %s %s/u.pub", krl, dir), 0, "%s", err);
  sshwire_krl *rev;
  cr_assert_eq(relay_revoked_load_file(krl, ca_pk, &rev, why, sizeof why), 0,
               "%s", why);
  cr_expect_eq(check(blob, n, rev, why, sizeof why), BUS_EDENIED);
  sshwire_krl_free(rev);
  free(blob);
}

static void
event(bus_event *ev, msgpack_zone *z, msgpack_sbuffer *sb, const char *serial) {
  msgpack_packer pk;
  msgpack_sbuffer_init(sb);
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 1);
  bus_pack_kv_str(&pk, "serial", serial);
  memset(ev, 0, sizeof *ev);
  ev->type = "cert.revoked";
  cr_assert(msgpack_unpack(sb->data, sb->size, NULL, z, &ev->data) >= 0);
}

Test(relay_cert, revoked_events) {
  spec p;
  uint8_t *blob;
  size_t n;
  char why[256] = "";
  sshwire_krl *rev;
  spec_init(&p, "d1");
  p.s.serial = 0x7a00000000000001ULL;
  make(&p, ca_pk, ca_sk, &blob, &n);
  cr_assert_eq(sshwire_krl_new(&rev), 0);
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_sbuffer sb;
  bus_event ev;
  const char *ignored[] = {"00112233445566778899aabbccddeeff"};
  event(&ev, &z, &sb, ignored[0]);
  cr_expect_eq(relay_revoked_apply(rev, &ev), 0);
  msgpack_sbuffer_destroy(&sb);
  cr_expect_eq(check(blob, n, rev, why, sizeof why), 0, "%s", why);
  event(&ev, &z, &sb, "zz00000000000001");
  cr_expect_eq(relay_revoked_apply(rev, &ev), BUS_EFIELD);
  msgpack_sbuffer_destroy(&sb);
  event(&ev, &z, &sb, "7a00000000000001");
  cr_expect_eq(relay_revoked_apply(rev, &ev), 0);
  msgpack_sbuffer_destroy(&sb);
  cr_expect_eq(check(blob, n, rev, why, sizeof why), BUS_EDENIED);
  cr_expect_str_eq(why, "certificate revoked");
  msgpack_zone_destroy(&z);
  sshwire_krl_free(rev);
  free(blob);
}

Test(relay_cert, hostile_blobs_are_refused) {
  spec p;
  uint8_t *blob;
  size_t n;
  spec_init(&p, "d1");
  make(&p, ca_pk, ca_sk, &blob, &n);
  cr_assert_eq(check(blob, n, NULL, NULL, 0), 0);
  for (size_t i = 0; i < n; i++) { /* every truncation */
    uint8_t *t = malloc(i ? i : 1);
    memcpy(t, blob, i);
    cr_expect_neq(check(t, i, NULL, NULL, 0), 0, "%zu bytes", i);
    free(t);
  }
  for (size_t i = 0; i < n; i++) /* every single-byte change */
    for (int b = 0; b < 8; b += 3) {
      blob[i] ^= (uint8_t)(1u << b);
      cr_expect_neq(check(blob, n, NULL, NULL, 0), 0, "byte %zu", i);
      blob[i] ^= (uint8_t)(1u << b);
    }
  uint8_t *longer = malloc(n + 1);
  memcpy(longer, blob, n);
  longer[n] = 0;
  cr_expect_neq(check(longer, n + 1, NULL, NULL, 0), 0, "trailing byte");
  free(longer);
  uint8_t junk[512];
  for (int i = 0; i < 2000; i++) {
    randombytes_buf(junk, sizeof junk);
    size_t l = randombytes_uniform(sizeof junk);
    cr_expect_neq(check(junk, l, NULL, NULL, 0), 0);
  }
  cr_expect_neq(check(NULL, 0, NULL, NULL, 0), 0);
  /* lines and KRLs */
  uint8_t *b2;
  size_t n2;
  cr_expect_neq(relay_cert_decode("ssh-ed25519 AAAA", 16, &b2, &n2), 0);
  cr_expect_neq(
      relay_cert_decode("ssh-ed25519-cert-v01@openssh.com !!", 35, &b2, &n2),
      0);
  cr_expect_neq(relay_ca_parse("ssh-rsa AAAA", 12, ca_pk), 0);
  sshwire_krl *rev;
  cr_assert_eq(sshwire_krl_new(&rev), 0);
  for (int i = 0; i < 2000; i++) {
    randombytes_buf(junk, sizeof junk);
    memcpy(junk, "SSHKRL\n\0\0\0\0\1", 12);
    size_t l = 12 + randombytes_uniform(sizeof junk - 12);
    sshwire_krl_parse(rev, ca_pk, junk, l, NULL, NULL, 0);
  }
  sshwire_krl_free(rev);
  free(blob);
}
