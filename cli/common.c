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

/* Whole nanoseconds from seconds, saturated: a time past 2262 is "after
 * every event", not an overflow; one at or before the epoch is "before
 * every event", kept at 1 ns because 0 means "no time given" to callers. */
static int64_t
clamp_ns(long double secs) {
  if (secs >= (long double)INT64_MAX / 1e9L)
    return INT64_MAX;
  if (secs * 1e9L < 1.0L)
    return 1;
  return (int64_t)(secs * 1e9L);
}

static int
parse_duration(const char *s, int64_t *ns) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || !isfinite(v) || v < 0 || !isdigit((unsigned char)*s))
    return -1;
  double unit;
  if (!strcmp(end, "ms"))
    unit = 1e-3;
  else if (!strcmp(end, "s"))
    unit = 1;
  else if (!strcmp(end, "m"))
    unit = 60;
  else if (!strcmp(end, "h"))
    unit = 3600;
  else if (!strcmp(end, "d"))
    unit = 86400;
  else
    return -1;
  *ns = clamp_ns((long double)v * unit);
  return 0;
}

/* n digits at s into *v; 0 when they are all digits. */
static int
digits(const char *s, int n, int *v) {
  *v = 0;
  for (int i = 0; i < n; i++) {
    if (!isdigit((unsigned char)s[i]))
      return -1;
    *v = *v * 10 + (s[i] - '0');
  }
  return 0;
}

/* YYYY-MM-DD, a real day of a year from 1 to 9999. */
static int
parse_date(const char *s, struct tm *tm) {
  static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int y, m, d;
  if (digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &m) || s[7] != '-' ||
      digits(s + 8, 2, &d))
    return -1;
  int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (y < 1 || m < 1 || m > 12 || d < 1 || d > mdays[m - 1] ||
      (m == 2 && d == 29 && !leap))
    return -1;
  tm->tm_year = y - 1900;
  tm->tm_mon = m - 1;
  tm->tm_mday = d;
  return 0;
}

/* [.fff]? then Z, z, +hh:mm, -hh:mm or nothing (UTC). */
static int
parse_zone(const char *p, long double *frac, int64_t *off) {
  *frac = 0;
  *off = 0;
  if (*p == '.') {
    long double scale = 0.1L;
    if (!isdigit((unsigned char)p[1]))
      return -1;
    for (p++; isdigit((unsigned char)*p); p++, scale /= 10)
      *frac += (*p - '0') * scale;
  }
  int hh, mm;
  if (*p == 'Z' || *p == 'z')
    p++;
  else if (*p == '+' || *p == '-') {
    if (digits(p + 1, 2, &hh) || p[3] != ':' || digits(p + 4, 2, &mm) ||
        hh > 23 || mm > 59)
      return -1;
    *off = (int64_t)(hh * 3600 + mm * 60) * (*p == '-' ? -1 : 1);
    p += 6;
  }
  return *p ? -1 : 0;
}

/* RFC 3339: 2026-11-29T10:00:00[.fff][Z|+hh:mm], or a date alone
 * (midnight UTC). Every field is checked: 2026-02-30 is no day. */
static int
parse_rfc3339(const char *s, int64_t *ns) {
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  if (parse_date(s, &tm))
    return -1;
  const char *p = s + 10;
  long double frac = 0;
  int64_t off = 0;
  if (*p) {
    if (*p != 'T' && *p != 't' && *p != ' ')
      return -1;
    if (digits(p + 1, 2, &tm.tm_hour) || p[3] != ':' ||
        digits(p + 4, 2, &tm.tm_min) || p[6] != ':' ||
        digits(p + 7, 2, &tm.tm_sec) || tm.tm_hour > 23 || tm.tm_min > 59 ||
        tm.tm_sec > 59 || parse_zone(p + 9, &frac, &off))
      return -1;
  }
  *ns = clamp_ns((long double)timegm(&tm) - off + frac);
  return 0;
}

int
cli_parse_time(const char *s, int64_t *ns) {
  int64_t d;
  if (!s || !*s)
    return -1;
  if (parse_duration(s, &d) == 0) {
    *ns = clamp_ns(((long double)bus_wall_ns() - (long double)d) / 1e9L);
    return 0;
  }
  if (parse_rfc3339(s, ns) == 0)
    return 0;
  char *end;
  double secs = strtod(s, &end);
  if (end != s && !*end && isfinite(secs) && secs >= 0 &&
      isdigit((unsigned char)*s)) {
    *ns = clamp_ns(secs);
    return 0;
  }
  return -1;
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
