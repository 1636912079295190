/*
 * fuzz_manifest.c - libFuzzer harness for manifests (cli/manifest.c): any
 * bytes as a YAML or JSON file. Parsing must return an error or documents
 * that are each one msgpack map within the packed limit; every document is
 * then checked against the schema and each error's path mapped back to a
 * line, as `larkctl apply` does. A failed parse must leave an error
 * message and no documents.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "fuzz_map.h"
#include "manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_doc(const lark_doc *d) {
  msgpack_zone z;
  msgpack_object o;
  bus_field_err errs[8];
  int n = 0, i;
  if (!d->mp || d->mp_len == 0 || d->mp_len > LARK_MANIFEST_MAX_PACKED ||
      d->index < 1 || d->line < 1)
    abort();
  if (!msgpack_zone_init(&z, 1024))
    return;
  fuzz_unpack_map(d->mp, d->mp_len, &z, &o);
  msgpack_zone_destroy(&z);
  int rc = lark_doc_check(d, errs, 8, &n);
  if ((rc == 0) != (n == 0))
    abort();
  for (i = 0; i < n && i < 8; i++)
    if (lark_doc_line(d, errs[i].path) < 1)
      abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  lark_manifest m;
  char err[512];
  size_t i;
  int rc = lark_manifest_parse(&m, "fuzz.yaml", data, size, err, sizeof err);
  if (rc) {
    if (m.ndocs || !err[0])
      abort();
    return 0;
  }
  for (i = 0; i < m.ndocs; i++)
    check_doc(&m.docs[i]);
  lark_manifest_free(&m);
  return 0;
}
