//! The shared library carries a versioned ELF SONAME, `libbash_mcp.so.0`
//! (set by build.rs, with its symlink beside the built library), so programs
//! linked against it depend on that name, not on the build directory.

mod common;

mod cbuild;

use std::process::Command;

#[test]
fn shared_library_has_a_soname() {
    let lib = cbuild::library();
    let Ok(out) = Command::new("readelf").arg("-d").arg(&lib.shared).output() else {
        common::skip_missing("readelf");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "readelf failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.lines()
            .any(|l| l.contains("(SONAME)") && l.contains("[libbash_mcp.so.0]")),
        "no SONAME libbash_mcp.so.0 in:\n{text}"
    );
}

#[test]
fn a_program_linked_by_path_records_the_name_only() {
    let lib = cbuild::library();
    let scratch = cbuild::Scratch::new("soname");
    let source = scratch.0.join("main.c");
    std::fs::write(
        &source,
        "#include \"bash_mcp.h\"\nint main(void) { return bash_mcp_version() ? 0 : 1; }\n",
    )
    .unwrap();
    let exe = scratch.0.join("main");
    let Ok(status) = Command::new("cc")
        .arg("-I")
        .arg(cbuild::crate_dir().join("include"))
        .arg(&source)
        .arg(&lib.shared)
        .arg("-o")
        .arg(&exe)
        .status()
    else {
        common::skip_missing("cc");
        return;
    };
    assert!(status.success(), "cc failed");
    let Ok(out) = Command::new("readelf").arg("-d").arg(&exe).output() else {
        common::skip_missing("readelf");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let needed: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("(NEEDED)") && l.contains("bash_mcp"))
        .collect();
    assert_eq!(needed.len(), 1, "{text}");
    assert!(needed[0].contains("[libbash_mcp.so.0]"), "{}", needed[0]);
    // It runs when the library is found through the search path.
    let run = Command::new(&exe).env("LD_LIBRARY_PATH", &lib.dir).status().unwrap();
    assert!(run.success());
}
