//! The entropic plugin driven through the real engine's own classes.
//!
//! `tests/engine/build.sh` builds the engine's MCP layer (v2.10.4, with its
//! config loader, prompts and types, and the YAML library it uses) unmodified
//! from the archives in `../shared/third_party` (the repository sits next to
//! `shared/`), cached under the target directory. `tests/engine/drive.cpp`
//! then loads the plugin through `mcp.plugins` and drives it through
//! `ServerManager`, `PermissionManager`, `ToolExecutor` and the bundled
//! identities; each test below runs one of its scenarios and checks that
//! nothing the commands started survived.
//!
//! Without `../shared/third_party` the tests print SKIP (a clone outside this
//! project's CI); with `BASH_MCP_REQUIRE_ENGINE=1` (set by `.ci/run`) they fail.
#![cfg(feature = "entropic-plugin")]

mod cbuild;
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use cbuild::{Scratch, crate_dir, library, run, text};
use common::{TAG_VAR, assert_no_survivors, unique_tag};

const ENGINE: &str = "entropic-2.10.4";

/// The archives, or why they are not there.
fn third_party() -> Result<PathBuf, String> {
    let dir = crate_dir().join("..").join("shared").join("third_party");
    let archive = dir.join(format!("{ENGINE}.tar.gz"));
    if archive.is_file() {
        Ok(dir)
    } else {
        Err(format!(
            "{} not found: these tests build the real entropic engine (release v2.10.4, \
             github.com/tvanfossen/entropic) from its source archive, kept next to this repository \
             in CI; put the release's source tarball there under that name to run them",
            Path::new("..")
                .join("shared/third_party")
                .join(archive.file_name().unwrap())
                .display()
        ))
    }
}

/// The engine's build directory and the compiled driver.
struct Engine {
    dir: PathBuf,
    driver: PathBuf,
}

/// The engine, built once per test binary, or why it cannot be built here:
/// its source is absent, or a tool or library its build needs is missing
/// (build.sh exits 3 and names it). With `BASH_MCP_REQUIRE_ENGINE` set, as in
/// CI, either is a failure instead.
fn engine() -> Result<&'static Engine, &'static str> {
    static ENGINE_BUILD: OnceLock<Result<Engine, String>> = OnceLock::new();
    let not_here = |why: String| {
        assert!(
            std::env::var_os("BASH_MCP_REQUIRE_ENGINE").is_none(),
            "BASH_MCP_REQUIRE_ENGINE is set, but {why}"
        );
        Err(why)
    };
    ENGINE_BUILD
        .get_or_init(|| {
            let third_party = match third_party() {
                Ok(dir) => dir,
                Err(why) => return not_here(why),
            };
            let cache = library().dir.parent().expect("a target dir").join("entropic-engine");
            let output = run(
                Command::new("bash")
                    .arg(crate_dir().join("tests/engine/build.sh"))
                    .arg(&third_party)
                    .arg(&cache),
                Duration::from_secs(3 * 3600),
            );
            if output.status.code() == Some(MISSING_PREREQUISITE) {
                return not_here(format!(
                    "{} (.ci/c-api-deps.sh installs it)",
                    text(&output.stderr).trim()
                ));
            }
            assert!(
                output.status.success(),
                "building the engine failed:\n{}{}",
                text(&output.stdout),
                text(&output.stderr)
            );
            let dir = PathBuf::from(text(&output.stdout).trim());
            let driver = compile_driver(&dir);
            Ok(Engine { dir, driver })
        })
        .as_ref()
        .map_err(String::as_str)
}

/// build.sh's exit code when a tool or header it needs is not installed.
const MISSING_PREREQUISITE: i32 = 3;

/// Compiles tests/engine/drive.cpp against the engine library, reusing the
/// binary while the source is unchanged.
fn compile_driver(dir: &Path) -> PathBuf {
    let source = crate_dir().join("tests/engine/drive.cpp");
    let wanted = std::fs::read(&source).expect("drive.cpp");
    let copy = dir.join("drive.cpp");
    let driver = dir.join("drive");
    if driver.is_file() && std::fs::read(&copy).ok().as_deref() == Some(&wanted[..]) {
        return driver;
    }
    let src = dir.join("src").join(ENGINE);
    let ryml = dir.join("src/rapidyaml");
    let output = Command::new("g++")
        .args(["-std=c++20", "-O0", "-g0", "-Wall", "-Wextra", "-Werror"])
        .arg(format!("-I{}", src.join("include").display()))
        .arg(format!("-I{}", dir.join("include").display()))
        .arg(format!("-I{}", ryml.join("src").display()))
        .arg(format!("-I{}", ryml.join("ext/c4core.src").display()))
        .arg(&source)
        .arg("-o")
        .arg(&driver)
        .arg(format!("-L{}", dir.join("lib").display()))
        .arg(format!("-Wl,-rpath,{}", dir.join("lib").display()))
        .args(["-lentropic_mcp", "-lspdlog", "-lfmt", "-ldl", "-pthread"])
        .output()
        .expect("run g++");
    assert!(
        output.status.success(),
        "compiling drive.cpp failed:\n{}",
        text(&output.stderr)
    );
    std::fs::write(&copy, &wanted).expect("keep a copy of drive.cpp");
    driver
}

/// Runs one scenario of the driver with the plugin configured by `config`
/// (the JSON of its `BASH_MCP_PLUGIN_CONFIG` file); returns its stderr.
fn scenario(name: &str, config: &str) -> Option<String> {
    scenario_with(name, config, &[])
}

fn scenario_with(name: &str, config: &str, env: &[(&str, &Path)]) -> Option<String> {
    let engine = match engine() {
        Ok(engine) => engine,
        Err(why) => {
            common::skip(why);
            return None;
        }
    };
    let scratch = Scratch::new("engine");
    let project = scratch.path("project");
    std::fs::create_dir(&project).unwrap();
    let config_file = scratch.path("plugin.json");
    std::fs::write(&config_file, config).unwrap();
    let tag = unique_tag("engine");
    let output = run(
        Command::new(&engine.driver)
            .arg(name)
            .arg(&library().shared)
            .arg(&project)
            .arg(engine.dir.join("src").join(ENGINE).join("data"))
            .current_dir(&scratch.0)
            .env("BASH_MCP_PLUGIN_CONFIG", &config_file)
            .env_remove("BASH_MCP_PLUGIN_NAME")
            .env(TAG_VAR, &tag)
            .envs(env.iter().copied()),
        Duration::from_secs(300),
    );
    assert_no_survivors(&tag);
    let stdout = text(&output.stdout);
    assert!(
        output.status.success() && stdout.trim_end().ends_with(" passed, 0 failed"),
        "scenario {name} failed ({}):\n{stdout}\n{}",
        output.status,
        text(&output.stderr)
    );
    Some(text(&output.stderr))
}

#[test]
fn engine_permission_patterns_are_keyed_on_the_command() {
    scenario("keying", r#"{"name": "bash"}"#);
}

#[test]
fn engine_sees_error_results_as_errors_and_successes_as_ok() {
    scenario("errors", r#"{"name": "bash"}"#);
}

#[test]
fn engine_cut_never_reaches_the_output_tail_and_marker() {
    scenario("output", r#"{"name": "bash"}"#);
}

#[test]
fn engine_identities_call_the_plugin_named_bash() {
    scenario("identities-bash", r#"{"name": "bash"}"#);
}

#[test]
fn engine_identities_reject_the_plugin_under_another_name() {
    scenario("identities-shell", "{}");
}

#[test]
fn engine_refuses_a_plugin_named_bash_while_its_builtin_is_enabled() {
    if let Some(stderr) = scenario("duplicate", r#"{"name": "bash"}"#) {
        assert!(
            stderr.contains("collides with an already registered server"),
            "the engine did not say why:\n{stderr}"
        );
    }
}

#[test]
fn engine_reads_every_return_code_in_its_own_vocabulary() {
    scenario("codes", "{}");
}

#[test]
fn engine_allowed_compound_is_refused_by_the_plugins_own_rules() {
    scenario(
        "enforce",
        r#"{"name": "bash", "permissions": {"allow": ["bash.execute:git *", "bash.execute:echo *"]}}"#,
    );
}

#[test]
fn engine_deny_only_refusal_names_only_what_the_deny_rule_matched() {
    scenario(
        "deny-only",
        r#"{"name": "bash", "permissions": {"deny": ["bash.execute:rm *"]}}"#,
    );
}

#[test]
fn engine_relative_working_dir_resolves_against_the_project() {
    scenario("workdir", "{}");
}

/// The first fenced block of `lang` in docs/entropic.md (its info string may
/// go on after the language: ```` ```json plugin ````).
fn readme_block(lang: &str) -> String {
    let section = std::fs::read_to_string(crate_dir().join("docs/entropic.md")).expect("docs/entropic.md");
    let fence = format!("```{lang} ");
    let start = section.find(&fence).unwrap_or_else(|| panic!("no {lang} block"));
    let start = start + section[start..].find('\n').expect("a block") + 1;
    let block = &section[start..];
    let end = block.find("```").expect("a closing fence");
    // The blocks sit in a list item: drop the item's indentation.
    let indent = block.len() - block.trim_start_matches(' ').len();
    let lines: Vec<&str> = block[..end]
        .lines()
        .map(|line| {
            let spaces = line.len() - line.trim_start_matches(' ').len();
            &line[spaces.min(indent)..]
        })
        .collect();
    lines.join("\n")
}

#[test]
fn engine_loads_the_readme_configuration() {
    let yaml = readme_block("yaml");
    let shown = "/opt/bash-mcp/lib/libbash_mcp.so";
    assert!(yaml.contains(shown), "{yaml}");
    let yaml = yaml.replace(shown, library().shared.to_str().unwrap());
    let dir = Scratch::new("engine-readme");
    let file = dir.path("engine.yaml");
    std::fs::write(&file, yaml).unwrap();
    scenario_with("readme", &readme_block("json"), &[("DRIVE_ENGINE_YAML", &file)]);
}
