/*
 * weights_req.h - private to edge/: the lines of the weights protocol
 * between nodes (weights_req.c), parsed apart from the sockets so the
 * parser can be fuzzed alone (fuzz/fuzz_weights_req.c).
 *
 *   GET <job> <version> <sha256>      the fetcher's one request
 *   OK <size>  |  ERR <why>           the server's answer
 */
#ifndef LARK_EDGE_WEIGHTS_REQ_H
#define LARK_EDGE_WEIGHTS_REQ_H

#include <stddef.h>
#include <stdint.h>

#include "bus.h"

typedef struct wt_req {
  char job[BUS_NAME_MAX + 1];
  uint64_t version; /* 1 and up */
  char sha256[65];  /* 64 lowercase hex digits */
} wt_req;

/* Whether s is 64 lowercase hex digits. */
int wt_sha_valid(const char *s);

/* line (without its newline) into r: 0, or BUS_EINVAL with why. Exactly
 * one space between the fields, a job name, a decimal version from 1
 * without sign or leading zero, a sha256. */
int wt_req_parse(const char *line, wt_req *r, char *why, size_t cap);
/* r as its line, with the newline. */
int wt_req_format(const wt_req *r, char *out, size_t cap);

/* The server's answer line: 0 with *size for OK, BUS_EINVAL with the
 * server's why (ERR) or what was wrong with the line. */
int wt_ans_parse(const char *line, uint64_t *size, char *why, size_t cap);

#endif
