/*
 * loglines.c - the lines of log.batch events, gathered and put in order,
 * for `larkctl logs` and the gateway's logs feed.
 *
 * LARK_LOGS holds batches in arrival order, which interleaves pods
 * arbitrarily, so lines are sorted by each line's own ts (the node's read
 * time) with ties kept in arrival order. Each line points at its source
 * (job, task, pod, node, attempt): the sources are kept once each, and
 * survive bus_log_lines_clear, so a follower's indices stay valid.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bus-int.h"

static long
src_of(bus_log_lines *l, const msgpack_object *d) {
  bus_log_src s;
  memset(&s, 0, sizeof s);
  bus_obj_str(d, "job", s.job, sizeof s.job);
  bus_obj_str(d, "task", s.task, sizeof s.task);
  bus_obj_str(d, "pod", s.pod, sizeof s.pod);
  bus_obj_str(d, "node", s.node, sizeof s.node);
  s.attempt = (uint32_t)bus_obj_int(d, "attempt", 0);
  for (size_t i = l->nsrc; i-- > 0;)
    if (!memcmp(&l->srcs[i], &s, sizeof s))
      return (long)i;
  if (bus_grow(&l->srcs, l->nsrc, &l->srccap, sizeof *l->srcs, 16))
    return -1;
  l->srcs[l->nsrc] = s;
  return (long)l->nsrc++;
}

static int
add_line(bus_log_lines *l, uint32_t s, uint64_t seq, const msgpack_object *o) {
  const msgpack_object *text = bus_obj_get(o, "text");
  char stream[8] = "";
  int64_t ts = bus_obj_int(o, "ts", 0);
  if (!text || text->type != MSGPACK_OBJECT_STR ||
      (l->since_ns && ts < l->since_ns))
    return 0;
  if (bus_grow(&l->lines, l->n, &l->cap, sizeof *l->lines, 1024))
    return -1;
  bus_log_entry *ln = &l->lines[l->n];
  ln->len = text->via.str.size;
  ln->text = malloc(ln->len + 1);
  if (!ln->text)
    return -1;
  memcpy(ln->text, text->via.str.ptr, ln->len);
  ln->text[ln->len] = 0;
  ln->ts = ts;
  ln->seq = seq;
  ln->order = l->order++;
  ln->src = s;
  ln->err = bus_obj_str(o, "stream", stream, sizeof stream) &&
            !strcmp(stream, "stderr");
  l->n++;
  return 0;
}

int
bus_log_lines_collect(bus_log_lines *l, const bus_batch *b) {
  for (size_t i = 0; i < bus_batch_len(b); i++) {
    const bus_event *ev = bus_batch_event(b, i);
    if (!ev || strcmp(ev->type, "log.batch"))
      continue;
    const msgpack_object *ls = bus_obj_get(&ev->data, "lines");
    long s = src_of(l, &ev->data);
    if (s < 0)
      return BUS_ERR(-ENOMEM, "out of memory");
    for (uint32_t k = 0;
         ls && ls->type == MSGPACK_OBJECT_ARRAY && k < ls->via.array.size; k++)
      if (add_line(l, (uint32_t)s, ev->seq, &ls->via.array.ptr[k]) < 0)
        return BUS_ERR(-ENOMEM, "out of memory");
  }
  return 0;
}

static int
by_time(const void *a, const void *b) {
  const bus_log_entry *x = a, *y = b;
  if (x->ts != y->ts)
    return x->ts < y->ts ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

void
bus_log_lines_sort(bus_log_lines *l) {
  if (l->n > 1)
    qsort(l->lines, l->n, sizeof *l->lines, by_time);
}

void
bus_log_lines_clear(bus_log_lines *l) {
  for (size_t i = 0; i < l->n; i++)
    free(l->lines[i].text);
  l->n = 0;
}

void
bus_log_lines_free(bus_log_lines *l) {
  bus_log_lines_clear(l);
  free(l->lines);
  free(l->srcs);
  l->lines = NULL;
  l->srcs = NULL;
  l->cap = l->nsrc = l->srccap = 0;
}
