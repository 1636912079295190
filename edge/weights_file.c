/*
 * weights_file.c - SHA-256 over a stream (OpenSSL EVP) and a file copied
 * or read through it: what a publish and a fetch check a version by; and
 * a version's path in the cache. Any thread; calls no other weights file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weights_int.h"

enum { CHUNK = 1 << 20 };

int
wt_sha_init(wt_sha *h) {
  h->ctx = EVP_MD_CTX_new();
  if (!h->ctx || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
    wt_sha_free(h);
    return bus_error(-ENOMEM, "SHA-256: cannot start a digest");
  }
  return 0;
}

void
wt_sha_update(wt_sha *h, const void *p, size_t n) {
  EVP_DigestUpdate(h->ctx, p, n);
}

void
wt_sha_final(wt_sha *h, char hex[65]) {
  unsigned char md[32];
  unsigned n = 0;
  static const char digits[] = "0123456789abcdef";
  EVP_DigestFinal_ex(h->ctx, md, &n);
  for (unsigned i = 0; i < 32; i++) {
    hex[2 * i] = digits[md[i] >> 4];
    hex[2 * i + 1] = digits[md[i] & 15];
  }
  hex[64] = 0;
  wt_sha_free(h);
}

void
wt_sha_free(wt_sha *h) {
  EVP_MD_CTX_free(h->ctx);
  h->ctx = NULL;
}

static int
write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      return bus_error(-errno, "write: %s", strerror(errno));
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int
wt_hash_fd(int in, int out, char hex[65], uint64_t *size) {
  wt_sha h;
  int rc = wt_sha_init(&h);
  char *buf = rc ? NULL : malloc(CHUNK);
  *size = 0;
  if (!rc && !buf)
    rc = bus_error(-ENOMEM, "out of memory");
  while (!rc) {
    ssize_t n = read(in, buf, CHUNK);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      rc = bus_error(-errno, "read: %s", strerror(errno));
    if (n <= 0)
      break;
    wt_sha_update(&h, buf, (size_t)n);
    *size += (uint64_t)n;
    if (out >= 0)
      rc = write_all(out, buf, (size_t)n);
  }
  free(buf);
  if (rc)
    wt_sha_free(&h);
  else
    wt_sha_final(&h, hex);
  return rc;
}

void
wt_path(const edge_weights *ws, const char *sha256, char *out, size_t cap) {
  if (snprintf(out, cap, "%s/%s", ws->dir, sha256) >= (int)cap)
    out[0] = 0; /* the directory's length is checked at start */
}
