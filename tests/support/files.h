/*
 * files.h - files a test writes for the tools it runs.
 */
#ifndef LARK_TEST_FILES_H
#define LARK_TEST_FILES_H

#include <stddef.h>

/* Write the printf-style text to path (created or truncated). 0, or -1
 * when it could not be opened or written. */
int lt_write_file(const char *path, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Read path into buf (NUL-terminated, cut at cap-1 bytes): buf, or NULL
 * (buf "") when it cannot be opened. */
char *lt_read_file(const char *path, char *buf, size_t cap);

/* The lines of path (its newlines); 0 when it cannot be read. */
int lt_lines_of(const char *path);

/* The pid a process wrote to path (a pod's `echo $$ > path`), looked for
 * every 100 ms for up to seconds; 0 when there was none. */
int lt_pid_in(const char *path, int seconds);

/* Make path writable (0644) and XOR its byte at off with mask, its size
 * unchanged: a file damaged in place. 0, or -1 when it could not be
 * made writable, opened, or has no byte at off. */
int lt_flip_byte(const char *path, long off, int mask);

#endif
