//! The C API from C and C++: the examples and the rules program are compiled
//! with `-Wall -Wextra -Werror` using the commands in the README's "Using from C and C++", run, and
//! their output checked; one run goes under valgrind. Every command they start
//! is tagged and must be gone when they exit.

mod cbuild;
mod common;

use std::process::Command;
use std::time::Duration;

use cbuild::*;
use common::{TAG_VAR, assert_no_survivors, unique_tag};

/// The documented commands (the README's "Using from C and C++"), with `{LIB}`/`{RPATH}` for the
/// library directory and `{OUT}` for the program.
const BUILD_C: &str =
    "cc -std=c11 -Wall -Wextra -Werror -I include examples/c/basic.c -L {LIB} -Wl,-rpath,{RPATH} -lbash_mcp -o {OUT}";
const BUILD_C_STATIC: &str = "cc -std=c11 -Wall -Wextra -Werror -I include examples/c/basic.c {LIB}/libbash_mcp.a -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc -o {OUT}";
const BUILD_CPP: &str = "c++ -std=c++17 -Wall -Wextra -Werror -pthread -I include examples/cpp/raii.cpp -L {LIB} -Wl,-rpath,{RPATH} -lbash_mcp -o {OUT}";
const BUILD_RULES: &str = "cc -std=c11 -Wall -Wextra -Werror -pthread -I include tests/c/api_rules.c -L {LIB} -Wl,-rpath,{RPATH} -lbash_mcp -o {OUT}";
const BUILD_MCP: &str = "cc -std=c11 -Wall -Wextra -Werror -pthread -I include tests/c/mcp_handler.c -L {LIB} -Wl,-rpath,{RPATH} -lbash_mcp -o {OUT}";
const BUILD_POLICY: &str = "cc -std=c11 -Wall -Wextra -Werror -pthread -I include tests/c/policy.c -L {LIB} -Wl,-rpath,{RPATH} -lbash_mcp -o {OUT}";

const DEADLINE: Duration = Duration::from_secs(60);

#[test]
fn docs_show_the_tested_commands() {
    let docs = std::fs::read_to_string(crate_dir().join("README.md")).expect("README.md");
    for (template, out) in [
        (BUILD_C, "basic"),
        (BUILD_C_STATIC, "basic-static"),
        (BUILD_CPP, "raii"),
    ] {
        let shown = fill(template, "target/release", "\"$PWD/target/release\"", out);
        assert!(
            docs.contains(&shown),
            "README.md must show the tested command:\n{shown}"
        );
    }
}

/// Runs a built example in a scratch dir with tagged commands; checks it
/// succeeded and left nothing running.
fn run_tagged(program: &std::path::Path, cwd: &std::path::Path, name: &str) -> String {
    let tag = unique_tag(name);
    let output = run(Command::new(program).current_dir(cwd).env(TAG_VAR, &tag), DEADLINE);
    assert_no_survivors(&tag);
    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{name} failed ({}):\n{stdout}\n{}",
        output.status,
        text(&output.stderr)
    );
    stdout
}

fn check_basic_output(out: &str, scratch: &std::path::Path) {
    let version = env!("CARGO_PKG_VERSION");
    assert!(out.contains(&format!("bash-mcp {version} (header {version})")), "{out}");
    assert!(out.contains("server: bash, timeout 30 s"), "{out}");
    assert!(out.contains("tools: [{") && out.contains("\"inputSchema\""), "{out}");
    let result_line = out.lines().find(|l| l.starts_with("result: ")).expect("a result line");
    let envelope: serde_json::Value = serde_json::from_str(&result_line["result: ".len()..]).unwrap();
    let result: serde_json::Value = serde_json::from_str(envelope["result"].as_str().unwrap()).unwrap();
    assert_eq!(result["exit_code"], 3);
    assert_eq!(result["output"], "hello from sh\n");
    assert_eq!(result["working_dir"], scratch.to_str().unwrap());
    let timeout_line = out
        .lines()
        .find(|l| l.starts_with("timeout: "))
        .expect("a timeout line");
    let envelope: serde_json::Value = serde_json::from_str(&timeout_line["timeout: ".len()..]).unwrap();
    let result: serde_json::Value = serde_json::from_str(envelope["result"].as_str().unwrap()).unwrap();
    assert_eq!(result["error"], "timeout");
    assert_eq!(result["timeout_seconds"], 1);
    assert_eq!(result["output"], "before the timeout\n");
    assert!(
        out.contains(
            "error: BASH_MCP_RESULT_WORKING_DIR_NOT_FOUND: working_dir_not_found: working directory /nonexistent/dir"
        ),
        "{out}"
    );
}

#[test]
fn basic_c_example_runs() {
    let scratch = Scratch::new("basic");
    let program = scratch.path("basic");
    compile(BUILD_C, &program);
    let out = run_tagged(&program, &scratch.0, "basic");
    check_basic_output(&out, &scratch.0);
}

#[test]
fn basic_c_example_links_statically() {
    let scratch = Scratch::new("basic-static");
    let program = scratch.path("basic-static");
    compile(BUILD_C_STATIC, &program);
    // Statically linked: it must not need the shared library at run time.
    let ldd = Command::new("ldd").arg(&program).output().expect("ldd");
    assert!(!text(&ldd.stdout).contains("libbash_mcp"), "{}", text(&ldd.stdout));
    let out = run_tagged(&program, &scratch.0, "basic-static");
    check_basic_output(&out, &scratch.0);
}

#[test]
fn raii_cpp_example_runs_with_cancel_and_live_output() {
    let scratch = Scratch::new("raii");
    let program = scratch.path("raii");
    compile(BUILD_CPP, &program);
    let out = run_tagged(&program, &scratch.0, "raii");
    assert!(out.contains("server: bash"), "{out}");
    assert!(out.contains("\"inputSchema\""), "{out}");
    assert!(out.contains(r#"\"output\":\"hello from c++\\n\""#), "{out}");
    assert!(
        out.contains(r#"\"error\":\"timeout\""#) && out.contains(r#"\"output\":\"slow\\n\""#),
        "{out}"
    );
    assert!(out.contains(" chunk(s): working\n"), "{out}");
    let cancelled = out
        .lines()
        .find(|l| l.starts_with("cancelled: "))
        .expect("a cancelled line");
    assert!(cancelled.contains(r#"\"error\":\"cancelled\""#), "{out}");
    assert!(cancelled.contains(r#"\"output\":\"working\\n\""#), "{out}");
    assert!(out.contains("cancel took under 10 s"), "{out}");
    assert!(out.contains("debug records: some"), "{out}");
}

#[test]
fn api_rules_hold_from_c() {
    let scratch = Scratch::new("rules");
    let program = scratch.path("api_rules");
    compile(BUILD_RULES, &program);
    let work = scratch.path("work");
    std::fs::create_dir(&work).unwrap();
    let tag = unique_tag("rules");
    let output = run(Command::new(&program).arg(&work).env(TAG_VAR, &tag), DEADLINE);
    assert_no_survivors(&tag);
    let stdout = text(&output.stdout);
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(
        output.status.success() && summary.ends_with(" passed, 0 failed"),
        "api_rules failed ({}):\n{stdout}\n{}",
        output.status,
        text(&output.stderr)
    );
    let passed: u32 = summary.split_whitespace().next().unwrap().parse().unwrap();
    assert!(passed >= 100, "only {passed} checks ran:\n{stdout}");
}

#[test]
fn policy_rules_hold_from_c() {
    let scratch = Scratch::new("policy");
    let program = scratch.path("policy");
    compile(BUILD_POLICY, &program);
    let output = run(Command::new(&program).current_dir(&scratch.0), DEADLINE);
    let stdout = text(&output.stdout);
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(
        output.status.success() && summary.ends_with(" passed, 0 failed"),
        "policy failed ({}):\n{stdout}\n{}",
        output.status,
        text(&output.stderr)
    );
    let passed: u32 = summary.split_whitespace().next().unwrap().parse().unwrap();
    assert!(passed >= 80, "only {passed} checks ran:\n{stdout}");
}

#[test]
fn mcp_handler_serves_from_c() {
    let scratch = Scratch::new("mcp");
    let program = scratch.path("mcp_handler");
    compile(BUILD_MCP, &program);
    let tag = unique_tag("mcp-c");
    let output = run(
        Command::new(&program).current_dir(&scratch.0).env(TAG_VAR, &tag),
        DEADLINE,
    );
    assert_no_survivors(&tag);
    let stdout = text(&output.stdout);
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(
        output.status.success() && summary.ends_with(" passed, 0 failed"),
        "mcp_handler failed ({}):\n{stdout}\n{}",
        output.status,
        text(&output.stderr)
    );
    let passed: u32 = summary.split_whitespace().next().unwrap().parse().unwrap();
    assert!(passed >= 25, "only {passed} checks ran:\n{stdout}");
}

#[test]
fn examples_are_clean_under_valgrind() {
    if !have("valgrind") {
        println!("SKIP: valgrind not installed");
        return;
    }
    let scratch = Scratch::new("valgrind");
    let basic = scratch.path("basic");
    compile(BUILD_C, &basic);
    let rules = scratch.path("api_rules");
    compile(BUILD_RULES, &rules);
    let policy = scratch.path("policy");
    compile(BUILD_POLICY, &policy);
    let mcp = scratch.path("mcp_handler");
    compile(BUILD_MCP, &mcp);
    let work = scratch.path("work");
    std::fs::create_dir(&work).unwrap();
    for (program, args) in [
        (&basic, vec![]),
        (&rules, vec![work.as_os_str()]),
        (&policy, vec![]),
        (&mcp, vec![]),
    ] {
        let tag = unique_tag("valgrind");
        let output = run(
            Command::new("valgrind")
                .args([
                    "--leak-check=full",
                    "--errors-for-leak-kinds=definite",
                    "--trace-children=no",
                ])
                .arg(program)
                .args(args)
                .current_dir(&scratch.0)
                .env(TAG_VAR, &tag),
            Duration::from_secs(300),
        );
        assert_no_survivors(&tag);
        let report = text(&output.stderr);
        assert!(
            output.status.success(),
            "{program:?} under valgrind failed:\n{}\n{report}",
            text(&output.stdout)
        );
        assert_valgrind_clean(&report);
    }
}
