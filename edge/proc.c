/*
 * proc.c - the record of one pod process (proc.h): made, found, and
 * freed once it is finishing and its last embedded handle closed; and a
 * process's start time, which tells it from a later one with its pid,
 * and its parent.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

/* /proc/<pid>/stat past its command name into buf: the text from field 3
 * (state) on, or NULL when the process is gone. */
static const char *
stat_fields(pid_t pid, char *buf, size_t cap) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  if (n <= 0)
    return NULL;
  buf[n] = 0;
  const char *p = strrchr(buf, ')'); /* the name may hold ')' */
  return p && p[1] == ' ' ? p + 2 : NULL;
}

uint64_t
edge_proc_start_ticks(pid_t pid) {
  char buf[1024];
  const char *p = stat_fields(pid, buf, sizeof buf);
  if (!p || *p == 'Z' || *p == 'X')
    return 0; /* gone, or a zombie: it has ended */
  /* state is field 3; starttime is field 22 */
  for (int f = 3; f < 22 && p; f++)
    if ((p = strchr(p, ' ')))
      p++;
  return p ? strtoull(p, NULL, 10) : 0;
}

pid_t
edge_proc_parent(pid_t pid) {
  char buf[1024];
  const char *p = stat_fields(pid, buf, sizeof buf);
  p = p ? strchr(p, ' ') : NULL; /* field 4, ppid, follows the state */
  return p ? (pid_t)strtol(p + 1, NULL, 10) : 0;
}

edge_proc *
edge_proc_find_live(edge_agent *a, const char *pod) {
  for (edge_proc *p = a->procs; p; p = p->next)
    if (!p->ended && !strcmp(p->pod, pod))
      return p;
  return NULL;
}

edge_proc *
edge_proc_new(edge_agent *a, const char *pod, const char *job,
              uint32_t attempt) {
  edge_proc *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->a = a;
  snprintf(p->pod, sizeof p->pod, "%s", pod);
  snprintf(p->job, sizeof p->job, "%s", job);
  snprintf(p->dir, sizeof p->dir, "%s/%s", a->pods_dir, pod);
  p->attempt = attempt;
  msgpack_sbuffer_init(&p->text);
  p->next = a->procs;
  a->procs = p;
  return p;
}

void
edge_proc_maybe_free(edge_proc *p) {
  if (p->handles > 0 || !p->finishing)
    return;
  edge_agent *a = p->a;
  for (edge_proc **pp = &a->procs; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  msgpack_sbuffer_destroy(&p->text);
  free(p->lines);
  free(p);
}

void
edge_proc_unref(edge_proc *p) {
  p->handles--;
  edge_proc_maybe_free(p);
}

void
edge_proc_handle_closed(uv_handle_t *h) {
  edge_proc_unref(h->data);
}

void
edge_proc_close_handle(uv_handle_t *h, int *has) {
  if (!*has)
    return;
  *has = 0;
  uv_close(h, edge_proc_handle_closed);
}
