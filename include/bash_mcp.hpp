/*
 * bash_mcp.hpp: a header-only C++17 wrapper over the C API in bash_mcp.h.
 *
 * RAII handles (Server, Policy, CancelToken) that free themselves,
 * std::string in and out, and no exceptions: calls that can fail return an
 * Error or a Result<T> carrying the library's code and message. A host that
 * wants exceptions defines BASH_MCP_CPP_EXCEPTIONS before including this
 * header and calls Result<T>::or_throw(), which throws bash_mcp::Exception.
 * Nothing thrown ever crosses into the library: the output callback
 * trampoline catches everything.
 *
 * Link against libbash_mcp as for the C API (see docs on "Using from C and
 * C++"); compile with -std=c++17 or later.
 */
#ifndef BASH_MCP_HPP
#define BASH_MCP_HPP

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#ifdef BASH_MCP_CPP_EXCEPTIONS
#include <stdexcept>
#endif

#include "bash_mcp.h"

namespace bash_mcp {

/** A failure: the library's code and the sentence that explains it. */
struct Error {
    bash_mcp_result code = BASH_MCP_RESULT_OK;
    std::string message;

    /** True when this is a failure. */
    explicit operator bool() const noexcept { return code != BASH_MCP_RESULT_OK; }
    /** The code's C name, e.g. "BASH_MCP_RESULT_INVALID_CONFIG". */
    const char *code_name() const noexcept { return bash_mcp_result_str(code); }
};

namespace detail {

struct StringFree {
    void operator()(char *s) const noexcept { bash_mcp_string_free(s); }
};
using OwnedString = std::unique_ptr<char, StringFree>;

/** The calling thread's last error message. */
inline std::string last_error() {
    OwnedString message(bash_mcp_last_error_message());
    return message ? std::string(message.get()) : std::string("(no message)");
}

/** An Error for `rc` with the calling thread's last message (none for OK). */
inline Error error_of(bash_mcp_result rc) {
    return rc == BASH_MCP_RESULT_OK ? Error{} : Error{rc, last_error()};
}

}  // namespace detail

#ifdef BASH_MCP_CPP_EXCEPTIONS
/** Thrown by Result<T>::or_throw() when BASH_MCP_CPP_EXCEPTIONS is defined. */
class Exception : public std::runtime_error {
public:
    explicit Exception(Error error)
        : std::runtime_error(std::string(error.code_name()) + ": " + error.message), error_(std::move(error)) {}
    const Error &error() const noexcept { return error_; }

private:
    Error error_;
};
#endif

/** A value or the Error that prevented it. */
template <class T>
class Result {
public:
    Result(T value) : value_(std::move(value)) {}
    Result(Error error) : error_(std::move(error)) {}

    bool ok() const noexcept { return value_.has_value(); }
    explicit operator bool() const noexcept { return ok(); }
    /** The value; only when ok(). */
    T &value() & { return *value_; }
    T &&value() && { return std::move(*value_); }
    const T &value() const & { return *value_; }
    /** The failure; code OK when ok(). */
    const Error &error() const noexcept { return error_; }
    /** The value, or `fallback` on failure. */
    T value_or(T fallback) const & { return value_ ? *value_ : std::move(fallback); }
#ifdef BASH_MCP_CPP_EXCEPTIONS
    /** The value, or throws Exception with the failure. */
    T or_throw() && {
        if (!value_) throw Exception(error_);
        return std::move(*value_);
    }
#endif

private:
    std::optional<T> value_;
    Error error_;
};

namespace detail {

/** Takes ownership of a returned string; NULL becomes the thread's last error. */
inline Result<std::string> take(char *raw) {
    OwnedString owned(raw);
    if (!owned) return Error{BASH_MCP_RESULT_NULL_ARGUMENT, last_error()};
    return std::string(owned.get());
}

}  // namespace detail

/** The loaded library's version ("x.y.z"). */
inline std::string version() { return bash_mcp_version(); }

/** The advisory danger classification of a shell text, as JSON. */
inline Result<std::string> classify(const std::string &command) {
    return detail::take(bash_mcp_classify(command.c_str()));
}

/** The permission pattern of running `command` as `tool` (e.g. bash.execute). */
inline Result<std::string> command_pattern(const std::string &tool, const std::string &command) {
    return detail::take(bash_mcp_command_pattern(tool.c_str(), command.c_str()));
}

/** A token that cancels a running execute_with() from any thread. */
class CancelToken {
public:
    CancelToken() : token_(bash_mcp_cancel_token_new()) {}
    void cancel() const noexcept { bash_mcp_cancel_token_cancel(token_.get()); }
    bool is_cancelled() const noexcept { return bash_mcp_cancel_token_is_cancelled(token_.get()); }
    const bash_mcp_cancel_token *get() const noexcept { return token_.get(); }

private:
    struct Free {
        void operator()(bash_mcp_cancel_token *t) const noexcept { bash_mcp_cancel_token_free(t); }
    };
    std::unique_ptr<bash_mcp_cancel_token, Free> token_;
};

/** Live output: a chunk of raw bytes and the stream it came from. */
using OutputHandler = std::function<void(std::string_view chunk, bash_mcp_output_stream stream)>;

/** A server running the shell tools; move-only, freed on destruction. */
class Server {
public:
    /** Opens a server named `bash` in `working_dir` with a default time limit. */
    static Result<Server> open(const std::string &working_dir, int32_t timeout_seconds,
                               const std::optional<std::string> &data_dir = std::nullopt) {
        bash_mcp_server *raw = nullptr;
        auto rc = bash_mcp_server_new(working_dir.c_str(), data_dir ? data_dir->c_str() : nullptr,
                                      timeout_seconds, &raw);
        if (rc != BASH_MCP_RESULT_OK) return detail::error_of(rc);
        return Server(raw);
    }

    /** The server's name (the tool prefix, `bash`). */
    std::string name() const { return bash_mcp_server_name(server_.get()); }
    /** The tools as a JSON array of {"name", "description", "inputSchema"}. */
    Result<std::string> list_tools() const { return detail::take(bash_mcp_server_list_tools(server_.get())); }
    /** Runs a tool; the envelope {"result": "<JSON document>", "directives": []}. */
    Result<std::string> execute(const std::string &tool, const std::string &args_json) const {
        return detail::take(bash_mcp_server_execute(server_.get(), tool.c_str(), args_json.c_str()));
    }
    /**
     * Runs a tool with a cancel token and live output. `on_output` runs on
     * this thread before the call returns; whatever it throws is caught and
     * ends the stream of callbacks (the command still runs to its end).
     */
    Result<std::string> execute_with(const std::string &tool, const std::string &args_json,
                                     const CancelToken *cancel, OutputHandler on_output) const {
        Sink sink{std::move(on_output), false};
        return detail::take(bash_mcp_server_execute_with(server_.get(), tool.c_str(), args_json.c_str(),
                                                         cancel ? cancel->get() : nullptr,
                                                         sink.handler ? &Sink::trampoline : nullptr, &sink));
    }
    /** The string a host matches its permission rules against. */
    Result<std::string> permission_pattern(const std::string &tool, const std::string &args_json) const {
        return detail::take(
            bash_mcp_server_get_permission_pattern(server_.get(), tool.c_str(), args_json.c_str()));
    }
    /** Whether the host should skip its duplicate-call check for `tool`. */
    bool skip_duplicate_check(const std::string &tool) const {
        return bash_mcp_server_skip_duplicate_check(server_.get(), tool.c_str());
    }
    /** Applies JSON configuration (the keys of bash_mcp_server_configure). */
    Error configure(const std::string &config_json) {
        return detail::error_of(bash_mcp_server_configure(server_.get(), config_json.c_str()));
    }
    /** Changes the default working directory (an existing directory). */
    Error set_working_dir(const std::string &path) {
        return detail::error_of(bash_mcp_server_set_working_dir(server_.get(), path.c_str()));
    }
    /** The default working directory, absolute. */
    Result<std::string> working_dir() const { return detail::take(bash_mcp_server_working_dir(server_.get())); }
    /** The C handle, still owned by this object. */
    bash_mcp_server *get() const noexcept { return server_.get(); }

private:
    explicit Server(bash_mcp_server *raw) : server_(raw) {}

    struct Free {
        void operator()(bash_mcp_server *s) const noexcept { bash_mcp_server_free(s); }
    };
    struct Sink {
        OutputHandler handler;
        bool failed;
        static void trampoline(const char *chunk, size_t len, bash_mcp_output_stream stream, void *data) noexcept {
            auto *sink = static_cast<Sink *>(data);
            if (sink->failed) return;
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
            try {
                sink->handler(std::string_view(chunk, len), stream);
            } catch (...) {
                sink->failed = true;
            }
#else
            sink->handler(std::string_view(chunk, len), stream);
#endif
        }
    };
    std::unique_ptr<bash_mcp_server, Free> server_;
};

/** Allow and deny rules in the host's format, decided per executed part. */
class Policy {
public:
    /** Builds a policy; the Error names the first unusable entry. */
    static Result<Policy> make(const std::vector<std::string> &allow, const std::vector<std::string> &deny) {
        std::vector<const char *> a, d;
        for (const auto &s : allow) a.push_back(s.c_str());
        for (const auto &s : deny) d.push_back(s.c_str());
        bash_mcp_policy *raw = nullptr;
        auto rc = bash_mcp_policy_new(a.data(), a.size(), d.data(), d.size(), &raw);
        if (rc != BASH_MCP_RESULT_OK) return detail::error_of(rc);
        return Policy(raw);
    }
    /** Allow, deny or ask for a tool call. */
    bash_mcp_decision decide(const std::string &tool, const std::string &args_json) const {
        return bash_mcp_policy_decide(policy_.get(), tool.c_str(), args_json.c_str());
    }
    /** Per part: the rule that decided it, as JSON. */
    Result<std::string> explain(const std::string &tool, const std::string &args_json) const {
        return detail::take(bash_mcp_policy_explain(policy_.get(), tool.c_str(), args_json.c_str()));
    }

private:
    explicit Policy(bash_mcp_policy *raw) : policy_(raw) {}
    struct Free {
        void operator()(bash_mcp_policy *p) const noexcept { bash_mcp_policy_free(p); }
    };
    std::unique_ptr<bash_mcp_policy, Free> policy_;
};

}  // namespace bash_mcp

#endif /* BASH_MCP_HPP */
