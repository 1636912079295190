/*
 * common.c - what subcommands share: connecting with resolved settings,
 * error lines, times given by users, JSON output of msgpack values.
 */
#include <ctype.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli.h"
#include "timearg.h"

static int
read_line_file(const char *path, char *out, size_t cap) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  char *ok = fgets(out, (int)cap, f);
  fclose(f);
  if (!ok)
    return -1;
  out[strcspn(out, "\r\n")] = 0;
  return out[0] ? 0 : -1;
}

static void
resolve(lark_cli *cli) {
  if (!cli->url)
    cli->url = getenv("LARK_URL");
  if (!cli->url) {
    char path[600];
    snprintf(path, sizeof path, "%s/url", cli->data);
    if (read_line_file(path, cli->url_buf, sizeof cli->url_buf) == 0)
      cli->url = cli->url_buf;
  }
  if (!cli->url)
    cli->url = "nats://127.0.0.1:4222";
  if (!cli->creds)
    cli->creds = getenv("LARK_CREDS");
  if (!cli->creds) {
    snprintf(cli->creds_buf, sizeof cli->creds_buf, "%s/creds/admin.nk",
             cli->data);
    FILE *f = fopen(cli->creds_buf, "r");
    if (f) {
      fclose(f);
      cli->creds = cli->creds_buf;
    }
  }
}

bus_conn *
cli_connect(lark_cli *cli) {
  resolve(cli);
  bus_conn_opts o;
  bus_conn_opts_init(&o);
  o.url = cli->url;
  o.creds = cli->creds;
  o.name = "larkctl";
  const char *wait = getenv("LARK_JS_WAIT_MS");
  if (wait)
    o.js_wait_ms = atoi(wait);
  bus_conn *c = NULL;
  int rc = bus_conn_open(&c, &o);
  if (rc < 0) {
    cli_fail("connect", rc, "cannot connect to %s%s%s", cli->url,
             cli->creds ? " with " : " without credentials",
             cli->creds ? cli->creds : "");
    return NULL;
  }
  return c;
}

static int quiet;

void
cli_quiet(int on) {
  quiet = on;
}

int
cli_fail(const char *cmd, int err, const char *fmt, ...) {
  va_list ap;
  if (quiet)
    return CLI_ERR;
  fprintf(stderr, "larkctl %s: ", cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  if (err < 0) {
    const char *detail = bus_last_error();
    fprintf(stderr, ": %s", bus_strerror(err));
    if (detail && *detail)
      fprintf(stderr, " (%s)", detail);
  }
  fputc('\n', stderr);
  return CLI_ERR;
}

int
cli_usage(const char *usage) {
  fprintf(stderr, "usage: %s\n", usage);
  return CLI_USAGE;
}

int
cli_parse_time(const char *s, int64_t *ns) {
  return lark_time_parse(s, ns);
}

void
cli_format_time(int64_t ns, char *out, size_t cap) {
  time_t secs = (time_t)(ns / 1000000000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char base[32];
  strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out, cap, "%s.%03dZ", base, (int)((ns / 1000000) % 1000));
}

static json_t *
obj_to_json(const msgpack_object *o, int depth) {
  if (depth > 64)
    return json_null();
  switch (o->type) {
  case MSGPACK_OBJECT_BOOLEAN:
    return json_boolean(o->via.boolean);
  case MSGPACK_OBJECT_POSITIVE_INTEGER:
    return json_integer((json_int_t)o->via.u64);
  case MSGPACK_OBJECT_NEGATIVE_INTEGER:
    return json_integer((json_int_t)o->via.i64);
  case MSGPACK_OBJECT_FLOAT32:
  case MSGPACK_OBJECT_FLOAT64:
    return json_real(o->via.f64);
  case MSGPACK_OBJECT_STR:
    return json_stringn_nocheck(o->via.str.ptr, o->via.str.size);
  case MSGPACK_OBJECT_ARRAY: {
    json_t *a = json_array();
    for (uint32_t i = 0; i < o->via.array.size; i++)
      json_array_append_new(a, obj_to_json(&o->via.array.ptr[i], depth + 1));
    return a;
  }
  case MSGPACK_OBJECT_MAP: {
    json_t *m = json_object();
    for (uint32_t i = 0; i < o->via.map.size; i++) {
      const msgpack_object_kv *kv = &o->via.map.ptr[i];
      if (kv->key.type != MSGPACK_OBJECT_STR)
        continue;
      char key[256];
      size_t n = kv->key.via.str.size < 255 ? kv->key.via.str.size : 255;
      memcpy(key, kv->key.via.str.ptr, n);
      key[n] = 0;
      json_object_set_new(m, key, obj_to_json(&kv->val, depth + 1));
    }
    return m;
  }
  default:
    return json_null();
  }
}

/* jansson prints reals with %.17g, so an emitted 0.1 would show as
 * 0.10000000000000001. The first of %.15g, %.16g, %.17g that strtod reads
 * back equal is the shortest exact form; ".0" keeps an integral value a
 * real in JSON. */
void
cli_real_text(double v, char *buf, size_t cap) {
  char b[40];
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(b, sizeof b, "%.*g", prec, v);
    if (strtod(b, NULL) == v)
      break;
  }
  snprintf(buf, cap, "%s%s", b, strpbrk(b, ".eEn") ? "" : ".0");
}

static void
dump_real(FILE *f, double v) {
  char buf[48];
  cli_real_text(v, buf, sizeof buf);
  fputs(buf, f);
}

/* Strings, integers, true, false, null: as jansson writes them. */
static void
dump_leaf(FILE *f, const json_t *j) {
  char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
  fputs(s ? s : "null", f);
  free(s);
}

static int
key_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void dump_json(FILE *f, const json_t *j, size_t flags);

static void
dump_object(FILE *f, const json_t *j, size_t flags) {
  size_t n = 0, cap = json_object_size(j);
  const char **keys = malloc((cap ? cap : 1) * sizeof *keys);
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)j, k, v) keys[n++] = k;
  if (flags & JSON_SORT_KEYS)
    qsort(keys, n, sizeof *keys, key_cmp);
  fputc('{', f);
  for (size_t i = 0; i < n; i++) {
    json_t *key = json_string(keys[i]);
    fputs(i ? "," : "", f);
    dump_leaf(f, key);
    fputc(':', f);
    dump_json(f, json_object_get(j, keys[i]), flags);
    json_decref(key);
  }
  fputc('}', f);
  free(keys);
}

static void
dump_json(FILE *f, const json_t *j, size_t flags) {
  if (json_is_real(j)) {
    dump_real(f, json_real_value(j));
  } else if (json_is_object(j)) {
    dump_object(f, j, flags);
  } else if (json_is_array(j)) {
    fputc('[', f);
    for (size_t i = 0; i < json_array_size(j); i++) {
      fputs(i ? "," : "", f);
      dump_json(f, json_array_get(j, i), flags);
    }
    fputc(']', f);
  } else {
    dump_leaf(f, j);
  }
}

char *
cli_json_dumps(const json_t *j, size_t flags) {
  char *s = NULL;
  size_t len = 0;
  FILE *f = j ? open_memstream(&s, &len) : NULL;
  if (!f)
    return NULL;
  dump_json(f, j, flags);
  if (fclose(f)) {
    free(s);
    return NULL;
  }
  return s;
}

json_t *
cli_obj_json(const msgpack_object *o) {
  return obj_to_json(o, 0);
}

char *
cli_obj_to_json(const msgpack_object *o) {
  json_t *j = obj_to_json(o, 0);
  char *s = cli_json_dumps(j, JSON_SORT_KEYS);
  json_decref(j);
  return s;
}

const char *
cli_user(lark_cli *cli) {
  static char user[BUS_NAME_MAX + 1];
  const char *env = getenv("LARK_USER");
  if (env && *env)
    return env;
  resolve(cli);
  if (!cli->creds)
    return "admin";
  const char *base = strrchr(cli->creds, '/');
  base = base ? base + 1 : cli->creds;
  snprintf(user, sizeof user, "%s", base);
  char *dot = strrchr(user, '.');
  if (dot)
    *dot = 0;
  return bus_name_valid(user, BUS_NAME_MAX) ? user : "admin";
}

static volatile sig_atomic_t interrupted;

static void
on_interrupt(int sig) {
  (void)sig;
  interrupted = 1;
}

void
cli_catch_interrupt(int term) {
  signal(SIGINT, on_interrupt);
  if (term)
    signal(SIGTERM, on_interrupt);
}

int
cli_interrupted(void) {
  return interrupted;
}

int
cli_take_args(int argc, char **argv, int from, const char *const *flags,
              const char **vals, const char **pos, int npos) {
  int n = 0;
  for (int i = from; i < argc; i++) {
    int k = 0;
    while (flags && flags[k] && strcmp(flags[k], argv[i]))
      k++;
    if (flags && flags[k] && i + 1 < argc)
      vals[k] = argv[++i];
    else if (argv[i][0] != '-' && n < npos)
      pos[n++] = argv[i];
    else
      return -1;
  }
  return n;
}

void
cli_put_json(const json_t *j, const char *fallback) {
  char *s = cli_json_dumps(j, 0);
  if (s || fallback)
    puts(s ? s : fallback);
  free(s);
}
