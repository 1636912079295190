/*
 * wait.h - sleeping and polling with deadlines, for tests and benches.
 */
#ifndef LARK_TEST_WAIT_H
#define LARK_TEST_WAIT_H

#include <stdint.h>

/* Sleep ms milliseconds. */
void lt_sleep_ms(int ms);

/* Milliseconds on the monotonic clock. */
int64_t lt_now_ms(void);

/* Whether file contains what (1), checked every 100 ms for up to
 * seconds; 0 when it did not by then. */
int lt_file_says(const char *file, const char *what, int seconds);

/* Whether path exists (1), checked every 100 ms for up to seconds. */
int lt_wait_file(const char *path, int seconds);

#endif
