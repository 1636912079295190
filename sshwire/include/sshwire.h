/*
 * sshwire.h - the OpenSSH wire formats, read and written in one place:
 * what the signer writes (certificates, KRLs, key files) and what the
 * relay hub and larkctl read back.
 *
 *   buffers       a growable writer and a bounded reader of the SSH wire
 *                 types (RFC 4251 section 5): byte, uint32, uint64, string
 *   lines         "<type> <base64> [comment]", as .pub files hold them
 *   keys          Ed25519 public key blobs, their SHA-256 hash and
 *                 fingerprint, unencrypted private key files
 *                 (PROTOCOL.key)
 *   certificates  ssh-ed25519-cert-v01@openssh.com (PROTOCOL.certkeys):
 *                 parse, write, and the byte range the CA signs
 *   KRLs          revocation lists (PROTOCOL.krl): a set of revoked
 *                 serials, key ids and key hashes for one CA; parse,
 *                 write, look up
 *
 * Conventions
 *
 * - Wire format only. The library never signs or verifies: the caller
 *   signs the bytes sshwire_cert_write_body wrote, or verifies
 *   sshwire_cert.signature over the blob's first signed_len bytes, with
 *   its own crypto (libsodium's Ed25519 in this tree). Policy (which CA,
 *   which role, which validity) is the caller's too. SHA-256 and base64
 *   come from libsodium.
 * - Every function that can fail returns 0 or a negative errno value:
 *   -EBADMSG input that does not parse, -ENOTSUP a well-formed input this
 *   library does not handle (a signed KRL), -EINVAL a bad argument,
 *   -ERANGE an output buffer too small, -ENOMEM.
 * - All input may be hostile. A reader never looks past its end; once a
 *   read fails its error flag sticks and every later read returns
 *   nothing, so a parser checks once, at the end. Parsers refuse rather
 *   than guess, and refuse trailing bytes.
 * - A writer's error flag sticks the same way (a failed allocation), so a
 *   writer checks once, at the end. A writer marked secret wipes its
 *   memory when it grows and when it is freed.
 * - Nothing here logs, exits, reads a clock or keeps global state; every
 *   function is safe from any thread on its own objects.
 */
#ifndef LARK_SSHWIRE_H
#define LARK_SSHWIRE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SSHWIRE_ED25519 "ssh-ed25519"
#define SSHWIRE_ED25519_CERT "ssh-ed25519-cert-v01@openssh.com"
#define SSHWIRE_ED25519_BLOB_LEN 51 /* string type (4 + 11), string key */
#define SSHWIRE_SIG_LEN 64          /* an Ed25519 signature */
#define SSHWIRE_FP_MAX 64           /* "SHA256:" + 43 base64 + NUL */
#define SSHWIRE_LINE_MAX 65536      /* base64 characters of one line */

/* ---------------------------------------------------------------- writer */

typedef struct sshwire_buf {
  uint8_t *p;
  size_t len, cap;
  int err;    /* sticks: an allocation failed */
  int secret; /* set before the first put: wipe on growth and free */
} sshwire_buf;

void sshwire_buf_free(sshwire_buf *b);
void sshwire_put(sshwire_buf *b, const void *d, size_t n); /* raw bytes */
void sshwire_put_u8(sshwire_buf *b, uint8_t v);
void sshwire_put_u32(sshwire_buf *b, uint32_t v);
void sshwire_put_u64(sshwire_buf *b, uint64_t v);
void sshwire_put_str(sshwire_buf *b, const void *d, size_t n); /* string */
void sshwire_put_cstr(sshwire_buf *b, const char *s);
/* What s holds, as one string of b; s's error passes to b. */
void sshwire_put_buf(sshwire_buf *b, const sshwire_buf *s);

/* ---------------------------------------------------------------- reader */

typedef struct sshwire_rd {
  const uint8_t *p;
  size_t len; /* bytes left */
  int err;    /* sticks: a read ran past the end */
} sshwire_rd;

sshwire_rd sshwire_rd_of(const void *p, size_t n);
uint8_t sshwire_get_u8(sshwire_rd *r);
uint32_t sshwire_get_u32(sshwire_rd *r);
uint64_t sshwire_get_u64(sshwire_rd *r);
/* A string: its bytes (n of them, pointing into the input) or NULL. */
const uint8_t *sshwire_get_str(sshwire_rd *r, size_t *n);
/* A string equal to want. */
int sshwire_get_str_is(sshwire_rd *r, const char *want);
/* A string's bytes as a reader of their own (err set when r failed). */
sshwire_rd sshwire_get_sub(sshwire_rd *r);
/* A string into out as a C string; -EBADMSG (and r's error set) when it
 * does not fit in cap or holds a NUL, so a copied field is always the
 * bytes that were on the wire. */
int sshwire_get_cstr(sshwire_rd *r, char *out, size_t cap);

/* ----------------------------------------------------------------- lines */

/* "<type> <base64> [comment]" (leading spaces before the base64 allowed,
 * which ends at a space or line end): the base64 decoded into *blob
 * (malloc'd, *n bytes). -EBADMSG for another type or bad base64. */
int sshwire_line_decode(const char *type, const char *line, size_t len,
                        uint8_t **blob, size_t *n);
/* "<type> <base64 of blob>[ <comment>]" as a malloc'd string, or NULL. */
char *sshwire_line_encode(const char *type, const uint8_t *blob, size_t n,
                          const char *comment);

/* ------------------------------------------------------------------ keys */

/* The public key blob (string "ssh-ed25519", string pk) into b. */
void sshwire_put_ed25519(sshwire_buf *b, const uint8_t pk[32]);
/* An Ed25519 key blob, exactly, into pk; -EBADMSG for anything else. */
int sshwire_ed25519_parse(const uint8_t *blob, size_t n, uint8_t pk[32]);
/* SHA-256 of the key's blob: what KRL fingerprint sections name. */
void sshwire_ed25519_hash(const uint8_t pk[32], uint8_t out[32]);
/* "SHA256:<base64 without padding>", as ssh-keygen -l prints it. */
void sshwire_ed25519_fingerprint(const uint8_t pk[32],
                                 char out[SSHWIRE_FP_MAX]);
/* "ssh-ed25519 <base64> [comment]" (a .pub line) into pk. */
int sshwire_ed25519_pub_parse(const char *line, size_t len, uint8_t pk[32]);
/* The .pub line of pk, with comment when not NULL, into out. */
int sshwire_ed25519_pub_format(const uint8_t pk[32], const char *comment,
                               char *out, size_t cap);
/*
 * An unencrypted OpenSSH private key file ("-----BEGIN OPENSSH PRIVATE
 * KEY-----", PROTOCOL.key) for an Ed25519 pair (sk: libsodium's 64
 * bytes) into *out: sodium_malloc'd, *len bytes; free with sodium_free,
 * which wipes. The check integers come from libsodium's random source.
 */
int sshwire_ed25519_private_format(const uint8_t pk[32], const uint8_t sk[64],
                                   const char *comment, char **out,
                                   size_t *len);
/* The same format read back: unencrypted, one Ed25519 key, check integers
 * equal, pk the public half of sk. The decoded copy is wiped. */
int sshwire_ed25519_private_parse(const char *text, size_t len, uint8_t pk[32],
                                  uint8_t sk[64]);

/* ---------------------------------------------------------- certificates */

enum { SSHWIRE_CERT_USER = 1, SSHWIRE_CERT_HOST = 2 };

/* Bytes inside a parsed input. */
typedef struct sshwire_bytes {
  const uint8_t *p;
  size_t n;
} sshwire_bytes;

/*
 * A parsed ssh-ed25519-cert-v01@openssh.com blob. Byte fields point into
 * the blob, which must outlive this. principals is the packed list of
 * strings; critical and extensions the packed (name, data) pairs, read
 * with sshwire_cert_next_*.
 */
typedef struct sshwire_cert {
  sshwire_bytes nonce;
  uint8_t key[32]; /* the certified key */
  uint64_t serial;
  uint32_t type; /* SSHWIRE_CERT_USER or _HOST (others parse) */
  sshwire_bytes key_id;
  sshwire_bytes principals;
  uint64_t valid_after, valid_before; /* unix seconds */
  sshwire_bytes critical, extensions;
  sshwire_bytes reserved;
  uint8_t ca_key[32];                 /* the signature key it names */
  size_t signed_len;                  /* the CA signed blob[0, signed_len) */
  uint8_t signature[SSHWIRE_SIG_LEN]; /* Ed25519, over those bytes */
} sshwire_cert;

/*
 * Parse a certificate blob. Beyond the layout it checks what OpenSSH
 * checks: every principal is a whole string, options are whole (name,
 * data) pairs with names free of NULs in strictly increasing order, the
 * CA key and the signature are Ed25519, nothing follows the signature.
 * It does not verify the signature. -EBADMSG otherwise.
 */
int sshwire_cert_parse(const uint8_t *blob, size_t n, sshwire_cert *c);

/* Iterate a parsed list: it = sshwire_rd_of(c->principals.p,
 * c->principals.n), then while (sshwire_cert_next_principal(&it, &b)). */
int sshwire_cert_next_principal(sshwire_rd *it, sshwire_bytes *out);
/* The same over c->critical or c->extensions. */
int sshwire_cert_next_option(sshwire_rd *it, sshwire_bytes *name,
                             sshwire_bytes *data);

/* An option to write: data empty when value is NULL, else one string
 * holding value (how OpenSSH writes force-command and the like). */
typedef struct sshwire_opt {
  const char *name;
  const char *value;
} sshwire_opt;

#define SSHWIRE_OPT_MAX 32 /* options of each kind sshwire writes */

/* What a certificate says, to write one. */
typedef struct sshwire_cert_spec {
  const uint8_t *nonce; /* the caller's random bytes (OpenSSH uses 32) */
  size_t nonce_len;
  const uint8_t *key; /* 32 */
  uint64_t serial;
  uint32_t type;
  const char *key_id;
  const char *const *principals;
  size_t nprincipals;
  uint64_t valid_after, valid_before;
  const sshwire_opt *critical; /* any order: written sorted by name */
  size_t ncritical;
  const sshwire_opt *extensions; /* likewise */
  size_t nextensions;
  const uint8_t *ca_key; /* 32 */
} sshwire_cert_spec;

/*
 * Write everything the CA signs (from the type to the signature key)
 * into b, empty on entry; -EINVAL for two options of one kind with the
 * same name or more than SSHWIRE_OPT_MAX. The caller signs b's bytes and
 * ends the certificate with sshwire_cert_write_signature.
 */
int sshwire_cert_write_body(sshwire_buf *b, const sshwire_cert_spec *s);
void sshwire_cert_write_signature(sshwire_buf *b,
                                  const uint8_t sig[SSHWIRE_SIG_LEN]);

/* ------------------------------------------------------------------ KRLs */

/*
 * A set of revocations for certificates of one CA, and of plain keys:
 * serial ranges, key ids, SHA-256 hashes of key blobs. Filled by hand or
 * from KRLs; it only grows. It is not locked: share it between threads
 * read-only. Lookups are linear (few revocations, one check per session).
 */
typedef struct sshwire_krl sshwire_krl;

int sshwire_krl_new(sshwire_krl **out);
void sshwire_krl_free(sshwire_krl *k);
/* Serials lo..hi inclusive; -EINVAL when lo > hi. Runs added in order
 * are joined. */
int sshwire_krl_add_serials(sshwire_krl *k, uint64_t lo, uint64_t hi);
/* A key id (n bytes, no NUL); -EINVAL for one holding a NUL. */
int sshwire_krl_add_key_id(sshwire_krl *k, const void *id, size_t n);
/* A key by the SHA-256 of its blob (sshwire_ed25519_hash). */
int sshwire_krl_add_key_hash(sshwire_krl *k, const uint8_t hash[32]);

int sshwire_krl_has_serial(const sshwire_krl *k, uint64_t serial);
int sshwire_krl_has_key_id(const sshwire_krl *k, const char *id);
int sshwire_krl_has_key_hash(const sshwire_krl *k, const uint8_t hash[32]);

/* A KRL's header. */
typedef struct sshwire_krl_head {
  uint64_t version;   /* the writer's own numbering */
  uint64_t generated; /* unix seconds */
  char comment[256];  /* cut to fit */
} sshwire_krl_head;

/*
 * Add to k what a KRL (format version 1) revokes for certificates of
 * ca_pk, and the Ed25519 keys it revokes outright: serial lists, ranges
 * and bitmaps, key ids, explicit keys and SHA-256 fingerprints.
 * Certificate sections for another CA are skipped, one naming no CA
 * applies to any. head (may be NULL) gets the header. -EBADMSG for a KRL
 * that does not parse or a section it does not know (a skipped section
 * could hide a revocation); -ENOTSUP for SHA-1 fingerprint and signature
 * sections. why (cap bytes, may be NULL) says which. On failure k may
 * hold part of the KRL: parse into a fresh set and keep the old one.
 */
int sshwire_krl_parse(sshwire_krl *k, const uint8_t ca_pk[32],
                      const uint8_t *krl, size_t len, sshwire_krl_head *head,
                      char *why, size_t cap);

/*
 * Append a KRL of k to b: the header, then when k names serials or key
 * ids one certificates section for ca_pk (single serials as a list,
 * runs as ranges, both sorted; key ids), then when k names keys a
 * SHA-256 fingerprint section. ssh-keygen -Q and sshd's RevokedKeys read
 * it; sshwire_krl_parse reads back the same set.
 */
int sshwire_krl_write(const sshwire_krl *k, const uint8_t ca_pk[32],
                      const sshwire_krl_head *head, sshwire_buf *b);

#ifdef __cplusplus
}
#endif

#endif
