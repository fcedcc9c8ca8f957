/*
 * mcp_handler.c: the MCP protocol handler from C, as a host carrying MCP over
 * its own channel uses it.
 *
 * NULL arguments, out-params untouched on failure, the handshake, tools/list
 * (with output_read, which every cut result names),
 * a tools/call whose response arrives through the callback on a worker
 * thread, a ping while a call runs, parse errors for invalid JSON and UTF-8,
 * a cancellation that sends nothing, and a free that stops running calls.
 *
 * Usage: mcp_handler
 * Prints one line per failed check and ends with "N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bash_mcp.h"
#include "check.h"

/* Messages the handler sent through the callback, guarded by a mutex. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char received[64][4096];
static int received_count;
static int main_thread_called;
static pthread_t main_thread;

static void on_message(const char *message, size_t len, void *user_data) {
    pthread_mutex_lock(&lock);
    if (pthread_equal(pthread_self(), main_thread)) {
        main_thread_called = 1;
    }
    if (received_count < 64 && len < sizeof received[0] && strlen(message) == len) {
        memcpy(received[received_count], message, len + 1);
        received_count++;
    }
    (*(int *)user_data)++;
    pthread_mutex_unlock(&lock);
}

/* Waits up to `ms` for a received message containing `needle`; 1 if found. */
static int wait_for(const char *needle, int ms) {
    for (int waited = 0; waited <= ms; waited += 10) {
        pthread_mutex_lock(&lock);
        for (int i = 0; i < received_count; i++) {
            if (strstr(received[i], needle) != NULL) {
                pthread_mutex_unlock(&lock);
                return 1;
            }
        }
        pthread_mutex_unlock(&lock);
        struct timespec ten_ms = {0, 10 * 1000 * 1000};
        nanosleep(&ten_ms, NULL);
    }
    return 0;
}

/* Sends `message`; returns whether the immediate reply contains `needle`
 * ("" expects an empty reply). */
static int reply_has(bash_mcp_mcp_handler *h, const char *message, const char *needle) {
    char *reply = bash_mcp_mcp_handler_handle_message(h, message, strlen(message));
    int ok = reply != NULL && (needle[0] == '\0' ? reply[0] == '\0' : strstr(reply, needle) != NULL);
    if (!ok) {
        printf("  reply to %s: %s (wanted \"%s\")\n", message, reply ? reply : "(null)", needle);
    }
    bash_mcp_string_free(reply);
    return ok;
}

int main(void) {
    main_thread = pthread_self();
    bash_mcp_server *server = NULL;
    CHECK(bash_mcp_server_new(".", NULL, 30, &server) == BASH_MCP_RESULT_OK);
    int calls = 0;

    /* NULL arguments; the out-param is untouched on failure. */
    bash_mcp_mcp_handler *sentinel = (bash_mcp_mcp_handler *)(void *)0x5e5e;
    bash_mcp_mcp_handler *h = sentinel;
    CHECK(bash_mcp_mcp_handler_new(NULL, on_message, &calls, &h) == BASH_MCP_RESULT_NULL_ARGUMENT);
    CHECK(bash_mcp_mcp_handler_new(server, NULL, &calls, &h) == BASH_MCP_RESULT_NULL_ARGUMENT);
    CHECK(h == sentinel);
    CHECK(bash_mcp_mcp_handler_new(server, on_message, &calls, NULL) == BASH_MCP_RESULT_NULL_ARGUMENT);
    CHECK(bash_mcp_mcp_handler_handle_message(NULL, "{}", 2) == NULL);
    bash_mcp_mcp_handler_free(NULL);

    CHECK(bash_mcp_mcp_handler_new(server, on_message, &calls, &h) == BASH_MCP_RESULT_OK);
    CHECK(h != NULL && h != sentinel);
    /* The handler keeps its own reference: the server handle can go now. */
    bash_mcp_server_free(server);
    CHECK(bash_mcp_mcp_handler_handle_message(h, NULL, 5) == NULL);

    CHECK(reply_has(h,
                    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
                    "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"c\",\"version\":\"1\"}}}",
                    "\"protocolVersion\":\"2025-11-25\""));
    CHECK(reply_has(h, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", ""));
    CHECK(reply_has(h, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", "\"name\":\"execute\""));
    /* A cut result names output_read: the C route offers it too. */
    CHECK(reply_has(h, "{\"jsonrpc\":\"2.0\",\"id\":20,\"method\":\"tools/list\"}", "\"name\":\"output_read\""));
    CHECK(reply_has(h, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"no/such\"}", "-32601"));
    CHECK(reply_has(h, "{not json", "-32700"));
    CHECK(reply_has(h, "\xff\xfe", "-32700"));

    /* A call: nothing now, the response later through the callback. */
    CHECK(reply_has(h,
                    "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"execute\","
                    "\"arguments\":{\"command\":\"sleep 0.3; echo from-c; exit 3\"}}}",
                    ""));
    /* The handler keeps answering while the call runs. */
    CHECK(reply_has(h, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}", "\"result\":{}"));
    CHECK(wait_for("from-c", 10000));
    CHECK(wait_for("\"id\":4", 100));
    CHECK(wait_for("\"exit_code\":3", 100));

    /* A cancelled call sends nothing at all. */
    CHECK(reply_has(h,
                    "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"execute\","
                    "\"arguments\":{\"command\":\"sleep 30\"}}}",
                    ""));
    CHECK(reply_has(h,
                    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":6}}",
                    ""));
    CHECK(!wait_for("\"id\":6", 500));

    /* A call still running when the handler is freed is stopped. */
    CHECK(reply_has(h,
                    "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"execute\","
                    "\"arguments\":{\"command\":\"sleep 30\"}}}",
                    ""));
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    bash_mcp_mcp_handler_free(h);
    clock_gettime(CLOCK_MONOTONIC, &end);
    double seconds = (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
    CHECK(seconds < 20.0); /* stopped, not waited for (sleep 30) */
    pthread_mutex_lock(&lock);
    int after_free = calls;
    CHECK(!main_thread_called);
    pthread_mutex_unlock(&lock);
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    CHECK(calls == after_free);

    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
