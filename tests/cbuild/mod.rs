//! Helpers for the tests that build and run C and C++ programs against the
//! library: find (build) the shared and static libraries, compile with the
//! documented commands, run with a deadline, and check valgrind's verdict.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The built library.
pub struct Library {
    /// Directory holding both files.
    pub dir: PathBuf,
    /// `libbash_mcp.so`.
    pub shared: PathBuf,
    /// `libbash_mcp.a`.
    pub static_lib: PathBuf,
}

pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Builds the library with the profile and features of this test build
/// (fresh already, so this is quick) and returns where cargo put it.
pub fn library() -> &'static Library {
    static LIB: OnceLock<Library> = OnceLock::new();
    LIB.get_or_init(|| {
        let mut cmd = Command::new(env!("CARGO"));
        cmd.args(["build", "--lib", "--message-format=json-render-diagnostics"])
            .current_dir(crate_dir())
            .stderr(Stdio::inherit());
        if !cfg!(debug_assertions) {
            cmd.arg("--release");
        }
        if cfg!(feature = "entropic-plugin") {
            cmd.args(["--features", "entropic-plugin"]);
        }
        let output = cmd.output().expect("run cargo build");
        assert!(output.status.success(), "cargo build --lib failed");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let mut shared = None;
        let mut static_lib = None;
        for line in stdout.lines() {
            let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            if msg["reason"] != "compiler-artifact" || msg["target"]["name"] != "bash_mcp" {
                continue;
            }
            for file in msg["filenames"].as_array().into_iter().flatten() {
                let file = PathBuf::from(file.as_str().unwrap_or_default());
                match file.file_name().and_then(|n| n.to_str()) {
                    Some("libbash_mcp.so") => shared = Some(file),
                    Some("libbash_mcp.a") => static_lib = Some(file),
                    _ => {}
                }
            }
        }
        let shared = shared.expect("cargo reported no libbash_mcp.so");
        let static_lib = static_lib.expect("cargo reported no libbash_mcp.a");
        assert_eq!(shared.parent(), static_lib.parent());
        Library {
            dir: shared.parent().unwrap().to_path_buf(),
            shared,
            static_lib,
        }
    })
}

/// A scratch directory removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("bash-mcp-c-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Self(dir.canonicalize().expect("canonical scratch dir"))
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Fills a documented command template: `{LIB}` and `{RPATH}` are the
/// library directory, `{OUT}` the output file.
pub fn fill(template: &str, lib: &str, rpath: &str, out: &str) -> String {
    template
        .replace("{LIB}", lib)
        .replace("{RPATH}", rpath)
        .replace("{OUT}", out)
}

/// Runs a documented compile command (from the crate root) against the built
/// library, writing `out`.
pub fn compile(template: &str, out: &Path) {
    let lib = library().dir.to_str().expect("UTF-8 target dir").to_owned();
    let line = fill(template, &lib, &lib, out.to_str().expect("UTF-8 scratch dir"));
    let mut words = line.split_whitespace();
    let program = words.next().expect("a compiler");
    let output = Command::new(program)
        .args(words)
        .current_dir(crate_dir())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        output.status.success(),
        "compile failed: {line}\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Runs a program to completion; kills it (and fails) after `deadline`.
pub fn run(cmd: &mut Command, deadline: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // Read both pipes on threads so a chatty program cannot block on them.
    let mut out_pipe = child.stdout.take().unwrap();
    let mut err_pipe = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = std::io::Read::read_to_end(&mut out_pipe, &mut buf);
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = std::io::Read::read_to_end(&mut err_pipe, &mut buf);
        buf
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} ran longer than {deadline:?} and was killed");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Output {
        status,
        stdout: out_reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
    }
}

/// Whether a program is on PATH.
pub fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Asserts a valgrind report shows no leak and no error.
pub fn assert_valgrind_clean(report: &str) {
    let clean_heap = report.contains("All heap blocks were freed -- no leaks are possible")
        || report.contains("definitely lost: 0 bytes in 0 blocks");
    assert!(clean_heap, "valgrind reports a leak:\n{report}");
    assert!(
        report.contains("ERROR SUMMARY: 0 errors"),
        "valgrind reports errors:\n{report}"
    );
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
