//! The README's two commands stay true: the first code block names exactly
//! the demo and the test suite, and the demo runs and shows what it promises.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::*;

fn demo_binary() -> PathBuf {
    // target/<profile>/deps/readme-<hash> -> target/<profile>/examples/demo
    let exe = std::env::current_exe().expect("test executable");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("target dir")
        .join("examples")
        .join("demo")
}

#[test]
fn readme_starts_with_the_two_commands() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let block = readme
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a sh block");
    let commands: Vec<&str> = block
        .lines()
        .map(|l| l.split('#').next().unwrap().trim())
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(commands, ["cargo run --example demo", "cargo test --all-features"]);
    let ci = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l.trim() == "cargo test --all-features"),
        ".ci/run runs the README's test command"
    );
}

#[test]
fn demo_runs_real_commands_through_the_server() {
    let demo = demo_binary();
    if !demo.exists() {
        // `cargo test` builds examples; a filtered build may not have.
        common::skip(format_args!(
            "{} not built (run cargo test without --test filters)",
            demo.display()
        ));
        return;
    }
    let tag = unique_tag("demo");
    let output = Command::new(&demo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env(TAG_VAR, &tag)
        .output()
        .expect("run the demo");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8(output.stdout).unwrap();
    // The first line is for a person: the server and its tools by name.
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("server `bash` with tools: execute, ") && first.len() < 200,
        "{first}"
    );
    for expected in [
        "\"exit_code\": 3",
        "\"error\": \"timeout\"",
        "bytes omitted",
        "\"error\": \"working_dir_not_found\"",
        "bash.execute:{git,rm} *",
        "catastrophic",
    ] {
        assert!(text.contains(expected), "demo output lacks {expected:?}:\n{text}");
    }
    assert_no_survivors(&tag);
}
