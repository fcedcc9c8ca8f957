//! The Doxygen reference builds from the header with no warning: every
//! symbol is documented and every doc comment is well-formed.

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};

#[test]
fn doxygen_builds_the_reference_without_warnings() {
    let available = Command::new("doxygen")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !available {
        common::skip_missing("doxygen");
        return;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = std::env::temp_dir().join(format!("bash-mcp-doxygen-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    // The checked-in Doxyfile, with the output sent to a scratch directory.
    let config = out.join("Doxyfile");
    std::fs::write(
        &config,
        format!("@INCLUDE = doxygen/Doxyfile\nOUTPUT_DIRECTORY = {}\n", out.display()),
    )
    .unwrap();
    let output = Command::new("doxygen")
        .arg(&config)
        .current_dir(&root)
        .output()
        .expect("run doxygen");
    let index = out.join("html/index.html");
    let built = index.exists() && std::fs::read_to_string(&index).unwrap_or_default().contains("bash-mcp");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let _ = std::fs::remove_dir_all(&out);
    assert!(
        output.status.success() && stderr.trim().is_empty(),
        "doxygen doxygen/Doxyfile failed or warned:\n{stderr}\n{stdout}"
    );
    assert!(built, "doxygen produced no index page");
}
