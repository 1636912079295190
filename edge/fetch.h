/*
 * fetch.h - private to edge/: a pod's artifact fetched into its working
 * directory (fetch.c), and its prepareScript run (prepare.c), both in the
 * pod's shim before the entrypoint starts.
 */
#ifndef LARK_EDGE_FETCH_H
#define LARK_EDGE_FETCH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "artifact.h"

#define EDGE_ARTIFACT_MAX_DEFAULT (4ull << 30) /* bytes */
#define EDGE_ARTIFACT_TIMEOUT_DEFAULT 1800     /* seconds, the whole fetch */
#define EDGE_REASON_MAX 900 /* a reason fits pod.report's 1024 */

typedef struct edge_fetch_opts {
  const char *ca_file;         /* trusted beside the system's CAs; NULL: none */
  uint64_t max_bytes;          /* larger fails the fetch */
  long timeout_s;              /* the whole transfer */
  volatile sig_atomic_t *stop; /* set: give up now */
} edge_fetch_opts;

/*
 * Fetch a into the current directory as a->name: the bytes go to a
 * temporary file, are checked against a->sha256 when given, and only
 * then take the name. 0, or -1 with the reason (for people, one line) in
 * why; nothing is left behind then.
 */
int edge_fetch(const lark_artifact *a, const edge_fetch_opts *o, char *why,
               size_t cap);

/*
 * Run script with /bin/sh -c in the current directory and environment;
 * its output goes to the shim's (the pod's log). 0 when it exited 0;
 * else its exit code (*code) or signal (*sig) and the reason in why,
 * ending with the last line it wrote to stderr.
 */
int edge_prepare(const char *script, int *code, int *sig, char *why,
                 size_t cap);

#endif
