/*
 * fuzz_krl.c - libFuzzer harness for sshwire's KRL reader, as the hub
 * reads a KRL file: for certificates of the corpus CA (fuzz/corpus/
 * make-ssh-seeds signs with it).
 *
 * Whatever parses must write, and what is written must parse to a set
 * that writes the same bytes again (the writer is canonical) and holds
 * what the first set held. Any violation aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sshwire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The corpus CA's public key (test only; its private half is in
 * fuzz/corpus/make-ssh-seeds). */
static const uint8_t ca_pk[32] = {
    0x07, 0xba, 0x60, 0xf6, 0x90, 0x58, 0x89, 0x20, 0xc4, 0x8a, 0xf6,
    0x8c, 0x10, 0x6e, 0x34, 0x50, 0x48, 0x1b, 0xd3, 0x78, 0xb1, 0xb6,
    0x18, 0x91, 0xaf, 0xb8, 0x0b, 0xe9, 0x65, 0x85, 0xec, 0x93};

static void
fail(const char *what) {
  fprintf(stderr, "fuzz_krl: %s\n", what);
  abort();
}

/* Write k; parse the bytes into a new set. */
static sshwire_krl *
again(const sshwire_krl *k, const sshwire_krl_head *h, sshwire_buf *out) {
  sshwire_krl *k2;
  sshwire_krl_head h2;
  if (sshwire_krl_write(k, ca_pk, h, out))
    fail("a parsed KRL does not write");
  if (sshwire_krl_new(&k2))
    fail("no memory");
  if (sshwire_krl_parse(k2, ca_pk, out->p, out->len, &h2, NULL, 0))
    fail("a written KRL does not parse");
  if (h2.version != h->version || h2.generated != h->generated ||
      strcmp(h2.comment, h->comment))
    fail("the header changed");
  return k2;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  sshwire_krl *k, *k2, *k3;
  sshwire_krl_head h;
  sshwire_buf one = {0}, two = {0};
  char why[128];
  if (sshwire_krl_new(&k))
    return 0;
  if (sshwire_krl_parse(k, ca_pk, data, size, &h, why, sizeof why)) {
    sshwire_krl_free(k);
    return 0;
  }
  k2 = again(k, &h, &one);
  k3 = again(k2, &h, &two);
  if (one.len != two.len || memcmp(one.p, two.p, one.len))
    fail("writing is not stable");
  for (uint64_t s = 0; s < 64; s++)
    if (sshwire_krl_has_serial(k, s) != sshwire_krl_has_serial(k2, s))
      fail("a serial changed");
  sshwire_buf_free(&one);
  sshwire_buf_free(&two);
  sshwire_krl_free(k);
  sshwire_krl_free(k2);
  sshwire_krl_free(k3);
  return 0;
}
