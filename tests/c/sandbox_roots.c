/* A server in argv[1], configured with the JSON argv[2], runs one `execute`
 * with the arguments argv[3] and prints the envelope on one line. */
#include <bash_mcp.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s <working dir> <config json> <execute args json>\n", argv[0]);
        return 2;
    }
    struct bash_mcp_server *server;
    if (bash_mcp_server_new(argv[1], NULL, 30, &server) != BASH_MCP_RESULT_OK) {
        fprintf(stderr, "bash_mcp_server_new failed\n");
        return 3;
    }
    if (bash_mcp_server_configure(server, argv[2]) != BASH_MCP_RESULT_OK) {
        char *message = bash_mcp_last_error_message();
        fprintf(stderr, "configure: %s\n", message ? message : "?");
        bash_mcp_string_free(message);
        bash_mcp_server_free(server);
        return 4;
    }
    char *envelope = bash_mcp_server_execute(server, "execute", argv[3]);
    if (envelope == NULL) {
        fprintf(stderr, "execute returned NULL\n");
        bash_mcp_server_free(server);
        return 5;
    }
    puts(envelope);
    bash_mcp_string_free(envelope);
    bash_mcp_server_free(server);
    return 0;
}
