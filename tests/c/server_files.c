/*
 * server_files.c: through the C API, a kept output whose file a sandboxed
 * command replaced with a link to a hidden file is not read back.
 *
 * Usage: server_files WORK_DIR SANDBOX_JSON SECRET_PATH SECRET_TEXT
 * The caller sets TMPDIR to a directory inside WORK_DIR, a writable root of
 * the sandbox, so the output store lies where commands can write (by that
 * path: a sandboxed command's own TMPDIR is another directory).
 * Prints one line per failed check and ends with "N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bash_mcp.h"
#include "check.h"

/* Copies the first `out-<32 hex digits>` id of `text` into `id`. */
static int output_id(const char *text, char id[37]) {
    const char *at = text ? strstr(text, "out-") : NULL;
    if (at == NULL || strlen(at) < 36) {
        return 0;
    }
    memcpy(id, at, 36);
    id[36] = '\0';
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: server_files WORK_DIR SANDBOX_JSON SECRET_PATH SECRET_TEXT\n");
        return 2;
    }
    const char *work = argv[1], *sandbox = argv[2], *secret = argv[3], *secret_text = argv[4];
    bash_mcp_server *server = NULL;
    CHECK(bash_mcp_server_new(work, NULL, 60, &server) == BASH_MCP_RESULT_OK);
    if (server == NULL) {
        printf("%d passed, %d failed\n", passed, failed);
        return 1;
    }
    char config[8192];
    snprintf(config, sizeof config, "{\"sandbox\": %s}", sandbox);
    CHECK(bash_mcp_server_configure(server, config) == BASH_MCP_RESULT_OK);

    /* Longer than the result's limit: the whole output is kept. */
    char *kept = bash_mcp_server_execute(server, "execute", "{\"command\": \"seq 1 20000\"}");
    char id[37] = "";
    CHECK(output_id(kept, id));
    bash_mcp_string_free(kept);

    /* The sandboxed command puts a link to the hidden file in its place. */
    const char *tmp = getenv("TMPDIR");
    char plant[4096];
    snprintf(plant, sizeof plant,
             "{\"command\": \"f=$(ls -d %s/bash-mcp-output-*/%s) && rm -f $f && ln -s %s $f && echo planted\"}",
             tmp ? tmp : "/tmp", id, secret);
    char *planted = bash_mcp_server_execute(server, "execute", plant);
    CHECK(planted != NULL && strstr(planted, "planted") != NULL);
    if (planted != NULL && strstr(planted, "planted") == NULL) {
        printf("  plant: %s\n", planted);
    }
    bash_mcp_string_free(planted);

    char read_args[256];
    snprintf(read_args, sizeof read_args, "{\"output_id\": \"%s\"}", id);
    char *read = bash_mcp_server_execute(server, "output_read", read_args);
    CHECK(read != NULL && strstr(read, "output_not_found") != NULL);
    CHECK(read != NULL && strstr(read, secret_text) == NULL);
    if (read != NULL && strstr(read, "output_not_found") == NULL) {
        printf("  output_read: %s\n", read);
    }
    bash_mcp_string_free(read);

    bash_mcp_server_free(server);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
