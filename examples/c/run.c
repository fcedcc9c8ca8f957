/*
 * run.c: run commands and read their outcome as typed fields (exit code,
 * output, timed out, truncated, error code and message), without parsing JSON.
 *
 * Build (see docs/c-api.md), from the crate root:
 *   cargo build --release
 *   cc -std=c11 -Wall -Wextra -Werror -I include examples/c/run.c \
 *      -L target/release -Wl,-rpath,"$PWD/target/release" -lbash_mcp -o run
 */
#include <stdio.h>
#include <stdlib.h>

#include "bash_mcp.h"

/* Prints a failure with its detail message and exits. */
static void fail(const char *what, bash_mcp_result code) {
    char *message = bash_mcp_last_error_message();
    fprintf(stderr, "%s failed: %s: %s\n", what, bash_mcp_result_str(code),
            message ? message : "(no message)");
    bash_mcp_string_free(message);
    exit(1);
}

/* Prints what a result says, one field per line. */
static void show(const char *label, const bash_mcp_exec_result *result) {
    size_t len = 0;
    const char *output = bash_mcp_exec_result_output(result, &len);
    printf("%s: exit %d, %zu byte(s) of output: %s", label, bash_mcp_exec_result_exit_code(result),
           len, output);
    if (len == 0 || output[len - 1] != '\n') {
        printf("\n");
    }
    printf("%s: timed out %s, truncated %s\n", label,
           bash_mcp_exec_result_timed_out(result) ? "yes" : "no",
           bash_mcp_exec_result_truncated(result) ? "yes" : "no");
    const char *error = bash_mcp_exec_result_error_code(result);
    if (error != NULL) {
        printf("%s: error %s: %s\n", label, error, bash_mcp_exec_result_error_message(result));
    }
}

int main(void) {
    bash_mcp_server *server = NULL;
    bash_mcp_result rc = bash_mcp_server_new(".", NULL, 30, &server);
    if (rc != BASH_MCP_RESULT_OK) {
        fail("bash_mcp_server_new", rc);
    }

    /* A plain command: the exit status and the output, typed. */
    bash_mcp_exec_result *result = NULL;
    rc = bash_mcp_server_run(server, "echo hello from run; exit 3", &result);
    if (rc != BASH_MCP_RESULT_OK) {
        fail("bash_mcp_server_run", rc);
    }
    show("plain", result);
    bash_mcp_exec_result_free(result);

    /* The execute tool's other arguments go in JSON: a time limit here. A
       timeout is not an API failure: the result says what happened. */
    rc = bash_mcp_server_run_with(server,
                                  "{\"command\": \"echo started; sleep 30\", \"timeout_seconds\": 1}",
                                  NULL, NULL, NULL, &result);
    if (rc != BASH_MCP_RESULT_OK) {
        fail("bash_mcp_server_run_with", rc);
    }
    show("timeout", result);
    bash_mcp_exec_result_free(result);

    /* Output past the limit keeps its head and tail. */
    rc = bash_mcp_server_run_with(server, "{\"command\": \"seq 1 100000\"}", NULL, NULL, NULL,
                                  &result);
    if (rc != BASH_MCP_RESULT_OK) {
        fail("bash_mcp_server_run_with", rc);
    }
    printf("long: exit %d, truncated %s\n", bash_mcp_exec_result_exit_code(result),
           bash_mcp_exec_result_truncated(result) ? "yes" : "no");
    bash_mcp_exec_result_free(result);

    /* A refused call: an error code and a message, no exit code. */
    rc = bash_mcp_server_run_with(server, "{\"command\": \"true\", \"working_dir\": \"/no/such/dir\"}",
                                  NULL, NULL, NULL, &result);
    if (rc != BASH_MCP_RESULT_OK) {
        fail("bash_mcp_server_run_with", rc);
    }
    show("refused", result);
    /* The JSON document is there too, for hosts that forward it. */
    printf("refused: json %s\n", bash_mcp_exec_result_json(result));
    bash_mcp_exec_result_free(result);

    /* A background job has no outcome yet: that is an API error. */
    rc = bash_mcp_server_run_with(server, "{\"command\": \"sleep 1\", \"background\": true}", NULL,
                                  NULL, NULL, &result);
    printf("background: %s\n", bash_mcp_result_str(rc));

    bash_mcp_server_free(server);
    return 0;
}
