/*
 * jobcheck.c - the checks of jobcheck.h, on the Job spec's msgpack map so
 * that lark-dag, which keeps its templates undecoded, and lark-scheduler
 * share one function.
 */
#include <stdio.h>
#include <string.h>

#include "jobcheck.h"

/* 1 when the array of task maps ts has one whose name is s. */
static int
has_task(const msgpack_object *ts, const msgpack_object *s) {
  for (uint32_t i = 0;
       ts && ts->type == MSGPACK_OBJECT_ARRAY && i < ts->via.array.size; i++) {
    const msgpack_object *name = bus_obj_get(&ts->via.array.ptr[i], "name");
    if (name && name->type == MSGPACK_OBJECT_STR &&
        name->via.str.size == s->via.str.size &&
        !memcmp(name->via.str.ptr, s->via.str.ptr, s->via.str.size))
      return 1;
  }
  return 0;
}

static void
refuse(bus_field_err *errs, int max, int *n, const char *at,
       const msgpack_object_kv *stage, uint32_t k, const msgpack_object *s) {
  if (*n < max) {
    bus_field_err *e = &errs[*n];
    snprintf(e->path, sizeof e->path, "%s.engine.stages.%.*s[%u]", at,
             (int)stage->key.via.str.size, stage->key.via.str.ptr, k);
    snprintf(e->reason, sizeof e->reason, "no task named \"%.*s\"",
             (int)s->via.str.size, s->via.str.ptr);
  }
  (*n)++;
}

int
lark_job_engine_check(const msgpack_object *spec, const char *at,
                      bus_field_err *errs, int max, int *n) {
  const msgpack_object *stages =
      bus_obj_get(bus_obj_get(spec, "engine"), "stages");
  const msgpack_object *ts = bus_obj_get(spec, "tasks");
  int before = *n;
  if (!stages || stages->type != MSGPACK_OBJECT_MAP)
    return 0;
  for (uint32_t i = 0; i < stages->via.map.size; i++) {
    const msgpack_object_kv *kv = &stages->via.map.ptr[i];
    if (kv->key.type != MSGPACK_OBJECT_STR ||
        kv->val.type != MSGPACK_OBJECT_ARRAY)
      continue; /* the schema's to refuse */
    for (uint32_t k = 0; k < kv->val.via.array.size; k++) {
      const msgpack_object *s = &kv->val.via.array.ptr[k];
      if (s->type == MSGPACK_OBJECT_STR && !has_task(ts, s))
        refuse(errs, max, n, at, kv, k, s);
    }
  }
  return *n > before ? BUS_EFIELD : 0;
}
