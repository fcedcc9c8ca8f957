//! The entropic plugin, loaded the way the engine loads it: a C program
//! dlopens the shared library (RTLD_NOW | RTLD_LOCAL), resolves all nine
//! symbols, and drives create, name, set_working_dir, list_tools, execute, a
//! timeout, configure, destroy and dlclose.
#![cfg(feature = "entropic-plugin")]

mod cbuild;
mod common;

use std::process::{Command, Output};
use std::time::Duration;

use cbuild::*;
use common::{TAG_VAR, assert_no_survivors, unique_tag};

const BUILD_LOADER: &str = "cc -std=c11 -Wall -Wextra -Werror -I include tests/c/plugin_loader.c -ldl -o {OUT}";

/// Runs the loader with `env`, expecting `name` and a default time limit of
/// `timeout` seconds; returns its output after checking nothing survived.
fn load(env: &[(&str, &str)], name: &str, timeout: u32) -> Output {
    let scratch = Scratch::new("plugin");
    let loader = scratch.path("plugin_loader");
    compile(BUILD_LOADER, &loader);
    let project = scratch.path("project");
    std::fs::create_dir(&project).unwrap();
    let tag = unique_tag("plugin");
    let mut cmd = Command::new(&loader);
    cmd.arg(&library().shared)
        .arg(&project)
        .arg(name)
        .arg(timeout.to_string())
        .env_remove("BASH_MCP_PLUGIN_NAME")
        .env_remove("BASH_MCP_PLUGIN_CONFIG")
        .env(TAG_VAR, &tag);
    for (key, value) in env {
        cmd.env(key, value);
    }
    let output = run(&mut cmd, Duration::from_secs(60));
    assert_no_survivors(&tag);
    let stdout = text(&output.stdout);
    assert!(
        output.status.success() && stdout.trim_end().ends_with(" passed, 0 failed"),
        "plugin_loader failed ({}):\n{stdout}\n{}",
        output.status,
        text(&output.stderr)
    );
    output
}

#[test]
fn plugin_loads_unconfigured_as_shell() {
    let output = load(&[], "shell", 30);
    assert!(text(&output.stdout).contains("name: shell\n"));
}

#[test]
fn plugin_reads_its_name_and_config_from_the_environment() {
    let dir = Scratch::new("plugin-config");
    let config = dir.path("plugin.json");
    std::fs::write(&config, r#"{"timeout_seconds": 1, "max_concurrent": 4}"#).unwrap();
    let output = load(
        &[
            ("BASH_MCP_PLUGIN_NAME", "my-shell_2"),
            ("BASH_MCP_PLUGIN_CONFIG", config.to_str().unwrap()),
        ],
        "my-shell_2",
        1,
    );
    assert!(text(&output.stdout).contains("name: my-shell_2\n"));
}

#[test]
fn plugin_refuses_a_builtin_or_invalid_name_with_a_warning() {
    for bad in ["bash", "git", "has space", ""] {
        let output = load(&[("BASH_MCP_PLUGIN_NAME", bad)], "shell", 30);
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains("BASH_MCP_PLUGIN_NAME") && stderr.contains("using `shell`"),
            "{bad:?}: {stderr}"
        );
    }
}

#[test]
fn plugin_with_an_invalid_config_file_is_not_created() {
    let dir = Scratch::new("plugin-bad-config");
    let config = dir.path("plugin.json");
    std::fs::write(&config, r#"{"timeout_seconds": 1, "bogus": true}"#).unwrap();
    let output = load(&[("BASH_MCP_PLUGIN_CONFIG", config.to_str().unwrap())], "NULL", 30);
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("BASH_MCP_PLUGIN_CONFIG") && stderr.contains("bogus"),
        "{stderr}"
    );

    let missing = dir.path("missing.json");
    let output = load(&[("BASH_MCP_PLUGIN_CONFIG", missing.to_str().unwrap())], "NULL", 30);
    assert!(text(&output.stderr).contains("cannot read"), "{}", text(&output.stderr));
}

#[test]
fn plugin_exports_all_nine_symbols() {
    let output = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&library().shared)
        .output()
        .expect("nm");
    let symbols = text(&output.stdout);
    for name in [
        "entropic_plugin_api_version",
        "entropic_create_server",
        "entropic_mcp_server_name",
        "entropic_mcp_server_list_tools",
        "entropic_mcp_server_execute",
        "entropic_mcp_server_configure",
        "entropic_mcp_server_set_working_dir",
        "entropic_mcp_server_destroy",
        "entropic_free",
    ] {
        assert!(
            symbols.lines().any(|l| l.ends_with(&format!(" T {name}"))),
            "{name} is not exported"
        );
    }
}
