/*
 * session_view.c: a host that draws a session's terminal itself. It
 * subscribes to the session's output (a replay, then live bytes), sees the
 * agent's command as typed, resizes the terminal, and types a password a
 * person entered into a secret prompt, which the agent's result never shows.
 *
 * Build (see the README's "Using from C and C++"), from the crate root:
 *   cargo build --release
 *   cc -std=c11 -Wall -Wextra -Werror -pthread -I include examples/c/session_view.c \
 *      -L target/release -Wl,-rpath,"$PWD/target/release" -lbash_mcp -o session_view
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bash_mcp.h"

/* What the host's "screen" received; the callback runs on another thread. */
static pthread_mutex_t screen_lock = PTHREAD_MUTEX_INITIALIZER;
static char screen[1 << 16];
static size_t screen_len;
static int closed;

static void on_terminal(bash_mcp_terminal_event event, const char *bytes, size_t len, void *user_data) {
    (void)user_data;
    pthread_mutex_lock(&screen_lock);
    if (event == BASH_MCP_TERMINAL_EVENT_CLOSED) {
        closed = 1;
    } else {
        size_t room = sizeof screen - 1 - screen_len;
        size_t n = len < room ? len : room;
        memcpy(screen + screen_len, bytes, n);
        screen_len += n;
        screen[screen_len] = '\0';
    }
    pthread_mutex_unlock(&screen_lock);
}

static int failures;

static void check(int ok, const char *what) {
    printf("%s: %s\n", ok ? "ok" : "FAILED", what);
    if (!ok) {
        failures++;
    }
}

/* Waits (up to 30 s, a hang guard) until the screen holds `needle`. */
static int screen_shows(const char *needle) {
    for (int i = 0; i < 3000; i++) {
        pthread_mutex_lock(&screen_lock);
        int found = strstr(screen, needle) != NULL;
        pthread_mutex_unlock(&screen_lock);
        if (found) {
            return 1;
        }
        struct timespec tick = {0, 10 * 1000 * 1000};
        nanosleep(&tick, NULL);
    }
    return 0;
}

/* Calls a tool; the caller frees the envelope with bash_mcp_string_free(). */
static char *tool(bash_mcp_server *server, const char *name, const char *args) {
    char *envelope = bash_mcp_server_execute(server, name, args);
    if (envelope == NULL) {
        fprintf(stderr, "%s returned NULL\n", name);
        exit(1);
    }
    return envelope;
}

/* Copies the string value of `key` out of an envelope's escaped result. */
static void field(const char *envelope, const char *key, char *out, size_t size) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\\\"%s\\\":\\\"", key);
    const char *at = strstr(envelope, pattern);
    size_t n = 0;
    if (at != NULL) {
        at += strlen(pattern);
        while (at[n] != '\0' && at[n] != '\\' && n + 1 < size) {
            n++;
        }
        memcpy(out, at, n);
    }
    out[n] = '\0';
}

int main(void) {
    bash_mcp_server *server = NULL;
    if (bash_mcp_server_new(".", NULL, 30, &server) != BASH_MCP_RESULT_OK ||
        bash_mcp_server_configure(server, "{\"sessions\": {\"enabled\": true}}") != BASH_MCP_RESULT_OK) {
        fprintf(stderr, "could not create a server with sessions\n");
        return 1;
    }
    char *started = tool(server, "session_start", "{}");
    char id[64], name[64];
    field(started, "session_id", id, sizeof id);
    field(started, "attach_name", name, sizeof name);
    bash_mcp_string_free(started);
    check(strlen(id) == 32 && name[0] != '\0', "session_start gives an id and a name");

    /* Arguments are checked before anything happens. */
    bash_mcp_subscription *subscription = NULL;
    check(bash_mcp_session_subscribe(server, name, NULL, NULL, &subscription) == BASH_MCP_RESULT_NULL_ARGUMENT,
          "a NULL callback is refused");
    check(bash_mcp_session_subscribe(server, "no-such-session", on_terminal, NULL, &subscription) ==
              BASH_MCP_RESULT_INVALID_ARGUMENT && subscription == NULL,
          "an unknown session is refused, out untouched");
    check(bash_mcp_session_subscribe(server, name, on_terminal, NULL, &subscription) == BASH_MCP_RESULT_OK,
          "subscribe by name");

    char args[512];
    snprintf(args, sizeof args, "{\"session_id\": \"%s\", \"command\": \"echo hello-$((40+2))\"}", id);
    char *result = tool(server, "session_run", args);
    check(strstr(result, "people_watching") != NULL, "the agent is told someone watches");
    bash_mcp_string_free(result);
    check(screen_shows("$ echo hello-$((40+2))\r\nhello-42\r\n"), "the view shows the command as typed, then its output");

    check(bash_mcp_session_resize(server, name, 30, 90) == BASH_MCP_RESULT_OK, "resize");
    check(bash_mcp_session_resize(server, name, 0, 90) == BASH_MCP_RESULT_INVALID_ARGUMENT, "a size of 0 is refused");
    snprintf(args, sizeof args, "{\"session_id\": \"%s\", \"command\": \"stty size\"}", id);
    result = tool(server, "session_run", args);
    check(strstr(result, "30 90") != NULL, "the program sees the new size");
    bash_mcp_string_free(result);

    /* A secret prompt: the person types the password into the view. */
    snprintf(args, sizeof args,
             "{\"session_id\": \"%s\", \"timeout_seconds\": 10, \"command\": "
             "\"read -r -s -p 'Password: ' pw; echo; echo length ${#pw}\"}",
             id);
    result = tool(server, "session_run", args);
    char attach[128];
    snprintf(attach, sizeof attach, "bash-mcp attach %s", name);
    check(strstr(result, "\\\"secret_prompt\\\":true") != NULL && strstr(result, attach) != NULL,
          "the agent is told to have a person type the secret");
    bash_mcp_string_free(result);
    check(screen_shows("Password: "), "the view shows the prompt");
    check(bash_mcp_session_write(server, name, "s3cr3t\r", 7) == BASH_MCP_RESULT_OK, "the person types");
    snprintf(args, sizeof args, "{\"session_id\": \"%s\", \"timeout_seconds\": 30}", id);
    result = tool(server, "session_wait", args);
    check(strstr(result, "length 6") != NULL && strstr(result, "person_typed") != NULL, "the command finished");
    check(strstr(result, "s3cr3t") == NULL, "the password is not in the agent's result");
    bash_mcp_string_free(result);
    pthread_mutex_lock(&screen_lock);
    check(strstr(screen, "s3cr3t") == NULL, "the password was not echoed");
    pthread_mutex_unlock(&screen_lock);

    snprintf(args, sizeof args, "{\"session_id\": \"%s\"}", id);
    bash_mcp_string_free(tool(server, "session_close", args));
    pthread_mutex_lock(&screen_lock);
    check(closed, "closing the session tells the subscriber");
    pthread_mutex_unlock(&screen_lock);

    bash_mcp_subscription_free(subscription);
    bash_mcp_subscription_free(NULL);
    bash_mcp_server_free(server);
    printf("%d failed\n", failures);
    return failures == 0 ? 0 : 1;
}
