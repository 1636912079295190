/*
 * files.h - files a test writes for the tools it runs.
 */
#ifndef LARK_TEST_FILES_H
#define LARK_TEST_FILES_H

/* Write the printf-style text to path (created or truncated). 0, or -1
 * when it could not be opened or written. */
int lt_write_file(const char *path, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
