/*
 * weights_req.c - the weights protocol's lines (weights_req.h). Outside
 * input on both ends: strict, bounded, and every refusal says why.
 */
#include <stdio.h>
#include <string.h>

#include "weights_req.h"

int
wt_sha_valid(const char *s) {
  size_t n = 0;
  for (; s[n]; n++)
    if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
      return 0;
  return n == 64;
}

static int
refuse(char *why, size_t cap, const char *what) {
  snprintf(why, cap, "%s", what);
  return BUS_EINVAL;
}

/* A decimal from 1 without sign or leading zero, up to UINT64_MAX; the
 * digits end at *end. */
static int
number(const char *s, size_t n, uint64_t *out) {
  uint64_t v = 0;
  if (!n || n > 20 || s[0] == '0')
    return -1;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9' ||
        v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
      return -1;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  *out = v;
  return 0;
}

int
wt_req_parse(const char *line, wt_req *r, char *why, size_t cap) {
  const char *job, *ver, *sha, *sp;
  memset(r, 0, sizeof *r);
  if (strncmp(line, "GET ", 4))
    return refuse(why, cap, "bad request: not GET");
  job = line + 4;
  if (!(sp = strchr(job, ' ')) || (size_t)(sp - job) > BUS_NAME_MAX)
    return refuse(why, cap, "bad request: no job");
  memcpy(r->job, job, (size_t)(sp - job));
  ver = sp + 1;
  if (!bus_name_valid(r->job, BUS_NAME_MAX))
    return refuse(why, cap, "bad request: not a job name");
  if (!(sp = strchr(ver, ' ')) || number(ver, (size_t)(sp - ver), &r->version))
    return refuse(why, cap, "bad request: not a version");
  sha = sp + 1;
  if (strlen(sha) != 64 || !wt_sha_valid(sha))
    return refuse(why, cap, "bad request: not a sha256");
  memcpy(r->sha256, sha, 65);
  return 0;
}

int
wt_req_format(const wt_req *r, char *out, size_t cap) {
  int n = snprintf(out, cap, "GET %s %llu %s\n", r->job,
                   (unsigned long long)r->version, r->sha256);
  return n < 0 || (size_t)n >= cap ? BUS_EINVAL : 0;
}

int
wt_ans_parse(const char *line, uint64_t *size, char *why, size_t cap) {
  if (!strncmp(line, "ERR ", 4)) {
    snprintf(why, cap, "refused: %.200s", line + 4);
    return BUS_EINVAL;
  }
  if (strncmp(line, "OK ", 3) || number(line + 3, strlen(line + 3), size))
    return refuse(why, cap, "the answer is neither OK <size> nor ERR <why>");
  return 0;
}
