/*
 * approver.c: a C host's approver, through bash_mcp_server_set_approver().
 *
 * An `execute` call with `escalate` is put to the callback with the typed
 * request (kind, command, working dir, what widens, reason); its answers
 * allow once, allow for the server (asked once, then remembered until
 * bash_mcp_server_revoke_grants()), and deny (nothing runs, and the same
 * request is not asked again); a value that names no answer denies; a
 * callback that does not return within its bound denies (the test then lets
 * it return before freeing what it uses). Without an approver the call is
 * refused and nothing runs. bash_mcp_server_run_in_sandbox() with `escalate`
 * asks the same callback and widens the host's sandbox for the call by
 * exactly what was approved; a declined escalation runs nothing.
 *
 * Usage: approver   (in an empty scratch directory)
 * Prints one line per failed check and ends with "N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bash_mcp.h"
#include "check.h"

struct person {
    int answer;    /* what the callback returns */
    int asked;     /* how many questions it got */
    char kind[32];
    char command[256];
    char reason[64];
    char root[512];
    size_t network_len, roots_len;
    int has_json;
};

static bash_mcp_approval answer(const bash_mcp_approval_request *request, void *user_data) {
    struct person *p = user_data;
    p->asked++;
    snprintf(p->kind, sizeof p->kind, "%s", request->kind);
    snprintf(p->command, sizeof p->command, "%s", request->command);
    snprintf(p->reason, sizeof p->reason, "%s", request->reason ? request->reason : "");
    p->network_len = request->network_len;
    p->roots_len = request->writable_roots_len;
    snprintf(p->root, sizeof p->root, "%s", request->writable_roots_len ? request->writable_roots[0] : "");
    p->has_json = request->json != NULL && strstr(request->json, "\"kind\":\"escalation\"") != NULL;
    return (bash_mcp_approval)p->answer;
}

/* A callback that does not return until the test lets it. */
struct blocker {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int released, returned;
};

static bash_mcp_approval block(const bash_mcp_approval_request *request, void *user_data) {
    (void)request;
    struct blocker *b = user_data;
    pthread_mutex_lock(&b->lock);
    while (!b->released) pthread_cond_wait(&b->changed, &b->lock);
    b->returned = 1;
    pthread_cond_broadcast(&b->changed);
    pthread_mutex_unlock(&b->lock);
    return BASH_MCP_APPROVAL_ALLOW_ONCE;
}

/* Runs `touch granted/<name>` asking to write in granted/; returns the envelope. */
static char *touch(bash_mcp_server *server, const char *name) {
    char args[512];
    snprintf(args, sizeof args,
             "{\"command\": \"touch granted/%s\", \"escalate\": {\"writable_roots\": [\"granted\"], "
             "\"reason\": \"cache\"}}",
             name);
    return bash_mcp_server_execute(server, "execute", args);
}

static int exists(const char *name) {
    char path[256];
    struct stat st;
    snprintf(path, sizeof path, "granted/%s", name);
    return stat(path, &st) == 0;
}

static int ran(char *envelope) {
    int ok = envelope && strstr(envelope, "\\\"exit_code\\\":0") != NULL;
    bash_mcp_string_free(envelope);
    return ok;
}

static int refused(char *envelope, const char *needle) {
    int ok = envelope && strstr(envelope, "permission_denied") && strstr(envelope, needle);
    if (!ok) printf("refusal without %s: %s\n", needle, envelope ? envelope : "(null)");
    bash_mcp_string_free(envelope);
    return ok;
}

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* bash_mcp_server_run_in_sandbox() in a read-only sandbox of the host's,
 * with `escalate` asking to write in granted/: approved, the command writes
 * there and nowhere else; declined, nothing runs. Skipped (saying so) where
 * no sandbox backend works, since then nothing can be widened. */
static void check_run_in_sandbox_escalate(bash_mcp_server *server, struct person *person) {
    const char *sandbox = "{\"mode\": \"read-only\", \"on_unavailable\": \"fail\"}";
    bash_mcp_exec_result *result = NULL;
    CHECK(bash_mcp_server_run_in_sandbox(server, "{\"command\": \"true\"}", sandbox, NULL, NULL, NULL, &result) ==
          BASH_MCP_RESULT_OK);
    const char *error = bash_mcp_exec_result_error_code(result);
    if (error != NULL && strcmp(error, "sandbox_unavailable") == 0) {
        printf("SKIP run_in_sandbox with escalate: no sandbox backend works here (%s)\n",
               bash_mcp_exec_result_error_message(result));
        bash_mcp_exec_result_free(result);
        return;
    }
    CHECK(error == NULL && bash_mcp_exec_result_exit_code(result) == 0);
    bash_mcp_exec_result_free(result);

    /* Approved: granted/ becomes writable for this call; the working
     * directory stays read-only, as the host's sandbox has it. */
    const char *both = "{\"command\": \"touch granted/widened; touch beside\", \"escalate\": "
                       "{\"writable_roots\": [\"granted\"], \"reason\": \"cache\"}}";
    person->answer = BASH_MCP_APPROVAL_ALLOW_ONCE;
    int asked = person->asked;
    result = NULL;
    CHECK(bash_mcp_server_run_in_sandbox(server, both, sandbox, NULL, NULL, NULL, &result) == BASH_MCP_RESULT_OK);
    CHECK(person->asked == asked + 1);
    CHECK(strcmp(person->kind, "escalation") == 0 && person->roots_len == 1);
    CHECK(bash_mcp_exec_result_error_code(result) == NULL);
    CHECK(bash_mcp_exec_result_exit_code(result) == 1); /* the second touch failed */
    CHECK(file_exists("granted/widened"));
    CHECK(!file_exists("beside"));
    bash_mcp_exec_result_free(result);

    /* The same sandbox without `escalate`: granted/ is read-only again. */
    result = NULL;
    CHECK(bash_mcp_server_run_in_sandbox(server, "{\"command\": \"touch granted/plain\"}", sandbox, NULL, NULL,
                                         NULL, &result) == BASH_MCP_RESULT_OK);
    CHECK(bash_mcp_exec_result_error_code(result) == NULL && bash_mcp_exec_result_exit_code(result) != 0);
    CHECK(!file_exists("granted/plain"));
    bash_mcp_exec_result_free(result);

    /* Declined: refused, typed, and nothing ran. */
    const char *declined = "{\"command\": \"touch granted/declined; touch ran-anyway\", \"escalate\": "
                           "{\"writable_roots\": [\"granted\"], \"reason\": \"cache\"}}";
    person->answer = BASH_MCP_APPROVAL_DENY;
    asked = person->asked;
    result = NULL;
    CHECK(bash_mcp_server_run_in_sandbox(server, declined, sandbox, NULL, NULL, NULL, &result) ==
          BASH_MCP_RESULT_OK);
    CHECK(person->asked == asked + 1);
    error = bash_mcp_exec_result_error_code(result);
    CHECK(error != NULL && strcmp(error, "permission_denied") == 0);
    const char *message = bash_mcp_exec_result_error_message(result);
    CHECK(message != NULL && strstr(message, "nothing was run") != NULL);
    bash_mcp_exec_result_free(result);
    CHECK(!file_exists("granted/declined") && !file_exists("ran-anyway"));
}

int main(void) {
    CHECK(mkdir("granted", 0700) == 0);
    bash_mcp_server *server = NULL;
    CHECK(bash_mcp_server_new(".", NULL, 30, &server) == BASH_MCP_RESULT_OK);
    const char *tag = getenv("BASH_MCP_TEST_TAG");
    char config[512];
    snprintf(config, sizeof config,
             "{\"audit\": null, \"env\": {\"set\": {\"BASH_MCP_TEST_TAG\": \"%s\"}}, "
             "\"sandbox\": {\"mode\": \"read-only\", \"on_unavailable\": \"warn-and-run-unsandboxed\"}}",
             tag ? tag : "");
    CHECK(bash_mcp_server_configure(server, config) == BASH_MCP_RESULT_OK);
    CHECK(bash_mcp_server_set_approver(NULL, NULL, NULL, 0) == BASH_MCP_RESULT_NULL_ARGUMENT);

    /* No approver: refused, nothing ran. */
    CHECK(refused(touch(server, "none"), "nothing was run"));
    CHECK(!exists("none"));

    struct person person = {.answer = BASH_MCP_APPROVAL_ALLOW_ONCE};
    CHECK(bash_mcp_server_set_approver(server, answer, &person, 0) == BASH_MCP_RESULT_OK);
    CHECK(ran(touch(server, "once")) && exists("once"));
    CHECK(person.asked == 1);
    CHECK(strcmp(person.kind, "escalation") == 0);
    CHECK(strcmp(person.command, "touch granted/once") == 0);
    CHECK(strcmp(person.reason, "cache") == 0);
    CHECK(person.network_len == 0 && person.roots_len == 1);
    CHECK(strlen(person.root) > 8 && strcmp(person.root + strlen(person.root) - 8, "/granted") == 0);
    CHECK(person.has_json);

    person.answer = BASH_MCP_APPROVAL_ALLOW_FOR_SERVER;
    CHECK(ran(touch(server, "kept")));
    CHECK(ran(touch(server, "kept")));
    CHECK(person.asked == 2); /* the grant answered the second call */
    size_t revoked = 99;
    CHECK(bash_mcp_server_revoke_grants(server, "grant-404", &revoked) == BASH_MCP_RESULT_OK && revoked == 0);
    CHECK(bash_mcp_server_revoke_grants(server, NULL, &revoked) == BASH_MCP_RESULT_OK && revoked == 1);
    person.answer = BASH_MCP_APPROVAL_ALLOW_ONCE;
    CHECK(ran(touch(server, "kept")));
    CHECK(person.asked == 3);

    person.answer = BASH_MCP_APPROVAL_DENY;
    CHECK(refused(touch(server, "denied"), "denied"));
    CHECK(refused(touch(server, "denied"), "not asked again"));
    CHECK(person.asked == 4 && !exists("denied"));

    check_run_in_sandbox_escalate(server, &person);

    person.answer = 7; /* names no answer: a denial */
    CHECK(refused(touch(server, "seven"), "denied"));
    CHECK(!exists("seven"));

    /* A callback that does not return within its bound: denied. */
    struct blocker blocker = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    CHECK(bash_mcp_server_set_approver(server, block, &blocker, 200) == BASH_MCP_RESULT_OK);
    CHECK(refused(touch(server, "silent"), "did not answer"));
    CHECK(!exists("silent"));
    pthread_mutex_lock(&blocker.lock);
    blocker.released = 1;
    pthread_cond_broadcast(&blocker.changed);
    while (!blocker.returned) pthread_cond_wait(&blocker.changed, &blocker.lock);
    pthread_mutex_unlock(&blocker.lock);
    CHECK(!exists("silent"));

    CHECK(bash_mcp_server_set_approver(server, NULL, NULL, 0) == BASH_MCP_RESULT_OK);
    CHECK(refused(touch(server, "removed"), "nothing was run"));
    bash_mcp_server_free(server);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
