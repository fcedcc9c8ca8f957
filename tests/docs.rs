//! Every code block in README.md and docs/*.md is checked by what it is, so
//! the documentation cannot drift from the code:
//!
//! - `rust`: compiled and run as doctests (`src/lib.rs` includes each file
//!   under `cfg(doctest)`); this test checks every file with Rust blocks is
//!   included;
//! - `c`: compiled with `-Wall -Wextra -Werror` against the built library and
//!   run;
//! - `sh`: run with `bash -eu` in a scratch directory, the `bash-mcp` binary of
//!   this build first on `PATH` (the README's first block, the two commands
//!   after cloning, is checked by tests/readme.rs instead);
//! - `toml` and `json file`: loaded by the binary as its configuration file
//!   (`bash-mcp serve --config FILE`, which refuses an unknown key or bad value);
//!   `toml project`: a per-project `.bash-mcp.toml` the library reads without
//!   a warning;
//! - `json config`: applied with the library's `configure`;
//! - `json client`: an MCP client's server entry, started as it says;
//! - `json result`: a result document whose every key the tools' output
//!   schemas define;
//! - `yaml rules`: permission rules `PermissionPolicy` accepts;
//! - `json plugin` and `yaml engine` (docs/entropic.md): the plugin's file and
//!   the engine's configuration, which tests/entropic_engine.rs loads into
//!   the real engine;
//! - `yaml manifest` (docs/deploy.md): a Kubernetes manifest, which
//!   tests/deploy.rs validates against its CRD's schema;
//! - `text <reason>`: not run, and the info string says why.

mod cbuild;
mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use bash_mcp::permission::PermissionPolicy;
use bash_mcp::{BashServer, McpServer};
use common::{TAG_VAR, TempDir, assert_no_survivors, unique_tag};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_bash-mcp");
const DEADLINE: Duration = Duration::from_secs(120);

/// A fenced code block: its file, first line, info string and text.
#[derive(Debug)]
struct Block {
    file: String,
    line: usize,
    info: String,
    text: String,
}

impl Block {
    fn lang(&self) -> &str {
        self.info.split_whitespace().next().unwrap_or("")
    }
    fn kind(&self) -> &str {
        self.info.split_whitespace().nth(1).unwrap_or("")
    }
    fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every docs/*.md, relative to the crate root.
fn doc_files() -> Vec<String> {
    let mut files = vec!["README.md".to_owned()];
    let mut docs: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// The fenced blocks of `file`, with the fence's indentation removed.
fn blocks_of(file: &str) -> Vec<Block> {
    let text = std::fs::read_to_string(root().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut blocks = Vec::new();
    let mut open: Option<(usize, usize, String, Vec<String>)> = None;
    for (i, line) in text.lines().enumerate() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim_start();
        match &mut open {
            None if trimmed.starts_with("```") => {
                open = Some((i + 1, indent, trimmed[3..].trim().to_owned(), Vec::new()));
            }
            Some((start, ind, info, body)) if trimmed.starts_with("```") && trimmed.trim() == "```" => {
                let _ = ind;
                blocks.push(Block {
                    file: file.to_owned(),
                    line: *start,
                    info: info.clone(),
                    text: body.join("\n") + "\n",
                });
                open = None;
            }
            Some((_, ind, _, body)) => body.push(line.get(*ind..).unwrap_or(line.trim_start()).to_owned()),
            None => {}
        }
    }
    assert!(open.is_none(), "{file}: a code block is never closed");
    blocks
}

fn all_blocks() -> Vec<Block> {
    doc_files().iter().flat_map(|f| blocks_of(f)).collect()
}

fn blocks(lang: &str) -> Vec<Block> {
    all_blocks().into_iter().filter(|b| b.lang() == lang).collect()
}

/// `cargo install` without `--locked` resolves the dependencies anew and can
/// build versions this crate was never tested with: every install line the
/// docs give a user pins them to `Cargo.lock`.
#[test]
fn every_cargo_install_the_docs_show_is_locked() {
    let mut unlocked = Vec::new();
    for file in doc_files() {
        let text = std::fs::read_to_string(root().join(&file)).unwrap();
        for (i, line) in text.lines().enumerate() {
            if line.contains("cargo install ") && !line.contains("--locked") {
                unlocked.push(format!("{file}:{}: {}", i + 1, line.trim()));
            }
        }
    }
    assert!(
        unlocked.is_empty(),
        "add --locked to these cargo install lines:\n{}",
        unlocked.join("\n")
    );
}

#[test]
fn every_block_has_a_kind_this_test_checks() {
    let known = [
        ("rust", ""),
        ("c", ""),
        ("sh", ""),
        ("toml", ""),
        ("toml", "project"),
        ("json", "file"),
        ("json", "config"),
        ("json", "client"),
        ("json", "result"),
        ("json", "wire"),
        ("yaml", "rules"),
        ("json", "plugin"),
        ("yaml", "engine"),
        ("yaml", "manifest"),
    ];
    let blocks = all_blocks();
    assert!(blocks.len() > 20, "found only {} code blocks", blocks.len());
    for b in &blocks {
        if b.lang() == "text" {
            let reason = b.info["text".len()..].trim();
            assert!(
                reason.split_whitespace().count() >= 3,
                "{}: a `text` block must say why it is not run (```text <reason>), got {:?}",
                b.at(),
                b.info
            );
            continue;
        }
        assert!(
            known.contains(&(b.lang(), b.kind())),
            "{}: code block ```{} is of no kind tests/docs.rs checks; use one of {known:?}, or \
             ```text <why it is not run>",
            b.at(),
            b.info
        );
    }
}

#[test]
fn every_file_with_rust_blocks_is_compiled_as_doctests() {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    let files: BTreeSet<String> = blocks("rust").into_iter().map(|b| b.file).collect();
    assert!(files.contains("README.md"));
    for file in files {
        let include = format!("include_str!(\"../{file}\")");
        assert!(
            lib.contains(&include),
            "src/lib.rs must include {file} for its doctests: #[doc = {include}]"
        );
    }
}

#[test]
fn c_blocks_compile_and_run() {
    if !cbuild::have("cc") {
        common::skip_missing("cc");
        return;
    }
    let lib = cbuild::library();
    let c_blocks = blocks("c");
    assert!(
        c_blocks.iter().any(|b| b.file == "README.md"),
        "the README has a C example"
    );
    for (i, b) in c_blocks.iter().enumerate() {
        let scratch = cbuild::Scratch::new("doc-c");
        let source = scratch.path(&format!("block{i}.c"));
        std::fs::write(&source, &b.text).unwrap();
        let exe = scratch.path("program");
        let output = Command::new("cc")
            .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pthread", "-I"])
            .arg(root().join("include"))
            .arg(&source)
            .arg(format!("-L{}", lib.dir.display()))
            .arg(format!("-Wl,-rpath,{}", lib.dir.display()))
            .args(["-lbash_mcp", "-o"])
            .arg(&exe)
            .output()
            .expect("run cc");
        assert!(
            output.status.success(),
            "{}: the C block does not compile:\n{}",
            b.at(),
            cbuild::text(&output.stderr)
        );
        let tag = unique_tag("doc-c");
        let output = cbuild::run(Command::new(&exe).current_dir(&scratch.0).env(TAG_VAR, &tag), DEADLINE);
        assert_no_survivors(&tag);
        assert!(
            output.status.success(),
            "{}: the C block's program failed ({}):\n{}{}",
            b.at(),
            output.status,
            cbuild::text(&output.stdout),
            cbuild::text(&output.stderr)
        );
    }
}

/// Runs `script` with bash in `dir`, this build's `bash-mcp` first on PATH.
fn run_shell(script: &str, dir: &Path, at: &str) -> String {
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let tag = unique_tag("doc-sh");
    let output = cbuild::run(
        Command::new("bash")
            .args(["-eu", "-o", "pipefail", "-c", script])
            .current_dir(dir)
            .env("PATH", path)
            .env(TAG_VAR, &tag),
        DEADLINE,
    );
    assert_no_survivors(&tag);
    let stdout = cbuild::text(&output.stdout);
    assert!(
        output.status.success(),
        "{at}: the shell block failed ({}):\n{script}\n--- stdout\n{stdout}\n--- stderr\n{}",
        output.status,
        cbuild::text(&output.stderr)
    );
    stdout
}

#[test]
fn shell_blocks_run() {
    let sh = blocks("sh");
    let (first, rest): (Vec<&Block>, Vec<&Block>) = sh
        .iter()
        .partition(|b| b.file == "README.md" && b.line == first_readme_sh_line());
    assert_eq!(
        first.len(),
        1,
        "the README's first sh block (checked by tests/readme.rs)"
    );
    assert!(!rest.is_empty());
    for b in rest {
        let dir = TempDir::new("doc-sh");
        run_shell(&b.text, &dir, &b.at());
    }
}

fn first_readme_sh_line() -> usize {
    blocks_of("README.md")
        .iter()
        .find(|b| b.lang() == "sh")
        .expect("a sh block")
        .line
}

/// Starts `bash-mcp` with `args` and no input: it loads its configuration,
/// then exits at end of input. Returns its stderr on success.
fn serve_and_exit(args: &[String], at: &str) -> String {
    let tag = unique_tag("doc-serve");
    let output = cbuild::run(
        Command::new(BIN).args(args).env(TAG_VAR, &tag).stdin(Stdio::null()),
        DEADLINE,
    );
    assert_no_survivors(&tag);
    let stderr = cbuild::text(&output.stderr);
    assert!(
        output.status.success(),
        "{at}: bash-mcp {args:?} failed ({}):\n{stderr}",
        output.status
    );
    stderr
}

/// Writes `text` as the binary's configuration file in `dir`, named for its
/// format, with the directories it names created there.
fn config_file(dir: &Path, text: &str, ext: &str) -> PathBuf {
    let file = dir.join(format!("bash-mcp.{ext}"));
    std::fs::write(&file, text).unwrap();
    file
}

#[test]
fn configuration_files_load_in_the_binary() {
    let mut checked = 0;
    for b in all_blocks() {
        let ext = match (b.lang(), b.kind()) {
            ("toml", "") => "toml",
            ("json", "file") => "json",
            _ => continue,
        };
        let dir = TempDir::new("doc-config");
        // Paths the examples name, made real inside the scratch directory;
        // the server works in a project beside its configuration file (which
        // must lie outside the roots of a sandbox it configures).
        let project = dir.join("project");
        std::fs::create_dir(&project).unwrap();
        let text = b.text.replace("/home/me/project", &project.display().to_string());
        let file = config_file(&dir, &text, ext);
        let args = vec![
            "serve".to_owned(),
            "--config".to_owned(),
            file.display().to_string(),
            "--working-dir".to_owned(),
            project.display().to_string(),
        ];
        serve_and_exit(&args, &b.at());
        checked += 1;
    }
    assert!(checked >= 2, "found {checked} configuration files");
}

#[test]
fn client_entries_start_the_server() {
    let readme_toml = blocks_of("README.md")
        .into_iter()
        .find(|b| b.lang() == "toml" && b.kind().is_empty())
        .expect("the README's bash-mcp.toml");
    let mut checked = 0;
    for b in blocks("json").into_iter().filter(|b| b.kind() == "client") {
        let doc: Value = serde_json::from_str(&b.text).unwrap_or_else(|e| panic!("{}: {e}", b.at()));
        for (name, server) in doc["mcpServers"].as_object().expect("mcpServers") {
            let command = server["command"].as_str().unwrap();
            assert!(
                command.ends_with("bash-mcp"),
                "{}: server {name} runs {command}",
                b.at()
            );
            // The project is the default sandbox's writable root: the file
            // that configures it lies beside it.
            let dir = TempDir::new("doc-client");
            let config_dir = TempDir::new("doc-client-config");
            let config = config_file(&config_dir, &readme_toml.text, "toml");
            let args: Vec<String> = server["args"]
                .as_array()
                .expect("args")
                .iter()
                .map(|a| {
                    a.as_str()
                        .unwrap()
                        .replace("/path/to/bash-mcp.toml", &config.display().to_string())
                        .replace("/path/to/project", &dir.display().to_string())
                })
                .collect();
            serve_and_exit(&args, &b.at());
            checked += 1;
        }
    }
    assert!(checked >= 1);
}

#[test]
fn library_configuration_blocks_apply() {
    let mut checked = 0;
    for b in blocks("json").into_iter().filter(|b| b.kind() == "config") {
        let dir = TempDir::new("doc-lib-config");
        let text = b.text.replace("/var/log/bash-mcp", &dir.display().to_string());
        let server = BashServer::new(&*dir, None, Duration::from_secs(30)).unwrap();
        server
            .configure(&text)
            .unwrap_or_else(|e| panic!("{}: configure refused the block: {e}", b.at()));
        checked += 1;
    }
    assert!(checked >= 2, "found {checked} library configuration blocks");
}

#[test]
fn project_files_are_read_without_a_warning() {
    let mut checked = 0;
    for b in blocks("toml").into_iter().filter(|b| b.kind() == "project") {
        let base = TempDir::new("doc-project");
        let project = base.join("project");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(base.join("shared-cache")).unwrap();
        // The absolute root the example names, made real in the scratch directory.
        let toolchains = base.join("toolchains");
        std::fs::create_dir_all(&toolchains).unwrap();
        let file = project.join(".bash-mcp.toml");
        std::fs::write(
            &file,
            b.text.replace("/opt/toolchains", &toolchains.display().to_string()),
        )
        .unwrap();
        let server = BashServer::new(&project, None, Duration::from_secs(30)).unwrap();
        server.configure(r#"{"project_config": true}"#).unwrap();
        let envelope: Value = serde_json::from_str(&server.execute("execute", r#"{"command": "true"}"#)).unwrap();
        let result: Value = serde_json::from_str(envelope["result"].as_str().unwrap()).unwrap();
        assert_eq!(result["exit_code"], 0, "{}: {result}", b.at());
        let warned: Vec<String> = bash_mcp::roots::project_file_warnings()
            .into_iter()
            .filter(|w| w.contains(&*file.to_string_lossy()))
            .collect();
        assert!(warned.is_empty(), "{}: {warned:?}", b.at());
        checked += 1;
    }
    assert!(checked >= 1);
}

/// Every property name the tools' output schemas define, at any depth.
fn schema_keys() -> BTreeSet<String> {
    fn walk(v: &Value, keys: &mut BTreeSet<String>) {
        match v {
            Value::Object(map) => {
                if let Some(Value::Object(props)) = map.get("properties") {
                    keys.extend(props.keys().cloned());
                }
                map.values().for_each(|x| walk(x, keys));
            }
            Value::Array(items) => items.iter().for_each(|x| walk(x, keys)),
            _ => {}
        }
    }
    let mut keys = BTreeSet::new();
    for entry in std::fs::read_dir(root().join("data/tools/bash")).unwrap() {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap()).unwrap();
        walk(&doc["outputSchema"], &mut keys);
    }
    keys
}

#[test]
fn result_documents_use_only_schema_keys() {
    let known = schema_keys();
    let mut checked = 0;
    for b in blocks("json").into_iter().filter(|b| b.kind() == "result") {
        // Shortened values ("...") are allowed in examples; the keys are not.
        let doc: Value = serde_json::from_str(&b.text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", b.at()));
        for key in doc.as_object().expect("an object").keys() {
            assert!(known.contains(key), "{}: `{key}` is in no tool's outputSchema", b.at());
        }
        checked += 1;
    }
    assert!(checked >= 2);
}

/// Wire examples (`json wire`): one JSON-RPC message per line; every
/// question is `elicitation/create` in form mode with the server's own
/// requested schema, and every answer one the server reads.
#[test]
fn wire_examples_are_the_servers_messages() {
    let schema = bash_mcp::mcp::decision_schema();
    let check_question = |q: &Value, at: &str| {
        assert_eq!(q["method"], "elicitation/create", "{at}: {q}");
        assert_eq!(q["params"]["mode"], "form", "{at}");
        assert_eq!(q["params"]["requestedSchema"], schema, "{at}: not the server's schema");
        let message = q["params"]["message"].as_str().expect("a message");
        assert!(
            message.starts_with("bash.execute asks to run:\n\n    "),
            "{at}: {message}"
        );
    };
    let check_answer = |a: &Value, at: &str| {
        let decision = a["content"]["decision"].as_str().unwrap_or("");
        assert!(
            ["decline", "cancel"].contains(&a["action"].as_str().unwrap_or(""))
                || (a["action"] == "accept" && ["allow_once", "allow_for_server", "deny"].contains(&decision)),
            "{at}: {a}"
        );
    };
    let mut checked = 0;
    for b in blocks("json").into_iter().filter(|b| b.kind() == "wire") {
        for line in b.text.lines() {
            let m: Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{}: not one JSON message: {e}", b.at()));
            assert_eq!(m["jsonrpc"], "2.0", "{}", b.at());
            if m["method"] == "elicitation/create" {
                check_question(&m, &b.at());
            } else if let Some(requests) = m["result"]["inputRequests"].as_object() {
                if m["result"]["status"] == "input_required" {
                    // A task's questions (tasks/get, 2026-07-28).
                    assert_eq!(m["result"]["resultType"], "complete", "{}", b.at());
                    assert!(m["result"]["taskId"].is_string(), "{}", b.at());
                } else {
                    assert_eq!(m["result"]["resultType"], "input_required", "{}", b.at());
                    assert!(m["result"]["requestState"].is_string(), "{}", b.at());
                }
                requests.values().for_each(|q| check_question(q, &b.at()));
            } else if let Some(responses) = m["params"]["inputResponses"].as_object() {
                if m["method"] == "tasks/update" {
                    assert!(m["params"]["taskId"].is_string(), "{}", b.at());
                } else {
                    assert_eq!(m["method"], "tools/call", "{}", b.at());
                    assert!(m["params"]["requestState"].is_string(), "{}", b.at());
                }
                responses.values().for_each(|a| check_answer(a, &b.at()));
            } else {
                check_answer(&m["result"], &b.at());
            }
            checked += 1;
        }
    }
    assert!(checked >= 8, "found {checked} wire messages");
}

#[test]
fn rule_lists_are_valid_policies() {
    let mut checked = 0;
    for b in blocks("yaml").into_iter().filter(|b| b.kind() == "rules") {
        let (mut allow, mut ask, mut deny) = (Vec::new(), Vec::new(), Vec::new());
        let mut list: Option<&mut Vec<String>> = None;
        for line in b.text.lines() {
            let t = line.split(" #").next().unwrap().trim();
            match t {
                "allow:" => list = Some(&mut allow),
                "ask:" => list = Some(&mut ask),
                "deny:" => list = Some(&mut deny),
                _ if t.starts_with("- ") => {
                    if let Some(l) = list.as_mut() {
                        l.push(t[2..].trim().trim_matches('"').to_owned());
                    }
                }
                _ if t.ends_with(':') => list = None,
                _ => {}
            }
        }
        assert!(
            !allow.is_empty() || !ask.is_empty() || !deny.is_empty(),
            "{}: no rules",
            b.at()
        );
        let a: Vec<&str> = allow.iter().map(String::as_str).collect();
        let d: Vec<&str> = deny.iter().map(String::as_str).collect();
        PermissionPolicy::new(&a, &d)
            .and_then(|p| p.with_ask(&ask))
            .unwrap_or_else(|e| panic!("{}: {e}", b.at()));
        checked += 1;
    }
    assert!(checked >= 1);
}

#[test]
fn the_readme_is_a_quick_start_that_links_every_document() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines: keep it a quick start, move reference to docs/"
    );
    for file in doc_files().iter().filter(|f| f.starts_with("docs/")) {
        assert!(readme.contains(&format!("]({file})")), "README.md does not link {file}");
    }
    for needed in [
        "cargo install --locked --path . --features cli",
        "claude mcp add",
        "pkg-config",
        "cargo doc",
        "rust-version",
    ] {
        assert!(readme.contains(needed), "README.md does not mention {needed:?}");
    }
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let msrv = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .expect("rust-version in Cargo.toml")
        .trim_matches('"');
    assert!(
        readme.contains(&format!("Rust {msrv} or later")),
        "README.md must give the minimum Rust version {msrv}"
    );
}

#[test]
fn engine_blocks_are_the_ones_the_engine_test_loads() {
    let engine_test = std::fs::read_to_string(root().join("tests/entropic_engine.rs")).unwrap();
    assert!(
        engine_test.contains("docs/entropic.md"),
        "tests/entropic_engine.rs must read docs/entropic.md"
    );
    let kinds: Vec<(String, String)> = blocks_of("docs/entropic.md")
        .iter()
        .filter(|b| b.lang() == "json" || b.lang() == "yaml")
        .map(|b| (b.lang().to_owned(), b.kind().to_owned()))
        .collect();
    assert_eq!(
        kinds,
        [("json".into(), "plugin".into()), ("yaml".into(), "engine".into())]
    );
    for b in all_blocks()
        .into_iter()
        .filter(|b| matches!(b.kind(), "plugin" | "engine"))
    {
        assert_eq!(
            b.file,
            "docs/entropic.md",
            "{}: only the engine test loads such blocks",
            b.at()
        );
    }
}

#[test]
fn manifest_blocks_are_the_ones_the_deploy_test_validates() {
    let deploy_test = std::fs::read_to_string(root().join("tests/deploy.rs")).unwrap();
    assert!(
        deploy_test.contains("docs/deploy.md") && deploy_test.contains("```yaml manifest"),
        "tests/deploy.rs must read the ```yaml manifest blocks of docs/deploy.md"
    );
    for b in all_blocks().into_iter().filter(|b| b.kind() == "manifest") {
        assert_eq!(
            b.file,
            "docs/deploy.md",
            "{}: only tests/deploy.rs validates manifest blocks, and it reads docs/deploy.md",
            b.at()
        );
    }
}
