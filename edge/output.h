/*
 * output.h - private to edge/: a pod's stdout and stderr, and the lines
 * its scripts log through its socket, sent in batches (output.c). Uses
 * the process record, the sender and utf8. Loop.
 */
#ifndef LARK_EDGE_OUTPUT_H
#define LARK_EDGE_OUTPUT_H

#include "proc.h"

int edge_stream_open(edge_proc *p, edge_stream *s, const char *path,
                     const char *name);
void edge_stream_close(edge_stream *s);
/* Read what is left in s's FIFO now (its process ended), its last line
 * too when it has no newline. */
void edge_stream_drain(edge_stream *s);
/* One line (any length) of the pod's stream "stdout" or "stderr". */
void edge_proc_log(edge_proc *p, const char *stream, const char *text,
                   size_t len);
/* Send p's pending lines. */
void edge_proc_flush(edge_proc *p);
/* Send every pod's pending lines. */
void edge_output_flush_all(edge_agent *a);

#endif
