/*
 * plugin_loader.c: loads libbash_mcp.so the way the entropic engine loads an
 * MCP plugin (API version 1) and checks every entry point.
 *
 * Usage: plugin_loader <library.so> <project dir> <expected name | NULL> <expected timeout s> [force-panic]
 *   expected name NULL: entropic_create_server must fail (bad configuration).
 *   expected timeout: the server's default time limit; when it is at most 5 s
 *   the timeout check relies on it, otherwise the call asks for 0.5 s.
 *   force-panic: also call execute with BASH_MCP_TEST_FORCE_PANIC=1 (a hook
 *   of libraries built with debug assertions that makes every exported
 *   function panic).
 * Prints what the library returned for tests/plugin.rs to parse as JSON, one
 * per line: "tools: <list_tools>" and "envelope <call>: <execute envelope>".
 * Prints one line per failed check and ends with "N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "check.h"

typedef void *entropic_mcp_server_t;

/* The nine entry points of plugin API version 1. */
static int (*api_version)(void);
static entropic_mcp_server_t (*create_server)(void);
static const char *(*server_name)(entropic_mcp_server_t);
static char *(*list_tools)(entropic_mcp_server_t);
static char *(*execute)(entropic_mcp_server_t, const char *, const char *);
static int (*configure)(entropic_mcp_server_t, const char *);
static int (*set_working_dir)(entropic_mcp_server_t, const char *);
static void (*destroy)(entropic_mcp_server_t);
static void (*entropic_free)(void *);

/* Resolves one symbol; reports (and counts) a missing one. */
static void *resolve(void *lib, const char *name, int *missing) {
    void *sym = dlsym(lib, name);
    if (sym == NULL) {
        printf("missing symbol: %s\n", name);
        (*missing)++;
    }
    return sym;
}

/* Prints what execute returned, marked with the call's name, and frees it. */
static void show(const char *call, char *envelope) {
    CHECK(envelope != NULL);
    printf("envelope %s: %s\n", call, envelope ? envelope : "(null)");
    entropic_free(envelope);
}

int main(int argc, char **argv) {
    if (argc != 5 && !(argc == 6 && strcmp(argv[5], "force-panic") == 0)) {
        fprintf(stderr,
                "usage: plugin_loader <library.so> <project dir> <name|NULL> <timeout s> [force-panic]\n");
        return 2;
    }
    int force_panic = argc == 6;
    const char *path = argv[1], *project = argv[2], *expected_name = argv[3];
    int expected_timeout = atoi(argv[4]);

    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        printf("dlopen failed: %s\n", dlerror());
        return 1;
    }
    int missing = 0;
    *(void **)&api_version = resolve(lib, "entropic_plugin_api_version", &missing);
    *(void **)&create_server = resolve(lib, "entropic_create_server", &missing);
    *(void **)&server_name = resolve(lib, "entropic_mcp_server_name", &missing);
    *(void **)&list_tools = resolve(lib, "entropic_mcp_server_list_tools", &missing);
    *(void **)&execute = resolve(lib, "entropic_mcp_server_execute", &missing);
    *(void **)&configure = resolve(lib, "entropic_mcp_server_configure", &missing);
    *(void **)&set_working_dir = resolve(lib, "entropic_mcp_server_set_working_dir", &missing);
    *(void **)&destroy = resolve(lib, "entropic_mcp_server_destroy", &missing);
    *(void **)&entropic_free = resolve(lib, "entropic_free", &missing);
    if (missing > 0) {
        printf("%d symbol(s) missing\n", missing);
        dlclose(lib);
        return 1;
    }
    CHECK(api_version() == 1);

    entropic_mcp_server_t server = create_server();
    if (strcmp(expected_name, "NULL") == 0) {
        CHECK(server == NULL);
        destroy(server);
        CHECK(dlclose(lib) == 0);
        printf("%d passed, %d failed\n", passed, failed);
        return failed == 0 ? 0 : 1;
    }
    CHECK(server != NULL);
    if (server == NULL) {
        printf("%d passed, %d failed\n", passed, failed);
        return 1;
    }

    const char *name = server_name(server);
    CHECK(name != NULL && name[0] != '\0');
    CHECK(name != NULL && strcmp(name, expected_name) == 0);
    if (name) printf("name: %s\n", name);

    /* The engine calls set_working_dir(project_dir) right after create. */
    CHECK(set_working_dir(server, project) == 0);
    CHECK(set_working_dir(server, "/nonexistent/dir") != 0);
    CHECK(set_working_dir(server, NULL) != 0);

    char *tools = list_tools(server);
    CHECK(tools != NULL);
    printf("tools: %s\n", tools ? tools : "(null)");
    entropic_free(tools);

    show("execute", execute(server, "execute", "{\"command\": \"echo hello; pwd\"}"));
    /* The qualified name works too. */
    char qualified[256];
    snprintf(qualified, sizeof qualified, "%s.execute", expected_name);
    show("qualified", execute(server, qualified, "{\"command\": \"exit 4\"}"));

    /* Bad input still gives an envelope with a string result. */
    show("null-args", execute(server, "execute", NULL));
    show("not-json", execute(server, "execute", "not json"));
    show("unknown-tool", execute(server, "nope", "{}"));
    CHECK(execute(NULL, "execute", "{}") == NULL);

    /* A timeout: the group is killed and the output so far returned. */
    double start = now();
    char *result;
    if (expected_timeout <= 5) {
        result = execute(server, "execute", "{\"command\": \"echo before; sleep 30\"}");
    } else {
        result = execute(server, "execute",
                         "{\"command\": \"echo before; sleep 30\", \"timeout_seconds\": 0.5}");
    }
    CHECK(now() - start < 25.0); /* the timeout, not the 30 s sleep, ended it */
    show("timeout", result);

    if (force_panic) {
        /* A panic inside execute stops at the boundary: still an envelope. */
        CHECK(setenv("BASH_MCP_TEST_FORCE_PANIC", "1", 1) == 0);
        show("panic", execute(server, "execute", "{\"command\": \"echo ran\"}"));
        CHECK(list_tools(server) == NULL);
        CHECK(server_name(server) == NULL);
        CHECK(configure(server, "{}") != 0);
        CHECK(set_working_dir(server, project) != 0);
        CHECK(create_server() == NULL);
        CHECK(api_version() == 1);
        entropic_free(NULL);
        CHECK(unsetenv("BASH_MCP_TEST_FORCE_PANIC") == 0);
        /* The server is unharmed. */
        show("after-panic", execute(server, "execute", "{\"command\": \"echo after\"}"));
    }

    /* configure: 0 = OK, non-zero on failure. */
    CHECK(configure(server, "{\"bogus\": 1}") != 0);
    CHECK(configure(server, NULL) != 0);
    CHECK(configure(server, "{\"max_concurrent\": 2}") == 0);
    CHECK(configure(NULL, "{}") != 0);
    CHECK(server_name(NULL) == NULL);
    CHECK(list_tools(NULL) == NULL);

    entropic_free(NULL);
    destroy(NULL);
    destroy(server);
    CHECK(dlclose(lib) == 0);
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
