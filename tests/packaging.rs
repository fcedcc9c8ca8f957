//! The crate as a dependency: what a Rust program that adds `bash-mcp` to its
//! Cargo.toml compiles, and what the published package holds.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs cargo (the one running this suite) in the crate's directory, offline:
/// everything it needs is in the lock file and the local registry cache.
fn cargo(args: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(args)
        .arg("--offline")
        .current_dir(root())
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo {} failed:\n{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("cargo prints UTF-8")
}

/// The crates of the normal (non-dev, non-build) dependency tree, by name.
fn dependency_names(features: &[&str]) -> Vec<String> {
    let mut args = vec!["tree", "--edges", "normal", "--prefix", "none", "--format", "{p}"];
    args.extend_from_slice(features);
    let tree = cargo(&args);
    tree.lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// The crates only the `bash-mcp` binary uses (the `cli` feature's).
const BINARY_ONLY: &[&str] = &["lexopt", "signal-hook", "tracing-subscriber"];

#[test]
fn library_users_compile_none_of_the_binarys_crates() {
    let library = dependency_names(&[]);
    assert!(
        library.iter().any(|name| name == "serde_json"),
        "the tree was read: {library:?}"
    );
    for name in BINARY_ONLY {
        assert!(
            !library.iter().any(|dep| dep == name),
            "{name} is compiled for library users; it belongs behind the `cli` feature"
        );
    }
    // The same query sees them once the binary is asked for.
    let binary = dependency_names(&["--features", "cli"]);
    for name in BINARY_ONLY {
        assert!(
            binary.iter().any(|dep| dep == name),
            "{name} is missing with --features cli"
        );
    }
}

/// Every path an `include_str!`/`include_bytes!` in `src/` names, relative
/// to the crate root.
fn included_files() -> Vec<PathBuf> {
    let pattern = regex::Regex::new(r#"include_(?:str|bytes)!\s*\(\s*"([^"]+)"\s*\)"#).unwrap();
    let mut found = Vec::new();
    let mut pending = vec![root().join("src")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for capture in pattern.captures_iter(&text) {
                    let included = normalize(&path.parent().unwrap().join(&capture[1]));
                    found.push(included.strip_prefix(root()).expect("inside the crate").to_owned());
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// `a/b/../c` as `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn the_package_holds_every_file_the_build_reads() {
    let listed: Vec<PathBuf> = cargo(&["package", "--list", "--allow-dirty"])
        .lines()
        .map(PathBuf::from)
        .collect();
    let included = included_files();
    assert!(
        included.iter().any(|file| file.ends_with("execute.json")),
        "the scan found the tool definitions: {included:?}"
    );
    let mut needed = included;
    needed.extend(["build.rs", "README.md", "LICENSE", "include/bash_mcp.h"].map(PathBuf::from));
    let missing: Vec<_> = needed.iter().filter(|file| !listed.contains(file)).collect();
    assert!(
        missing.is_empty(),
        "the published package would lack {missing:?}: a build from crates.io fails; \
         check `include`/`exclude` in Cargo.toml"
    );
    let stray: Vec<_> = listed
        .iter()
        .filter(|file| file.starts_with("target") || file.starts_with(".ci/clients"))
        .collect();
    assert!(stray.is_empty(), "build output in the package: {stray:?}");
}
