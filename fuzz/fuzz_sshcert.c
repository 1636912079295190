/*
 * fuzz_sshcert.c - libFuzzer harness for sshwire's certificate reader,
 * fed a certificate blob or a -cert.pub line.
 *
 * Whatever parses must be consistent: the signed range ends where the
 * signature's 87 bytes begin, every principal and option reads back, and
 * where the fields are ones sshwire can write (C strings; option data
 * empty or one string) the writer makes exactly the signed bytes again.
 * Any violation aborts, which the fuzzer reports as a crash.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sshwire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAXP 64
#define STR_MAX 4096

static void
fail(const char *what) {
  fprintf(stderr, "fuzz_sshcert: %s\n", what);
  abort();
}

/* Bytes as a C string in out, when they hold no NUL and fit. */
static int
cstr(sshwire_bytes b, char out[STR_MAX]) {
  if (b.n >= STR_MAX || memchr(b.p, 0, b.n))
    return 0;
  memcpy(out, b.p, b.n);
  out[b.n] = 0;
  return 1;
}

typedef struct opts {
  sshwire_opt o[SSHWIRE_OPT_MAX];
  char s[SSHWIRE_OPT_MAX][2][STR_MAX];
  size_t n;
} opts;

/* Options sshwire can write: data empty, or one string and no more. */
static int
writable_opts(sshwire_bytes list, opts *w) {
  sshwire_rd it = sshwire_rd_of(list.p, list.n);
  sshwire_bytes name, d;
  w->n = 0;
  while (sshwire_cert_next_option(&it, &name, &d)) {
    if (w->n == SSHWIRE_OPT_MAX || !cstr(name, w->s[w->n][0]))
      return 0;
    sshwire_rd v = sshwire_rd_of(d.p, d.n);
    const char *val = NULL;
    if (d.n) {
      if (sshwire_get_cstr(&v, w->s[w->n][1], STR_MAX) || v.len)
        return 0;
      val = w->s[w->n][1];
    }
    w->o[w->n] = (sshwire_opt){w->s[w->n][0], val};
    w->n++;
  }
  if (it.err)
    fail("an option of a parsed certificate does not read");
  return 1;
}

typedef struct fields {
  char id[STR_MAX], pr[MAXP][STR_MAX];
  const char *prp[MAXP];
  opts crit, ext;
} fields;

/* Write c again from its fields; it must be the signed bytes. */
static void
rewrite(const uint8_t *blob, const sshwire_cert *c, fields *f) {
  sshwire_rd it = sshwire_rd_of(c->principals.p, c->principals.n);
  sshwire_bytes p;
  size_t np = 0;
  if (!cstr(c->key_id, f->id))
    return;
  while (sshwire_cert_next_principal(&it, &p)) {
    if (np == MAXP || !cstr(p, f->pr[np]))
      return;
    f->prp[np] = f->pr[np];
    np++;
  }
  if (!writable_opts(c->critical, &f->crit) ||
      !writable_opts(c->extensions, &f->ext) || c->reserved.n)
    return;
  sshwire_cert_spec s = {.nonce = c->nonce.p,
                         .nonce_len = c->nonce.n,
                         .key = c->key,
                         .serial = c->serial,
                         .type = c->type,
                         .key_id = f->id,
                         .principals = f->prp,
                         .nprincipals = np,
                         .valid_after = c->valid_after,
                         .valid_before = c->valid_before,
                         .critical = f->crit.o,
                         .ncritical = f->crit.n,
                         .extensions = f->ext.o,
                         .nextensions = f->ext.n,
                         .ca_key = c->ca_key};
  sshwire_buf b = {0};
  if (sshwire_cert_write_body(&b, &s))
    fail("a parsed certificate does not write");
  if (b.len != c->signed_len || memcmp(b.p, blob, b.len))
    fail("written again, the certificate differs");
  sshwire_buf_free(&b);
}

static void
one(const uint8_t *blob, size_t n) {
  static fields f;
  sshwire_cert c;
  if (sshwire_cert_parse(blob, n, &c))
    return;
  if (c.signed_len + 4 + 4 + 11 + 4 + SSHWIRE_SIG_LEN != n)
    fail("the signed range does not end at the signature");
  rewrite(blob, &c, &f);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *blob;
  size_t n;
  one(data, size);
  if (!sshwire_line_decode(SSHWIRE_ED25519_CERT, (const char *)data, size,
                           &blob, &n)) {
    one(blob, n);
    free(blob);
  }
  return 0;
}
