// entropic_server.cpp: bash-mcp compiled into a C++ host the way the entropic
// engine builds its own servers: a class with the shape of the engine's
// server interface (name, tool registration, list_tools, execute,
// get_permission_pattern, set_working_dir, configure, skip_duplicate_check)
// implemented over the header-only wrapper bash_mcp.hpp. A host that
// compiles servers in asks get_permission_pattern() before it runs a call and
// so gets the library's exact patterns (every command of a compound, wrappers
// seen through), not the first word of the text.
//
// Build, from the crate root (see "Using from C and C++"):
//   cargo build --release
//   c++ -std=c++17 -Wall -Wextra -Werror -fno-exceptions -I include examples/cpp/entropic_server.cpp
//       -L target/release -Wl,-rpath,"$PWD/target/release" -lbash_mcp -o entropic_server
// Run: ./entropic_server <project dir>; prints what a host would see, exits 0
// when every step behaved as documented.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "bash_mcp.hpp"

// The engine's server interface, reduced to its shape (not its code): a
// named server registers tools; the host lists them, asks for the permission
// pattern of a call, runs it, and moves the server to the project directory.
class ServerInterface {
public:
    explicit ServerInterface(std::string name) : name_(std::move(name)) {}
    virtual ~ServerInterface() = default;

    const std::string &name() const { return name_; }
    const std::vector<std::string> &tools() const { return tools_; }
    virtual std::string list_tools() const = 0;
    virtual std::string execute(const std::string &tool, const std::string &args_json) = 0;
    virtual std::string get_permission_pattern(const std::string &tool, const std::string &) const { return tool; }
    virtual bool skip_duplicate_check(const std::string &) const { return false; }
    virtual bool configure(const std::string &) { return true; }
    virtual bool set_working_dir(const std::string &) { return true; }

protected:
    void register_tool(std::string tool) { tools_.push_back(std::move(tool)); }

private:
    std::string name_;
    std::vector<std::string> tools_;
};

// bash-mcp as one of the host's compiled-in servers.
class BashMcpServer : public ServerInterface {
public:
    explicit BashMcpServer(bash_mcp::Server server) : ServerInterface(server.name()), server_(std::move(server)) {
        register_tool("execute");
    }

    std::string list_tools() const override { return server_.list_tools().value_or("[]"); }

    std::string execute(const std::string &tool, const std::string &args_json) override {
        auto envelope = server_.execute(tool, args_json);
        if (envelope) return envelope.value();
        return R"({"result":"{\"error\":\"internal\",\"message\":\"execute failed\",\"hint\":\"\"}","directives":[]})";
    }

    // The library's pattern: what the host stores for "always allow" and
    // matches its allow/deny rules against.
    std::string get_permission_pattern(const std::string &tool, const std::string &args_json) const override {
        return server_.permission_pattern(tool, args_json).value_or(tool);
    }

    bool skip_duplicate_check(const std::string &tool) const override { return server_.skip_duplicate_check(tool); }

    bool configure(const std::string &config_json) override { return report(server_.configure(config_json)); }

    bool set_working_dir(const std::string &path) override { return report(server_.set_working_dir(path)); }

private:
    static bool report(const bash_mcp::Error &error) {
        if (error) std::fprintf(stderr, "refused: %s: %s\n", error.code_name(), error.message.c_str());
        return !error;
    }

    bash_mcp::Server server_;
};

static int failures = 0;

static void expect(bool ok, const char *what) {
    std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
    failures += ok ? 0 : 1;
}

int main(int argc, char **argv) {
    const char *project = argc > 1 ? argv[1] : ".";
    auto opened = bash_mcp::Server::open(".", 30);
    if (!opened) {
        std::fprintf(stderr, "%s: %s\n", opened.error().code_name(), opened.error().message.c_str());
        return 1;
    }
    BashMcpServer server(std::move(opened).value());
    // The host registers the server under its name and moves it to the project.
    expect(server.name() == "bash", "the server is named bash");
    expect(server.tools() == std::vector<std::string>{"execute"}, "execute is registered");
    expect(server.list_tools().find("\"execute\"") != std::string::npos, "list_tools describes execute");
    expect(server.set_working_dir(project), "set_working_dir(project)");
    expect(!server.set_working_dir("/nonexistent/dir"), "set_working_dir refuses a missing directory");

    // Before running a call, the host asks for its pattern.
    auto pattern = server.get_permission_pattern("bash.execute", R"({"command": "true && rm -rf ~"})");
    std::printf("pattern: %s\n", pattern.c_str());
    expect(pattern == "bash.execute:{rm,true} *", "the pattern names every command of the compound");
    auto wrapped = server.get_permission_pattern("bash.execute", R"({"command": "FOO=1 command git push"})");
    std::printf("pattern: %s\n", wrapped.c_str());
    expect(wrapped == "bash.execute:git *", "the pattern sees through assignments and `command`");

    auto envelope = server.execute("execute", R"({"command": "echo hello; pwd"})");
    std::printf("envelope: %s\n", envelope.c_str());
    expect(envelope.find(R"(\"exit_code\":0)") != std::string::npos, "execute ran the command");
    expect(envelope.find(std::string(R"(hello\\n)") + project) != std::string::npos, "in the project directory");
    expect(!server.configure(R"({"bogus": 1})"), "configure refuses an unknown key");
    expect(server.configure(R"({"timeout_seconds": 5})"), "configure applies a valid key");
    std::printf("%s\n", failures == 0 ? "all passed" : "some failed");
    return failures == 0 ? 0 : 1;
}
