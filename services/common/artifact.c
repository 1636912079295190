/*
 * artifact.c - a task's artifact URL and what a task needs to run
 * (artifact.h). Pure: no I/O, so services and the edge share it.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "artifact.h"

static int
refuse(char *why, size_t cap, const char *reason) {
  snprintf(why, cap, "%s", reason);
  return BUS_EFIELD;
}

static int
hexval(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  c = tolower(c);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The fragment after '#': only `sha256=<64 hex>`, kept lowercase. */
static int
parse_fragment(const char *f, size_t len, lark_artifact *a, char *why,
               size_t cap) {
  if (len != 7 + 64 || strncmp(f, "sha256=", 7))
    return refuse(why, cap,
                  "the only fragment taken is #sha256=<64 hex digits>");
  for (size_t i = 0; i < 64; i++) {
    if (hexval((unsigned char)f[7 + i]) < 0)
      return refuse(why, cap, "#sha256= needs 64 hex digits");
    a->sha256[i] = (char)tolower((unsigned char)f[7 + i]);
  }
  a->sha256[64] = 0;
  return 0;
}

/* The last segment of path (len bytes), percent-decoded, into a->name. */
static int
last_segment(const char *path, size_t len, lark_artifact *a, char *why,
             size_t cap) {
  const char *seg = path;
  for (size_t i = 0; i < len; i++)
    if (path[i] == '/')
      seg = path + i + 1;
  size_t n = 0, slen = len - (size_t)(seg - path);
  for (size_t i = 0; i < slen; i++) {
    int c = (unsigned char)seg[i];
    if (c == '%') {
      int h = i + 2 < slen ? hexval((unsigned char)seg[i + 1]) : -1;
      int l = h >= 0 ? hexval((unsigned char)seg[i + 2]) : -1;
      if (l < 0)
        return refuse(why, cap, "a bad %-escape in its file name");
      c = h * 16 + l;
      i += 2;
    }
    if (c == 0 || c == '/')
      return refuse(why, cap, "its file name holds '/' or NUL");
    if (n + 1 >= sizeof a->name)
      return refuse(why, cap, "its file name is longer than 255 bytes");
    a->name[n++] = (char)c;
  }
  a->name[n] = 0;
  if (!n || !strcmp(a->name, ".") || !strcmp(a->name, ".."))
    return refuse(why, cap,
                  "the URL's path must end in a file name (not '/', '.' or "
                  "'..')");
  return 0;
}

int
lark_artifact_parse(const char *s, size_t len, lark_artifact *a, char *why,
                    size_t cap) {
  memset(a, 0, sizeof *a);
  if (!len || len > LARK_ARTIFACT_MAX)
    return refuse(why, cap, "must be a URL of 1 to 4096 bytes");
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
      return refuse(why, cap,
                    "must be ASCII without spaces or control characters "
                    "(percent-encode others)");
  size_t skip = !strncasecmp(s, "file://", 7)    ? 7
                : !strncasecmp(s, "http://", 7)  ? 7
                : !strncasecmp(s, "https://", 8) ? 8
                                                 : 0;
  if (!skip || len <= skip)
    return refuse(why, cap, "must be a file://, http:// or https:// URL");
  const char *hash = memchr(s, '#', len);
  size_t ulen = hash ? (size_t)(hash - s) : len;
  if (hash && parse_fragment(hash + 1, len - ulen - 1, a, why, cap))
    return BUS_EFIELD;
  const char *auth = s + skip, *end = s + ulen;
  const char *path = auth;
  while (path < end && *path != '/' && *path != '?')
    path++;
  size_t alen = (size_t)(path - auth);
  if (skip == 7 && !strncasecmp(s, "file", 4)) {
    if (alen && !(alen == 9 && !strncasecmp(auth, "localhost", 9)))
      return refuse(why, cap,
                    "a file:// URL names a file on the node: file:///path");
  } else if (!alen)
    return refuse(why, cap, "an http(s):// URL needs a host");
  const char *q = memchr(path, '?', (size_t)(end - path));
  size_t plen = (size_t)((q ? q : end) - path);
  if (!plen)
    return refuse(why, cap, "the URL's path must end in a file name");
  if (last_segment(path, plen, a, why, cap))
    return BUS_EFIELD;
  memcpy(a->url, s, ulen);
  a->url[ulen] = 0;
  return 0;
}

/* What a task gives a node to run, however it was read. */
typedef struct runnable {
  const char *artifact; /* NULL or "": none */
  size_t artifact_len;
  int entrypoint, run_script; /* given and not empty */
} runnable;

static int
judge(const runnable *r, char *field, size_t fcap, char *why, size_t cap) {
  if (r->artifact && r->artifact_len) {
    lark_artifact a;
    char reason[200];
    if (lark_artifact_parse(r->artifact, r->artifact_len, &a, reason,
                            sizeof reason)) {
      snprintf(field, fcap, "runtime.raw.artifact");
      snprintf(why, cap, "artifact: %s", reason);
      return BUS_EFIELD;
    }
  }
  if (r->entrypoint || r->run_script)
    return 0;
  snprintf(field, fcap, "runtime.raw.entrypoint");
  snprintf(why, cap, "no entrypoint and no runScript: nothing to run");
  return BUS_EFIELD;
}

int
lark_task_can_run(const bus_task *task, const bus_job_spec *spec, char *field,
                  size_t fcap, char *why, size_t cap) {
  const bus_raw_runtime *raw = &task->runtime.raw;
  if (!task->runtime.has_raw)
    return 0;
  runnable r = {.artifact = raw->has_artifact ? raw->artifact.ptr : NULL,
                .artifact_len = raw->has_artifact ? raw->artifact.len : 0,
                .entrypoint = raw->has_entrypoint && raw->entrypoint.n,
                .run_script =
                    (task->has_runScript && task->runScript.len) ||
                    (spec && spec->has_runScript && spec->runScript.len)};
  return judge(&r, field, fcap, why, cap);
}

static int
nonempty_str(const msgpack_object *o) {
  return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size > 0;
}

int
lark_task_runnable(const msgpack_object *task, const msgpack_object *spec,
                   char *field, size_t fcap, char *why, size_t cap) {
  const msgpack_object *raw = bus_obj_get(bus_obj_get(task, "runtime"), "raw");
  if (!raw || raw->type != MSGPACK_OBJECT_MAP)
    return 0;
  const msgpack_object *art = bus_obj_get(raw, "artifact");
  const msgpack_object *ep = bus_obj_get(raw, "entrypoint");
  runnable r = {.artifact = nonempty_str(art) ? art->via.str.ptr : NULL,
                .artifact_len = nonempty_str(art) ? art->via.str.size : 0,
                .entrypoint = ep && ep->type == MSGPACK_OBJECT_ARRAY &&
                              ep->via.array.size,
                .run_script = nonempty_str(bus_obj_get(task, "runScript")) ||
                              nonempty_str(bus_obj_get(spec, "runScript"))};
  return judge(&r, field, fcap, why, cap);
}
