/*
 * api_rules.c: the C API's rules, one check at a time.
 *
 * Every NULL argument, invalid UTF-8, out-params untouched on failure, NULL
 * frees, result names, the last-error message (per thread), configure and
 * set_working_dir leaving the previous state on failure, output callbacks,
 * pre-cancelled tokens, a cancel from inside the output callback, the log
 * callback (also on the library's own threads), and concurrent use of one
 * server.
 *
 * Usage: api_rules <scratch dir>   (the directory must exist and be empty)
 * Prints one line per failed check and ends with "N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bash_mcp.h"
#include "check.h"

static bash_mcp_server *const SENTINEL = (bash_mcp_server *)(void *)0x5e5e;

static void check_version(void) {
    char expected[64];
    snprintf(expected, sizeof expected, "%d.%d.%d", BASH_MCP_VERSION_MAJOR, BASH_MCP_VERSION_MINOR,
             BASH_MCP_VERSION_PATCH);
    CHECK(strcmp(expected, BASH_MCP_VERSION) == 0);
    CHECK(strcmp(bash_mcp_version(), BASH_MCP_VERSION) == 0);
}

static void check_result_names(void) {
    CHECK(strcmp(bash_mcp_result_str(BASH_MCP_RESULT_OK), "BASH_MCP_RESULT_OK") == 0);
    CHECK(strcmp(bash_mcp_result_str(BASH_MCP_RESULT_NULL_ARGUMENT), "BASH_MCP_RESULT_NULL_ARGUMENT") == 0);
    CHECK(strcmp(bash_mcp_result_str(BASH_MCP_RESULT_INVALID_UTF8), "BASH_MCP_RESULT_INVALID_UTF8") == 0);
    CHECK(strcmp(bash_mcp_result_str(BASH_MCP_RESULT_PANIC), "BASH_MCP_RESULT_PANIC") == 0);
    CHECK(strcmp(bash_mcp_result_str((bash_mcp_result)999), "BASH_MCP_RESULT_UNKNOWN") == 0);
    CHECK(strcmp(bash_mcp_result_str((bash_mcp_result)-1), "BASH_MCP_RESULT_UNKNOWN") == 0);
    /* The numbers are the ABI: they never change. */
    CHECK(BASH_MCP_RESULT_OK == 0);
    CHECK(BASH_MCP_RESULT_NULL_ARGUMENT == 1);
    CHECK(BASH_MCP_RESULT_INVALID_UTF8 == 2);
    CHECK(BASH_MCP_RESULT_INVALID_ARGUMENT == 3);
    CHECK(BASH_MCP_RESULT_INVALID_TIMEOUT == 4);
    CHECK(BASH_MCP_RESULT_WORKING_DIR_NOT_FOUND == 5);
    CHECK(BASH_MCP_RESULT_WORKING_DIR_NOT_DIRECTORY == 6);
    CHECK(BASH_MCP_RESULT_INVALID_CONFIG == 7);
    CHECK(BASH_MCP_RESULT_INVALID_TOOL_DEFINITION == 8);
    CHECK(BASH_MCP_RESULT_PANIC == 9);
}

static void check_new_failures(const char *scratch) {
    bash_mcp_server *out = SENTINEL;
    char path[4096];

    CHECK(bash_mcp_server_new(NULL, NULL, 30, &out) == BASH_MCP_RESULT_NULL_ARGUMENT);
    CHECK(out == SENTINEL);
    CHECK(last_error_has("working_dir"));
    CHECK(bash_mcp_server_new(".", NULL, 30, NULL) == BASH_MCP_RESULT_NULL_ARGUMENT);
    CHECK(last_error_has("out"));
    CHECK(bash_mcp_server_new(INVALID_UTF8, NULL, 30, &out) == BASH_MCP_RESULT_INVALID_UTF8);
    CHECK(out == SENTINEL);
    CHECK(bash_mcp_server_new(".", INVALID_UTF8, 30, &out) == BASH_MCP_RESULT_INVALID_UTF8);
    CHECK(out == SENTINEL);
    CHECK(last_error_has("data_dir"));
    CHECK(bash_mcp_server_new(".", NULL, 0, &out) == BASH_MCP_RESULT_INVALID_TIMEOUT);
    CHECK(bash_mcp_server_new(".", NULL, -5, &out) == BASH_MCP_RESULT_INVALID_TIMEOUT);
    CHECK(out == SENTINEL);
    CHECK(last_error_has("timeout"));

    snprintf(path, sizeof path, "%s/missing", scratch);
    CHECK(bash_mcp_server_new(path, NULL, 30, &out) == BASH_MCP_RESULT_WORKING_DIR_NOT_FOUND);
    CHECK(out == SENTINEL);

    snprintf(path, sizeof path, "%s/file", scratch);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
    CHECK(bash_mcp_server_new(path, NULL, 30, &out) == BASH_MCP_RESULT_WORKING_DIR_NOT_DIRECTORY);
    CHECK(out == SENTINEL);

    /* A data dir with an invalid definition file is a construction error. */
    snprintf(path, sizeof path, "%s/data", scratch);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/data/tools", scratch);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/data/tools/bash", scratch);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/data/tools/bash/execute.json", scratch);
    f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("{not json", f);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/data", scratch);
    CHECK(bash_mcp_server_new(scratch, path, 30, &out) == BASH_MCP_RESULT_INVALID_TOOL_DEFINITION);
    CHECK(out == SENTINEL);
    CHECK(last_error_has("execute.json"));
}

static void check_null_server(void) {
    CHECK(bash_mcp_server_name(NULL) == NULL);
    CHECK(bash_mcp_server_list_tools(NULL) == NULL);
    CHECK(last_error_has("server"));
    CHECK(bash_mcp_server_execute(NULL, "execute", "{}") == NULL);
    CHECK(bash_mcp_server_execute_with(NULL, "execute", "{}", NULL, NULL, NULL) == NULL);
    CHECK(bash_mcp_server_get_permission_pattern(NULL, "execute", "{}") == NULL);
    CHECK(!bash_mcp_server_skip_duplicate_check(NULL, "execute"));
    CHECK(bash_mcp_server_configure(NULL, "{}") == BASH_MCP_RESULT_NULL_ARGUMENT);
    CHECK(bash_mcp_server_set_working_dir(NULL, ".") == BASH_MCP_RESULT_NULL_ARGUMENT);
    CHECK(bash_mcp_server_working_dir(NULL) == NULL);
    CHECK(bash_mcp_server_timeout(NULL) == -1);
    CHECK(bash_mcp_server_timeout_ms(NULL) == -1);
    /* Freeing NULL does nothing, however often. */
    bash_mcp_server_free(NULL);
    bash_mcp_server_free(NULL);
    bash_mcp_string_free(NULL);
    bash_mcp_string_free(NULL);
    bash_mcp_cancel_token_free(NULL);
    bash_mcp_cancel_token_cancel(NULL);
    CHECK(!bash_mcp_cancel_token_is_cancelled(NULL));
}

static void check_bad_strings(bash_mcp_server *server) {
    CHECK(bash_mcp_server_execute(server, NULL, "{}") == NULL);
    CHECK(last_error_has("tool_name"));
    CHECK(bash_mcp_server_execute(server, "execute", NULL) == NULL);
    CHECK(last_error_has("args_json"));
    CHECK(bash_mcp_server_execute(server, INVALID_UTF8, "{}") == NULL);
    CHECK(last_error_has("UTF-8"));
    CHECK(bash_mcp_server_execute(server, "execute", "{\"command\": \"" INVALID_UTF8 "\"}") == NULL);
    CHECK(last_error_has("UTF-8"));
    CHECK(bash_mcp_server_execute_with(server, NULL, "{}", NULL, NULL, NULL) == NULL);
    CHECK(bash_mcp_server_get_permission_pattern(server, NULL, "{}") == NULL);
    CHECK(bash_mcp_server_get_permission_pattern(server, "execute", NULL) == NULL);
    CHECK(bash_mcp_server_get_permission_pattern(server, "execute", INVALID_UTF8) == NULL);
    CHECK(!bash_mcp_server_skip_duplicate_check(server, NULL));
    CHECK(!bash_mcp_server_skip_duplicate_check(server, INVALID_UTF8));
    CHECK(bash_mcp_server_configure(server, NULL) == BASH_MCP_RESULT_NULL_ARGUMENT);
    CHECK(bash_mcp_server_configure(server, INVALID_UTF8) == BASH_MCP_RESULT_INVALID_UTF8);
    CHECK(bash_mcp_server_set_working_dir(server, NULL) == BASH_MCP_RESULT_NULL_ARGUMENT);
    CHECK(bash_mcp_server_set_working_dir(server, INVALID_UTF8) == BASH_MCP_RESULT_INVALID_UTF8);
}

static void check_calls(bash_mcp_server *server, const char *scratch) {
    CHECK(strcmp(bash_mcp_server_name(server), "bash") == 0);
    CHECK(take_has(bash_mcp_server_list_tools(server), "\"inputSchema\""));
    CHECK(take_has(bash_mcp_server_execute(server, "execute", "{\"command\": \"echo hi\"}"),
                   "\"result\":\"{"));
    CHECK(take_has(bash_mcp_server_execute(server, "bash.execute", "{\"command\": \"exit 7\"}"),
                   "\\\"exit_code\\\":7"));
    /* Refused calls are results, exactly as the Rust API returns them. */
    CHECK(take_has(bash_mcp_server_execute(server, "nope", "{}"), "unknown_tool"));
    CHECK(take_has(bash_mcp_server_execute(server, "execute", "[1]"), "invalid_json"));
    CHECK(take_has(bash_mcp_server_execute(server, "execute", ""), "\"directives\":[]"));
    CHECK(take_has(bash_mcp_server_get_permission_pattern(server, "bash.execute", "{\"command\": \"ls\"}"),
                   "bash.execute"));
    CHECK(!bash_mcp_server_skip_duplicate_check(server, "execute"));

    /* configure: failures name the key and leave the configuration alone. */
    CHECK(bash_mcp_server_timeout(server) == 30);
    CHECK(bash_mcp_server_configure(server, "{\"timeout_seconds\": 2.5}") == BASH_MCP_RESULT_OK);
    CHECK(bash_mcp_server_timeout(server) == 3);
    CHECK(bash_mcp_server_timeout_ms(server) == 2500);
    CHECK(bash_mcp_server_configure(server, "{\"timeout_seconds\": 9, \"bogus\": 1}") ==
          BASH_MCP_RESULT_INVALID_CONFIG);
    CHECK(last_error_has("bogus"));
    CHECK(bash_mcp_server_configure(server, "{not json") == BASH_MCP_RESULT_INVALID_CONFIG);
    CHECK(bash_mcp_server_timeout_ms(server) == 2500);

    /* set_working_dir: failures leave the directory alone. */
    CHECK(bash_mcp_server_set_working_dir(server, scratch) == BASH_MCP_RESULT_OK);
    char *before = bash_mcp_server_working_dir(server);
    CHECK(before != NULL && strstr(before, scratch) != NULL);
    CHECK(bash_mcp_server_set_working_dir(server, "/nonexistent/dir") ==
          BASH_MCP_RESULT_WORKING_DIR_NOT_FOUND);
    char after_path[4096];
    snprintf(after_path, sizeof after_path, "%s/file", scratch);
    CHECK(bash_mcp_server_set_working_dir(server, after_path) ==
          BASH_MCP_RESULT_WORKING_DIR_NOT_DIRECTORY);
    char *after = bash_mcp_server_working_dir(server);
    CHECK(before != NULL && after != NULL && strcmp(before, after) == 0);
    bash_mcp_string_free(before);
    bash_mcp_string_free(after);
    CHECK(take_has(bash_mcp_server_execute(server, "execute", "{\"command\": \"pwd\"}"), scratch));
}

/* A host's sandbox for one call: a read-only one on this unsandboxed server
 * keeps the command from writing (or, where no backend works, the call fails
 * typed: never an unconfined run); bad sandbox JSON is refused, naming it. */
static void check_run_in_sandbox(bash_mcp_server *server, const char *scratch) {
    char path[2048], args[2200];
    snprintf(path, sizeof path, "%s/host-sandboxed", scratch);
    snprintf(args, sizeof args, "{\"command\": \"echo x > '%s'\"}", path);
    bash_mcp_exec_result *result = NULL;
    CHECK(bash_mcp_server_run_in_sandbox(server, args, "{\"mode\": \"read-only\"}", NULL, NULL, NULL,
                                         &result) == BASH_MCP_RESULT_OK);
    CHECK(result != NULL);
    const char *error = bash_mcp_exec_result_error_code(result);
    CHECK((error == NULL && bash_mcp_exec_result_exit_code(result) != 0) ||
          (error != NULL && strcmp(error, "sandbox_unavailable") == 0));
    bash_mcp_exec_result_free(result);
    FILE *written = fopen(path, "r");
    CHECK(written == NULL);
    if (written != NULL) {
        fclose(written);
    }

    result = NULL;
    CHECK(bash_mcp_server_run_in_sandbox(server, args, "{\"mode\": \"strict\"}", NULL, NULL, NULL, &result) ==
          BASH_MCP_RESULT_INVALID_ARGUMENT);
    CHECK(result == NULL && last_error_has("sandbox.mode"));
    CHECK(bash_mcp_server_run_in_sandbox(server, args, "[]", NULL, NULL, NULL, &result) ==
          BASH_MCP_RESULT_INVALID_ARGUMENT);
    CHECK(result == NULL && last_error_has("sandbox_json"));
    CHECK(bash_mcp_server_run_in_sandbox(server, args, NULL, NULL, NULL, NULL, &result) ==
          BASH_MCP_RESULT_NULL_ARGUMENT);

    /* Without a sandbox of its own the same call writes: the host's sandbox
     * held for that one call only. */
    CHECK(bash_mcp_server_run_with(server, args, NULL, NULL, NULL, &result) == BASH_MCP_RESULT_OK);
    CHECK(result != NULL && bash_mcp_exec_result_exit_code(result) == 0);
    bash_mcp_exec_result_free(result);
    written = fopen(path, "r");
    CHECK(written != NULL);
    if (written != NULL) {
        fclose(written);
        remove(path);
    }
}

struct collected {
    char text[256];
    size_t len;
    int chunks;
    int bad_stream;
};

static void collect(const char *chunk, size_t len, bash_mcp_output_stream stream, void *user_data) {
    struct collected *c = user_data;
    if (stream != BASH_MCP_OUTPUT_STREAM_STDOUT && stream != BASH_MCP_OUTPUT_STREAM_STDERR) {
        c->bad_stream++;
    }
    if (c->len + len < sizeof c->text) {
        memcpy(c->text + c->len, chunk, len);
        c->len += len;
    }
    c->chunks++;
}

/* Cancels the call's token from inside the output callback, on the first chunk. */
struct cancel_in_callback {
    bash_mcp_cancel_token *token;
    int chunks;
    int cancelled_seen;
};

static void cancel_on_first_chunk(const char *chunk, size_t len, bash_mcp_output_stream stream,
                                  void *user_data) {
    struct cancel_in_callback *c = user_data;
    (void)chunk;
    (void)len;
    (void)stream;
    c->chunks++;
    bash_mcp_cancel_token_cancel(c->token);
    c->cancelled_seen = bash_mcp_cancel_token_is_cancelled(c->token);
}

static void check_cancel_from_the_callback(bash_mcp_server *server) {
    struct cancel_in_callback c = {bash_mcp_cancel_token_new(), 0, 0};
    CHECK(c.token != NULL);
    double start = now();
    char *result = bash_mcp_server_execute_with(
        server, "execute", "{\"command\": \"echo first; sleep 30; echo never\"}", c.token,
        cancel_on_first_chunk, &c);
    double took = now() - start;
    CHECK(c.chunks == 1);
    CHECK(c.cancelled_seen);
    CHECK(took < 20.0); /* the cancel, not the 30 s sleep, ended it */
    CHECK(result != NULL && strstr(result, "\\\"error\\\":\\\"cancelled\\\"") != NULL);
    /* The partial output is kept; nothing after the cancel ran. */
    CHECK(take_has(result, "\\\"output\\\":\\\"first\\\\n\\\""));
    bash_mcp_cancel_token_free(c.token);
}

static void check_callbacks_and_cancel(bash_mcp_server *server) {
    struct collected c = {{0}, 0, 0, 0};
    char *result = bash_mcp_server_execute_with(server, "execute", "{\"command\": \"printf 'a\\\\0b'\"}",
                                                NULL, collect, &c);
    CHECK(result != NULL);
    CHECK(c.chunks >= 1 && c.bad_stream == 0);
    CHECK(c.len == 3 && memcmp(c.text, "a\0b", 3) == 0); /* raw bytes, NUL included */
    bash_mcp_string_free(result);

    /* A callback with separate streams sees both. */
    struct collected s = {{0}, 0, 0, 0};
    result = bash_mcp_server_execute_with(
        server, "execute", "{\"command\": \"echo out; echo err >&2\", \"streams\": \"separate\"}", NULL,
        collect, &s);
    CHECK(take_has(result, "\\\"stderr\\\":\\\"err\\\\n\\\""));
    CHECK(s.len == 8);

    /* NULL callback and NULL token are allowed. */
    CHECK(take_has(bash_mcp_server_execute_with(server, "execute", "{\"command\": \"true\"}", NULL, NULL,
                                                NULL),
                   "\\\"exit_code\\\":0"));

    /* A token cancelled before the call: the call returns at once, cancelled. */
    bash_mcp_cancel_token *token = bash_mcp_cancel_token_new();
    CHECK(token != NULL);
    CHECK(!bash_mcp_cancel_token_is_cancelled(token));
    bash_mcp_cancel_token_cancel(token);
    bash_mcp_cancel_token_cancel(token); /* idempotent */
    CHECK(bash_mcp_cancel_token_is_cancelled(token));
    CHECK(take_has(bash_mcp_server_execute_with(server, "execute", "{\"command\": \"sleep 30\"}", token,
                                                NULL, NULL),
                   "cancelled"));
    bash_mcp_cancel_token_free(token);

    check_cancel_from_the_callback(server);
}

/* Counts records by the thread that delivered them. The callback runs on
   several threads at once, so it only touches atomics. */
struct thread_seen {
    pthread_t caller;
    atomic_int on_caller;
    atomic_int on_other;
    atomic_int other_from_library; /* with a bash_mcp target and a message */
};

static void on_log_thread(bash_mcp_log_level level, const char *target, const char *message,
                          void *user_data) {
    struct thread_seen *seen = user_data;
    (void)level;
    if (pthread_equal(pthread_self(), seen->caller)) {
        atomic_fetch_add(&seen->on_caller, 1);
        return;
    }
    atomic_fetch_add(&seen->on_other, 1);
    if (target != NULL && message != NULL && strncmp(target, "bash_mcp", 8) == 0 && message[0] != '\0') {
        atomic_fetch_add(&seen->other_from_library, 1);
    }
}

/* A background job runs on a library thread: its records arrive there. */
static void check_log_from_library_threads(bash_mcp_server *server) {
    struct thread_seen seen;
    seen.caller = pthread_self();
    atomic_init(&seen.on_caller, 0);
    atomic_init(&seen.on_other, 0);
    atomic_init(&seen.other_from_library, 0);
    CHECK(bash_mcp_set_log_callback(on_log_thread, &seen, BASH_MCP_LOG_LEVEL_DEBUG) == BASH_MCP_RESULT_OK);

    char *started = bash_mcp_server_execute(server, "execute",
                                            "{\"command\": \"echo in the background\", \"background\": true}");
    char job_id[128] = "";
    const char *key = "\\\"job_id\\\":\\\"";
    const char *at = started ? strstr(started, key) : NULL;
    if (at != NULL) {
        at += strlen(key);
        size_t n = 0;
        while (at[n] != '\0' && at[n] != '\\' && n + 1 < sizeof job_id) n++;
        memcpy(job_id, at, n);
        job_id[n] = '\0';
    }
    CHECK(job_id[0] != '\0');
    bash_mcp_string_free(started);

    char args[256];
    snprintf(args, sizeof args, "{\"job_id\": \"%s\", \"wait_seconds\": 20}", job_id);
    CHECK(take_has(bash_mcp_server_execute(server, "job_status", args), "in the background\\\\n"));

    /* Replacing the callback waits for callbacks running on other threads. */
    CHECK(bash_mcp_set_log_callback(NULL, NULL, BASH_MCP_LOG_LEVEL_OFF) == BASH_MCP_RESULT_OK);
    CHECK(atomic_load(&seen.on_other) >= 1);
    CHECK(atomic_load(&seen.other_from_library) >= 1);
    if (atomic_load(&seen.on_other) < 1) {
        printf("  records: %d on the calling thread, %d on others\n", atomic_load(&seen.on_caller),
               atomic_load(&seen.on_other));
    }
}

struct log_seen {
    int debug_records;
    int bash_mcp_target;
};

static void on_log(bash_mcp_log_level level, const char *target, const char *message, void *user_data) {
    struct log_seen *seen = user_data;
    (void)message;
    if (level == BASH_MCP_LOG_LEVEL_DEBUG) seen->debug_records++;
    if (strncmp(target, "bash_mcp", 8) == 0) seen->bash_mcp_target++;
}

static void check_log(bash_mcp_server *server) {
    struct log_seen seen = {0, 0};
    CHECK(bash_mcp_set_log_callback(on_log, &seen, (bash_mcp_log_level)99) ==
          BASH_MCP_RESULT_INVALID_ARGUMENT);
    CHECK(bash_mcp_set_log_callback(on_log, &seen, BASH_MCP_LOG_LEVEL_INFO) == BASH_MCP_RESULT_OK);
    bash_mcp_string_free(bash_mcp_server_execute(server, "execute", "{\"command\": \"true\"}"));
    CHECK(seen.debug_records == 0); /* debug records are above INFO */
    CHECK(bash_mcp_set_log_callback(on_log, &seen, BASH_MCP_LOG_LEVEL_DEBUG) == BASH_MCP_RESULT_OK);
    bash_mcp_string_free(bash_mcp_server_execute(server, "execute", "{\"command\": \"true\"}"));
    CHECK(seen.debug_records >= 1);
    CHECK(seen.bash_mcp_target >= 1);
    CHECK(bash_mcp_set_log_callback(NULL, NULL, BASH_MCP_LOG_LEVEL_DEBUG) == BASH_MCP_RESULT_OK);
    int before = seen.debug_records;
    bash_mcp_string_free(bash_mcp_server_execute(server, "execute", "{\"command\": \"true\"}"));
    CHECK(seen.debug_records == before);

    check_log_from_library_threads(server);
}

struct worker {
    bash_mcp_server *server;
    int index;
    int ok;
    int saw_own_error;
};

static void *work(void *arg) {
    struct worker *w = arg;
    char args[128], expect[64];
    snprintf(args, sizeof args, "{\"command\": \"sleep 0.2; echo worker-%d\"}", w->index);
    snprintf(expect, sizeof expect, "worker-%d", w->index);
    char *result = bash_mcp_server_execute(w->server, "execute", args);
    w->ok = result != NULL && strstr(result, expect) != NULL;
    bash_mcp_string_free(result);
    /* The last error is per thread. */
    bash_mcp_server_configure(w->server, "{\"thread_only_key\": 1}");
    char *message = bash_mcp_last_error_message();
    w->saw_own_error = message != NULL && strstr(message, "thread_only_key") != NULL;
    bash_mcp_string_free(message);
    return NULL;
}

static void check_threads(bash_mcp_server *server) {
    enum { N = 4 };
    pthread_t threads[N];
    struct worker workers[N];
    CHECK(bash_mcp_server_configure(server, "{\"main_only_key\": 1}") == BASH_MCP_RESULT_INVALID_CONFIG);
    for (int i = 0; i < N; i++) {
        workers[i] = (struct worker){server, i, 0, 0};
        CHECK(pthread_create(&threads[i], NULL, work, &workers[i]) == 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(threads[i], NULL);
        CHECK(workers[i].ok);
        CHECK(workers[i].saw_own_error);
    }
    CHECK(last_error_has("main_only_key"));
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: api_rules <scratch dir>\n");
        return 2;
    }
    const char *scratch = argv[1];

    CHECK(bash_mcp_last_error_message() == NULL); /* nothing has failed yet */
    check_version();
    check_result_names();
    check_new_failures(scratch);
    check_null_server();

    bash_mcp_server *server = SENTINEL;
    CHECK(bash_mcp_server_new(scratch, NULL, 30, &server) == BASH_MCP_RESULT_OK);
    CHECK(server != SENTINEL && server != NULL);
    if (server != SENTINEL && server != NULL) {
        check_bad_strings(server);
        check_calls(server, scratch);
        check_run_in_sandbox(server, scratch);
        check_callbacks_and_cancel(server);
        check_log(server);
        check_threads(server);
        bash_mcp_server_free(server);
    }

    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
