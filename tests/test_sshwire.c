/*
 * test_sshwire.c - the OpenSSH wire library against itself and against
 * the real ssh-keygen: certificates and KRLs sshwire writes read back by
 * sshwire and accepted by ssh-keygen -L and -Q; certificates and KRLs
 * ssh-keygen writes read by sshwire; key lines and private key files
 * both ways; truncated input refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sodium.h>

#include "natsd.h"
#include "proc.h"
#include "sshwire.h"

static char dir[256];
static uint8_t ca_pk[32], ca_sk[64], u_pk[32], u_sk[64];
static char out[1 << 14], err[4096];

#define sh(...) lt_sh(out, sizeof out, err, sizeof err, __VA_ARGS__)

static void
setup(void) {
  cr_assert_geq(sodium_init(), 0);
  lt_tmpdir(dir, sizeof dir, "sshwire");
  crypto_sign_keypair(ca_pk, ca_sk);
  crypto_sign_keypair(u_pk, u_sk);
}

static void
teardown(void) {
  sodium_memzero(ca_sk, sizeof ca_sk);
  sodium_memzero(u_sk, sizeof u_sk);
  lt_rmtree(dir);
}

TestSuite(sshwire, .init = setup, .fini = teardown, .timeout = 60);

static void
write_file(const char *name, const void *d, size_t n, char *path, size_t cap) {
  snprintf(path, cap, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  cr_assert(f);
  cr_assert_eq(fwrite(d, 1, n, f), n);
  fclose(f);
}

static char *
read_text(const char *path) {
  static char buf[1 << 14];
  FILE *f = fopen(path, "rb");
  cr_assert(f, "%s", path);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  return buf;
}

/* A signed certificate: the body sshwire writes, libsodium's signature. */
static void
make_cert(const sshwire_cert_spec *s, sshwire_buf *b) {
  uint8_t sig[SSHWIRE_SIG_LEN];
  cr_assert_eq(sshwire_cert_write_body(b, s), 0);
  crypto_sign_detached(sig, NULL, b->p, b->len, ca_sk);
  sshwire_cert_write_signature(b, sig);
  cr_assert_eq(b->err, 0);
}

static int
bytes_is(sshwire_bytes b, const char *s) {
  return b.n == strlen(s) && !memcmp(b.p, s, b.n);
}

static const char *const principals[] = {"domain:d1", "relay:r1"};
static const sshwire_opt crit[] = {{"force-command", "/bin/true"}};
static const sshwire_opt ext[] = {{"role@larkbus", "domain"},
                                  {"permit-pty", NULL},
                                  {"domain@larkbus", "d1"},
                                  {"permit-port-forwarding", NULL}};

static sshwire_cert_spec
spec(const uint8_t *nonce) {
  return (sshwire_cert_spec){.nonce = nonce,
                             .nonce_len = 32,
                             .key = u_pk,
                             .serial = 4242,
                             .type = SSHWIRE_CERT_USER,
                             .key_id = "relay-1 role=domain domain=d1",
                             .principals = principals,
                             .nprincipals = 2,
                             .valid_after = 1700000000,
                             .valid_before = 4000000000u,
                             .critical = crit,
                             .ncritical = 1,
                             .extensions = ext,
                             .nextensions = 4,
                             .ca_key = ca_pk};
}

Test(sshwire, certificate_round_trip) {
  uint8_t nonce[32] = {1, 2, 3};
  sshwire_cert_spec s = spec(nonce);
  sshwire_buf b = {0};
  sshwire_cert c;
  make_cert(&s, &b);
  cr_assert_eq(sshwire_cert_parse(b.p, b.len, &c), 0);
  cr_expect_eq(c.serial, 4242);
  cr_expect_eq(c.type, SSHWIRE_CERT_USER);
  cr_expect(bytes_is(c.key_id, "relay-1 role=domain domain=d1"));
  cr_expect_eq(memcmp(c.key, u_pk, 32), 0);
  cr_expect_eq(memcmp(c.ca_key, ca_pk, 32), 0);
  cr_expect_eq(c.valid_before, 4000000000u);
  cr_expect_eq(
      crypto_sign_verify_detached(c.signature, b.p, c.signed_len, ca_pk), 0);
  sshwire_rd it = sshwire_rd_of(c.principals.p, c.principals.n);
  sshwire_bytes p, name, data;
  for (int i = 0; i < 2; i++) {
    cr_assert(sshwire_cert_next_principal(&it, &p));
    cr_expect(bytes_is(p, principals[i]));
  }
  cr_expect_not(sshwire_cert_next_principal(&it, &p));
  /* extensions come back sorted by name */
  const char *sorted[] = {"domain@larkbus", "permit-port-forwarding",
                          "permit-pty", "role@larkbus"};
  it = sshwire_rd_of(c.extensions.p, c.extensions.n);
  for (int i = 0; i < 4; i++) {
    cr_assert(sshwire_cert_next_option(&it, &name, &data));
    cr_expect(bytes_is(name, sorted[i]));
  }
  /* a flipped bit in the signed range no longer verifies */
  b.p[40] ^= 1;
  cr_assert_eq(sshwire_cert_parse(b.p, b.len, &c), 0);
  cr_expect_neq(
      crypto_sign_verify_detached(c.signature, b.p, c.signed_len, ca_pk), 0);
  sshwire_buf_free(&b);
}

Test(sshwire, certificate_read_by_ssh_keygen) {
  uint8_t nonce[32];
  char path[512];
  randombytes_buf(nonce, sizeof nonce);
  sshwire_cert_spec s = spec(nonce);
  sshwire_buf b = {0};
  make_cert(&s, &b);
  char *line = sshwire_line_encode(SSHWIRE_ED25519_CERT, b.p, b.len, "t");
  cr_assert(line);
  write_file("u-cert.pub", line, strlen(line), path, sizeof path);
  cr_assert_eq(sh("ssh-keygen -L -f %s", path), 0, "%s", err);
  cr_expect(strstr(out, "Serial: 4242"), "%s", out);
  cr_expect(strstr(out, "domain:d1"), "%s", out);
  cr_expect(strstr(out, "force-command /bin/true"), "%s", out);
  cr_expect(strstr(out, "role@larkbus"), "%s", out);
  free(line);
  sshwire_buf_free(&b);
}

/* The CA as a private key file ssh-keygen signs with. */
static void
write_ca(char *path, size_t cap) {
  char *text, pub[256], pp[512];
  size_t len;
  cr_assert_eq(sshwire_ed25519_private_format(ca_pk, ca_sk, "ca", &text, &len),
               0);
  write_file("ca", text, len, path, cap);
  sodium_free(text);
  chmod(path, 0600);
  cr_assert_eq(sshwire_ed25519_pub_format(ca_pk, "ca", pub, sizeof pub), 0);
  write_file("ca.pub", pub, strlen(pub), pp, sizeof pp);
}

Test(sshwire, ssh_keygen_certificate_is_read) {
  char ca[512], upub[512];
  uint8_t *blob, pk[32];
  size_t n;
  sshwire_cert c;
  write_ca(ca, sizeof ca);
  cr_assert_eq(sshwire_ed25519_pub_format(u_pk, "u", out, sizeof out), 0);
  write_file("u.pub", out, strlen(out), upub, sizeof upub);
  cr_assert_eq(sh("ssh-keygen -q -s %s -I 'id one' -n a,b -z 77 "
                  "-O force-command=/bin/x -O extension:k@larkbus=v %s",
                  ca, upub),
               0, "%s", err);
  char cpath[600];
  snprintf(cpath, sizeof cpath, "%s/u-cert.pub", dir);
  const char *line = read_text(cpath);
  cr_assert_eq(
      sshwire_line_decode(SSHWIRE_ED25519_CERT, line, strlen(line), &blob, &n),
      0);
  cr_assert_eq(sshwire_cert_parse(blob, n, &c), 0);
  cr_expect_eq(c.serial, 77);
  cr_expect(bytes_is(c.key_id, "id one"));
  cr_expect_eq(memcmp(c.key, u_pk, 32), 0);
  cr_expect_eq(
      crypto_sign_verify_detached(c.signature, blob, c.signed_len, ca_pk), 0);
  sshwire_rd it = sshwire_rd_of(c.critical.p, c.critical.n);
  sshwire_bytes name, data;
  cr_assert(sshwire_cert_next_option(&it, &name, &data));
  cr_expect(bytes_is(name, "force-command"));
  /* the .pub line ssh-keygen -y derives from our private key file */
  cr_assert_eq(sh("ssh-keygen -y -f %s", ca), 0, "%s", err);
  cr_assert_eq(sshwire_ed25519_pub_parse(out, strlen(out), pk), 0);
  cr_expect_eq(memcmp(pk, ca_pk, 32), 0);
  free(blob);
}

/* A set with a bit of everything. */
static sshwire_krl *
sample_set(void) {
  sshwire_krl *k;
  uint8_t h[32];
  cr_assert_eq(sshwire_krl_new(&k), 0);
  cr_assert_eq(sshwire_krl_add_serials(k, 42, 42), 0);
  cr_assert_eq(sshwire_krl_add_serials(k, 7, 7), 0);
  cr_assert_eq(sshwire_krl_add_serials(k, 100, 200), 0);
  cr_assert_eq(sshwire_krl_add_serials(k, 150, 250), 0); /* overlaps */
  cr_assert_eq(sshwire_krl_add_key_id(k, "gone", 4), 0);
  sshwire_ed25519_hash(u_pk, h);
  cr_assert_eq(sshwire_krl_add_key_hash(k, h), 0);
  return k;
}

static void
expect_sample(const sshwire_krl *k) {
  uint8_t h[32];
  sshwire_ed25519_hash(u_pk, h);
  cr_expect(sshwire_krl_has_serial(k, 7));
  cr_expect(sshwire_krl_has_serial(k, 42));
  cr_expect(sshwire_krl_has_serial(k, 250));
  cr_expect_not(sshwire_krl_has_serial(k, 251));
  cr_expect_not(sshwire_krl_has_serial(k, 8));
  cr_expect(sshwire_krl_has_key_id(k, "gone"));
  cr_expect_not(sshwire_krl_has_key_id(k, "here"));
  cr_expect(sshwire_krl_has_key_hash(k, h));
}

Test(sshwire, krl_round_trip) {
  sshwire_krl *k = sample_set(), *k2, *other;
  sshwire_krl_head h = {9, 1700000000, "test"}, h2;
  sshwire_buf b = {0}, b2 = {0};
  uint8_t pk2[32], sk2[64];
  cr_assert_eq(sshwire_krl_write(k, ca_pk, &h, &b), 0);
  cr_assert_eq(sshwire_krl_new(&k2), 0);
  cr_assert_eq(sshwire_krl_parse(k2, ca_pk, b.p, b.len, &h2, NULL, 0), 0);
  expect_sample(k2);
  cr_expect_eq(h2.version, 9);
  cr_expect_eq(h2.generated, 1700000000);
  cr_expect_str_eq(h2.comment, "test");
  cr_assert_eq(sshwire_krl_write(k2, ca_pk, &h2, &b2), 0);
  cr_expect(b.len == b2.len && !memcmp(b.p, b2.p, b.len), "not canonical");
  /* read for another CA: the certificate section is skipped */
  crypto_sign_keypair(pk2, sk2);
  cr_assert_eq(sshwire_krl_new(&other), 0);
  cr_assert_eq(sshwire_krl_parse(other, pk2, b.p, b.len, NULL, NULL, 0), 0);
  cr_expect_not(sshwire_krl_has_serial(other, 42));
  sshwire_krl_free(other);
  sshwire_krl_free(k);
  sshwire_krl_free(k2);
  sshwire_buf_free(&b);
  sshwire_buf_free(&b2);
}

Test(sshwire, krl_read_by_ssh_keygen) {
  sshwire_krl *k = sample_set();
  sshwire_krl_head h = {3, 1700000000, "larkbus"};
  sshwire_buf b = {0};
  char krl[512], cert[512];
  cr_assert_eq(sshwire_krl_write(k, ca_pk, &h, &b), 0);
  write_file("krl", b.p, b.len, krl, sizeof krl);
  cr_assert_eq(sh("ssh-keygen -Q -l -f %s", krl), 0, "%s", err);
  cr_expect(strstr(out, "serial: 7"), "%s", out);
  cr_expect(strstr(out, "serial: 42"), "%s", out);
  cr_expect(strstr(out, "serial: 100-250"), "%s", out);
  cr_expect(strstr(out, "id: gone"), "%s", out);
  cr_expect(strstr(out, "hash: SHA256:"), "%s", out);
  /* a certificate with serial 42 is revoked, one with 43 is not */
  uint8_t nonce[32] = {0};
  for (uint64_t serial = 42; serial <= 43; serial++) {
    sshwire_cert_spec s = spec(nonce);
    uint8_t other_pk[32], other_sk[64];
    crypto_sign_keypair(other_pk, other_sk); /* not the revoked key */
    s.key = other_pk;
    s.serial = serial;
    s.key_id = "someone";
    sshwire_buf cb = {0};
    make_cert(&s, &cb);
    char *line = sshwire_line_encode(SSHWIRE_ED25519_CERT, cb.p, cb.len, NULL);
    write_file("c-cert.pub", line, strlen(line), cert, sizeof cert);
    int rc = sh("ssh-keygen -Q -f %s %s", krl, cert);
    cr_expect_eq(rc != 0, serial == 42, "serial %llu: %s%s",
                 (unsigned long long)serial, out, err);
    free(line);
    sshwire_buf_free(&cb);
  }
  sshwire_krl_free(k);
  sshwire_buf_free(&b);
}

Test(sshwire, ssh_keygen_krl_is_read) {
  char ca[512], krl[600], spec_path[600], upub[512];
  sshwire_krl *k;
  uint8_t h[32];
  write_ca(ca, sizeof ca);
  cr_assert_eq(sshwire_ed25519_pub_format(u_pk, "u", out, sizeof out), 0);
  write_file("u.pub", out, strlen(out), upub, sizeof upub);
  const char *lines = "serial: 5\nserial: 10-20\nid: old relay\n";
  write_file("spec", lines, strlen(lines), spec_path, sizeof spec_path);
  snprintf(krl, sizeof krl, "%s/k.krl", dir);
  cr_assert_eq(sh("ssh-keygen -q -k -f %s -s %s.pub %s && "
                  "ssh-keygen -q -k -u -f %s %s",
                  krl, ca, spec_path, krl, upub),
               0, "%s", err);
  FILE *f = fopen(krl, "rb");
  static uint8_t data[1 << 14];
  size_t n = fread(data, 1, sizeof data, f);
  fclose(f);
  cr_assert_eq(sshwire_krl_new(&k), 0);
  cr_assert_eq(sshwire_krl_parse(k, ca_pk, data, n, NULL, NULL, 0), 0);
  cr_expect(sshwire_krl_has_serial(k, 5));
  cr_expect(sshwire_krl_has_serial(k, 15));
  cr_expect_not(sshwire_krl_has_serial(k, 21));
  cr_expect(sshwire_krl_has_key_id(k, "old relay"));
  sshwire_ed25519_hash(u_pk, h);
  cr_expect(sshwire_krl_has_key_hash(k, h));
  sshwire_krl_free(k);
}

Test(sshwire, private_key_file_and_lines) {
  char *text, line[256], fp[SSHWIRE_FP_MAX], path[512];
  size_t len;
  uint8_t pk[32], sk[64];
  cr_assert_eq(sshwire_ed25519_private_format(u_pk, u_sk, "me", &text, &len),
               0);
  cr_assert_eq(sshwire_ed25519_private_parse(text, len, pk, sk), 0);
  cr_expect_eq(memcmp(pk, u_pk, 32), 0);
  cr_expect_eq(memcmp(sk, u_sk, 64), 0);
  text[len / 2] ^= 4; /* a damaged file */
  cr_expect_neq(sshwire_ed25519_private_parse(text, len, pk, sk), 0);
  sodium_free(text);
  cr_assert_eq(sshwire_ed25519_pub_format(u_pk, "me", line, sizeof line), 0);
  char small[20];
  cr_expect_eq(sshwire_ed25519_pub_format(u_pk, "me", small, sizeof small),
               -ERANGE);
  strcat(line, "\n");
  write_file("me.pub", line, strlen(line), path, sizeof path);
  cr_assert_eq(sh("ssh-keygen -l -E sha256 -f %s", path), 0, "%s", err);
  sshwire_ed25519_fingerprint(u_pk, fp);
  cr_expect(strstr(out, fp), "%s vs %s", out, fp);
  cr_expect_neq(sshwire_ed25519_pub_parse("ssh-rsa AAAA", 12, pk), 0);
  cr_expect_neq(sshwire_ed25519_pub_parse("ssh-ed25519 !!", 14, pk), 0);
}

Test(sshwire, truncated_input_is_refused) {
  uint8_t nonce[32] = {0};
  sshwire_cert_spec s = spec(nonce);
  sshwire_buf b = {0}, kb = {0};
  sshwire_cert c;
  sshwire_krl *k = sample_set(), *k2;
  make_cert(&s, &b);
  for (size_t l = 0; l < b.len; l++)
    cr_expect_neq(sshwire_cert_parse(b.p, l, &c), 0, "length %zu", l);
  cr_assert_eq(sshwire_krl_write(k, ca_pk, NULL, &kb), 0);
  for (size_t l = 0; l < kb.len; l++) {
    cr_assert_eq(sshwire_krl_new(&k2), 0);
    int rc = sshwire_krl_parse(k2, ca_pk, kb.p, l, NULL, NULL, 0);
    /* a cut exactly between sections is a shorter, valid KRL */
    cr_expect(rc == 0 || rc == -EBADMSG, "length %zu: %d", l, rc);
    sshwire_krl_free(k2);
  }
  sshwire_krl_free(k);
  sshwire_buf_free(&b);
  sshwire_buf_free(&kb);
}
