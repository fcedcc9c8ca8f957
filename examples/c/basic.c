/*
 * basic.c: create a server, list its tools, run a command, show a timeout,
 * and free everything.
 *
 * Build (see docs/c-api.md), from the crate root:
 *   cargo build --release
 *   cc -std=c11 -Wall -Wextra -Werror -I include examples/c/basic.c \
 *      -L target/release -Wl,-rpath,"$PWD/target/release" -lbash_mcp -o basic
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bash_mcp.h"

/* Prints a failure with its detail message and exits. */
static void fail(const char *what, bash_mcp_result code) {
    char *message = bash_mcp_last_error_message();
    fprintf(stderr, "%s failed: %s: %s\n", what, bash_mcp_result_str(code),
            message ? message : "(no message)");
    bash_mcp_string_free(message);
    exit(1);
}

int main(void) {
    printf("bash-mcp %s (header %s)\n", bash_mcp_version(), BASH_MCP_VERSION);

    /* A server running commands in the current directory, 30 s time limit,
       built-in tool definitions (data_dir NULL). */
    bash_mcp_server *server = NULL;
    bash_mcp_result rc = bash_mcp_server_new(".", NULL, 30, &server);
    if (rc != BASH_MCP_RESULT_OK) {
        fail("bash_mcp_server_new", rc);
    }
    printf("server: %s, timeout %d s\n", bash_mcp_server_name(server),
           (int)bash_mcp_server_timeout(server));

    /* Every returned char* is ours: release it with bash_mcp_string_free(). */
    char *tools = bash_mcp_server_list_tools(server);
    printf("tools: %s\n", tools);
    bash_mcp_string_free(tools);

    /* The result is an envelope whose "result" is itself a JSON document. */
    char *result = bash_mcp_server_execute(server, "execute",
                                           "{\"command\": \"echo hello from sh; exit 3\"}");
    if (result == NULL) {
        fail("bash_mcp_server_execute", BASH_MCP_RESULT_INTERNAL);
    }
    printf("result: %s\n", result);
    bash_mcp_string_free(result);

    /* A command that outlives its time limit is killed with everything it
       started; the result carries the output printed before the kill. */
    rc = bash_mcp_server_configure(server, "{\"timeout_seconds\": 1}");
    if (rc != BASH_MCP_RESULT_OK) {
        fail("bash_mcp_server_configure", rc);
    }
    result = bash_mcp_server_execute(server, "execute",
                                     "{\"command\": \"echo before the timeout; sleep 30\"}");
    printf("timeout: %s\n", result);
    bash_mcp_string_free(result);

    /* Errors come back as codes, with a message for people. */
    bash_mcp_server *other = NULL;
    rc = bash_mcp_server_new("/nonexistent/dir", NULL, 30, &other);
    char *message = bash_mcp_last_error_message();
    printf("error: %s: %s\n", bash_mcp_result_str(rc), message);
    bash_mcp_string_free(message);

    bash_mcp_server_free(server);
    bash_mcp_server_free(other); /* still NULL: freeing NULL does nothing */
    return 0;
}
