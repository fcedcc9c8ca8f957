/*
 * wrapper.cpp: exercises every part of include/bash_mcp.hpp: Result and
 * Error on success and failure, the RAII handles (moved, freed), std::string
 * in and out, live output and a throwing handler caught at the boundary, a
 * cancel, Policy and the free functions. Built with -fno-exceptions by
 * default; with -DBASH_MCP_CPP_EXCEPTIONS it also checks or_throw().
 *
 * Usage: wrapper <project dir>. Prints one line per failed check and ends
 * with "N passed, M failed".
 */
#include <cstdio>
#include <string>
#include <utility>

#include "bash_mcp.hpp"

static int passed = 0, failed = 0;
#define CHECK(cond)                                                   \
    do {                                                              \
        if (cond) {                                                   \
            passed++;                                                 \
        } else {                                                      \
            failed++;                                                 \
            std::printf("FAILED line %d: %s\n", __LINE__, #cond);     \
        }                                                             \
    } while (0)

static bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    std::string project = argv[1];

    CHECK(bash_mcp::version() == BASH_MCP_VERSION);
    auto bad = bash_mcp::Server::open("/nonexistent/dir", 30);
    CHECK(!bad.ok() && !bad);
    CHECK(bad.error().code == BASH_MCP_RESULT_WORKING_DIR_NOT_FOUND);
    CHECK(contains(bad.error().message, "/nonexistent/dir"));
    CHECK(std::string(bad.error().code_name()) == "BASH_MCP_RESULT_WORKING_DIR_NOT_FOUND");
    CHECK(bash_mcp::Server::open(project, 0).error().code == BASH_MCP_RESULT_INVALID_TIMEOUT);

    auto opened = bash_mcp::Server::open(project, 30);
    CHECK(opened.ok() && !opened.error());
    if (!opened) return 1;
    bash_mcp::Server moved = std::move(opened).value();
    bash_mcp::Server server = std::move(moved);
    CHECK(server.get() != nullptr && moved.get() == nullptr);
    CHECK(server.name() == "bash");
    CHECK(server.working_dir().value_or("") == project);
    CHECK(contains(server.list_tools().value_or(""), "\"execute\""));

    auto envelope = server.execute("execute", R"({"command": "echo hi"})");
    CHECK(envelope.ok() && contains(envelope.value(), R"(\"output\":\"hi\\n\")"));
    auto refused = server.execute("execute", "not json");
    CHECK(refused.ok() && contains(refused.value(), "invalid_json"));
    CHECK(server.permission_pattern("bash.execute", R"({"command": "git status && rm -rf x"})").value_or("") ==
          "bash.execute:{git,rm} *");
    CHECK(!server.skip_duplicate_check("execute"));

    CHECK(server.configure(R"({"timeout_seconds": 5})").code == BASH_MCP_RESULT_OK);
    auto config_error = server.configure(R"({"bogus": 1})");
    CHECK(config_error && config_error.code == BASH_MCP_RESULT_INVALID_CONFIG && contains(config_error.message, "bogus"));
    CHECK(server.set_working_dir("/nonexistent").code == BASH_MCP_RESULT_WORKING_DIR_NOT_FOUND);
    CHECK(!server.set_working_dir(project));

    // Live output, then a cancel from inside the handler.
    std::string live;
    auto streamed = server.execute_with("execute", R"({"command": "echo one; echo two >&2", "streams": "separate"})",
                                        nullptr, [&](std::string_view chunk, bash_mcp_output_stream) { live += chunk; });
    CHECK(streamed.ok() && contains(live, "one\n") && contains(live, "two\n"));
    bash_mcp::CancelToken token;
    CHECK(!token.is_cancelled());
    auto cancelled = server.execute_with("execute", R"({"command": "echo started; sleep 30"})", &token,
                                         [&](std::string_view, bash_mcp_output_stream) { token.cancel(); });
    CHECK(token.is_cancelled());
    CHECK(cancelled.ok() && contains(cancelled.value(), "cancelled"));
    auto no_handler = server.execute_with("execute", R"({"command": "echo quiet"})", nullptr, nullptr);
    CHECK(no_handler.ok() && contains(no_handler.value(), "quiet"));

#ifdef BASH_MCP_CPP_EXCEPTIONS
    // A throwing handler stops at the boundary; the call still returns.
    int calls = 0;
    auto threw = server.execute_with("execute", R"({"command": "echo a; sleep 0.2; echo b"})", nullptr,
                                     [&](std::string_view, bash_mcp_output_stream) {
                                         calls++;
                                         throw std::runtime_error("handler failed");
                                     });
    CHECK(threw.ok() && contains(threw.value(), "exit_code") && calls == 1);
    bool caught = false;
    try {
        bash_mcp::Server::open("/nonexistent/dir", 30).or_throw();
    } catch (const bash_mcp::Exception &e) {
        caught = e.error().code == BASH_MCP_RESULT_WORKING_DIR_NOT_FOUND && contains(e.what(), "WORKING_DIR_NOT_FOUND");
    }
    CHECK(caught);
    CHECK(bash_mcp::Server::open(project, 30).or_throw().name() == "bash");
#endif

    auto policy = bash_mcp::Policy::make({"bash.execute:git *"}, {"bash.execute:rm *"});
    CHECK(policy.ok());
    if (policy) {
        CHECK(policy.value().decide("bash.execute", R"({"command": "git status"})") == BASH_MCP_DECISION_ALLOW);
        CHECK(policy.value().decide("bash.execute", R"({"command": "git status; rm -rf x"})") == BASH_MCP_DECISION_DENY);
        CHECK(policy.value().decide("bash.execute", R"({"command": "ls"})") == BASH_MCP_DECISION_ASK);
        CHECK(contains(policy.value().explain("bash.execute", R"({"command": "ls"})").value_or(""), "\"ask\""));
    }
    auto bad_policy = bash_mcp::Policy::make({"bash.execute:"}, {});
    CHECK(bad_policy.error().code == BASH_MCP_RESULT_INVALID_POLICY && contains(bad_policy.error().message, "allow[0]"));
    CHECK(contains(bash_mcp::classify("rm -rf /").value_or(""), "catastrophic"));
    CHECK(bash_mcp::command_pattern("bash.execute", "true && rm -rf ~").value_or("") == "bash.execute:{rm,true} *");

    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
