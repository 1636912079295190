/*
 * proc.h - private to edge/: one process the agent runs or adopted (one
 * attempt of one pod), its output streams and its socket (proc.c: the
 * record itself; lifetime.c: the process's life). Loop thread only.
 *
 * An edge_proc is freed when it is finishing and every handle it embeds
 * has been closed (the count in `handles` falls to 0 in a close
 * callback). proc.c uses nothing in edge/ but the agent's state.
 */
#ifndef LARK_EDGE_PROC_H
#define LARK_EDGE_PROC_H

#include <sys/types.h>

#include "agent.h"

typedef struct edge_stream {
  uv_pipe_t pipe;
  edge_proc *p;
  const char *name; /* "stdout" or "stderr" */
  int open, eof;
  size_t len;
  char line[EDGE_LINE_MAX + 8];
} edge_stream;

typedef struct edge_client {
  uv_pipe_t pipe;
  edge_proc *p;
  struct edge_client *next;
  char *buf;
  size_t len, cap;
  int closing;
  /* an engine request pending (engine_sock.h), and the bytes read while
   * it is, held until it is answered; reading paused when too many */
  struct edge_engine_op *op;
  char *held;
  size_t nheld, held_cap;
  int paused;
} edge_client;

/* A line not yet sent: its text is text.data[at..at+len) of its proc. */
typedef struct edge_line {
  int64_t ts;
  const char *stream; /* "stdout" or "stderr" */
  size_t at, len;
} edge_line;

struct edge_proc {
  edge_proc *next;
  edge_agent *a;
  char pod[EDGE_POD_SZ];
  char job[EDGE_NAME_SZ];
  char dir[4200];
  char sock_path[256];
  uint32_t attempt;
  int netns;   /* runs in its own network namespace (raw+netns) */
  char ip[16]; /* then its localIP */
  pid_t pid;
  uint64_t ticks;
  int adopted, ended, finishing, stopping, report_stop, silent;
  int handles; /* open handles embedded here (and clients) */
  uv_process_t proc;
  uv_timer_t poll;  /* adopted: is it still there? ended: drain deadline */
  uv_timer_t grace; /* SIGKILL after the grace period */
  int has_proc, has_poll, has_grace, has_srv;
  edge_stream out, err;
  uv_pipe_t srv;
  edge_client *clients;
  msgpack_sbuffer text; /* the pending lines' text, made valid UTF-8 */
  edge_line *lines;     /* the pending lines (output.c) */
  uint32_t nlines;
  size_t lcap;
  size_t packed; /* the pending lines' size as packed LogLine maps */
};

/* A new record for pod's attempt, first in a->procs. NULL: no memory. */
edge_proc *edge_proc_new(edge_agent *a, const char *pod, const char *job,
                         uint32_t attempt);
/* The live (not ended) process of pod, or NULL. */
edge_proc *edge_proc_find_live(edge_agent *a, const char *pod);
/* A uv close callback for a handle embedded in an edge_proc (h->data). */
void edge_proc_handle_closed(uv_handle_t *h);
/* One embedded handle of p closed (frees p after the last, once it is
 * finishing). */
void edge_proc_unref(edge_proc *p);
/* Close h when *has says it is open, and say it is not. */
void edge_proc_close_handle(uv_handle_t *h, int *has);
/* Free p now when it is finishing and holds no handle. */
void edge_proc_maybe_free(edge_proc *p);

/* /proc/<pid>/stat start time; 0 when the process is gone. */
uint64_t edge_proc_start_ticks(pid_t pid);
/* /proc/<pid>/stat parent; 0 when the process is gone. */
pid_t edge_proc_parent(pid_t pid);

#endif
