/*
 * fuzz_weights_req.c - libFuzzer harness for the weights protocol's lines
 * between nodes (edge/weights_req.c): the fetcher's request the server
 * reads and the server's answer the fetcher reads. The first byte picks
 * which; the rest is the line. A refusal says why; a request that parses
 * is a job name, a version from 1 and a sha256, and formats back to the
 * very line it came from.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weights_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
request(const char *s) {
  char why[256] = "", line[256];
  wt_req r;
  if (wt_req_parse(s, &r, why, sizeof why)) {
    if (!why[0])
      abort();
    return;
  }
  if (!bus_name_valid(r.job, BUS_NAME_MAX) || r.version < 1 ||
      !wt_sha_valid(r.sha256) || wt_req_format(&r, line, sizeof line) ||
      strncmp(line, s, strlen(s)) || strcmp(line + strlen(s), "\n"))
    abort();
}

static void
answer(const char *s) {
  char why[256] = "";
  uint64_t size = 0;
  if (wt_ans_parse(s, &size, why, sizeof why) && !why[0])
    abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 4096)
    return 0;
  char *s = malloc(size);
  if (!s)
    return 0;
  memcpy(s, data + 1, size - 1);
  s[size - 1] = 0;
  if (data[0] & 1)
    answer(s);
  else
    request(s);
  free(s);
  return 0;
}
