//! `include/bash_mcp.h` is generated; this test regenerates it in memory and
//! fails on any difference with the checked-in file. It also checks that the
//! header stands alone as C11 and as C++17.

#[path = "../examples/gen_header/generate.rs"]
mod generate;

use std::process::Command;

#[test]
fn checked_in_header_matches_the_generated_one() {
    let dir = generate::crate_dir();
    let expected = generate::generate(&dir);
    let actual = std::fs::read_to_string(dir.join(generate::HEADER)).unwrap_or_default();
    if actual != expected {
        let first = actual
            .lines()
            .zip(expected.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| actual.lines().count().min(expected.lines().count()));
        panic!(
            "{} is out of date (first difference at line {}).\n\
             Regenerate it with:\n\n    {}\n\n\
             expected line: {:?}\n\
             checked-in line: {:?}",
            generate::HEADER,
            first + 1,
            generate::REGENERATE,
            expected.lines().nth(first).unwrap_or("<end of file>"),
            actual.lines().nth(first).unwrap_or("<end of file>"),
        );
    }
}

#[test]
fn header_version_matches_cargo_toml() {
    let header = std::fs::read_to_string(generate::crate_dir().join(generate::HEADER)).unwrap();
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
    let dir = generate::crate_dir();
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
