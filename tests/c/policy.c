/*
 * policy.c: the permission policy, classifier and command pattern from C.
 *
 * Every NULL argument, invalid UTF-8, out-params untouched on failure, NULL
 * frees, the new result code, decisions for chained commands, explain and
 * classify JSON, and concurrent use of one policy.
 *
 * Usage: policy
 * Prints one line per failed check and ends with "N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bash_mcp.h"
#include "check.h"

#define TOOL "bash.execute"
static bash_mcp_policy *const SENTINEL = (bash_mcp_policy *)(void *)0x5e5e;

/* Whether `s` is non-NULL and equal to `expected`; frees `s`. */
static int take_eq(char *s, const char *expected) {
    int equal = s != NULL && strcmp(s, expected) == 0;
    if (!equal) {
        printf("  got: %s (wanted \"%s\")\n", s ? s : "(null)", expected);
    }
    bash_mcp_string_free(s);
    return equal;
}

static void check_result_code(void) {
    /* Appended with the next free number; the old numbers do not move. */
    CHECK(BASH_MCP_RESULT_LOG_UNAVAILABLE == 13);
    CHECK(BASH_MCP_RESULT_INVALID_POLICY == 14);
    CHECK(strcmp(bash_mcp_result_str(BASH_MCP_RESULT_INVALID_POLICY), "BASH_MCP_RESULT_INVALID_POLICY") == 0);
    CHECK(BASH_MCP_DECISION_ALLOW == 0);
    CHECK(BASH_MCP_DECISION_DENY == 1);
    CHECK(BASH_MCP_DECISION_ASK == 2);
    CHECK(BASH_MCP_DECISION_ERROR == 3);
}

static void check_new_failures(void) {
    const char *good[] = {TOOL ":git *"};
    const char *with_null[] = {TOOL ":git *", NULL};
    const char *with_bad_utf8[] = {TOOL ":git *", TOOL ":" INVALID_UTF8};
    const char *with_empty_pattern[] = {TOOL ":ls *", TOOL ":"};
    const char *with_empty_entry[] = {""};
    const char *with_lone_backslash[] = {TOOL ":x\\"};
    bash_mcp_policy *out = SENTINEL;

    CHECK(bash_mcp_policy_new(good, 1, NULL, 0, NULL) == BASH_MCP_RESULT_NULL_ARGUMENT);
    CHECK(last_error_has("out"));
    CHECK(bash_mcp_policy_new(NULL, 1, NULL, 0, &out) == BASH_MCP_RESULT_NULL_ARGUMENT);
    CHECK(out == SENTINEL);
    CHECK(last_error_has("allow"));
    CHECK(bash_mcp_policy_new(good, 1, NULL, 2, &out) == BASH_MCP_RESULT_NULL_ARGUMENT);
    CHECK(out == SENTINEL);
    CHECK(last_error_has("deny"));
    CHECK(bash_mcp_policy_new(with_null, 2, NULL, 0, &out) == BASH_MCP_RESULT_NULL_ARGUMENT);
    CHECK(out == SENTINEL);
    CHECK(last_error_has("allow[1]"));
    CHECK(bash_mcp_policy_new(NULL, 0, with_null, 2, &out) == BASH_MCP_RESULT_NULL_ARGUMENT);
    CHECK(out == SENTINEL);
    CHECK(last_error_has("deny[1]"));
    CHECK(bash_mcp_policy_new(with_bad_utf8, 2, NULL, 0, &out) == BASH_MCP_RESULT_INVALID_UTF8);
    CHECK(out == SENTINEL);
    CHECK(last_error_has("allow[1]"));
    CHECK(bash_mcp_policy_new(NULL, 0, with_bad_utf8, 2, &out) == BASH_MCP_RESULT_INVALID_UTF8);
    CHECK(out == SENTINEL);
    CHECK(last_error_has("UTF-8"));

    /* Unusable entries: the message names the list, the index and the entry. */
    CHECK(bash_mcp_policy_new(with_empty_pattern, 2, NULL, 0, &out) == BASH_MCP_RESULT_INVALID_POLICY);
    CHECK(out == SENTINEL);
    CHECK(last_error_has("allow[1]"));
    CHECK(last_error_has("\"" TOOL ":\""));
    CHECK(bash_mcp_policy_new(good, 1, with_empty_entry, 1, &out) == BASH_MCP_RESULT_INVALID_POLICY);
    CHECK(out == SENTINEL);
    CHECK(last_error_has("deny[0]"));
    CHECK(bash_mcp_policy_new(NULL, 0, with_lone_backslash, 1, &out) == BASH_MCP_RESULT_INVALID_POLICY);
    CHECK(out == SENTINEL);
    CHECK(last_error_has("backslash"));

    /* Empty lists are fine, as NULL or not; such a policy asks. */
    CHECK(bash_mcp_policy_new(NULL, 0, NULL, 0, &out) == BASH_MCP_RESULT_OK);
    CHECK(out != SENTINEL && out != NULL);
    if (out != SENTINEL) {
        CHECK(bash_mcp_policy_decide(out, TOOL, "{\"command\": \"ls\"}") == BASH_MCP_DECISION_ASK);
        bash_mcp_policy_free(out);
    }
    out = SENTINEL;
    CHECK(bash_mcp_policy_new(good, 0, good, 0, &out) == BASH_MCP_RESULT_OK);
    CHECK(out != SENTINEL && out != NULL);
    if (out != SENTINEL) bash_mcp_policy_free(out);
}

static void check_nulls_and_utf8(const bash_mcp_policy *policy) {
    const char *args = "{\"command\": \"ls\"}";

    /* Freeing NULL does nothing, however often. */
    bash_mcp_policy_free(NULL);
    bash_mcp_policy_free(NULL);

    CHECK(bash_mcp_policy_decide(NULL, TOOL, args) == BASH_MCP_DECISION_ERROR);
    CHECK(last_error_has("policy"));
    CHECK(bash_mcp_policy_decide(policy, NULL, args) == BASH_MCP_DECISION_ERROR);
    CHECK(last_error_has("tool_name"));
    CHECK(bash_mcp_policy_decide(policy, TOOL, NULL) == BASH_MCP_DECISION_ERROR);
    CHECK(last_error_has("args_json"));
    CHECK(bash_mcp_policy_decide(policy, INVALID_UTF8, args) == BASH_MCP_DECISION_ERROR);
    CHECK(last_error_has("UTF-8"));
    CHECK(bash_mcp_policy_decide(policy, TOOL, "{\"command\": \"" INVALID_UTF8 "\"}") == BASH_MCP_DECISION_ERROR);
    CHECK(last_error_has("args_json"));

    CHECK(bash_mcp_policy_explain(NULL, TOOL, args) == NULL);
    CHECK(last_error_has("policy"));
    CHECK(bash_mcp_policy_explain(policy, NULL, args) == NULL);
    CHECK(last_error_has("tool_name"));
    CHECK(bash_mcp_policy_explain(policy, TOOL, NULL) == NULL);
    CHECK(last_error_has("args_json"));
    CHECK(bash_mcp_policy_explain(policy, INVALID_UTF8, args) == NULL);
    CHECK(last_error_has("UTF-8"));
    CHECK(bash_mcp_policy_explain(policy, TOOL, INVALID_UTF8) == NULL);
    CHECK(last_error_has("args_json"));

    CHECK(bash_mcp_classify(NULL) == NULL);
    CHECK(last_error_has("command"));
    CHECK(bash_mcp_classify("rm " INVALID_UTF8) == NULL);
    CHECK(last_error_has("UTF-8"));

    CHECK(bash_mcp_command_pattern(NULL, "ls") == NULL);
    CHECK(last_error_has("tool_name"));
    CHECK(bash_mcp_command_pattern(TOOL, NULL) == NULL);
    CHECK(last_error_has("command"));
    CHECK(bash_mcp_command_pattern(INVALID_UTF8, "ls") == NULL);
    CHECK(last_error_has("tool_name"));
    CHECK(bash_mcp_command_pattern(TOOL, INVALID_UTF8) == NULL);
    CHECK(last_error_has("UTF-8"));
}

static void check_decisions(void) {
    const char *allow[] = {TOOL ":git *"};
    const char *deny[] = {TOOL ":rm *"};
    const char *chained_rm = "{\"command\": \"git status; rm -rf ~\"}";
    bash_mcp_policy *allow_only = NULL, *both = NULL;

    CHECK(bash_mcp_policy_new(allow, 1, NULL, 0, &allow_only) == BASH_MCP_RESULT_OK);
    CHECK(bash_mcp_policy_new(allow, 1, deny, 1, &both) == BASH_MCP_RESULT_OK);
    if (allow_only == NULL || both == NULL) {
        bash_mcp_policy_free(allow_only);
        bash_mcp_policy_free(both);
        return;
    }
    check_nulls_and_utf8(both);

    /* A chained command is decided per part: `rm` is not covered by `git *`. */
    CHECK(bash_mcp_policy_decide(allow_only, TOOL, chained_rm) == BASH_MCP_DECISION_ASK);
    CHECK(bash_mcp_policy_decide(both, TOOL, chained_rm) == BASH_MCP_DECISION_DENY);
    CHECK(bash_mcp_policy_decide(both, TOOL, "{\"command\": \"git add . && git commit -m x\"}") ==
          BASH_MCP_DECISION_ALLOW);
    CHECK(bash_mcp_policy_decide(allow_only, TOOL, "{\"command\": \"git add . && git commit -m x\"}") ==
          BASH_MCP_DECISION_ALLOW);
    /* Wrappers are seen through; unknowable text is never allowed by `git *`. */
    CHECK(bash_mcp_policy_decide(both, TOOL, "{\"command\": \"env FOO=1 nice rm -f x\"}") ==
          BASH_MCP_DECISION_DENY);
    CHECK(bash_mcp_policy_decide(allow_only, TOOL, "{\"command\": \"eval \\\"$X\\\"\"}") ==
          BASH_MCP_DECISION_ASK);
    /* Malformed arguments are an unknowable command, not an error. */
    CHECK(bash_mcp_policy_decide(allow_only, TOOL, "{not json") == BASH_MCP_DECISION_ASK);
    CHECK(bash_mcp_policy_decide(allow_only, TOOL, "") == BASH_MCP_DECISION_ASK);

    char *explained = bash_mcp_policy_explain(both, TOOL, chained_rm);
    CHECK(explained != NULL && strlen(explained) > 2 && explained[0] == '{');
    bash_mcp_string_free(explained);
    CHECK(take_has(bash_mcp_policy_explain(both, TOOL, chained_rm), "\"decision\":\"deny\""));
    CHECK(take_has(bash_mcp_policy_explain(both, TOOL, chained_rm), "\"rule\":\"" TOOL ":rm *\""));
    CHECK(take_has(bash_mcp_policy_explain(allow_only, TOOL, chained_rm), "\"decision\":\"ask\""));

    bash_mcp_policy_free(allow_only);
    bash_mcp_policy_free(both);
}

/* The shell decides how text is read: dash runs `echo hi &` and then
 * `>/dev/null touch p`, bash sends echo's output to /dev/null. */
static void check_dialects(void) {
    const char *allow[] = {TOOL ":echo *"};
    const char *text = "{\"command\": \"echo hi &>/dev/null touch p\"}";
    bash_mcp_policy *bash = NULL, *sh = NULL, *unknown = NULL;
    bash_mcp_policy *sentinel = SENTINEL;

    CHECK(bash_mcp_policy_new_for_shell(allow, 1, NULL, 0, "/bin/bash", &bash) == BASH_MCP_RESULT_OK);
    CHECK(bash_mcp_policy_new_for_shell(allow, 1, NULL, 0, "sh", &sh) == BASH_MCP_RESULT_OK);
    CHECK(bash_mcp_policy_new_for_shell(allow, 1, NULL, 0, NULL, &unknown) == BASH_MCP_RESULT_OK);
    CHECK(bash_mcp_policy_new_for_shell(allow, 1, NULL, 0, "\xff", &sentinel) == BASH_MCP_RESULT_INVALID_UTF8);
    CHECK(sentinel == SENTINEL);
    CHECK(bash_mcp_policy_new_for_shell(allow, 1, NULL, 0, "bash", NULL) == BASH_MCP_RESULT_NULL_ARGUMENT);
    if (bash != NULL && sh != NULL && unknown != NULL) {
        CHECK(bash_mcp_policy_decide(bash, TOOL, text) == BASH_MCP_DECISION_ALLOW);
        CHECK(bash_mcp_policy_decide(sh, TOOL, text) == BASH_MCP_DECISION_ASK);
        CHECK(bash_mcp_policy_decide(unknown, TOOL, text) == BASH_MCP_DECISION_ASK);
        CHECK(bash_mcp_policy_decide(sh, TOOL, "{\"command\": \"echo hi\"}") == BASH_MCP_DECISION_ALLOW);
    }
    bash_mcp_policy_free(bash);
    bash_mcp_policy_free(sh);
    bash_mcp_policy_free(unknown);
}

static void check_classify_and_pattern(void) {
    CHECK(take_has(bash_mcp_classify("rm -rf /"), "\"catastrophic\""));
    CHECK(take_has(bash_mcp_classify("echo hi && 'rm' -r -f ~"), "\"class\":\"catastrophic\""));
    CHECK(take_has(bash_mcp_classify("git push --force"), "\"class\":\"dangerous\""));
    CHECK(take_has(bash_mcp_classify("ls -la"), "\"class\":\"safe\""));
    CHECK(take_has(bash_mcp_classify(""), "\"class\":"));

    CHECK(take_eq(bash_mcp_command_pattern(TOOL, "git status"), TOOL ":git *"));
    CHECK(take_eq(bash_mcp_command_pattern(TOOL, "true && rm -rf ~"), TOOL ":{rm,true} *"));
    CHECK(take_eq(bash_mcp_command_pattern(TOOL, "FOO=1 env -i nice git log"), TOOL ":git *"));
    CHECK(take_eq(bash_mcp_command_pattern(TOOL, "eval \"$X\""), TOOL ":{unknown}"));
}

struct worker {
    const bash_mcp_policy *policy;
    int ok;
};

static void *work(void *arg) {
    struct worker *w = arg;
    w->ok = 1;
    for (int i = 0; i < 50; i++) {
        w->ok &= bash_mcp_policy_decide(w->policy, TOOL, "{\"command\": \"git status; rm -rf ~\"}") ==
                 BASH_MCP_DECISION_DENY;
        w->ok &= bash_mcp_policy_decide(w->policy, TOOL, "{\"command\": \"git log | git show\"}") ==
                 BASH_MCP_DECISION_ALLOW;
        char *classified = bash_mcp_classify("rm -rf /");
        w->ok &= classified != NULL && strstr(classified, "catastrophic") != NULL;
        bash_mcp_string_free(classified);
    }
    return NULL;
}

static void check_threads(void) {
    enum { N = 4 };
    const char *allow[] = {TOOL ":git *"};
    const char *deny[] = {TOOL ":rm *"};
    bash_mcp_policy *policy = NULL;
    pthread_t threads[N];
    struct worker workers[N];
    CHECK(bash_mcp_policy_new(allow, 1, deny, 1, &policy) == BASH_MCP_RESULT_OK);
    if (policy == NULL) return;
    for (int i = 0; i < N; i++) {
        workers[i] = (struct worker){policy, 0};
        CHECK(pthread_create(&threads[i], NULL, work, &workers[i]) == 0);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(threads[i], NULL);
        CHECK(workers[i].ok);
    }
    bash_mcp_policy_free(policy);
}

int main(void) {
    check_result_code();
    check_new_failures();
    check_decisions();
    check_dialects();
    check_classify_and_pattern();
    check_threads();

    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
