/*
 * panic_boundary.c: a panic inside an exported function stops at the
 * boundary and gives the value the function documents for it.
 *
 * Needs a library built with debug assertions: there, the environment
 * variable BASH_MCP_TEST_FORCE_PANIC=1 makes the body of every exported
 * function panic. The program sets it only around the calls under test (no
 * other thread runs then), so the server is made, and checked afterwards,
 * normally.
 *
 * Usage: panic_boundary <scratch dir>
 * Prints each execute envelope as "envelope <name>: <json>" (tests/c_api.rs
 * parses them) and ends with "N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bash_mcp.h"
#include "check.h"

#define FORCE_PANIC "BASH_MCP_TEST_FORCE_PANIC"

static bash_mcp_server *const SENTINEL = (bash_mcp_server *)(void *)0x5e5e;

static void on_message(const char *message, size_t len, void *user_data) {
    (void)message;
    (void)len;
    (void)user_data;
}

static void on_output(const char *chunk, size_t len, bash_mcp_output_stream stream, void *user_data) {
    (void)chunk;
    (void)len;
    (void)stream;
    ++*(int *)user_data;
}

/* Prints an envelope for the Rust side and checks it names an internal error. */
static void check_envelope(const char *name, char *envelope) {
    CHECK(envelope != NULL);
    CHECK(envelope != NULL && strstr(envelope, "\\\"error\\\":\\\"internal\\\"") != NULL);
    printf("envelope %s: %s\n", name, envelope ? envelope : "(null)");
    bash_mcp_string_free(envelope);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: panic_boundary <scratch dir>\n");
        return 2;
    }
    const char *scratch = argv[1];

    bash_mcp_server *server = NULL;
    CHECK(bash_mcp_server_new(scratch, NULL, 30, &server) == BASH_MCP_RESULT_OK);
    bash_mcp_cancel_token *token = bash_mcp_cancel_token_new();
    const char *allow[] = {"bash.execute:git *"};
    bash_mcp_policy *policy = NULL;
    CHECK(bash_mcp_policy_new(allow, 1, NULL, 0, &policy) == BASH_MCP_RESULT_OK);
    bash_mcp_mcp_handler *handler = NULL;
    CHECK(bash_mcp_mcp_handler_new(server, on_message, NULL, &handler) == BASH_MCP_RESULT_OK);
    if (server == NULL || token == NULL || policy == NULL || handler == NULL) {
        printf("%d passed, %d failed\n", passed, failed);
        return 1;
    }

    CHECK(setenv(FORCE_PANIC, "1", 1) == 0);

    /* Functions returning a result code give BASH_MCP_RESULT_PANIC and leave
       their out-parameter alone. */
    bash_mcp_server *out = SENTINEL;
    CHECK(bash_mcp_server_new(scratch, NULL, 30, &out) == BASH_MCP_RESULT_PANIC);
    CHECK(out == SENTINEL);
    CHECK(bash_mcp_server_configure(server, "{\"timeout_seconds\": 5}") == BASH_MCP_RESULT_PANIC);
    CHECK(bash_mcp_server_set_working_dir(server, "/") == BASH_MCP_RESULT_PANIC);
    CHECK(bash_mcp_set_log_callback(NULL, NULL, BASH_MCP_LOG_LEVEL_OFF) == BASH_MCP_RESULT_PANIC);
    bash_mcp_policy *policy_out = (bash_mcp_policy *)(void *)0x5e5e;
    CHECK(bash_mcp_policy_new(allow, 1, NULL, 0, &policy_out) == BASH_MCP_RESULT_PANIC);
    CHECK(policy_out == (bash_mcp_policy *)(void *)0x5e5e);
    bash_mcp_mcp_handler *handler_out = (bash_mcp_mcp_handler *)(void *)0x5e5e;
    CHECK(bash_mcp_mcp_handler_new(server, on_message, NULL, &handler_out) == BASH_MCP_RESULT_PANIC);
    CHECK(handler_out == (bash_mcp_mcp_handler *)(void *)0x5e5e);

    /* The execute functions give an envelope whose result is an internal
       error; the command never runs and the callback is never called. */
    int chunks = 0;
    check_envelope("execute", bash_mcp_server_execute(server, "execute", "{\"command\": \"echo ran\"}"));
    check_envelope("execute_with", bash_mcp_server_execute_with(server, "execute",
                                                                "{\"command\": \"echo ran\"}", token,
                                                                on_output, &chunks));
    CHECK(chunks == 0);

    /* Functions returning a string, an object or a value give the documented
       safe value. */
    CHECK(bash_mcp_server_list_tools(server) == NULL);
    CHECK(bash_mcp_server_name(server) == NULL);
    CHECK(bash_mcp_server_working_dir(server) == NULL);
    CHECK(bash_mcp_server_get_permission_pattern(server, "bash.execute", "{\"command\": \"ls\"}") == NULL);
    CHECK(!bash_mcp_server_skip_duplicate_check(server, "execute"));
    CHECK(bash_mcp_server_timeout(server) == -1);
    CHECK(bash_mcp_server_timeout_ms(server) == -1);
    CHECK(bash_mcp_cancel_token_new() == NULL);
    bash_mcp_cancel_token_cancel(token);
    CHECK(!bash_mcp_cancel_token_is_cancelled(token));
    CHECK(bash_mcp_policy_decide(policy, "bash.execute", "{\"command\": \"git status\"}") ==
          BASH_MCP_DECISION_ERROR);
    CHECK(bash_mcp_policy_explain(policy, "bash.execute", "{\"command\": \"git status\"}") == NULL);
    CHECK(bash_mcp_classify("ls") == NULL);
    CHECK(bash_mcp_command_pattern("bash.execute", "ls") == NULL);
    const char *ping = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
    CHECK(bash_mcp_mcp_handler_handle_message(handler, ping, strlen(ping)) == NULL);
    CHECK(bash_mcp_last_error_message() == NULL);
    CHECK(strcmp(bash_mcp_result_str(BASH_MCP_RESULT_OK), "BASH_MCP_RESULT_UNKNOWN") == 0);
    CHECK(strcmp(bash_mcp_version(), BASH_MCP_VERSION) == 0);

    /* The free functions return normally (the object is then not freed). */
    bash_mcp_string_free(NULL);
    bash_mcp_cancel_token_free(NULL);
    bash_mcp_policy_free(NULL);
    bash_mcp_mcp_handler_free(NULL);
    bash_mcp_server_free(NULL);

    CHECK(unsetenv(FORCE_PANIC) == 0);

    /* The panic was recorded as this thread's last error. */
    CHECK(last_error_has("the library panicked"));
    CHECK(last_error_has(FORCE_PANIC));

    /* Nothing ran and nothing changed: the objects work as before. */
    CHECK(!bash_mcp_cancel_token_is_cancelled(token));
    CHECK(bash_mcp_server_timeout(server) == 30);
    CHECK(take_has(bash_mcp_server_working_dir(server), scratch));
    CHECK(take_has(bash_mcp_server_execute(server, "execute", "{\"command\": \"echo alive\"}"),
                   "alive\\\\n"));
    CHECK(bash_mcp_policy_decide(policy, "bash.execute", "{\"command\": \"git status\"}") ==
          BASH_MCP_DECISION_ALLOW);
    CHECK(take_has(bash_mcp_mcp_handler_handle_message(handler, ping, strlen(ping)), "\"id\":1"));

    bash_mcp_mcp_handler_free(handler);
    bash_mcp_policy_free(policy);
    bash_mcp_cancel_token_free(token);
    bash_mcp_server_free(server);
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
