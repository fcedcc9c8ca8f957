// drive.cpp: drives the bash-mcp entropic plugin through the entropic engine's
// own, unmodified classes (v2.10.4): its config loader reads `mcp.plugins`
// and `permissions`, `ServerManager` loads and routes the plugin the way the
// engine's start-up does, `PermissionManager` applies the rules inside it,
// `ToolExecutor` classifies and cuts results, and the bundled identities
// decide who may call what. Built and run by tests/entropic_engine.rs.
//
// Usage: drive <scenario> <plugin.so> <project dir> <engine data dir>
// The test sets BASH_MCP_PLUGIN_CONFIG for the plugin. Prints one line per
// failed check and ends with "N passed, M failed".
#include <entropic/config/bundled_models.h>
#include <entropic/config/loader.h>
#include <entropic/mcp/plugin_server.h>
#include <entropic/mcp/server_manager.h>
#include <entropic/mcp/tool_executor.h>
#include <entropic/mcp/tool_result_classify.h>
#include <entropic/prompts/manager.h>
#include <entropic/types/error.h>

#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

int passed = 0;
int failed = 0;

void check(bool ok, const char *what, int line, const std::string &detail = "") {
    if (ok) {
        passed++;
        return;
    }
    failed++;
    std::printf("FAILED line %d: %s %s\n", line, what, detail.c_str());
}
#define CHECK(cond, ...) check((cond), #cond, __LINE__, ##__VA_ARGS__)

struct Args {
    std::string plugin, project, data;
};

/// The engine as its start-up builds it (init_mcp_servers in the facade:
/// a ServerManager over `permissions`, the built-ins, then `mcp.plugins`).
struct Engine {
    entropic::ParsedConfig config;
    std::unique_ptr<entropic::ServerManager> servers;
    entropic_error_t plugins_rc = ENTROPIC_OK;

    Engine(const std::string &yaml, const Args &a) {
        entropic::config::BundledModels registry;
        auto err = entropic::config::load_config_from_string(yaml, registry, config);
        CHECK(err.empty(), err);
        auto root = config.mcp.working_dir.empty() ? fs::current_path() : fs::path(config.mcp.working_dir);
        servers = std::make_unique<entropic::ServerManager>(config.permissions, root);
        servers->init_builtins(config.mcp, {}, a.data);
        plugins_rc = servers->load_plugins(config.mcp);
    }
};

std::string engine_yaml(const Args &a, bool builtin_bash, const std::string &permissions) {
    return "mcp:\n  enable_bash: " + std::string(builtin_bash ? "true" : "false") +
           "\n  working_dir: \"" + a.project + "\"\n  plugins:\n    - \"" + a.plugin + "\"\n" + permissions;
}

/// One call through the engine's ToolExecutor; the message the model sees.
entropic::Message call(Engine &e, const std::string &tool, const json &args, bool auto_approve,
                       const std::string &tier = "",
                       const std::unordered_map<std::string, std::vector<std::string>> *tiers = nullptr) {
    entropic::LoopConfig lc;
    lc.auto_approve_tools = auto_approve;
    entropic::EngineCallbacks cb{};
    entropic::ToolExecutor exec(*e.servers, lc, cb);
    if (tiers != nullptr) {
        exec.set_tier_allowed_tools(tiers);
    }
    entropic::LoopContext ctx;
    ctx.locked_tier = tier;
    entropic::ToolCall tc;
    tc.id = "call-1";
    tc.name = tool;
    tc.arguments_json = args.dump();
    auto out = exec.process_tool_calls(ctx, {tc});
    CHECK(out.size() == 1);
    return out.empty() ? entropic::Message{} : out[0];
}

std::string kind(const entropic::Message &m) {
    auto it = m.metadata.find("result_kind");
    return it == m.metadata.end() ? "" : it->second;
}

/// The result document a call returned through ServerManager::execute.
json routed(Engine &e, const std::string &tool, const json &args) {
    auto envelope = json::parse(e.servers->execute(tool, args.dump()));
    return json::parse(envelope.at("result").get<std::string>(), nullptr, false);
}

/// A valid value for a property of a tool's inputSchema.
json sample(const std::string &name, const json &prop, const Args &a) {
    if (prop.contains("enum")) return prop["enum"][0];
    auto type = prop.value("type", "string");
    if (type == "number" || type == "integer") return 5;
    if (type == "boolean") return false;
    if (type == "object") return json::object({{"A", "1"}});
    if (type == "array") return json::array();
    return name == "working_dir" ? json(a.project) : json("x");
}

// 1. No argument moves the engine's pattern off the command.
void keying(const Args &a) {
    Engine e(engine_yaml(a, false, "permissions:\n  auto_approve: true\n  deny:\n    - \"bash.execute:rm *\"\n"), a);
    CHECK(e.plugins_rc == ENTROPIC_OK);
    auto victim = fs::path(a.project) / "victim";
    auto tools = json::parse(e.servers->list_tools());
    int ours = 0;
    for (const auto &tool : tools) {
        auto name = tool.value("name", "");
        if (name.rfind("bash.", 0) != 0) continue;
        ours++;
        auto props = tool["inputSchema"].value("properties", json::object());
        // nlohmann orders keys as the engine's args_to_pattern sees them.
        if (props.contains("command")) CHECK(props.begin().key() == "command", name + ": " + props.dump());
        CHECK(!props.contains("background"), name);
        if (name != "bash.execute") continue;
        // Every valid argument, beside a denied command: the deny rule applies.
        for (auto it = props.begin(); it != props.end(); ++it) {
            fs::create_directories(victim);
            json args = {{"command", "rm -rf victim"}};
            args[it.key()] = it.key() == "command" ? json("rm -rf victim") : sample(it.key(), it.value(), a);
            auto doc = routed(e, "bash.execute", args);
            CHECK(fs::exists(victim), "deleted with " + args.dump());
        }
    }
    CHECK(ours >= 1, "no bash.* tools in " + tools.dump());
    // The report's bypass: `background` sorts before `command`.
    fs::create_directories(victim);
    json bypass = {{"background", false}, {"command", "rm -rf victim"}};
    auto doc = routed(e, "bash.execute", bypass);
    CHECK(fs::exists(victim), doc.dump());
    CHECK(doc.value("error", "") == "unknown_argument", doc.dump());
    auto m = call(e, "bash.execute", bypass, true);
    CHECK(fs::exists(victim), m.content);
    CHECK(kind(m) == "error", kind(m) + " " + m.content);
    for (auto key : {"Command", "a", "background", "cmd"}) {
        json args = {{key, "x"}, {"command", "rm -rf victim"}};
        auto d = routed(e, "bash.execute", args);
        CHECK(fs::exists(victim), args.dump() + " " + d.dump());
    }
    // A repeated key: the engine and the plugin both take the last one.
    e.servers->execute("bash.execute", R"({"command": "echo safe", "command": "rm -rf victim"})");
    CHECK(fs::exists(victim), "deleted through a repeated key");
    // A harmless call with every argument still runs.
    auto ok = routed(e, "bash.execute", {{"command", "echo ran"}, {"working_dir", a.project}, {"env", {{"A", "1"}}}});
    CHECK(ok.value("output", "") == "ran\n", ok.dump());
}

// 2. Errors are seen as errors by the engine, successes never.
void errors(const Args &a) {
    Engine e(engine_yaml(a, false, "permissions:\n  auto_approve: true\n"), a);
    auto timeout = call(e, "bash.execute", {{"command", "echo before; sleep 30"}, {"timeout_seconds", 0.5}}, true);
    CHECK(kind(timeout) == "error", kind(timeout) + " " + timeout.content);
    CHECK(entropic::mcp::looks_like_tool_error(timeout.content), timeout.content);
    CHECK(timeout.content.rfind("{\"error\":\"timeout\"", 0) == 0, timeout.content);
    auto refused = call(e, "bash.execute", {{"command", "ls"}, {"bogus", 1}}, true);
    CHECK(kind(refused) == "error", refused.content);
    auto missing = call(e, "bash.execute", {{"stdin", "x"}, {"working_dir", "/nonexistent"}}, true);
    CHECK(kind(missing) != "ok", kind(missing) + " " + missing.content);
    for (auto command : {"echo ok", "exit 3", "echo '\"error\": \"x\"'; echo error", "printf error"}) {
        auto m = call(e, "bash.execute", {{"command", command}}, true);
        CHECK(kind(m) == "ok", std::string(command) + ": " + kind(m) + " " + m.content);
        CHECK(!entropic::mcp::looks_like_tool_error(m.content), m.content);
    }
}

// 3. Output fits under the engine's cut, so our head, marker and tail survive.
void output(const Args &a) {
    Engine e(engine_yaml(a, false, "permissions:\n  auto_approve: true\n"), a);
    auto deep = fs::path(a.project) / std::string(200, 'd');
    fs::create_directories(deep);
    const char *worst = "head -c 300000 /dev/zero | tr '\\000' '\\001'; printf 'TAIL-END'";
    for (std::string streams : {"merged", "separate"}) {
        std::string command = worst;
        if (streams == "separate") command = std::string("(") + worst + ") >&2; " + worst;
        auto m = call(e, "bash.execute", {{"command", command}, {"streams", streams}, {"working_dir", deep.string()}}, true);
        CHECK(m.content.size() <= 16384, streams + ": " + std::to_string(m.content.size()));
        CHECK(m.content.find("[... truncated,") == std::string::npos, streams + ": the engine cut the result");
        auto doc = json::parse(m.content, nullptr, false);
        CHECK(doc.is_object(), streams + ": " + m.content.substr(0, 200));
        if (!doc.is_object()) continue;
        CHECK(doc.value("truncated", false), doc.dump().substr(0, 200));
        for (auto key : {"output", "stdout", "stderr"}) {
            if (!doc.contains(key)) continue;
            auto text = doc[key].get<std::string>();
            CHECK(text.find("bytes omitted") != std::string::npos, streams + " " + key);
            CHECK(text.size() >= 8 && text.substr(text.size() - 8) == "TAIL-END", streams + " " + key);
        }
        CHECK(kind(m) == "ok", kind(m));
    }
}

/// tier -> allowed_tools of every bundled identity, as the facade caches them.
std::unordered_map<std::string, std::vector<std::string>> identities(const Args &a) {
    std::unordered_map<std::string, std::vector<std::string>> map;
    for (const auto &file : fs::directory_iterator(fs::path(a.data) / "prompts")) {
        auto stem = file.path().stem().string();
        if (stem.rfind("identity_", 0) != 0) continue;
        entropic::prompts::ParsedIdentity id;
        if (!entropic::prompts::load_identity(file.path(), id).empty()) continue;
        if (id.frontmatter.allowed_tools) map[stem.substr(9)] = *id.frontmatter.allowed_tools;
    }
    return map;
}

// 4. The bundled identities call the plugin when it is named `bash`.
void identities_call(const Args &a, const std::string &name) {
    Engine e(engine_yaml(a, false, "permissions:\n  auto_approve: true\n"), a);
    CHECK(e.plugins_rc == ENTROPIC_OK);
    auto tiers = identities(a);
    int shell_tiers = 0;
    for (const auto &[tier, tools] : tiers) {
        if (std::find(tools.begin(), tools.end(), "bash.execute") == tools.end()) continue;
        shell_tiers++;
        auto m = call(e, name + ".execute", {{"command", "echo from-" + tier}}, true, tier, &tiers);
        if (name == "bash") {
            CHECK(kind(m) == "ok", tier + ": " + kind(m) + " " + m.content);
            CHECK(m.content.find("from-" + tier) != std::string::npos, m.content);
        } else {
            CHECK(kind(m) == "rejected_unauthorized", tier + ": " + kind(m));
        }
    }
    CHECK(shell_tiers >= 2, std::to_string(shell_tiers));
}

// 4b. With the built-in bash enabled, a plugin named `bash` is refused loudly.
void duplicate(const Args &a) {
    Engine e(engine_yaml(a, true, "permissions:\n  auto_approve: true\n"), a);
    CHECK(e.plugins_rc == ENTROPIC_ERROR_PLUGIN_LOAD_FAILED, std::to_string(e.plugins_rc));
    auto names = e.servers->server_names();
    CHECK(std::count(names.begin(), names.end(), "bash") == 1);
    // bash.execute is the engine's own server: its result has no duration_ms.
    auto doc = routed(e, "bash.execute", {{"command", "echo builtin"}});
    CHECK(doc.value("output", "") == "builtin\n" && !doc.contains("duration_ms"), doc.dump());
}

// 5. Every entry point answers in the engine's entropic_error_t vocabulary.
void codes(const Args &a) {
    std::unique_ptr<entropic::PluginServer> plugin;
    CHECK(entropic::PluginServer::load(a.plugin, plugin) == ENTROPIC_OK);
    if (!plugin) return;
    CHECK(plugin->set_working_dir(a.project) == ENTROPIC_OK);
    CHECK(plugin->set_working_dir("/nonexistent/dir") == ENTROPIC_ERROR_INVALID_ARGUMENT);
    CHECK(plugin->set_working_dir("/etc/hostname") == ENTROPIC_ERROR_INVALID_ARGUMENT);
    CHECK(plugin->configure("{\"bogus\": 1}") == ENTROPIC_ERROR_INVALID_CONFIG);
    CHECK(plugin->configure("not json") == ENTROPIC_ERROR_INVALID_CONFIG);
    CHECK(plugin->configure("{\"timeout_seconds\": -1}") == ENTROPIC_ERROR_INVALID_CONFIG);
    CHECK(plugin->configure("{\"max_concurrent\": 2}") == ENTROPIC_OK);
    // NULL handle and NULL strings, through the raw entry points.
    void *lib = dlopen(a.plugin.c_str(), RTLD_NOW | RTLD_LOCAL);
    CHECK(lib != nullptr);
    if (lib == nullptr) return;
    auto configure = reinterpret_cast<int (*)(void *, const char *)>(dlsym(lib, "entropic_mcp_server_configure"));
    auto set_dir = reinterpret_cast<int (*)(void *, const char *)>(dlsym(lib, "entropic_mcp_server_set_working_dir"));
    auto create = reinterpret_cast<void *(*)()>(dlsym(lib, "entropic_create_server"));
    auto destroy = reinterpret_cast<void (*)(void *)>(dlsym(lib, "entropic_mcp_server_destroy"));
    CHECK(configure(nullptr, "{}") == ENTROPIC_ERROR_INVALID_HANDLE);
    CHECK(set_dir(nullptr, "/") == ENTROPIC_ERROR_INVALID_HANDLE);
    void *server = create();
    CHECK(server != nullptr);
    CHECK(configure(server, nullptr) == ENTROPIC_ERROR_INVALID_ARGUMENT);
    CHECK(set_dir(server, nullptr) == ENTROPIC_ERROR_INVALID_ARGUMENT);
    destroy(server);
    dlclose(lib);
}

// 6. The plugin's own per-part rules: what the engine's matching allows whole.
void enforce(const Args &a) {
    Engine e(engine_yaml(a, false, "permissions:\n  allow:\n    - \"bash.execute:git *\"\n    - \"bash.execute:echo *\"\n"), a);
    auto victim = fs::path(a.project) / "x";
    fs::create_directories(victim);
    json compound = {{"command", "git status && rm -rf x"}};
    // The engine itself approves it: its pattern is the whole text, matched by `git *`.
    CHECK(e.servers->is_explicitly_allowed("bash.execute", compound.dump()));
    auto m = call(e, "bash.execute", compound, false);
    CHECK(fs::exists(victim), m.content);
    CHECK(kind(m) == "error", kind(m) + " " + m.content);
    auto doc = json::parse(m.content, nullptr, false);
    CHECK(doc.is_object() && doc.value("error", "") == "permission_denied", m.content);
    CHECK(m.content.find("rm -rf x") != std::string::npos, m.content);
    auto fine = call(e, "bash.execute", {{"command", "echo fine"}}, false);
    CHECK(kind(fine) == "ok" && fine.content.find("fine") != std::string::npos, fine.content);
}

// 6a'. Deny rules only: the engine approves `ls; rm -rf x` (its rule sees the
// whole text); the plugin refuses it naming what its deny rule matched, and
// never calls the harmless `ls` a part "no allow rule" matches (there are none).
void deny_only(const Args &a) {
    Engine e(engine_yaml(a, false, "permissions:\n  deny:\n    - \"bash.execute:rm *\"\n"), a);
    auto victim = fs::path(a.project) / "x";
    fs::create_directories(victim);
    auto m = call(e, "bash.execute", {{"command", "ls; rm -rf x"}}, true);
    CHECK(fs::exists(victim), m.content);
    CHECK(kind(m) == "error", kind(m) + " " + m.content);
    CHECK(m.content.find("`rm -rf x` matches the deny rule `bash.execute:rm *`") != std::string::npos, m.content);
    CHECK(m.content.find("allow rule") == std::string::npos, m.content);
    CHECK(m.content.find("`ls`") == std::string::npos, m.content);
    auto fine = call(e, "bash.execute", {{"command", "ls; echo fine"}}, true);
    CHECK(kind(fine) == "ok" && fine.content.find("fine") != std::string::npos, fine.content);
}

// 6b. A relative working_dir: ours resolves against the project directory the
// engine gave set_working_dir (mcp.working_dir), its built-in against the
// process's current directory (here another directory, without `sub`).
void workdir(const Args &a) {
    Engine e(engine_yaml(a, true, "permissions:\n  auto_approve: true\n"), a);
    CHECK(e.plugins_rc == ENTROPIC_OK);
    fs::create_directories(fs::path(a.project) / "sub");
    CHECK(fs::current_path() != fs::path(a.project) && !fs::exists("sub"));
    auto ours = routed(e, "shell.execute", {{"command", "pwd"}, {"working_dir", "sub"}});
    CHECK(ours.value("output", "") == (fs::path(a.project) / "sub").string() + "\n", ours.dump());
    auto builtin = json::parse(e.servers->execute("bash.execute", json({{"command", "pwd"}, {"working_dir", "sub"}}).dump()));
    CHECK(builtin.value("result", "").rfind("Error: working_dir is not an existing directory", 0) == 0, builtin.dump());
}

// 7. The README's engine configuration and plugin file, as an operator copies them.
void readme(const Args &a) {
    const char *path = std::getenv("DRIVE_ENGINE_YAML");
    CHECK(path != nullptr);
    if (path == nullptr) return;
    std::ifstream in(path);
    std::string yaml((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Engine e(yaml, a);
    CHECK(e.plugins_rc == ENTROPIC_OK);
    CHECK(!e.config.mcp.enable_bash);
    auto names = e.servers->server_names();
    CHECK(std::count(names.begin(), names.end(), "bash") == 1);
    CHECK(e.servers->is_explicitly_allowed("bash.execute", json({{"command", "git status"}}).dump()));
    auto victim = fs::current_path() / "x";
    fs::create_directories(victim);
    auto envelope = json::parse(e.servers->execute("bash.execute", json({{"command", "rm -rf x"}}).dump()));
    CHECK(fs::exists(victim));
    CHECK(envelope.value("result", "").rfind("Error: Permission denied", 0) == 0, envelope.dump());
    auto m = call(e, "bash.execute", {{"command", "git status && rm -rf x"}}, false);
    CHECK(fs::exists(victim), m.content);
    CHECK(kind(m) == "error" && m.content.find("permission_denied") != std::string::npos, m.content);
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: drive <scenario> <plugin.so> <project dir> <engine data dir>\n");
        return 2;
    }
    std::string scenario = argv[1];
    Args a{argv[2], argv[3], argv[4]};
    if (scenario == "keying") keying(a);
    else if (scenario == "errors") errors(a);
    else if (scenario == "output") output(a);
    else if (scenario == "identities-bash") identities_call(a, "bash");
    else if (scenario == "identities-shell") identities_call(a, "shell");
    else if (scenario == "duplicate") duplicate(a);
    else if (scenario == "codes") codes(a);
    else if (scenario == "enforce") enforce(a);
    else if (scenario == "deny-only") deny_only(a);
    else if (scenario == "readme") readme(a);
    else if (scenario == "workdir") workdir(a);
    else {
        std::fprintf(stderr, "unknown scenario %s\n", scenario.c_str());
        return 2;
    }
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
