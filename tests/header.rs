//! `include/bash_mcp.h` is generated from the `extern "C"` functions of
//! `src/ffi/` by cbindgen, and this test is its generator: it builds the
//! header in memory and fails, with a diff, when the checked-in file differs.
//! With `BASH_MCP_BLESS=1` it writes the file instead:
//!
//! ```text
//! BASH_MCP_BLESS=1 cargo test --test header
//! ```
//!
//! It also checks that the header stands alone as C11 and as C++17.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the header lives, relative to the crate root.
const HEADER: &str = "include/bash_mcp.h";

/// The command that regenerates the header.
const REGENERATE: &str = "BASH_MCP_BLESS=1 cargo test --test header";

/// The crate root.
fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The header text for the crate at `crate_dir`.
fn generate(crate_dir: &Path) -> String {
    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    config.after_includes = Some(format!(
        "\n/** Major version of this header (matches Cargo.toml). */\n\
         #define BASH_MCP_VERSION_MAJOR {}\n\
         /** Minor version of this header. */\n\
         #define BASH_MCP_VERSION_MINOR {}\n\
         /** Patch version of this header. */\n\
         #define BASH_MCP_VERSION_PATCH {}\n\
         /** Version of this header as a string; bash_mcp_version() gives the loaded library's. */\n\
         #define BASH_MCP_VERSION \"{}\"\n",
        env!("CARGO_PKG_VERSION_MAJOR"),
        env!("CARGO_PKG_VERSION_MINOR"),
        env!("CARGO_PKG_VERSION_PATCH"),
        env!("CARGO_PKG_VERSION"),
    ));
    let bindings = cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen could not generate the header");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("the header is UTF-8")
}

/// The lines that differ between `old` and `new`, with up to three lines of
/// context: the common head and tail are left out, the middle shown as
/// `-` (checked in) and `+` (generated) lines.
fn diff(old: &str, new: &str) -> String {
    let (old, new): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let head = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let tail = old[head..]
        .iter()
        .rev()
        .zip(new[head..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let context = 3;
    let from = head.saturating_sub(context);
    let mut out = format!("@@ checked-in line {}, generated line {} @@\n", from + 1, from + 1);
    for line in &old[from..head] {
        out.push_str(&format!(" {line}\n"));
    }
    for line in &old[head..old.len() - tail] {
        out.push_str(&format!("-{line}\n"));
    }
    for line in &new[head..new.len() - tail] {
        out.push_str(&format!("+{line}\n"));
    }
    for line in old[old.len() - tail..].iter().take(context) {
        out.push_str(&format!(" {line}\n"));
    }
    out
}

#[test]
fn checked_in_header_matches_the_generated_one() {
    let dir = crate_dir();
    let expected = generate(&dir);
    let path = dir.join(HEADER);
    if std::env::var_os("BASH_MCP_BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().expect("include/")).expect("create include/");
        std::fs::write(&path, &expected).expect("write the header");
        eprintln!("wrote {HEADER}");
        return;
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        actual == expected,
        "{HEADER} is out of date. Regenerate it with:\n\n    {REGENERATE}\n\n{}",
        diff(&actual, &expected)
    );
}

#[test]
fn the_diff_shows_what_changed_with_context() {
    let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
    let new = "a\nb\nc\nd\nE\nF\nf\ng\nh\n";
    assert_eq!(
        diff(old, new),
        "@@ checked-in line 2, generated line 2 @@\n b\n c\n d\n-e\n+E\n+F\n f\n g\n h\n"
    );
    assert_eq!(diff("x\n", ""), "@@ checked-in line 1, generated line 1 @@\n-x\n");
}

#[test]
fn header_version_matches_cargo_toml() {
    let header = std::fs::read_to_string(crate_dir().join(HEADER)).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    assert!(header.contains(&format!("#define BASH_MCP_VERSION \"{version}\"")));
    for (name, value) in [
        ("MAJOR", env!("CARGO_PKG_VERSION_MAJOR")),
        ("MINOR", env!("CARGO_PKG_VERSION_MINOR")),
        ("PATCH", env!("CARGO_PKG_VERSION_PATCH")),
    ] {
        assert!(
            header.contains(&format!("#define BASH_MCP_VERSION_{name} {value}\n")),
            "BASH_MCP_VERSION_{name} is not {value}"
        );
    }
}

/// Compiles a file that includes only the header, with every warning an error.
fn compile_alone(compiler: &str, args: &[&str]) {
    let dir = crate_dir();
    let out = tempdir(&format!("header-{compiler}"));
    let source = out.join("alone.c");
    std::fs::write(
        &source,
        "#include \"bash_mcp.h\"\n#include \"bash_mcp.h\"\nint main(void) { return bash_mcp_version() == 0; }\n",
    )
    .unwrap();
    let output = Command::new(compiler)
        .args(args)
        .args(["-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", "-I"])
        .arg(dir.join("include"))
        .arg(&source)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
    let _ = std::fs::remove_dir_all(&out);
    assert!(
        output.status.success(),
        "{compiler} {args:?} rejected the header:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn header_compiles_alone_as_c11() {
    compile_alone("cc", &["-std=c11", "-x", "c"]);
}

#[test]
fn header_compiles_alone_as_cpp17() {
    compile_alone("c++", &["-std=c++17", "-x", "c++"]);
}

fn tempdir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("bash-mcp-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
