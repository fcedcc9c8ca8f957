/*
 * check.h: the tiny check harness the C test programs share.
 *
 * CHECK(cond) counts a passed or failed check and prints the failed ones; a
 * program ends with printf("%d passed, %d failed\n", passed, failed), the
 * line tests/c_api.rs reads.
 */
#ifndef BASH_MCP_TESTS_CHECK_H
#define BASH_MCP_TESTS_CHECK_H

#include <stdio.h>
#include <time.h>

static int passed, failed;

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (cond) {                                                        \
            passed++;                                                      \
        } else {                                                           \
            failed++;                                                      \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);         \
        }                                                                  \
    } while (0)

/* Seconds on the monotonic clock (the program defines _POSIX_C_SOURCE). */
static inline double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

#ifdef BASH_MCP_H
#include <string.h>

#define INVALID_UTF8 "\xff\xfe bad"

/* Whether the last error message exists and contains `needle`. */
static inline int last_error_has(const char *needle) {
    char *message = bash_mcp_last_error_message();
    int found = message != NULL && strstr(message, needle) != NULL;
    if (!found) {
        printf("  last error: %s (wanted \"%s\")\n", message ? message : "(null)", needle);
    }
    bash_mcp_string_free(message);
    return found;
}

/* Whether `s` is non-NULL and contains `needle`; frees `s`. */
static inline int take_has(char *s, const char *needle) {
    int found = s != NULL && strstr(s, needle) != NULL;
    if (!found) {
        printf("  got: %s (wanted \"%s\")\n", s ? s : "(null)", needle);
    }
    bash_mcp_string_free(s);
    return found;
}
#endif

#endif
