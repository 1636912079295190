/*
 * sshwire.c - the OpenSSH formats the signer writes and reads: Ed25519
 * public keys, user certificates (PROTOCOL.certkeys), unencrypted
 * private key files (PROTOCOL.key) and KRLs (PROTOCOL.krl).
 *
 * Everything is built in a growable buffer whose error flag sticks, so a
 * failed allocation shows once, at the end. Parsers read through a
 * bounded cursor and never index past its end; they refuse rather than
 * guess. Buffers that held secret bytes are wiped before they are freed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "signer.h"

#define ED_TYPE "ssh-ed25519"
#define CERT_TYPE "ssh-ed25519-cert-v01@openssh.com"

typedef struct wbuf {
  uint8_t *p;
  size_t len, cap;
  int err;
  int secret; /* wipe on growth and free */
} wbuf;

static void
wb_free(wbuf *b) {
  if (b->p && b->secret)
    sodium_memzero(b->p, b->cap);
  free(b->p);
  memset(b, 0, sizeof *b);
}

static void
wb_put(wbuf *b, const void *d, size_t n) {
  if (b->err)
    return;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n)
      cap *= 2;
    uint8_t *p = malloc(cap);
    if (!p) {
      b->err = 1;
      return;
    }
    if (b->len)
      memcpy(p, b->p, b->len);
    if (b->p && b->secret)
      sodium_memzero(b->p, b->cap);
    free(b->p);
    b->p = p;
    b->cap = cap;
  }
  if (n)
    memcpy(b->p + b->len, d, n);
  b->len += n;
}

static void
wb_u32(wbuf *b, uint32_t v) {
  uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8),
                  (uint8_t)v};
  wb_put(b, x, 4);
}

static void
wb_u64(wbuf *b, uint64_t v) {
  wb_u32(b, (uint32_t)(v >> 32));
  wb_u32(b, (uint32_t)v);
}

static void
wb_str(wbuf *b, const void *d, size_t n) {
  wb_u32(b, (uint32_t)n);
  wb_put(b, d, n);
}

static void
wb_cstr(wbuf *b, const char *s) {
  wb_str(b, s, strlen(s));
}

/* string "ssh-ed25519", string pk: the public key blob. */
static void
wb_pubkey(wbuf *b, const uint8_t pk[32]) {
  wb_cstr(b, ED_TYPE);
  wb_str(b, pk, 32);
}

/* A bounded reader. */
typedef struct rcur {
  const uint8_t *p;
  size_t len;
  int err;
} rcur;

static uint32_t
rc_u32(rcur *c) {
  if (c->err || c->len < 4) {
    c->err = 1;
    return 0;
  }
  uint32_t v = (uint32_t)c->p[0] << 24 | (uint32_t)c->p[1] << 16 |
               (uint32_t)c->p[2] << 8 | c->p[3];
  c->p += 4;
  c->len -= 4;
  return v;
}

static const uint8_t *
rc_str(rcur *c, size_t *n) {
  size_t l = rc_u32(c);
  if (c->err || l > c->len) {
    c->err = 1;
    *n = 0;
    return NULL;
  }
  const uint8_t *s = c->p;
  c->p += l;
  c->len -= l;
  *n = l;
  return s;
}

static int
rc_is(rcur *c, const char *want) {
  size_t n;
  const uint8_t *s = rc_str(c, &n);
  return s && n == strlen(want) && !memcmp(s, want, n);
}

/* ------------------------------------------------------------ public keys */

int
signer_ssh_pub_parse(const char *line, size_t len, uint8_t pk[32]) {
  char b64[128];
  uint8_t blob[96];
  size_t bl = 0;
  if (!line || len < 12 || memcmp(line, ED_TYPE " ", 12))
    return BUS_EFIELD;
  size_t i = 12, j = 0;
  while (i < len && line[i] == ' ')
    i++;
  while (i < len && line[i] != ' ' && line[i] != '\n' && line[i] != '\r') {
    if (j + 1 >= sizeof b64)
      return BUS_EFIELD;
    b64[j++] = line[i++];
  }
  b64[j] = 0;
  if (sodium_base642bin(blob, sizeof blob, b64, j, NULL, &bl, NULL,
                        sodium_base64_VARIANT_ORIGINAL))
    return BUS_EFIELD;
  rcur c = {blob, bl, 0};
  if (!rc_is(&c, ED_TYPE))
    return BUS_EFIELD;
  size_t n;
  const uint8_t *k = rc_str(&c, &n);
  if (!k || n != 32 || c.len)
    return BUS_EFIELD;
  memcpy(pk, k, 32);
  return 0;
}

static char *
b64_of(const uint8_t *d, size_t n, int variant) {
  size_t cap = sodium_base64_encoded_len(n, variant);
  char *s = malloc(cap);
  if (s)
    sodium_bin2base64(s, cap, d, n, variant);
  return s;
}

int
signer_ssh_pub_format(const uint8_t pk[32], const char *comment, char *out,
                      size_t cap) {
  wbuf b = {0};
  wb_pubkey(&b, pk);
  char *s = b.err ? NULL : b64_of(b.p, b.len, sodium_base64_VARIANT_ORIGINAL);
  wb_free(&b);
  if (!s)
    return -ENOMEM;
  int n = snprintf(out, cap, ED_TYPE " %s%s%s", s, comment ? " " : "",
                   comment ? comment : "");
  free(s);
  return n < 0 || (size_t)n >= cap ? BUS_ETOO_BIG : 0;
}

void
signer_ssh_fingerprint(const uint8_t pk[32], char out[64]) {
  uint8_t blob[51], h[crypto_hash_sha256_BYTES];
  /* 4+11 type, 4+32 key */
  wbuf b = {0};
  wb_pubkey(&b, pk);
  memcpy(blob, b.p, sizeof blob);
  wb_free(&b);
  crypto_hash_sha256(h, blob, sizeof blob);
  memcpy(out, "SHA256:", 7);
  sodium_bin2base64(out + 7, 64 - 7, h, sizeof h,
                    sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
}

/* ----------------------------------------------------------- certificates */

static int
cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Extensions, sorted by name as sshd requires: the two permit-* flags
 * (empty data) and ours, whose data is a string holding the value.
 */
static int
put_extensions(wbuf *b, const signer_ssh_cert_spec *s) {
  enum { MAXE = 16 };
  char names[MAXE][64];
  const char *order[MAXE];
  int n = 0;
  if (s->next < 0 || s->next > MAXE - 2)
    return BUS_EFIELD;
  for (int i = 0; i < s->next; i++) {
    snprintf(names[n], sizeof names[n], "%s@larkbus", s->ext_keys[i]);
    order[n] = names[n];
    n++;
  }
  order[n++] = "permit-port-forwarding";
  order[n++] = "permit-pty";
  qsort(order, (size_t)n, sizeof order[0], cmp_str);
  wbuf e = {0};
  for (int i = 0; i < n; i++) {
    wb_cstr(&e, order[i]);
    const char *val = NULL;
    for (int k = 0; k < s->next; k++)
      if (order[i] == names[k])
        val = s->ext_vals[k] ? s->ext_vals[k] : "";
    if (!val) {
      wb_str(&e, "", 0);
      continue;
    }
    wb_u32(&e, (uint32_t)(4 + strlen(val)));
    wb_cstr(&e, val);
  }
  wb_str(b, e.p, e.len);
  int err = e.err;
  wb_free(&e);
  return err ? -ENOMEM : 0;
}

static void
put_principals(wbuf *b, const signer_ssh_cert_spec *s) {
  wbuf p = {0};
  for (int i = 0; i < s->nprincipals; i++)
    wb_cstr(&p, s->principals[i]);
  wb_str(b, p.p, p.len);
  b->err |= p.err;
  wb_free(&p);
}

int
signer_ssh_cert_make(const uint8_t ca_pk[32], const uint8_t ca_sk[64],
                     const signer_ssh_cert_spec *s, char **out) {
  uint8_t nonce[32], sig[crypto_sign_BYTES];
  int rc = 0;
  char *b64 = NULL;
  wbuf b = {0}, k = {0};
  *out = NULL;
  randombytes_buf(nonce, sizeof nonce);
  wb_cstr(&b, CERT_TYPE);
  wb_str(&b, nonce, sizeof nonce);
  wb_str(&b, s->pk, 32);
  wb_u64(&b, s->serial);
  wb_u32(&b, 1); /* SSH2_CERT_TYPE_USER */
  wb_cstr(&b, s->key_id);
  put_principals(&b, s);
  wb_u64(&b, s->valid_after);
  wb_u64(&b, s->valid_before);
  wb_str(&b, "", 0); /* critical options: none */
  if ((rc = put_extensions(&b, s)))
    goto out;
  wb_str(&b, "", 0); /* reserved */
  wb_pubkey(&k, ca_pk);
  wb_str(&b, k.p, k.len);
  if (b.err || k.err) {
    rc = -ENOMEM;
    goto out;
  }
  crypto_sign_detached(sig, NULL, b.p, b.len, ca_sk);
  k.len = 0;
  wb_cstr(&k, ED_TYPE);
  wb_str(&k, sig, sizeof sig);
  wb_str(&b, k.p, k.len);
  if (b.err || k.err ||
      !(b64 = b64_of(b.p, b.len, sodium_base64_VARIANT_ORIGINAL))) {
    rc = -ENOMEM;
    goto out;
  }
  size_t cap = strlen(b64) + strlen(s->comment ? s->comment : "") + 48;
  if (!(*out = malloc(cap))) {
    rc = -ENOMEM;
    goto out;
  }
  snprintf(*out, cap, CERT_TYPE " %s %s", b64, s->comment ? s->comment : "");
out:
  free(b64);
  wb_free(&b);
  wb_free(&k);
  return rc;
}

/* ---------------------------------------------------------- private keys */

#define PRIV_BEGIN "-----BEGIN OPENSSH PRIVATE KEY-----\n"
#define PRIV_END "-----END OPENSSH PRIVATE KEY-----\n"
#define PRIV_MAGIC "openssh-key-v1"

/* The private section: checkints, the key, comment, padding to 8. */
static void
put_private_section(wbuf *s, const uint8_t pk[32], const uint8_t sk[64],
                    const char *comment) {
  uint32_t check = randombytes_random();
  wb_u32(s, check);
  wb_u32(s, check);
  wb_pubkey(s, pk);
  wb_str(s, sk, 64);
  wb_cstr(s, comment ? comment : "");
  for (uint8_t pad = 1; s->len % 8; pad++)
    wb_put(s, &pad, 1);
}

/* Base64 in lines of 70 between the armour lines, into sodium memory. */
static int
armour(const wbuf *b, char **out, size_t *len) {
  size_t cap =
      sodium_base64_encoded_len(b->len, sodium_base64_VARIANT_ORIGINAL);
  char *b64 = sodium_malloc(cap);
  size_t lines = cap / 70 + 1;
  size_t total = strlen(PRIV_BEGIN) + strlen(PRIV_END) + cap + lines + 1;
  char *o = sodium_malloc(total);
  if (!b64 || !o) {
    sodium_free(b64);
    sodium_free(o);
    return -ENOMEM;
  }
  sodium_bin2base64(b64, cap, b->p, b->len, sodium_base64_VARIANT_ORIGINAL);
  size_t n = strlen(b64), at = 0;
  at += (size_t)snprintf(o, total, PRIV_BEGIN);
  for (size_t i = 0; i < n; i += 70) {
    size_t l = n - i < 70 ? n - i : 70;
    memcpy(o + at, b64 + i, l);
    at += l;
    o[at++] = '\n';
  }
  at += (size_t)snprintf(o + at, total - at, PRIV_END);
  sodium_free(b64);
  *out = o;
  *len = at;
  return 0;
}

int
signer_ssh_private_format(const uint8_t pk[32], const uint8_t sk[64],
                          const char *comment, char **out, size_t *len) {
  wbuf b = {.secret = 1}, sec = {.secret = 1}, pub = {0};
  int rc = -ENOMEM;
  *out = NULL;
  wb_put(&b, PRIV_MAGIC, sizeof PRIV_MAGIC); /* with its NUL */
  wb_cstr(&b, "none");
  wb_cstr(&b, "none");
  wb_str(&b, "", 0);
  wb_u32(&b, 1);
  wb_pubkey(&pub, pk);
  wb_str(&b, pub.p, pub.len);
  put_private_section(&sec, pk, sk, comment);
  wb_str(&b, sec.p, sec.len);
  if (!b.err && !sec.err && !pub.err)
    rc = armour(&b, out, len);
  wb_free(&b);
  wb_free(&sec);
  wb_free(&pub);
  return rc;
}

int
signer_ssh_private_parse(const char *text, size_t len, uint8_t pk[32],
                         uint8_t sk[64]) {
  size_t bl = strlen(PRIV_BEGIN), el = strlen(PRIV_END);
  int rc = BUS_EFIELD;
  if (len < bl + el || memcmp(text, PRIV_BEGIN, bl))
    return rc;
  const char *end = strstr(text + bl, "-----END OPENSSH PRIVATE KEY-----");
  if (!end)
    return rc;
  size_t b64len = (size_t)(end - (text + bl)), raw_len = 0;
  uint8_t *raw = sodium_malloc(b64len + 1);
  if (!raw)
    return -ENOMEM;
  if (sodium_base642bin(raw, b64len, text + bl, b64len, "\r\n", &raw_len, NULL,
                        sodium_base64_VARIANT_ORIGINAL))
    goto out;
  rcur c = {raw, raw_len, 0};
  size_t n, sl;
  if (raw_len < sizeof PRIV_MAGIC || memcmp(raw, PRIV_MAGIC, sizeof PRIV_MAGIC))
    goto out;
  c.p += sizeof PRIV_MAGIC;
  c.len -= sizeof PRIV_MAGIC;
  if (!rc_is(&c, "none") || !rc_is(&c, "none") || !rc_str(&c, &n) ||
      rc_u32(&c) != 1 || !rc_str(&c, &n))
    goto out;
  const uint8_t *sec = rc_str(&c, &sl);
  rcur s = {sec, sl, 0};
  if (!sec || rc_u32(&s) != rc_u32(&s) || !rc_is(&s, ED_TYPE))
    goto out;
  const uint8_t *p = rc_str(&s, &n);
  const uint8_t *k = rc_str(&s, &sl);
  if (s.err || n != 32 || sl != 64 || memcmp(p, k + 32, 32))
    goto out;
  memcpy(pk, p, 32);
  memcpy(sk, k, 64);
  rc = 0;
out:
  sodium_free(raw);
  return rc;
}

/* ------------------------------------------------------------------- KRL */

#define KRL_MAGIC 0x5353484b524c0a00ULL /* "SSHKRL\n\0" */
#define KRL_SECTION_CERTIFICATES 1
#define KRL_CERT_SERIAL_LIST 0x20

static int
cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Write data to path through path.tmp and rename (mode 0644). */
static int
write_replace(const char *path, const void *data, size_t len) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
    return BUS_EINVAL;
  FILE *f = fopen(tmp, "wb");
  if (!f)
    return -errno;
  size_t w = fwrite(data, 1, len, f);
  int rc = fflush(f) || w != len ? -EIO : 0;
  fclose(f);
  if (!rc && rename(tmp, path))
    rc = -errno;
  if (rc)
    remove(tmp);
  return rc;
}

int
signer_krl_write(const char *path, const uint8_t ca_pk[32],
                 const uint64_t *serials, size_t n, uint64_t version,
                 int64_t now_s) {
  wbuf b = {0}, sec = {0}, list = {0}, ca = {0};
  uint64_t *sorted = n ? malloc(n * sizeof *sorted) : NULL;
  int rc = -ENOMEM;
  if (n && !sorted)
    goto out;
  if (n) {
    memcpy(sorted, serials, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_u64);
  }
  wb_u64(&b, KRL_MAGIC);
  wb_u32(&b, 1); /* format version */
  wb_u64(&b, version);
  wb_u64(&b, (uint64_t)now_s);
  wb_u64(&b, 0);     /* flags */
  wb_str(&b, "", 0); /* reserved */
  wb_cstr(&b, "larkbus signer");
  for (size_t i = 0; i < n; i++)
    if (sorted[i] && (i == 0 || sorted[i] != sorted[i - 1]))
      wb_u64(&list, sorted[i]);
  if (list.len) {
    wb_pubkey(&ca, ca_pk);
    wb_str(&sec, ca.p, ca.len);
    wb_str(&sec, "", 0); /* reserved */
    uint8_t t = KRL_CERT_SERIAL_LIST;
    wb_put(&sec, &t, 1);
    wb_str(&sec, list.p, list.len);
    t = KRL_SECTION_CERTIFICATES;
    wb_put(&b, &t, 1);
    wb_str(&b, sec.p, sec.len);
  }
  if (!b.err && !sec.err && !list.err && !ca.err)
    rc = write_replace(path, b.p, b.len);
out:
  free(sorted);
  wb_free(&b);
  wb_free(&sec);
  wb_free(&list);
  wb_free(&ca);
  return rc;
}
