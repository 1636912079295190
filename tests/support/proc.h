/*
 * proc.h - run the project's real binaries from tests.
 */
#ifndef LARK_TEST_PROC_H
#define LARK_TEST_PROC_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

/* $LARK_BIN_DIR/<name> (set by ctest) into out. */
const char *lt_bin(const char *name, char *out, size_t cap);

/*
 * Run argv (argv[0] a path) to completion with stdout captured into out
 * (NUL-terminated, truncated to cap-1) and stderr into err (may be NULL).
 * Returns the exit code, or 128+signal.
 */
int lt_run(char *const argv[], char *out, size_t cap, char *err, size_t errcap);

/* lt_run of the NULL-terminated arguments a0, ... (a0 a path; at most
 * 31). */
int lt_runl(char *out, size_t cap, char *err, size_t errcap, const char *a0,
            ...) __attribute__((sentinel));

/*
 * Run a shell command line (printf-style) as lt_run runs argv. Tests
 * with static out/err buffers usually define
 *   #define sh(...) lt_sh(out, sizeof out, err, sizeof err, __VA_ARGS__)
 */
int lt_sh(char *out, size_t cap, char *err, size_t errcap, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
int lt_vsh(char *out, size_t cap, char *err, size_t errcap, const char *fmt,
           va_list ap) __attribute__((format(printf, 5, 0)));

/* Start argv in the background, stdout+stderr appended to log. */
pid_t lt_spawn(char *const argv[], const char *log);
/*
 * Start service binary bin_name (from $LARK_BIN_DIR) with --url url
 * --data data and the NULL-terminated extra arguments (may be NULL; at
 * most 34), its
 * output appended to log. Returns its pid, or -1.
 */
pid_t lt_start_service(const char *bin_name, const char *url, const char *data,
                       const char *log, const char *const extra[]);
/* Send sig and reap; returns the wait status. */
int lt_kill(pid_t pid, int sig);
/* SIGKILL to the process group of each pid the file at path lists (one
 * at the start of each line): processes a test's scripts recorded, which
 * outlive the agent that started them. */
void lt_kill_groups(const char *path);

#endif
