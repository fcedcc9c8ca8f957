//! The header-only C++ wrapper (`include/bash_mcp.hpp`) and the example that
//! implements the entropic engine's server interface shape over it
//! (`examples/cpp/entropic_server.cpp`): compiled with the documented
//! commands (`-Wall -Wextra -Werror`, without exceptions, and with
//! `BASH_MCP_CPP_EXCEPTIONS`), run, and checked; nothing they start survives.

mod cbuild;
mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use cbuild::{Scratch, compile, crate_dir, fill, run, text};
use common::{TAG_VAR, assert_no_survivors, unique_tag};

/// The documented commands (docs on "Using from C and C++").
const BUILD_EXAMPLE: &str = "c++ -std=c++17 -Wall -Wextra -Werror -fno-exceptions -I include examples/cpp/entropic_server.cpp -L {LIB} -Wl,-rpath,{RPATH} -lbash_mcp -o {OUT}";
const BUILD_WRAPPER: &str = "c++ -std=c++17 -Wall -Wextra -Werror -fno-exceptions -pthread -I include tests/c/wrapper.cpp -L {LIB} -Wl,-rpath,{RPATH} -lbash_mcp -o {OUT}";
const BUILD_WRAPPER_EXCEPTIONS: &str = "c++ -std=c++17 -Wall -Wextra -Werror -DBASH_MCP_CPP_EXCEPTIONS -pthread -I include tests/c/wrapper.cpp -L {LIB} -Wl,-rpath,{RPATH} -lbash_mcp -o {OUT}";

/// Runs `program` with `args`; checks it succeeded and left nothing behind.
fn run_checked(program: &Path, args: &[&Path], cwd: &Path) -> String {
    let tag = unique_tag("cpp-wrapper");
    let output = run(
        Command::new(program).args(args).current_dir(cwd).env(TAG_VAR, &tag),
        Duration::from_secs(60),
    );
    assert_no_survivors(&tag);
    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{} failed ({}):\n{stdout}\n{}",
        program.display(),
        output.status,
        text(&output.stderr)
    );
    stdout
}

#[test]
fn docs_show_the_tested_cpp_commands() {
    let docs: String = ["README.md", "docs/c-api.md", "docs/entropic.md"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(crate_dir().join(f)).ok())
        .collect();
    let shown = fill(
        BUILD_EXAMPLE,
        "target/release",
        "\"$PWD/target/release\"",
        "entropic_server",
    );
    assert!(docs.contains(&shown), "the docs must show the tested command:\n{shown}");
}

#[test]
fn cpp_wrapper_works_without_exceptions() {
    let scratch = Scratch::new("cpp-wrapper");
    let program = scratch.path("wrapper");
    compile(BUILD_WRAPPER, &program);
    let out = run_checked(&program, &[&scratch.0], &scratch.0);
    assert!(out.trim_end().ends_with(" passed, 0 failed"), "{out}");
}

#[test]
fn cpp_wrapper_throws_only_when_asked() {
    let scratch = Scratch::new("cpp-wrapper-exc");
    let program = scratch.path("wrapper");
    compile(BUILD_WRAPPER_EXCEPTIONS, &program);
    let out = run_checked(&program, &[&scratch.0], &scratch.0);
    assert!(out.trim_end().ends_with(" passed, 0 failed"), "{out}");
}

#[test]
fn cpp_example_implements_the_engine_server_shape() {
    let scratch = Scratch::new("cpp-entropic-server");
    let program = scratch.path("entropic_server");
    compile(BUILD_EXAMPLE, &program);
    let project = scratch.path("project");
    std::fs::create_dir(&project).unwrap();
    let out = run_checked(&program, &[&project], &scratch.0);
    assert!(out.contains("pattern: bash.execute:{rm,true} *\n"), "{out}");
    assert!(!out.contains("FAILED"), "{out}");
    assert!(out.trim_end().ends_with("all passed"), "{out}");
}
