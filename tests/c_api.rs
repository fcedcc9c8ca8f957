//! The C API from C and C++: the examples and the rules program are compiled
//! with `-Wall -Wextra -Werror` using the commands in docs/c-api.md, run, and
//! their output checked; each also runs once under valgrind (when installed).
//! Every command they start is tagged and must be gone when they exit. The
//! panic boundary is checked from C (with the forced-panic hook of debug
//! builds) and in the sources (every export is one guard call).

mod cbuild;
mod common;

use std::process::Command;
use std::time::Duration;

use cbuild::*;
use common::{TAG_VAR, assert_no_survivors, unique_tag};

/// The documented commands (docs/c-api.md), with `{LIB}`/`{RPATH}` for the
/// library directory and `{OUT}` for the program.
const BUILD_C: &str =
    "cc -std=c11 -Wall -Wextra -Werror -I include examples/c/basic.c -L {LIB} -Wl,-rpath,{RPATH} -lbash_mcp -o {OUT}";
const BUILD_C_STATIC: &str = "cc -std=c11 -Wall -Wextra -Werror -I include examples/c/basic.c {LIB}/libbash_mcp.a -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc -o {OUT}";
const BUILD_RUN: &str =
    "cc -std=c11 -Wall -Wextra -Werror -I include examples/c/run.c -L {LIB} -Wl,-rpath,{RPATH} -lbash_mcp -o {OUT}";
const BUILD_CPP: &str = "c++ -std=c++17 -Wall -Wextra -Werror -pthread -I include examples/cpp/raii.cpp -L {LIB} -Wl,-rpath,{RPATH} -lbash_mcp -o {OUT}";
const BUILD_RULES: &str = "cc -std=c11 -Wall -Wextra -Werror -pthread -I include tests/c/api_rules.c -L {LIB} -Wl,-rpath,{RPATH} -lbash_mcp -o {OUT}";
const BUILD_VIEW: &str = "cc -std=c11 -Wall -Wextra -Werror -pthread -I include examples/c/session_view.c -L {LIB} -Wl,-rpath,{RPATH} -lbash_mcp -o {OUT}";
const BUILD_MCP: &str = "cc -std=c11 -Wall -Wextra -Werror -pthread -I include tests/c/mcp_handler.c -L {LIB} -Wl,-rpath,{RPATH} -lbash_mcp -o {OUT}";
const BUILD_PANIC: &str = "cc -std=c11 -Wall -Wextra -Werror -I include tests/c/panic_boundary.c -L {LIB} -Wl,-rpath,{RPATH} -lbash_mcp -o {OUT}";
const BUILD_APPROVER: &str = "cc -std=c11 -Wall -Wextra -Werror -pthread -I include tests/c/approver.c -L {LIB} -Wl,-rpath,{RPATH} -lbash_mcp -o {OUT}";
const BUILD_POLICY: &str = "cc -std=c11 -Wall -Wextra -Werror -pthread -I include tests/c/policy.c -L {LIB} -Wl,-rpath,{RPATH} -lbash_mcp -o {OUT}";

/// The command docs/c-api.md gives for listing the static link's libraries.
const NATIVE_LIBS: &str = "cargo rustc --release --lib --crate-type staticlib -- --print native-static-libs";

const DEADLINE: Duration = Duration::from_secs(60);

#[test]
fn docs_show_the_tested_commands() {
    let docs = std::fs::read_to_string(crate_dir().join("docs/c-api.md")).expect("docs/c-api.md");
    for (template, out) in [
        (BUILD_C, "basic"),
        (BUILD_C_STATIC, "basic-static"),
        (BUILD_CPP, "raii"),
        (BUILD_VIEW, "session_view"),
    ] {
        let shown = fill(template, "target/release", "\"$PWD/target/release\"", out);
        assert!(
            docs.contains(&shown),
            "docs/c-api.md must show the tested command:\n{shown}"
        );
    }
    assert!(
        docs.contains(&format!("`{NATIVE_LIBS}`")),
        "docs/c-api.md must show the command that lists the static link's libraries:\n{NATIVE_LIBS}"
    );
}

/// The static link command ends with every library the Rust standard library
/// needs, as rustc lists them for a static library (what docs/c-api.md's
/// `NATIVE_LIBS` command prints for this crate, which adds none).
#[test]
fn static_link_names_what_rustc_lists() {
    if !have("rustc") {
        common::skip("rustc not on PATH");
        return;
    }
    let scratch = Scratch::new("native-libs");
    let output = Command::new("rustc")
        .args([
            "--edition",
            "2021",
            "--crate-type",
            "staticlib",
            "--crate-name",
            "probe",
        ])
        .args(["--print", "native-static-libs", "-o"])
        .arg(scratch.path("libprobe.a"))
        .arg("-")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run rustc");
    let report = text(&output.stderr);
    assert!(output.status.success(), "{report}");
    let listed = report
        .lines()
        .find_map(|l| {
            l.split_once("native-static-libs: ")
                .map(|(_, libs)| libs.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("rustc listed no native-static-libs:\n{report}"));
    let linked: Vec<&str> = BUILD_C_STATIC
        .split_whitespace()
        .filter(|w| w.starts_with("-l"))
        .collect();
    for lib in listed.split_whitespace() {
        assert!(
            linked.contains(&lib),
            "{lib} (listed by rustc: {listed}) is missing from:\n{BUILD_C_STATIC}"
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

/// The typed results: exit code, output, timed out, truncated, error code
/// and message, read without JSON.
#[test]
fn typed_results_example_runs() {
    let scratch = Scratch::new("run");
    let program = scratch.path("run");
    compile(BUILD_RUN, &program);
    let out = run_tagged(&program, &scratch.0, "run");
    for expected in [
        "plain: exit 3, 15 byte(s) of output: hello from run\n",
        "plain: timed out no, truncated no\n",
        "timeout: exit -1, 8 byte(s) of output: started\n",
        "timeout: timed out yes, truncated no\n",
        "timeout: error timeout: Command exceeded",
        "long: exit 0, truncated yes\n",
        "refused: exit -1, 0 byte(s) of output: \n",
        "refused: error working_dir_not_found: working directory /no/such/dir",
        "refused: json {\"error\":\"working_dir_not_found\"",
        "background: BASH_MCP_RESULT_INVALID_ARGUMENT\n",
    ] {
        assert!(out.contains(expected), "run.c output lacks {expected:?}:\n{out}");
    }
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
    assert!(out.contains("cancel took under 20 s"), "{out}");
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
fn a_c_approver_answers_escalations() {
    let scratch = Scratch::new("approver");
    let program = scratch.path("approver");
    compile(BUILD_APPROVER, &program);
    let work = scratch.path("work");
    std::fs::create_dir(&work).unwrap();
    let tag = unique_tag("approver-c");
    let output = run(Command::new(&program).current_dir(&work).env(TAG_VAR, &tag), DEADLINE);
    assert_no_survivors(&tag);
    let stdout = text(&output.stdout);
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(
        output.status.success() && summary.ends_with(" passed, 0 failed"),
        "approver failed ({}):\n{stdout}\n{}",
        output.status,
        text(&output.stderr)
    );
    let passed: u32 = summary.split_whitespace().next().unwrap().parse().unwrap();
    assert!(passed >= 30, "only {passed} checks ran:\n{stdout}");
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
fn session_view_c_example_runs() {
    let scratch = Scratch::new("view");
    let program = scratch.path("session_view");
    compile(BUILD_VIEW, &program);
    let tag = unique_tag("view-c");
    let output = run(
        Command::new(&program).current_dir(&scratch.0).env(TAG_VAR, &tag),
        DEADLINE,
    );
    assert_no_survivors(&tag);
    let stdout = text(&output.stdout);
    assert!(
        output.status.success() && stdout.ends_with("0 failed\n") && !stdout.contains("FAILED"),
        "session_view failed ({}):\n{stdout}\n{}",
        output.status,
        text(&output.stderr)
    );
    assert!(
        stdout.lines().filter(|l| l.starts_with("ok: ")).count() >= 16,
        "{stdout}"
    );
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
fn a_panic_stops_at_each_exported_function() {
    if !cfg!(debug_assertions) {
        common::skip("the forced-panic hook exists only in builds with debug assertions");
        return;
    }
    let scratch = Scratch::new("panic");
    let program = scratch.path("panic_boundary");
    compile(BUILD_PANIC, &program);
    let work = scratch.path("work");
    std::fs::create_dir(&work).unwrap();
    let tag = unique_tag("panic");
    let output = run(
        Command::new(&program)
            .arg(&work)
            .env_remove("BASH_MCP_TEST_FORCE_PANIC")
            .env(TAG_VAR, &tag),
        DEADLINE,
    );
    assert_no_survivors(&tag);
    let stdout = text(&output.stdout);
    let stderr = text(&output.stderr);
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(
        output.status.success() && summary.ends_with(" passed, 0 failed"),
        "panic_boundary failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    // The panics really happened (the default hook reports each on stderr).
    assert!(stderr.contains("BASH_MCP_TEST_FORCE_PANIC=1"), "{stderr}");
    let mut envelopes = 0;
    for line in stdout.lines().filter(|l| l.starts_with("envelope ")) {
        let json = line.split_once(": ").expect("envelope <name>: <json>").1;
        let envelope: serde_json::Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(envelope["directives"], serde_json::json!([]), "{line}");
        let result: serde_json::Value =
            serde_json::from_str(envelope["result"].as_str().expect("a string result")).unwrap();
        assert_eq!(result["error"], "internal", "{line}");
        assert!(result["message"].as_str().unwrap().contains("panicked"), "{line}");
        assert!(result["hint"].is_string(), "{line}");
        envelopes += 1;
    }
    assert_eq!(envelopes, 2, "{stdout}");
}

#[test]
fn examples_are_clean_under_valgrind() {
    if !have("valgrind") {
        common::skip_missing("valgrind");
        return;
    }
    let scratch = Scratch::new("valgrind");
    let basic = scratch.path("basic");
    compile(BUILD_C, &basic);
    let typed = scratch.path("run");
    compile(BUILD_RUN, &typed);
    let raii = scratch.path("raii");
    compile(BUILD_CPP, &raii);
    let rules = scratch.path("api_rules");
    compile(BUILD_RULES, &rules);
    let policy = scratch.path("policy");
    compile(BUILD_POLICY, &policy);
    let mcp = scratch.path("mcp_handler");
    compile(BUILD_MCP, &mcp);
    let approver = scratch.path("approver");
    compile(BUILD_APPROVER, &approver);
    let work = scratch.path("work");
    std::fs::create_dir(&work).unwrap();
    for (program, args) in [
        (&basic, vec![]),
        (&typed, vec![]),
        (&raii, vec![]),
        (&rules, vec![work.as_os_str()]),
        (&policy, vec![]),
        (&mcp, vec![]),
        (&approver, vec![]),
    ] {
        let tag = unique_tag("valgrind");
        let output = run(
            Command::new("valgrind")
                .args([
                    "--leak-check=full",
                    "--errors-for-leak-kinds=definite",
                    "--trace-children=no",
                ])
                .arg(format!(
                    "--suppressions={}",
                    crate_dir().join("tests/c/valgrind.supp").display()
                ))
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

/// The Rust sources of `src/ffi/` with comments removed and the contents of
/// string and character literals blanked, so braces and parentheses in them
/// do not count.
fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                i += 1;
            }
            i += 2;
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !chars[..i].last().is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            let close: String = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
            while j < chars.len() && !chars[j..].iter().take(close.len()).copied().eq(close.chars()) {
                j += 1;
            }
            out.push_str("r\"\"");
            i = j + close.len();
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            i += 1;
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            // A character literal (a lifetime has no closing quote).
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            out.push_str("' '");
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The index just past the bracket that closes the one at `open`.
fn matching(code: &[u8], open: usize) -> usize {
    let (up, down) = (code[open], if code[open] == b'(' { b')' } else { b'}' });
    let mut depth = 0;
    for (i, &b) in code.iter().enumerate().skip(open) {
        if b == up {
            depth += 1;
        } else if b == down {
            depth -= 1;
            if depth == 0 {
                return i + 1;
            }
        }
    }
    panic!("unbalanced brackets");
}

/// Every exported function, with its body: `(file, name, body)`.
fn exported_functions() -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    let dir = crate_dir().join("src/ffi");
    // src/ffi/*.rs and one level of modules below (src/ffi/entropic/).
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("src/ffi")
        .map(|e| e.unwrap().path())
        .flat_map(|p| match std::fs::read_dir(&p) {
            Ok(sub) => sub.map(|e| e.unwrap().path()).collect::<Vec<_>>(),
            Err(_) => vec![p],
        })
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    for path in files {
        let file = path.strip_prefix(&dir).unwrap().to_string_lossy().into_owned();
        let code = code_only(&std::fs::read_to_string(&path).unwrap());
        assert!(
            !code.contains("#[no_mangle]") && !code.contains("export_name") && !code.contains("#[unsafe(export_name"),
            "{file}: export functions with #[unsafe(no_mangle)] only, so this test sees them"
        );
        let bytes = code.as_bytes();
        let mut rest = 0;
        while let Some(at) = code[rest..].find("#[unsafe(no_mangle)]") {
            let start = rest + at;
            let fn_at = start + code[start..].find("fn ").expect("fn after no_mangle") + 3;
            let name_end = fn_at + code[fn_at..].find('(').unwrap();
            let name = code[fn_at..name_end].trim().to_owned();
            assert!(
                code[start..fn_at].contains("extern \"\""),
                "{file}: {name} is exported but not extern \"C\""
            );
            let params_end = matching(bytes, name_end);
            let open = params_end + code[params_end..].find('{').unwrap();
            let close = matching(bytes, open);
            found.push((file.clone(), name, code[open + 1..close - 1].trim().to_owned()));
            rest = close;
        }
    }
    found
}

/// The panic boundary helpers of `src/ffi/` (`panic.rs`, and the helpers
/// built on `panic::guard`).
const GUARDS: [&str; 6] = [
    "panic::guard(",
    "panic::guard_code(",
    "string_call(",
    "number_call(",
    "code_call(",
    "free_owned(",
];

/// Whether a function body is one call to a panic guard, optionally cast
/// (`as c_int`) or alone in an `unsafe` block, with nothing before or after it.
fn is_one_guard_call(body: &str) -> bool {
    let body = match body.strip_prefix("unsafe {").and_then(|b| b.strip_suffix('}')) {
        Some(inner) => inner.trim(),
        None => body,
    };
    GUARDS.iter().any(|guard| {
        body.starts_with(guard) && {
            let end = matching(body.as_bytes(), guard.len() - 1);
            let tail = body[end..].trim();
            tail.is_empty() || tail == "as c_int"
        }
    })
}

#[test]
fn every_export_runs_inside_the_panic_guard() {
    // The helpers themselves must go through panic::guard.
    let string_rs = code_only(&std::fs::read_to_string(crate_dir().join("src/ffi/string.rs")).unwrap());
    let server_rs = code_only(&std::fs::read_to_string(crate_dir().join("src/ffi/server.rs")).unwrap());
    let plugin_rs = code_only(&std::fs::read_to_string(crate_dir().join("src/ffi/entropic/mod.rs")).unwrap());
    let ptr_rs = code_only(&std::fs::read_to_string(crate_dir().join("src/ffi/ptr.rs")).unwrap());
    for (helper, code) in [
        ("fn string_call", &string_rs),
        ("fn number_call", &server_rs),
        ("fn code_call", &plugin_rs),
        ("fn free_owned", &ptr_rs),
    ] {
        let body = &code[code.find(helper).expect(helper)..];
        let open = body.find('{').unwrap();
        let body = &body[open..matching(body.as_bytes(), open)];
        assert!(
            body.trim_start_matches('{').trim().starts_with("panic::guard("),
            "{helper} must be panic::guard(...)"
        );
    }

    let exports = exported_functions();
    // The scan finds what the header and the plugin export (40 today).
    assert!(exports.len() >= 40, "only {} exported functions found", exports.len());
    assert!(exports.iter().any(|(_, n, _)| n == "entropic_mcp_server_execute"));
    let mut unguarded = Vec::new();
    for (file, name, body) in &exports {
        if !is_one_guard_call(body) {
            unguarded.push(format!("{file}: {name}: {}", body.lines().next().unwrap_or_default()));
        }
    }
    assert!(
        unguarded.is_empty(),
        "exported functions whose body is not one call to a panic guard ({GUARDS:?}):\n{}",
        unguarded.join("\n")
    );
}

#[test]
fn the_source_scan_sees_an_unguarded_export() {
    // The scan's own check: an export with work outside the guard is caught.
    let code = code_only(
        "#[unsafe(no_mangle)]\npub unsafe extern \"C\" fn f(p: *mut u8) { if p.is_null() { return; } // {\n panic::guard(|| (), || g(\"}\")) }",
    );
    assert!(code.contains("panic::guard(|| (), || g(\"\"))"), "{code}");
    assert!(!code.contains("// {"), "{code}");
    let open = code.find("{ if").unwrap();
    let body = code[open + 1..matching(code.as_bytes(), open) - 1].trim();
    assert!(!is_one_guard_call(body), "{body}");
    assert!(is_one_guard_call(
        "panic::guard(|| (), || { if p.is_null() { return; } })"
    ));
    assert!(is_one_guard_call("panic::guard_code(|| f()) as c_int"));
    assert!(!is_one_guard_call("panic::guard(|| (), || f()); g()"));
    assert!(is_one_guard_call("unsafe { free_owned(p, |p: Box<_>| drop(p)) }"));
    assert!(!is_one_guard_call(
        "unsafe { g(p); free_owned(p, |p: Box<_>| drop(p)) }"
    ));
    assert!(!is_one_guard_call("unsafe { free_owned(p, |p: Box<_>| drop(p)) } g()"));
}
