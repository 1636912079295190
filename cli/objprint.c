/*
 * objprint.c - an object as `larkctl describe` prints it, the way
 * `kubectl describe` does:
 *
 *   Name:        train-1-actor-0
 *   Node:        gpu-1
 *   Started:     2026-11-29T10:00:00.123Z (5m ago)
 *   Gpus:        0, 1
 *   Allocations:
 *     POD               IP         JOB      NODE   STATE
 *     train-1-actor-0   10.2.0.1   train-1  gpu-1  routed
 *
 * Keys are capitalised, strings printed as they are, Unix-nanosecond
 * times (a key "ts", or one ending in Ts, Time, At or Seen) as RFC 3339
 * with their age, lists of maps as a table with a column per key, lists
 * of scalars joined by ", ", empty values as <none>.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

enum { MAX_COLS = 16 };

void
cli_age(int64_t ts, char *out, size_t cap) {
  int64_t s = (bus_wall_ns() - ts) / 1000000000LL;
  if (s < 0)
    s = 0;
  if (s < 120)
    snprintf(out, cap, "%llds", (long long)s);
  else if (s < 7200)
    snprintf(out, cap, "%lldm", (long long)(s / 60));
  else if (s < 172800)
    snprintf(out, cap, "%lldh", (long long)(s / 3600));
  else
    snprintf(out, cap, "%lldd", (long long)(s / 86400));
}

static int
ends_with(const char *s, size_t n, const char *tail) {
  size_t t = strlen(tail);
  return n >= t && !memcmp(s + n - t, tail, t);
}

/* A key naming a time in Unix nanoseconds, with a value that is one
 * (after 1973: smaller numbers are counts, not times). */
static int
is_time(const msgpack_object *key, const msgpack_object *v) {
  if (key->type != MSGPACK_OBJECT_STR ||
      v->type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
      v->via.u64 < 100000000000000000ULL)
    return 0;
  const char *k = key->via.str.ptr;
  size_t n = key->via.str.size;
  return (n == 2 && !memcmp(k, "ts", 2)) || ends_with(k, n, "Ts") ||
         ends_with(k, n, "Time") || ends_with(k, n, "At") ||
         ends_with(k, n, "Seen");
}

/* A map in a table cell: k=v,k=v (as kubectl prints labels); a list:
 * its items joined by ",". */
static void
compact_text(const msgpack_object *v, char *out, size_t cap) {
  size_t n = 0;
  out[0] = 0;
  uint32_t count =
      v->type == MSGPACK_OBJECT_MAP ? v->via.map.size : v->via.array.size;
  for (uint32_t i = 0; i < count && n + 1 < cap; i++) {
    const msgpack_object *val = v->type == MSGPACK_OBJECT_MAP
                                    ? &v->via.map.ptr[i].val
                                    : &v->via.array.ptr[i];
    char *j = val->type == MSGPACK_OBJECT_STR ? NULL : cli_obj_to_json(val);
    if (v->type == MSGPACK_OBJECT_MAP)
      n += (size_t)snprintf(out + n, cap - n, "%s%.*s=", i ? "," : "",
                            (int)v->via.map.ptr[i].key.via.str.size,
                            v->via.map.ptr[i].key.via.str.ptr);
    else if (i && n + 1 < cap)
      n += (size_t)snprintf(out + n, cap - n, ",");
    if (n + 1 < cap)
      n += (size_t)snprintf(out + n, cap - n, "%.*s",
                            j ? (int)strlen(j) : (int)val->via.str.size,
                            j ? j : val->via.str.ptr);
    free(j);
  }
}

/* A scalar (or, in a table cell, anything) as text; time set: a time. */
static void
text_of(const msgpack_object *v, int time, int with_age, char *out,
        size_t cap) {
  if (time) {
    char when[48], age[16];
    cli_format_time((int64_t)v->via.u64, when, sizeof when);
    cli_age((int64_t)v->via.u64, age, sizeof age);
    if (with_age)
      snprintf(out, cap, "%s (%s ago)", when, age);
    else
      snprintf(out, cap, "%s", when);
  } else if (v->type == MSGPACK_OBJECT_STR) {
    snprintf(out, cap, "%.*s", (int)v->via.str.size, v->via.str.ptr);
  } else if (v->type == MSGPACK_OBJECT_NIL) {
    out[0] = 0;
  } else if (v->type == MSGPACK_OBJECT_MAP || v->type == MSGPACK_OBJECT_ARRAY) {
    compact_text(v, out, cap);
  } else {
    char *j = cli_obj_to_json(v);
    snprintf(out, cap, "%s", j ? j : "");
    free(j);
  }
  if (!out[0])
    snprintf(out, cap, "<none>");
}

/* "localIP" -> "Local IP" (a label) or "LOCAL-IP" (a column). */
static void
label_of(const msgpack_object *key, int column, char *out, size_t cap) {
  size_t o = 0;
  for (uint32_t i = 0; i < key->via.str.size && o + 2 < cap; i++) {
    char c = key->via.str.ptr[i];
    if (i && isupper((unsigned char)c) &&
        islower((unsigned char)key->via.str.ptr[i - 1]))
      out[o++] = column ? '-' : ' ';
    out[o++] = (char)(column || !i ? toupper((unsigned char)c) : c);
  }
  out[o] = 0;
}

/* Every key of the maps in list a, in order of first appearance. */
static size_t
columns(const msgpack_object *a, const msgpack_object **cols) {
  size_t n = 0;
  for (uint32_t i = 0; i < a->via.array.size; i++) {
    const msgpack_object *m = &a->via.array.ptr[i];
    for (uint32_t k = 0; k < m->via.map.size; k++) {
      const msgpack_object *key = &m->via.map.ptr[k].key;
      size_t c = 0;
      while (c < n && !msgpack_object_equal(*cols[c], *key))
        c++;
      if (c == n && n < MAX_COLS && key->type == MSGPACK_OBJECT_STR)
        cols[n++] = key;
    }
  }
  return n;
}

static void
cell_text(const msgpack_object *row, const msgpack_object *key, char *out,
          size_t cap) {
  for (uint32_t k = 0; k < row->via.map.size; k++)
    if (msgpack_object_equal(row->via.map.ptr[k].key, *key)) {
      const msgpack_object *v = &row->via.map.ptr[k].val;
      text_of(v, is_time(key, v), 0, out, cap);
      return;
    }
  snprintf(out, cap, "<none>");
}

/* A list of maps as a table: a header of the keys, a row per map. */
static void
print_table(const msgpack_object *a, int indent) {
  const msgpack_object *cols[MAX_COLS];
  size_t n = columns(a, cols);
  int width[MAX_COLS];
  char buf[512];
  for (size_t c = 0; c < n; c++) {
    label_of(cols[c], 1, buf, sizeof buf);
    width[c] = (int)strlen(buf);
    for (uint32_t i = 0; i < a->via.array.size; i++) {
      cell_text(&a->via.array.ptr[i], cols[c], buf, sizeof buf);
      if ((int)strlen(buf) > width[c])
        width[c] = (int)strlen(buf);
    }
  }
  for (int64_t i = -1; i < (int64_t)a->via.array.size; i++) {
    printf("%*s", indent, "");
    for (size_t c = 0; c < n; c++) {
      if (i < 0)
        label_of(cols[c], 1, buf, sizeof buf);
      else
        cell_text(&a->via.array.ptr[i], cols[c], buf, sizeof buf);
      printf("%-*s%s", c + 1 < n ? width[c] : 0, buf, c + 1 < n ? "  " : "");
    }
    putchar('\n');
  }
}

static int
all_maps(const msgpack_object *a) {
  for (uint32_t i = 0; i < a->via.array.size; i++)
    if (a->via.array.ptr[i].type != MSGPACK_OBJECT_MAP)
      return 0;
  return a->via.array.size > 0;
}

static void
print_joined(const msgpack_object *a) {
  char buf[512];
  for (uint32_t i = 0; i < a->via.array.size; i++) {
    text_of(&a->via.array.ptr[i], 0, 0, buf, sizeof buf);
    printf("%s%s", i ? ", " : "", buf);
  }
  putchar('\n');
}

static void
print_entry(const msgpack_object_kv *kv, int indent, int pad) {
  const msgpack_object *v = &kv->val;
  char label[128], buf[1024];
  label_of(&kv->key, 0, label, sizeof label);
  printf("%*s%s:", indent, "", label);
  pad -= (int)strlen(label);
  if (pad < 1)
    pad = 1;
  int empty = (v->type == MSGPACK_OBJECT_MAP && !v->via.map.size) ||
              (v->type == MSGPACK_OBJECT_ARRAY && !v->via.array.size);
  if (!empty && v->type == MSGPACK_OBJECT_MAP) {
    putchar('\n');
    cli_describe_print(v, indent + 2);
  } else if (!empty && v->type == MSGPACK_OBJECT_ARRAY && all_maps(v)) {
    putchar('\n');
    print_table(v, indent + 2);
  } else if (!empty && v->type == MSGPACK_OBJECT_ARRAY) {
    printf("%*s", pad, "");
    print_joined(v);
  } else {
    text_of(v, is_time(&kv->key, v), 1, buf, sizeof buf);
    printf("%*s%s\n", pad, "", buf);
  }
}

void
cli_describe_print(const msgpack_object *o, int indent) {
  if (o->type != MSGPACK_OBJECT_MAP) {
    char buf[1024];
    text_of(o, 0, 0, buf, sizeof buf);
    printf("%*s%s\n", indent, "", buf);
    return;
  }
  int pad = 0; /* values of one map line up, as kubectl's do */
  for (uint32_t i = 0; i < o->via.map.size; i++) {
    char label[128];
    const msgpack_object_kv *kv = &o->via.map.ptr[i];
    if (kv->key.type == MSGPACK_OBJECT_STR) {
      label_of(&kv->key, 0, label, sizeof label);
      if ((int)strlen(label) + 2 > pad)
        pad = (int)strlen(label) + 2;
    }
  }
  for (uint32_t i = 0; i < o->via.map.size; i++)
    if (o->via.map.ptr[i].key.type == MSGPACK_OBJECT_STR)
      print_entry(&o->via.map.ptr[i], indent, pad ? pad : 1);
}
