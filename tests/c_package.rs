//! The C package: `scripts/install-c.sh` installs the library, its symlinks,
//! the header and a pkg-config file under a prefix; a C program then builds
//! with `pkg-config --cflags --libs bash_mcp` alone (the README's command, on
//! the README's C example), and CMake finds the library through pkg-config
//! (`examples/cmake`).

mod cbuild;
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use cbuild::{Scratch, crate_dir, have, library, run, text};
use common::{TAG_VAR, assert_no_survivors, unique_tag};

const DEADLINE: Duration = Duration::from_secs(300);

/// The README's C example and its pkg-config build line.
fn readme_example() -> (String, String) {
    let readme = std::fs::read_to_string(crate_dir().join("README.md")).unwrap();
    let block = readme
        .split("```c\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("a C block in the README");
    let line = readme
        .lines()
        .find(|l| l.contains("$(pkg-config --cflags --libs bash_mcp)"))
        .expect("the README's pkg-config build line");
    (format!("{block}\n"), line.trim().to_owned())
}

/// The `bash-mcp` binary of this build, when the test is built with the `cli`
/// feature (`cargo test --all-features`).
const HELPER: Option<&str> = option_env!("CARGO_BIN_EXE_bash-mcp");

/// Installs the library this build made under `<scratch>/usr`, with this build's
/// `bash-mcp` as its helper when there is one.
fn install(scratch: &Scratch) -> PathBuf {
    let prefix = scratch.path("usr");
    let mut command = Command::new("bash");
    command
        .arg(crate_dir().join("scripts/install-c.sh"))
        .arg("--prefix")
        .arg(&prefix)
        .arg("--from")
        .arg(&library().dir);
    match HELPER {
        Some(helper) => command.arg("--helper").arg(helper),
        None => command.arg("--no-helper"),
    };
    let output = run(&mut command, DEADLINE);
    assert!(
        output.status.success(),
        "scripts/install-c.sh failed:\n{}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    prefix
}

/// Whether any of `tools` is missing; each missing one gets a SKIP line
/// saying how to install it.
fn missing_tools(tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools.iter().copied().filter(|t| !have(t)).collect();
    for tool in &missing {
        common::skip_missing(tool);
    }
    !missing.is_empty()
}

/// Runs a program built against the installed library, found through the
/// loader's search path as an installed library is.
fn run_installed(program: &Path, lib: &Path, name: &str) -> String {
    let tag = unique_tag(name);
    let output = run(
        Command::new(program)
            .current_dir(program.parent().unwrap())
            .env("LD_LIBRARY_PATH", lib)
            .env(TAG_VAR, &tag),
        DEADLINE,
    );
    assert_no_survivors(&tag);
    assert!(
        output.status.success(),
        "{name} failed ({}):\n{}{}",
        output.status,
        text(&output.stdout),
        text(&output.stderr)
    );
    text(&output.stdout)
}

#[test]
fn installs_a_versioned_library_with_symlinks_header_and_pc_file() {
    if missing_tools(&["objcopy", "readelf"]) {
        return;
    }
    let scratch = Scratch::new("install");
    let prefix = install(&scratch);
    let lib = prefix.join("lib");
    let version = env!("CARGO_PKG_VERSION");
    let real = lib.join(format!("libbash_mcp.so.{version}"));
    assert!(real.is_file() && !real.is_symlink(), "{} is not a file", real.display());
    let link = |name: &str| std::fs::read_link(lib.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        link("libbash_mcp.so.0"),
        PathBuf::from(format!("libbash_mcp.so.{version}"))
    );
    assert_eq!(link("libbash_mcp.so"), PathBuf::from("libbash_mcp.so.0"));
    assert!(lib.join("libbash_mcp.a").is_file());
    assert!(prefix.join("include/bash_mcp.h").is_file());
    if HELPER.is_some() {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(prefix.join("bin/bash-mcp"))
            .expect("bin/bash-mcp")
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0o111, "bin/bash-mcp is not executable");
    }
    let pc = std::fs::read_to_string(lib.join("pkgconfig/bash_mcp.pc")).unwrap();
    assert!(pc.contains(&format!("prefix={}\n", prefix.display())), "{pc}");
    assert!(pc.contains(&format!("Version: {version}\n")), "{pc}");
    // The SONAME carries the ABI major version; debug information is not shipped.
    let dynamic = text(&Command::new("readelf").arg("-d").arg(&real).output().unwrap().stdout);
    assert!(
        dynamic.contains("(SONAME)") && dynamic.contains("[libbash_mcp.so.0]"),
        "{dynamic}"
    );
    let sections = text(&Command::new("readelf").arg("-S").arg(&real).output().unwrap().stdout);
    assert!(
        !sections.contains(".debug_info"),
        "the installed library carries debug info"
    );
    let size = std::fs::metadata(&real).unwrap().len();
    let built = std::fs::metadata(&library().shared).unwrap().len();
    println!("installed library: {size} bytes (built: {built} bytes)");
    assert!(size < built, "stripping did not make the library smaller");
}

#[test]
fn the_readme_example_builds_with_pkg_config_alone() {
    if missing_tools(&["cc", "pkg-config", "objcopy", "readelf"]) {
        return;
    }
    let scratch = Scratch::new("pkg-config");
    let prefix = install(&scratch);
    let (source, line) = readme_example();
    std::fs::write(scratch.path("hello.c"), source).unwrap();
    // The README's line as written: no -I, -L or rpath besides what pkg-config prints.
    let output = run(
        Command::new("bash")
            .args(["-euc", &line])
            .current_dir(&scratch.0)
            .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig")),
        DEADLINE,
    );
    assert!(
        output.status.success(),
        "{line} failed:\n{}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    let out = run_installed(&scratch.path("hello"), &prefix.join("lib"), "pkg-config-hello");
    assert!(out.contains("hello from C"), "{out}");
}

/// docs/c-api.md's lines for a prefix the loader does not search: with
/// `PKG_CONFIG_PATH` and the rpath they add, the program builds and runs
/// with nothing else set.
#[test]
fn a_private_prefix_builds_and_runs_with_the_documented_rpath() {
    if missing_tools(&["cc", "pkg-config", "objcopy", "readelf"]) {
        return;
    }
    let doc = std::fs::read_to_string(crate_dir().join("docs/c-api.md")).unwrap();
    let block = doc
        .split("```text run by tests/c_package.rs, with its temporary prefix as PREFIX")
        .nth(1)
        .and_then(|b| b.split_once('\n'))
        .and_then(|(_, b)| b.split("\n```").next())
        .expect("docs/c-api.md's block for a private prefix");
    let scratch = Scratch::new("private-prefix");
    let prefix = install(&scratch);
    let (source, _) = readme_example();
    std::fs::write(scratch.path("hello.c"), source).unwrap();
    let script = block.replacen("PREFIX=\"$HOME/.local\"", &format!("PREFIX='{}'", prefix.display()), 1);
    assert_ne!(script, block, "the block starts by setting PREFIX");
    let tag = unique_tag("private-prefix");
    let output = run(
        Command::new("bash")
            .args(["-euc", &script])
            .current_dir(&scratch.0)
            .env_remove("LD_LIBRARY_PATH")
            .env_remove("PKG_CONFIG_PATH")
            .env(TAG_VAR, &tag),
        DEADLINE,
    );
    assert_no_survivors(&tag);
    assert!(
        output.status.success(),
        "the documented lines failed:\n{script}\n{}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    assert!(
        text(&output.stdout).contains("hello from C"),
        "{}",
        text(&output.stdout)
    );
}

#[test]
fn cmake_finds_the_library_through_pkg_config() {
    if missing_tools(&["cmake", "cc", "pkg-config", "objcopy", "readelf"]) {
        return;
    }
    let scratch = Scratch::new("cmake");
    let prefix = install(&scratch);
    let build = scratch.path("build");
    for args in [
        vec![
            "-S".into(),
            crate_dir().join("examples/cmake").display().to_string(),
            "-B".into(),
            build.display().to_string(),
            format!("-DCMAKE_PREFIX_PATH={}", prefix.display()),
        ],
        vec!["--build".into(), build.display().to_string()],
    ] {
        let output = run(Command::new("cmake").args(&args), DEADLINE);
        assert!(
            output.status.success(),
            "cmake {args:?} failed:\n{}{}",
            text(&output.stdout),
            text(&output.stderr)
        );
    }
    let out = run_installed(&build.join("basic"), &prefix.join("lib"), "cmake-basic");
    assert!(out.contains("server: bash"), "{out}");
}

/// A C program linked against the installed library, with a Landlock sandbox
/// configured and no `bash-mcp` on PATH, finds the helper the install put in
/// `<prefix>/bin` and runs its command inside the sandbox.
#[test]
fn the_installed_library_finds_its_sandbox_helper() {
    if missing_tools(&["cc", "pkg-config", "objcopy", "readelf"]) {
        return;
    }
    if HELPER.is_none() {
        common::skip("built without the cli feature: there is no bash-mcp to install");
        return;
    }
    let scratch = Scratch::new("helper");
    let prefix = install(&scratch);
    let source = r#"#include <bash_mcp.h>
#include <stdio.h>
int main(void) {
    struct bash_mcp_server *server;
    if (bash_mcp_server_new(".", NULL, 30, &server) != BASH_MCP_RESULT_OK) return 2;
    const char *config = "{\"sandbox\": {\"mode\": \"workspace-write\", \"backend\": \"landlock\"}}";
    if (bash_mcp_server_configure(server, config) != BASH_MCP_RESULT_OK) {
        char *message = bash_mcp_last_error_message();
        fprintf(stderr, "configure: %s\n", message ? message : "?");
        bash_mcp_string_free(message);
        return 3;
    }
    char *result = bash_mcp_server_execute(server, "execute", "{\"command\": \"echo inside\"}");
    puts(result ? result : "NULL");
    bash_mcp_string_free(result);
    bash_mcp_server_free(server);
    return 0;
}
"#;
    std::fs::write(scratch.path("helper.c"), source).unwrap();
    let output = run(
        Command::new("bash")
            .args(["-euc", "cc helper.c $(pkg-config --cflags --libs bash_mcp) -o helper"])
            .current_dir(&scratch.0)
            .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig")),
        DEADLINE,
    );
    assert!(output.status.success(), "cc failed:\n{}", text(&output.stderr));
    let tag = unique_tag("installed-helper");
    let output = run(
        Command::new(scratch.path("helper"))
            .current_dir(&scratch.0)
            .env("LD_LIBRARY_PATH", prefix.join("lib"))
            .env("PATH", "/usr/bin:/bin")
            .env(TAG_VAR, &tag),
        DEADLINE,
    );
    assert_no_survivors(&tag);
    let out = text(&output.stdout);
    assert!(
        output.status.success(),
        "helper program failed:\n{out}{}",
        text(&output.stderr)
    );
    assert!(
        !out.contains("was not found"),
        "the installed library did not find bin/bash-mcp:\n{out}"
    );
    if out.contains("sandbox_unavailable") {
        common::skip(format_args!("Landlock is not usable on this kernel: {out}"));
        return;
    }
    assert!(out.contains("inside"), "{out}");
    assert!(
        out.contains("landlock"),
        "the result does not name the Landlock backend:\n{out}"
    );
}
