/*
 * signer.h - the platform's certificate authority: larksigner.
 *
 * The signer owns Cert (docs/design.md section 1). It holds two CA keys made
 * once under its data directory: an ECDSA P-256 key for X.509 (roles
 * admin, agent, peer, user, gateway) and an Ed25519 key for OpenSSH user
 * certificates (roles domain, ssh-guest). Clients keep their own private keys:
 * they send a CSR or an Ed25519 public key, and get a certificate back.
 *
 * This header is the library: the pure parts (roles, validity, the
 * OpenSSH wire formats, X.509 issuing, CRL and KRL writing) are unit
 * tested without a broker; the view (cert.issued, cert.revoked,
 * ca.published applied into LMDB) is rebuilt by replay; main.c wires it
 * to the command path.
 *
 * Files under the data directory (mode 0600 for keys):
 *   ca.key        the X.509 CA private key (PEM, PKCS#8)
 *   ca-ssh.key    the SSH CA private key (OpenSSH private key format)
 *   ca.pem        the X.509 CA certificate
 *   ca.pub        the SSH CA public key (one OpenSSH line)
 *   crl.pem       the X.509 CRL, rewritten when a revocation is applied
 *   revoked_keys  the OpenSSH KRL (by serial, under the SSH CA key)
 *   view/         the LMDB view
 * Private key material read from files is wiped (OPENSSL_cleanse,
 * sodium_memzero) as soon as it is parsed; the Ed25519 secret lives in
 * sodium_malloc'd memory and is wiped when the CA is freed.
 *
 * Functions return 0 or a negative BUS_E* code; where a message helps the
 * client it is written into err (cap bytes).
 */
#ifndef LARK_SIGNER_H
#define LARK_SIGNER_H

/* Command handlers of lark-signer (--workers): each waits for its
 * certificate's event to be stored, so more of them keep the broker busy;
 * 16 measured best on 2 cores (docs/BENCHMARKS.md). */
#define SIGNER_WORKERS 16

#include <stddef.h>
#include <stdint.h>

#include "bus.h"

/* ------------------------------------------------------------------ roles */

enum { SIGNER_X509 = 1, SIGNER_SSH = 2 };

/* The format a role is issued in (SIGNER_X509 or SIGNER_SSH), 0 when the
 * role is unknown. Roles: admin, agent, peer, user, gateway (X.509);
 * domain, ssh-guest (SSH).
 *
 * X.509 roles' key usages and names: admin and user are clients only
 * (clientAuth; no DNS name: a person is not a host), user being a person
 * of the platform whose CN the gateway takes as the actor; gateway is
 * lark-gateway's HTTPS server (serverAuth and clientAuth) with SANs
 * IP 127.0.0.1, IP ::1, DNS localhost and the hosts asked; agent and peer
 * are both (clientAuth, serverAuth) with DNS <name>. Every X.509
 * certificate carries OU=<role>, CN=<name> and the urn:larkbus SAN URIs. */
int signer_role_format(const char *role);
const char *signer_format_name(int format); /* "x509", "ssh" */

/* 1 when s is an IPv4 or IPv6 address (a gateway host's IP SAN). */
int signer_host_is_ip(const char *s);

/* --------------------------------------------------------------- validity */

typedef struct signer_limits {
  int64_t default_ns;  /* when the request names none; default 24 h */
  int64_t min_ns;      /* default 1 min */
  int64_t max_ns;      /* default 30 days */
  int64_t backdate_ns; /* notBefore = now - backdate (clock skew); 1 min */
} signer_limits;

void signer_limits_init(signer_limits *l);

/*
 * The validity of a certificate asked for `want_ns` (0: the default) at
 * now_ns: [now - backdate, now + want]. BUS_EFIELD (with err) when want is
 * outside [min, max] or negative. Pure.
 */
int signer_validity(const signer_limits *l, int64_t now_ns, int64_t want_ns,
                    int64_t *not_before, int64_t *not_after, char *err,
                    size_t cap);

/* ----------------------------------------------------------------- the CA */

typedef struct signer_ca signer_ca;

/*
 * Open the CA in dir: load it when ca.key exists, else make it (both key
 * pairs, ca.pem, ca.pub) and set *created (may be NULL). Key files are
 * written 0600 through a temporary file and rename; ca.key is written
 * last, so a half-made CA is made again from scratch.
 */
int signer_ca_open(const char *dir, signer_ca **out, int *created);
void signer_ca_free(signer_ca *ca);

const char *signer_ca_pem(const signer_ca *ca);       /* the CA certificate */
const char *signer_ca_ssh_pub(const signer_ca *ca);   /* "ssh-ed25519 ..." */
const uint8_t *signer_ca_ssh_pk(const signer_ca *ca); /* 32 bytes */
/* "SHA256:<base64>" of the X.509 CA's public key and of the SSH CA key. */
const char *signer_ca_x509_fp(const signer_ca *ca);
const char *signer_ca_ssh_fp(const signer_ca *ca);

/* ------------------------------------------------------------- issuing */

#define SIGNER_MAX_PRINCIPALS 8
#define SIGNER_MAX_HOSTS 8 /* hosts a gateway certificate may name */
#define SIGNER_HOST_MAX 253
#define SIGNER_SERIAL_MAX 33 /* 32 hex digits + NUL */

typedef struct signer_req {
  const char *role;
  const char *name;
  const char *domain;  /* may be NULL or ""; required for role domain */
  const char *cluster; /* may be NULL or "" */
  const char *agent;   /* agent id; may be NULL or "" */
  /* role gateway only: more SANs, each an IPv4 or IPv6 address or a DNS
   * name ([a-z0-9-] labels joined by dots, at most 253) */
  const char *const *hosts;
  int nhosts;
  const char *csr; /* X.509: PEM CSR (P-256), csr_len bytes */
  size_t csr_len;
  const char *ssh_key; /* SSH: "ssh-ed25519 AAAA... [comment]" */
  size_t ssh_key_len;
  int64_t not_before; /* unix ns, from signer_validity */
  int64_t not_after;
} signer_req;

typedef struct signer_cert {
  int format;
  char serial[SIGNER_SERIAL_MAX]; /* hex: 32 digits X.509, 16 SSH */
  char subject[256];              /* X.509 subject, or the SSH key id */
  char principals[SIGNER_MAX_PRINCIPALS][128]; /* SANs or principals */
  int nprincipals;
  int64_t not_before, not_after; /* unix ns (whole seconds) */
  char fingerprint[64];          /* SHA256:<base64> of the client key */
  char *text;                    /* PEM or "ssh-ed25519-cert-v01... " line;
                                    malloc'd, freed by signer_cert_clear */
} signer_cert;

/*
 * Check the request and issue its certificate. Never trusts the CSR's
 * subject: the subject, SANs, principals and extensions come from role,
 * name and metadata, which must be valid names. BUS_EINVAL or BUS_EFIELD
 * with a message in err for a bad request (unknown role, wrong key type,
 * a CSR whose signature does not verify, ...). Thread safe: many issues
 * may run at once on one CA.
 */
int signer_issue(const signer_ca *ca, const signer_req *req, signer_cert *out,
                 char *err, size_t cap);
void signer_cert_clear(signer_cert *c);

/* ------------------------------------------------------ OpenSSH formats */

/*
 * Parse "ssh-ed25519 <base64> [comment]" into the 32-byte key. BUS_EFIELD
 * for anything else (another key type, a certificate, bad base64).
 */
int signer_ssh_pub_parse(const char *line, size_t len, uint8_t pk[32]);
/* "ssh-ed25519 <base64> comment" into out (cap >= 128 + comment). */
int signer_ssh_pub_format(const uint8_t pk[32], const char *comment, char *out,
                          size_t cap);
/* "SHA256:<base64 without padding>" of the key's wire blob. */
void signer_ssh_fingerprint(const uint8_t pk[32], char out[64]);

/*
 * An OpenSSH user certificate (ssh-ed25519-cert-v01@openssh.com) signed
 * with ca_sk (libsodium's 64-byte secret). Extensions are permit-pty,
 * permit-port-forwarding and <k>@larkbus for each (k, v) in ext (n pairs,
 * values may be ""), all sorted as OpenSSH requires. Returns the line
 * "ssh-ed25519-cert-v01@openssh.com <base64> <comment>" in *out
 * (malloc'd). Times are unix seconds.
 */
typedef struct signer_ssh_cert_spec {
  const uint8_t *pk; /* 32 */
  uint64_t serial;
  const char *key_id;
  const char *const *principals;
  int nprincipals;
  uint64_t valid_after, valid_before;
  const char *const *ext_keys; /* "role" -> "role@larkbus" */
  const char *const *ext_vals;
  int next;
  const char *comment;
} signer_ssh_cert_spec;

int signer_ssh_cert_make(const uint8_t ca_pk[32], const uint8_t ca_sk[64],
                         const signer_ssh_cert_spec *s, char **out);

/*
 * An unencrypted OpenSSH private key file ("-----BEGIN OPENSSH PRIVATE
 * KEY-----") for an Ed25519 pair, as ssh -i reads it, into *out
 * (sodium_malloc'd, *len bytes; free with sodium_free, which wipes).
 */
int signer_ssh_private_format(const uint8_t pk[32], const uint8_t sk[64],
                              const char *comment, char **out, size_t *len);
/* Parse the same format back (keys in sk, a caller's wiped buffer). */
int signer_ssh_private_parse(const char *text, size_t len, uint8_t pk[32],
                             uint8_t sk[64]);

/*
 * Write an OpenSSH KRL revoking serials (n, any order) of certificates
 * signed by ca_pk to path (through a temporary file and rename), so
 * sshd's RevokedKeys and `ssh-keygen -Q` read it. version is the KRL's
 * version number (e.g. the view's applied sequence).
 */
int signer_krl_write(const char *path, const uint8_t ca_pk[32],
                     const uint64_t *serials, size_t n, uint64_t version,
                     int64_t now_s);

/* ------------------------------------------------------------------ X.509 */

/* The private extension carrying role and metadata: a UUID OID (2.25.x,
 * ITU-T X.667, needs no registration), value a DER UTF8String
 * "role=<r>;name=<n>[;domain=<d>][;cluster=<c>][;agent=<a>]". Not in the
 * roles user and gateway: GnuTLS, which lark-gateway's HTTPS runs on,
 * cannot parse so wide an OID arc (x509.c, private_ext_for). */
#define SIGNER_OID "2.25.213450375438236472937541285312457283963"

/* A revoked X.509 serial (hex) and when (unix ns). */
typedef struct signer_revoked {
  char serial[SIGNER_SERIAL_MAX];
  int64_t when;
} signer_revoked;

/* Write the CA's CRL (PEM) listing revoked (n entries) to path, through a
 * temporary file and rename; number is its CRL number. */
int signer_crl_write(const signer_ca *ca, const char *path,
                     const signer_revoked *revoked, size_t n, uint64_t number,
                     int64_t now_s);

/*
 * Client side: a fresh P-256 key and a CSR for CN=name. *key_pem (PKCS#8,
 * sodium_malloc'd, free with sodium_free) and *csr_pem (malloc'd).
 */
int signer_x509_request(const char *name, char **key_pem, size_t *key_len,
                        char **csr_pem);

/* --------------------------------------------------------------- the view */

/*
 * The signer's view, filter lark.ev.cert.>:
 *   certs    serial -> msgpack {serial, format, role, subject, principals,
 *                               notBefore, notAfter, fingerprint, cert,
 *                               name, domain?, cluster?, agent?, seq, ts,
 *                               actor}
 *   revoked  serial -> msgpack {serial, format, ts, reason, actor, seq}
 *   ca       "ca"   -> msgpack data of the last ca.published
 *   requests event id -> serial (an issued command's idempotency)
 * apply is pure. When def->ud is a signer_hook, apply sets hook->dirty on
 * a revocation so the service rewrites the CRL and KRL after commit.
 */
typedef struct signer_hook {
  int dirty; /* set by apply, read by on_batch: both on the loop's thread */
} signer_hook;

void signer_view_def(bus_view_def *def);

/* Pack the certificate record for serial as a map with "revoked" (nil or
 * the revocation record) added. BUS_ENOT_FOUND when unknown. */
int signer_show(bus_txn *t, const char *serial, msgpack_packer *pk);
/* Pack an array of summaries {serial, format, role, subject, notBefore,
 * notAfter, revoked} of every certificate, in serial order; role may be
 * NULL or "" for all; limit 0 for all. */
int signer_list(bus_txn *t, const char *role, size_t limit, msgpack_packer *pk);
/*
 * The view's reads as a bus_query_fn (live on the command path and for
 * --at): "list" {role?, limit?} packs signer_list's array, "show"
 * {serial} signer_show's map.
 */
int signer_query(bus_txn *t, const char *kind, const char *verb,
                 const msgpack_object *req, msgpack_packer *pk, void *ud);
/* 0 when the view holds certificate serial, unrevoked; BUS_EEXISTS when
 * it is revoked, BUS_ENOT_FOUND when unknown. */
int signer_cert_state(bus_txn *t, const char *serial);
/* The role and name a certificate was issued for (buffers of cap bytes);
 * BUS_ENOT_FOUND when the view has no such serial. */
int signer_cert_owner(bus_txn *t, const char *serial, char *role, char *name,
                      size_t cap);
/* The serial recorded for an issuing event id (an idempotent retry). */
int signer_request_serial(bus_txn *t, const char *event_id,
                          char serial[SIGNER_SERIAL_MAX]);

/* Revoked serials of each format from the view, malloc'd arrays. */
int signer_revoked_load(bus_txn *t, signer_revoked **x509, size_t *nx,
                        uint64_t **ssh, size_t *ns);

/* Rewrite dir/crl.pem and dir/revoked_keys from the view. */
int signer_write_revocations(bus_view *v, const signer_ca *ca, const char *dir);

/* ------------------------------------------------------------- commands */

/* What the signer's verbs need beside the view (their ud). */
typedef struct signer_env {
  const signer_ca *ca;
  const signer_limits *limits;
} signer_env;

/*
 * The signer's verbs, for bus_verbs_serve with the view and a signer_env
 * as ud; signer_command runs one command through them in the caller's
 * thread. Commands on lark.cmd.<user>.cert.<verb>:
 *   sign   {key, role, name, domain?, cluster?, agent?, hosts? (gateway:
 *           [address or DNS name]), csr | sshKey, valid? (seconds)} -> {ok,
 * seq, serial, format, cert, subject, principals, notBefore, notAfter,
 * fingerprint}   (admin only) revoke {key, serial, reason?} -> {ok, seq,
 * serial}      (admin only) list   {role?, limit?} -> {ok, result: [summary,
 * ...]} show   {serial} -> {ok, result: {record, revoked}} ca     {} -> {ok,
 * seq, pem, sshPublicKey, x509Fingerprint, sshFingerprint} A sign whose key was
 * seen before answers with the certificate issued then (the event id is
 * bus_cmd_event_id's). Safe to call from several threads at once. Returns the
 * error it replied with, or 0.
 */
extern const bus_verbs signer_verbs;
int signer_command(bus_conn *c, const bus_cmd *cmd, bus_view *v,
                   const signer_ca *ca, const signer_limits *l);

/*
 * Publish the CA's public parts as ca.published on lark.ev.cert.ca unless
 * the subject's last event already carries these keys; *published tells
 * whether it appended.
 */
int signer_publish_ca(bus_conn *c, const signer_ca *ca, int *published);

#endif
