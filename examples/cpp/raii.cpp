// raii.cpp: the C API from C++ with RAII wrappers: a server and strings that
// free themselves, live output through a callback, and a cancel from a second
// thread.
//
// Build (see docs/c-api.md), from the crate root:
//   cargo build --release
//   c++ -std=c++17 -Wall -Wextra -Werror -pthread -I include examples/cpp/raii.cpp
//       -L target/release -Wl,-rpath,"$PWD/target/release" -lbash_mcp -o raii
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "bash_mcp.h"

namespace bash_mcp {

// Deleters that call the library's free functions.
struct ServerFree {
    void operator()(bash_mcp_server *s) const noexcept { bash_mcp_server_free(s); }
};
struct StringFree {
    void operator()(char *s) const noexcept { bash_mcp_string_free(s); }
};
struct TokenFree {
    void operator()(bash_mcp_cancel_token *t) const noexcept { bash_mcp_cancel_token_free(t); }
};

using ServerPtr = std::unique_ptr<bash_mcp_server, ServerFree>;
using String = std::unique_ptr<char, StringFree>;
using TokenPtr = std::unique_ptr<bash_mcp_cancel_token, TokenFree>;

// The detail message of the last failure on this thread.
std::string last_error() {
    String message(bash_mcp_last_error_message());
    return message ? message.get() : "(no message)";
}

// Throws with the code's name and the detail message.
void check(bash_mcp_result rc, const char *what) {
    if (rc != BASH_MCP_RESULT_OK) {
        throw std::runtime_error(std::string(what) + ": " + bash_mcp_result_str(rc) + ": " +
                                 last_error());
    }
}

// Takes ownership of a returned string; NULL is a failure.
std::string take(char *raw, const char *what) {
    String owned(raw);
    if (!owned) {
        throw std::runtime_error(std::string(what) + ": " + last_error());
    }
    return owned.get();
}

ServerPtr open_server(const char *working_dir, int32_t timeout_seconds) {
    bash_mcp_server *raw = nullptr;
    check(bash_mcp_server_new(working_dir, nullptr, timeout_seconds, &raw), "bash_mcp_server_new");
    return ServerPtr(raw);
}

}  // namespace bash_mcp

// Collects live output; signals when the command has printed its first line.
struct Live {
    std::mutex lock;
    std::condition_variable started;
    std::string text;
    int chunks = 0;
};

// Runs on the thread that called bash_mcp_server_execute_with(). It must not
// throw, so it only appends and notifies.
extern "C" void on_output(const char *chunk, size_t len, bash_mcp_output_stream stream,
                          void *user_data) {
    auto *live = static_cast<Live *>(user_data);
    std::lock_guard<std::mutex> guard(live->lock);
    live->text.append(chunk, len);
    live->chunks += 1;
    if (stream == BASH_MCP_OUTPUT_STREAM_STDOUT) {
        live->started.notify_all();
    }
}

// Runs on whichever thread emitted the record.
extern "C" void on_log(bash_mcp_log_level level, const char *target, const char *message,
                       void *user_data) {
    (void)target;
    (void)message;
    if (level == BASH_MCP_LOG_LEVEL_DEBUG) {
        static_cast<std::atomic<int> *>(user_data)->fetch_add(1);
    }
}

int main() {
    try {
        std::atomic<int> debug_records{0};
        bash_mcp::check(bash_mcp_set_log_callback(on_log, &debug_records, BASH_MCP_LOG_LEVEL_DEBUG),
                        "bash_mcp_set_log_callback");

        bash_mcp::ServerPtr server = bash_mcp::open_server(".", 30);
        std::printf("server: %s\n", bash_mcp_server_name(server.get()));

        std::string tools = bash_mcp::take(bash_mcp_server_list_tools(server.get()), "list_tools");
        std::printf("tools: %s\n", tools.c_str());

        std::string result = bash_mcp::take(
            bash_mcp_server_execute(server.get(), "execute", R"({"command": "echo hello from c++"})"),
            "execute");
        std::printf("result: %s\n", result.c_str());

        // A per-call time limit below the server's.
        result = bash_mcp::take(
            bash_mcp_server_execute(server.get(), "execute",
                                    R"({"command": "echo slow; sleep 30", "timeout_seconds": 2})"),
            "execute");
        std::printf("timeout: %s\n", result.c_str());

        // Live output and a cancel from a second thread: the canceller waits
        // for the first line, then cancels; the call returns at once.
        Live live;
        bash_mcp::TokenPtr token(bash_mcp_cancel_token_new());
        std::thread canceller([&] {
            std::unique_lock<std::mutex> guard(live.lock);
            live.started.wait(guard, [&] { return !live.text.empty(); });
            bash_mcp_cancel_token_cancel(token.get());
        });
        auto start = std::chrono::steady_clock::now();
        result = bash_mcp::take(
            bash_mcp_server_execute_with(server.get(), "execute",
                                         R"({"command": "echo working; sleep 30"})", token.get(),
                                         on_output, &live),
            "execute_with");
        canceller.join();
        auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - start);
        std::printf("live: %d chunk(s): %s", live.chunks, live.text.c_str());
        std::printf("cancelled: %s\n", result.c_str());
        std::printf("cancel took %s 20 s\n", elapsed.count() < 20000 ? "under" : "over");

        bash_mcp::check(bash_mcp_set_log_callback(nullptr, nullptr, BASH_MCP_LOG_LEVEL_OFF),
                        "bash_mcp_set_log_callback");
        std::printf("debug records: %s\n", debug_records.load() > 0 ? "some" : "none");
    } catch (const std::exception &e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
