//! Where commands may run: allowed roots, symlink and `..` escapes, and
//! per-project `.bash-mcp.toml` files.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use bash_mcp::{BashServer, ErrorCode, McpServer};
use common::*;
use serde_json::json;

/// `root/inner`, `outside` and `root/link -> /etc` in a fresh directory
/// (removed when the returned guard drops), and its resolved path.
fn tree(name: &str) -> (TempDir, PathBuf) {
    let scratch = TempDir::new(&format!("roots-{name}"));
    let dir = std::fs::canonicalize(&*scratch).unwrap();
    std::fs::create_dir_all(dir.join("root/inner")).unwrap();
    std::fs::create_dir_all(dir.join("outside")).unwrap();
    std::os::unix::fs::symlink("/etc", dir.join("root/link")).unwrap();
    (scratch, dir)
}

fn confined(dir: &Path) -> TestServer {
    let s = tagged(BashServer::new(dir.join("root"), None, Duration::from_secs(10)).unwrap());
    s.configure(&json!({"allowed_roots": [dir.join("root")]}).to_string())
        .unwrap();
    s
}

#[test]
fn commands_run_inside_the_roots() {
    let (_scratch, dir) = tree("inside");
    let s = confined(&dir);
    let r = call(&s, json!({"command": "pwd", "working_dir": "inner"}));
    assert_eq!(
        r["output"].as_str().unwrap().trim(),
        dir.join("root/inner").to_str().unwrap()
    );
    let r = call(&s, json!({"command": "pwd"}));
    assert_eq!(r["exit_code"], 0, "{r}");
}

#[test]
fn escapes_are_refused_with_the_roots_named() {
    let (_scratch, dir) = tree("escape");
    let s = confined(&dir);
    for wd in [
        dir.join("outside"),
        dir.join("root/link"),       // symlink to /etc
        dir.join("root/../outside"), // .. escape
        dir.join("root/inner/../../outside"),
        PathBuf::from("/"),
    ] {
        let r = call(&s, json!({"command": "pwd", "working_dir": wd}));
        assert_eq!(r["error"], "working_dir_not_allowed", "{}: {r}", wd.display());
        let message = r["message"].as_str().unwrap();
        assert!(message.contains(dir.join("root").to_str().unwrap()), "{message}");
    }
    // Relative escapes too.
    let r = call(&s, json!({"command": "pwd", "working_dir": "../outside"}));
    assert_eq!(r["error"], "working_dir_not_allowed", "{r}");
    // The server's own working dir is confined as well.
    assert_eq!(
        s.set_working_dir(&dir.join("outside")).unwrap_err().code,
        ErrorCode::WorkingDirNotAllowed
    );
}

#[test]
fn a_default_dir_outside_new_roots_is_refused_at_call_time() {
    let (_scratch, dir) = tree("default");
    let s = tagged(BashServer::new(dir.join("outside"), None, Duration::from_secs(10)).unwrap());
    s.configure(&json!({"allowed_roots": [dir.join("root")]}).to_string())
        .unwrap();
    let r = call(&s, json!({"command": "pwd"}));
    assert_eq!(r["error"], "working_dir_not_allowed", "{r}");
}

#[test]
fn roots_must_exist_and_null_lifts_them() {
    let (_scratch, dir) = tree("config");
    let s = confined(&dir);
    let err = s.configure(r#"{"allowed_roots": ["/no/such/root"]}"#).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidConfig);
    assert!(err.message.contains("allowed_roots"), "{err}");
    s.configure(r#"{"allowed_roots": null}"#).unwrap();
    let r = call(&s, json!({"command": "pwd", "working_dir": dir.join("outside")}));
    assert_eq!(r["exit_code"], 0, "{r}");
}

#[test]
fn project_file_extends_replaces_and_fails_soft() {
    let (_scratch, dir) = tree("project");
    let s = confined(&dir);
    s.configure(r#"{"project_config": true}"#).unwrap();
    let project = dir.join("root/inner");

    // extend: the project may add a sibling directory (relative to the file's folder).
    std::fs::write(
        project.join(".bash-mcp.toml"),
        "allowed_roots = [\"../../outside\"]\nmode = \"extend\"\n",
    )
    .unwrap();
    let r = call(&s, json!({"command": "pwd", "working_dir": project}));
    assert_eq!(r["exit_code"], 0, "{r}");

    // replace with an empty list locks everything out, even inside the operator's root.
    std::fs::write(
        project.join(".bash-mcp.toml"),
        "allowed_roots = []\nmode = \"replace\"\n",
    )
    .unwrap();
    let r = call(&s, json!({"command": "pwd", "working_dir": project}));
    assert_eq!(r["error"], "working_dir_not_allowed", "{r}");
    assert!(r["message"].as_str().unwrap().contains("locked out"), "{r}");

    // malformed: a warning, and the operator's roots apply (inner is inside them).
    std::fs::write(project.join(".bash-mcp.toml"), "mode = \"sideways\"\n").unwrap();
    let r = call(&s, json!({"command": "pwd", "working_dir": project}));
    assert_eq!(r["exit_code"], 0, "{r}");
    let warnings = s.project_file_warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains(".bash-mcp.toml") && w.contains("mode")),
        "{warnings:?}"
    );

    // wrong types fail soft too.
    std::fs::write(project.join(".bash-mcp.toml"), "allowed_roots = \"/\"\n").unwrap();
    let r = call(&s, json!({"command": "pwd", "working_dir": project}));
    assert_eq!(r["exit_code"], 0, "{r}");
}

#[test]
fn windows_paths_outside_wsl_are_invalid_working_dirs() {
    if bash_mcp::roots::is_wsl() {
        common::skip("running under WSL, where Windows paths are converted");
        return;
    }
    let s = server();
    let r = call(&s, json!({"command": "pwd", "working_dir": r"C:\Users\x"}));
    assert_eq!(r["error"], "working_dir_not_found", "{r}");
    assert!(r["message"].as_str().unwrap().contains("Windows path"), "{r}");
}

/// A confined server whose default directory is `root/inner`, with project files on.
fn in_project(dir: &Path) -> TestServer {
    let s = tagged(BashServer::new(dir.join("root/inner"), None, Duration::from_secs(10)).unwrap());
    s.configure(&json!({"allowed_roots": [dir.join("root")], "project_config": true}).to_string())
        .unwrap();
    s
}

#[test]
fn an_extended_root_of_the_current_project_is_reachable() {
    let (_scratch, dir) = tree("extended");
    std::fs::write(
        dir.join("root/inner/.bash-mcp.toml"),
        "allowed_roots = [\"../../outside\"]\nmode = \"extend\"\n",
    )
    .unwrap();
    let s = in_project(&dir);
    let r = call(&s, json!({"command": "pwd", "working_dir": dir.join("outside")}));
    assert_eq!(r["exit_code"], 0, "{r}");
    assert_eq!(
        r["output"].as_str().unwrap().trim(),
        dir.join("outside").to_str().unwrap()
    );
    // The operator's roots still hold everywhere else.
    let r = call(&s, json!({"command": "pwd", "working_dir": "/"}));
    assert_eq!(r["error"], "working_dir_not_allowed", "{r}");
}

#[test]
fn a_project_file_outside_the_operator_roots_cannot_authorize_itself() {
    let (_scratch, dir) = tree("self-authorizing");
    let file = dir.join("outside/.bash-mcp.toml");
    std::fs::write(&file, "allowed_roots = [\".\"]\nmode = \"extend\"\n").unwrap();
    let s = in_project(&dir);
    let r = call(&s, json!({"command": "pwd", "working_dir": dir.join("outside")}));
    assert_eq!(r["error"], "working_dir_not_allowed", "{r}");
    // Also not with replace.
    std::fs::write(&file, "allowed_roots = [\".\"]\nmode = \"replace\"\n").unwrap();
    let r = call(&s, json!({"command": "pwd", "working_dir": dir.join("outside")}));
    assert_eq!(r["error"], "working_dir_not_allowed", "{r}");
    let warnings = s.project_file_warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains(file.to_str().unwrap()) && w.contains("outside the operator's allowed roots")),
        "{warnings:?}"
    );
}

#[test]
fn replace_with_an_empty_list_in_the_current_project_locks_every_directory_out() {
    let (_scratch, dir) = tree("locked");
    std::fs::write(
        dir.join("root/inner/.bash-mcp.toml"),
        "allowed_roots = []\nmode = \"replace\"\n",
    )
    .unwrap();
    let s = in_project(&dir);
    for wd in [dir.join("root/inner"), dir.join("root")] {
        let r = call(&s, json!({"command": "pwd", "working_dir": wd}));
        assert_eq!(r["error"], "working_dir_not_allowed", "{}: {r}", wd.display());
        assert!(r["message"].as_str().unwrap().contains("locked out"), "{r}");
    }
}

#[test]
fn warnings_of_deleted_project_files_clear() {
    let (_scratch, dir) = tree("deleted");
    let file = dir.join("root/inner/.bash-mcp.toml");
    std::fs::write(&file, "mode = \"sideways\"\n").unwrap();
    let s = in_project(&dir);
    let r = call(&s, json!({"command": "pwd"}));
    assert_eq!(r["exit_code"], 0, "{r}");
    let mentions = |s: &TestServer| {
        s.project_file_warnings()
            .iter()
            .any(|w| w.contains(file.to_str().unwrap()))
    };
    assert!(mentions(&s), "{:?}", s.project_file_warnings());
    std::fs::remove_file(&file).unwrap();
    assert!(!mentions(&s), "{:?}", s.project_file_warnings());
}

#[test]
fn set_working_dir_resolves_relative_paths_against_the_current_default() {
    let (_scratch, dir) = tree("relative-default");
    let s = tagged(BashServer::new(dir.join("root"), None, Duration::from_secs(10)).unwrap());
    s.set_working_dir(Path::new("inner")).unwrap();
    assert_eq!(s.working_dir(), dir.join("root/inner"));
    // `..` is kept as given (only roots resolve symlinks): compare resolved.
    s.set_working_dir(Path::new("../../outside")).unwrap();
    assert_eq!(std::fs::canonicalize(s.working_dir()).unwrap(), dir.join("outside"));
    let err = s.set_working_dir(Path::new("no-such-dir")).unwrap_err();
    assert_eq!(err.code, ErrorCode::WorkingDirNotFound);
    assert!(err.message.contains("/outside/no-such-dir"), "{err}");
}
