/*
 * ca.c - the CA's keys and public files under the data directory.
 *
 * The CA is made once. Every file is written to a temporary name, synced
 * and renamed; ca.key (the X.509 key) is renamed last, so its presence
 * means every other file is complete, and a start that finds no ca.key
 * makes the whole CA again. Key files are created 0600 and refused when
 * group or others can read them. Bytes read from key files are wiped as
 * soon as they are parsed; the Ed25519 secret lives in sodium_malloc'd
 * memory (guarded, locked) and is wiped when the CA is freed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <sodium.h>

#include "signer-int.h"

#define KEY_MAX (64 * 1024)

static int
path_of(char *out, size_t cap, const char *dir, const char *name) {
  int n = snprintf(out, cap, "%s/%s", dir, name);
  return n < 0 || (size_t)n >= cap ? BUS_EINVAL : 0;
}

/* Write data to dir/name (mode) whole: bus_file_write. */
static int
write_file(const char *dir, const char *name, const void *data, size_t len,
           unsigned mode) {
  char path[4096];
  if (path_of(path, sizeof path, dir, name))
    return BUS_EINVAL;
  return bus_file_write(path, data, len, mode);
}

/* Read dir/name whole into sodium memory (NUL-terminated). A key file
 * (secret) must not be readable by group or others. */
static int
read_file(const char *dir, const char *name, int secret, char **out,
          size_t *len) {
  char path[4096];
  struct stat st;
  if (path_of(path, sizeof path, dir, name))
    return BUS_EINVAL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  int rc = fstat(fd, &st) ? -errno : 0;
  if (!rc && (st.st_size <= 0 || st.st_size > KEY_MAX))
    rc = BUS_ECORRUPT;
  if (!rc && secret && (st.st_mode & 077))
    rc = BUS_EDENIED;
  char *buf = rc ? NULL : sodium_malloc((size_t)st.st_size + 1);
  if (!rc && !buf)
    rc = -ENOMEM;
  if (!rc && read(fd, buf, (size_t)st.st_size) != st.st_size)
    rc = -EIO;
  close(fd);
  if (rc) {
    sodium_free(buf);
    return rc;
  }
  buf[st.st_size] = 0;
  *out = buf;
  *len = (size_t)st.st_size;
  return 0;
}

static int
finish(signer_ca *ca) {
  if (signer__spki_fp(ca->key, ca->x509_fp))
    return BUS_ECORRUPT;
  signer_ssh_fingerprint(ca->ssh_pk, ca->ssh_fp);
  if (!ca->pem && !(ca->pem = signer__x509_pem(ca->cert)))
    return -ENOMEM;
  return signer_ssh_pub_format(ca->ssh_pk, "larkbus-ca", ca->ssh_pub,
                               sizeof ca->ssh_pub);
}

static int
write_ssh_key(const signer_ca *ca, const char *dir) {
  char *text = NULL;
  size_t len = 0;
  int rc = signer_ssh_private_format(ca->ssh_pk, ca->ssh_sk, "larkbus-ca",
                                     &text, &len);
  if (!rc)
    rc = write_file(dir, "ca-ssh.key", text, len, 0600);
  sodium_free(text);
  return rc;
}

static int
write_x509_key(const signer_ca *ca, const char *dir) {
  BIO *b = BIO_new(BIO_s_secmem());
  char *p;
  int rc = -ENOMEM;
  if (b && PEM_write_bio_PrivateKey(b, ca->key, NULL, NULL, 0, NULL, NULL)) {
    long n = BIO_get_mem_data(b, &p);
    rc = write_file(dir, "ca.key", p, (size_t)n, 0600);
    OPENSSL_cleanse(p, (size_t)n);
  }
  BIO_free(b);
  return rc;
}

static int
make(signer_ca *ca, const char *dir) {
  int rc = signer__x509_ca_make(&ca->key, &ca->cert);
  if (rc)
    return rc;
  crypto_sign_keypair(ca->ssh_pk, ca->ssh_sk);
  if ((rc = finish(ca)))
    return rc;
  char line[200];
  snprintf(line, sizeof line, "%s\n", ca->ssh_pub);
  if ((rc = write_file(dir, "ca.pem", ca->pem, strlen(ca->pem), 0644)) ||
      (rc = write_file(dir, "ca.pub", line, strlen(line), 0644)) ||
      (rc = write_ssh_key(ca, dir)))
    return rc;
  return write_x509_key(ca, dir);
}

static int
load_x509(signer_ca *ca, const char *dir) {
  char *text = NULL, *pem = NULL;
  size_t len = 0, plen = 0;
  int rc = read_file(dir, "ca.key", 1, &text, &len);
  if (rc)
    return rc;
  BIO *b = BIO_new_mem_buf(text, (int)len);
  ca->key = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
  BIO_free(b);
  sodium_free(text); /* wipes */
  if (!ca->key)
    return BUS_ECORRUPT;
  if ((rc = read_file(dir, "ca.pem", 0, &pem, &plen)))
    return rc;
  b = BIO_new_mem_buf(pem, (int)plen);
  ca->cert = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
  BIO_free(b);
  sodium_free(pem);
  if (!ca->cert || X509_check_private_key(ca->cert, ca->key) != 1)
    return BUS_ECORRUPT;
  return 0;
}

static int
load(signer_ca *ca, const char *dir) {
  char *text = NULL;
  size_t len = 0;
  int rc = load_x509(ca, dir);
  if (!rc)
    rc = read_file(dir, "ca-ssh.key", 1, &text, &len);
  if (!rc)
    rc = signer_ssh_private_parse(text, len, ca->ssh_pk, ca->ssh_sk)
             ? BUS_ECORRUPT
             : 0;
  sodium_free(text);
  ERR_clear_error();
  return rc ? rc : finish(ca);
}

int
signer_ca_open(const char *dir, signer_ca **out, int *created) {
  char path[4096];
  *out = NULL;
  if (sodium_init() < 0)
    return -ENOMEM;
  if (mkdir(dir, 0700) && errno != EEXIST)
    return -errno;
  signer_ca *ca = calloc(1, sizeof *ca);
  if (!ca || !(ca->ssh_sk = sodium_malloc(crypto_sign_SECRETKEYBYTES))) {
    free(ca);
    return -ENOMEM;
  }
  if (path_of(path, sizeof path, dir, "ca.key")) {
    signer_ca_free(ca);
    return BUS_EINVAL;
  }
  int fresh = access(path, F_OK) != 0;
  int rc = fresh ? make(ca, dir) : load(ca, dir);
  if (rc) {
    signer_ca_free(ca);
    return rc;
  }
  if (created)
    *created = fresh;
  *out = ca;
  return 0;
}

void
signer_ca_free(signer_ca *ca) {
  if (!ca)
    return;
  EVP_PKEY_free(ca->key);
  X509_free(ca->cert);
  free(ca->pem);
  sodium_free(ca->ssh_sk); /* wipes */
  free(ca);
}

const char *
signer_ca_pem(const signer_ca *ca) {
  return ca->pem;
}

const char *
signer_ca_ssh_pub(const signer_ca *ca) {
  return ca->ssh_pub;
}

const uint8_t *
signer_ca_ssh_pk(const signer_ca *ca) {
  return ca->ssh_pk;
}

const char *
signer_ca_x509_fp(const signer_ca *ca) {
  return ca->x509_fp;
}

const char *
signer_ca_ssh_fp(const signer_ca *ca) {
  return ca->ssh_fp;
}
