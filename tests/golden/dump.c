/*
 * dump.c - lark-golden: write every message of every stream of a running
 * platform as JSON lines, the golden event log's format:
 *
 *   {"stream":"LARK_EVENTS","seq":1,"subject":"lark.ev.job.train.submitted",
 *    "time":"2026-12-01T16:00:00.123456789Z","hdrs":"<base64>",
 *    "data":"<base64>"}
 *
 * hdrs and data are the stored bytes as the broker's message-get API hands
 * them back (NATS/1.0 header block, msgpack body), so the log holds exactly
 * what the writers of the day wrote.
 *
 *   lark-golden dump --data DIR --out FILE
 *
 * The broker's URL comes from DIR/url (as larkctl reads it), the
 * credentials from DIR/creds/admin.nk. Exits 0 when every stream was
 * written whole, 1 on an error (named), 2 on bad usage.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus.h"

#define USAGE "usage: lark-golden dump --data DIR --out FILE\n"

enum { WAIT_MS = 5000, MAX_STREAMS = 256 };

/* The reply to a JetStream API request, parsed; NULL on an error (named). */
static json_t *
api(bus_conn *c, const char *subject, const char *body) {
  void *reply = NULL;
  size_t len = 0;
  int rc =
      bus_conn_request(c, subject, body, strlen(body), WAIT_MS, &reply, &len);
  if (rc) {
    fprintf(stderr, "lark-golden: %s: %s\n", subject, bus_last_error());
    return NULL;
  }
  json_error_t jerr;
  json_t *j = json_loadb(reply, len, 0, &jerr);
  free(reply);
  if (!j || json_object_get(j, "error")) {
    char *s = j ? json_dumps(json_object_get(j, "error"), 0) : NULL;
    fprintf(stderr, "lark-golden: %s: %s\n", subject, s ? s : jerr.text);
    free(s);
    json_decref(j);
    return NULL;
  }
  return j;
}

/* The names of the streams, sorted (the API lists them in order). */
static int
stream_names(bus_conn *c, char **names, int cap) {
  json_t *j = api(c, "$JS.API.STREAM.NAMES", "{}");
  if (!j)
    return -1;
  json_t *arr = json_object_get(j, "streams"), *v;
  size_t i;
  int n = 0;
  json_array_foreach(arr, i, v) {
    if (n < cap)
      names[n++] = strdup(json_string_value(v));
  }
  json_decref(j);
  return n;
}

/* One message as a line; 1 when seq is not there (deleted), -1 on error. */
static int
dump_one(bus_conn *c, const char *stream, uint64_t seq, FILE *out) {
  char subj[256], body[64];
  snprintf(subj, sizeof subj, "$JS.API.STREAM.MSG.GET.%s", stream);
  snprintf(body, sizeof body, "{\"seq\":%llu}", (unsigned long long)seq);
  void *reply = NULL;
  size_t len = 0;
  if (bus_conn_request(c, subj, body, strlen(body), WAIT_MS, &reply, &len)) {
    fprintf(stderr, "lark-golden: %s #%llu: %s\n", stream,
            (unsigned long long)seq, bus_last_error());
    return -1;
  }
  json_t *j = json_loadb(reply, len, 0, NULL);
  free(reply);
  json_t *m = json_object_get(j, "message");
  if (!m) {
    json_decref(j);
    return 1;
  }
  json_t *line = json_pack(
      "{s:s,s:I,s:O,s:O,s:O,s:O}", "stream", stream, "seq", (json_int_t)seq,
      "subject", json_object_get(m, "subject"), "time",
      json_object_get(m, "time"), "hdrs",
      json_object_get(m, "hdrs") ? json_object_get(m, "hdrs") : json_string(""),
      "data", json_object_get(m, "data"));
  int rc = line && json_dumpf(line, out, JSON_COMPACT) == 0 ? 0 : -1;
  fputc('\n', out);
  json_decref(line);
  json_decref(j);
  return rc;
}

static int
dump_stream(bus_conn *c, const char *stream, FILE *out) {
  uint64_t last = 0, n = 0;
  if (bus_stream_last_seq(c, stream, &last)) {
    fprintf(stderr, "lark-golden: %s: %s\n", stream, bus_last_error());
    return -1;
  }
  for (uint64_t seq = 1; seq <= last; seq++) {
    int rc = dump_one(c, stream, seq, out);
    if (rc < 0)
      return -1;
    n += rc == 0;
  }
  fprintf(stderr, "%-24s %6llu messages (last sequence %llu)\n", stream,
          (unsigned long long)n, (unsigned long long)last);
  return 0;
}

static int
read_url(const char *data, char *url, size_t cap) {
  char path[4096];
  snprintf(path, sizeof path, "%s/url", data);
  FILE *f = fopen(path, "r");
  if (!f || !fgets(url, (int)cap, f)) {
    fprintf(stderr, "lark-golden: cannot read %s\n", path);
    if (f)
      fclose(f);
    return -1;
  }
  fclose(f);
  url[strcspn(url, "\r\n")] = 0;
  return 0;
}

static int
dump(const char *data, const char *outpath) {
  char url[1024], creds[4096];
  if (read_url(data, url, sizeof url))
    return 1;
  snprintf(creds, sizeof creds, "%s/creds/admin.nk", data);
  bus_conn_opts o;
  bus_conn_opts_init(&o);
  o.url = url;
  o.creds = creds;
  o.name = "lark-golden";
  bus_conn *c;
  if (bus_conn_open(&c, &o)) {
    fprintf(stderr, "lark-golden: %s: %s\n", url, bus_last_error());
    return 1;
  }
  char *names[MAX_STREAMS];
  int n = stream_names(c, names, MAX_STREAMS), rc = n < 0;
  FILE *out = n < 0 ? NULL : fopen(outpath, "w");
  if (n >= 0 && !out) {
    perror(outpath);
    rc = 1;
  }
  for (int i = 0; i < n; i++) {
    if (!rc && dump_stream(c, names[i], out))
      rc = 1;
    free(names[i]);
  }
  if (out && fclose(out))
    rc = 1;
  bus_conn_close(c);
  return rc;
}

int
main(int argc, char **argv) {
  const char *data = NULL, *out = NULL;
  if (argc < 2 || strcmp(argv[1], "dump")) {
    fputs(USAGE, stderr);
    return 2;
  }
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--data"))
      data = argv[i + 1];
    else if (!strcmp(argv[i], "--out"))
      out = argv[i + 1];
  }
  if (!data || !out) {
    fputs(USAGE, stderr);
    return 2;
  }
  return dump(data, out);
}
