//! Sandboxed servers for the sandbox's integration tests: every backend
//! and route a command can take, and the configuration that selects it.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use bash_mcp::{BashServer, McpServer};
use serde_json::{Value, json};

use super::{TestServer, sandbox_works, tagged};

/// The `bash-mcp` binary: the Landlock helper and the supervisor.
pub const HELPER: &str = env!("CARGO_BIN_EXE_bash-mcp");

/// Every route a sandboxed command can take: bubblewrap through the
/// supervisor (`bwrap`), a bwrap of its own per command, a bwrap of its own
/// because the supervisor cannot start (its binary is missing, which the
/// library logs and then falls back), and Landlock + seccomp.
pub const ROUTES: &[&str] = &["bwrap", "bwrap-per-command", "bwrap-fallback", "landlock"];

/// The `sandbox` keys that select `route` (one of [`ROUTES`]).
pub fn route_keys(route: &str) -> Value {
    match route {
        "bwrap-per-command" => json!({"backend": "bwrap", "supervisor": false, "helper_path": HELPER}),
        "bwrap-fallback" => json!({"backend": "bwrap", "helper_path": "/nonexistent/bash-mcp"}),
        other => json!({"backend": other, "helper_path": HELPER}),
    }
}

/// The backend name results report for `route`.
pub fn backend_of(route: &str) -> &'static str {
    if route.starts_with("bwrap") {
        "bwrap"
    } else {
        "landlock"
    }
}

/// The routes whose backend works here (a SKIP line names each that does
/// not; in CI a missing one fails the test).
pub fn available_routes() -> impl Iterator<Item = &'static str> {
    ROUTES.iter().copied().filter(|r| route_available(r))
}

/// Whether `route`'s backend works here.
pub fn route_available(route: &str) -> bool {
    let config = bash_mcp::sandbox::SandboxConfig::default()
        .apply(&sandbox_value(route, Path::new("/"), json!({})), Path::new("/"))
        .unwrap();
    sandbox_works(&config, route)
}

/// The `sandbox` object for `route` with `dir` as the writable root, the
/// network off (the binary's default opens it to the registries) and
/// `extra` keys over it.
pub fn sandbox_value(route: &str, dir: &Path, extra: Value) -> Value {
    let mut sandbox = json!({"mode": "workspace-write", "writable_roots": [dir], "network": false});
    for (k, v) in route_keys(route)
        .as_object()
        .unwrap()
        .iter()
        .chain(extra.as_object().unwrap())
    {
        sandbox[k] = v.clone();
    }
    sandbox
}

/// A tagged server in `dir` whose commands take `route`.
pub fn sandboxed_server(dir: &Path, route: &str, extra: Value) -> TestServer {
    let server = tagged(BashServer::new(dir, None, Duration::from_secs(30)).unwrap());
    server
        .configure(&json!({"sandbox": sandbox_value(route, dir, extra)}).to_string())
        .unwrap();
    server
}

/// Writes a configuration file for the `bash-mcp` binary that sends its
/// commands along `route` with `dir` as the writable root; the file lies
/// beside `dir`, since the binary refuses one its sandboxed commands could
/// rewrite.
pub fn binary_config(dir: &Path, route: &str, extra: Value) -> ConfigFile {
    let path = std::path::PathBuf::from(format!("{}-{route}.json", dir.display()));
    std::fs::write(&path, json!({"sandbox": sandbox_value(route, dir, extra)}).to_string()).unwrap();
    ConfigFile(path)
}

/// A configuration file outside the directory it configures, removed when
/// dropped.
pub struct ConfigFile(std::path::PathBuf);

impl std::ops::Deref for ConfigFile {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for ConfigFile {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for ConfigFile {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for ConfigFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Whether `program` runs here (`program --version` succeeds).
pub fn have(program: &str) -> bool {
    std::process::Command::new(program)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether python3 is here; a SKIP line (a failure in CI) when it is not.
pub fn have_python() -> bool {
    if have("python3") {
        return true;
    }
    assert!(std::env::var_os("CI").is_none(), "python3 must be installed in CI");
    super::skip("python3 is not installed here (apt-get install python3)");
    false
}

/// Runs `command` through the `bash-mcp` binary (`exec --json`) with the
/// configuration file `config`, in `dir`, its processes tagged with `tag`;
/// returns the result document.
pub fn exec_json(config: &Path, dir: &Path, tag: &str, command: &str) -> Value {
    let out = std::process::Command::new(HELPER)
        .arg("exec")
        .arg("-c")
        .arg(config)
        .arg("-C")
        .arg(dir)
        .arg("--json")
        .arg(command)
        .env(super::TAG_VAR, tag)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "bash-mcp exec printed no result ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// A `sleep` duration unique to this call (300 s and a bit), to find the
/// processes a test's command left by their command line even after they
/// dropped their environment (`env -i`).
pub fn unique_sleep() -> String {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
    format!(
        "300.{}{:04}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    )
}

/// Live `sleep <duration>` processes.
pub fn sleeping(duration: &str) -> Vec<i32> {
    let wanted = format!("sleep\0{duration}\0");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if std::fs::read(entry.path().join("cmdline")).is_ok_and(|c| c == wanted.as_bytes()) && !super::is_zombie(pid) {
            found.push(pid);
        }
    }
    found
}

/// Fails (after killing them) when `sleep <duration>` processes are still
/// alive once a SIGKILL has had time to land.
pub fn assert_none_sleeping(duration: &str, route: &str) {
    let start = std::time::Instant::now();
    while !sleeping(duration).is_empty() {
        if start.elapsed() > Duration::from_secs(10) {
            let left = sleeping(duration);
            for pid in &left {
                // SAFETY: kill takes plain integers; the pids were just read
                // from /proc (a `sleep` with this test's unique duration).
                unsafe { libc::kill(*pid, libc::SIGKILL) };
            }
            panic!("{route}: processes outlived their call: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Pids of processes whose command line contains `needle`.
pub fn processes_with(needle: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).contains(needle) && !super::is_zombie(pid) {
            found.push(pid);
        }
    }
    found
}

/// One line-delimited JSON-RPC exchange with `bash-mcp serve`, initialized.
pub struct Binary {
    child: std::process::Child,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl Binary {
    /// `bash-mcp serve --config <config> --working-dir <dir>`, started.
    pub fn serve(config: impl AsRef<std::ffi::OsStr>, dir: &Path) -> Binary {
        Binary::start(Binary::command(config, dir))
    }

    /// The command line of [`Binary::serve`], for a caller that sets more.
    pub fn command(config: impl AsRef<std::ffi::OsStr>, dir: &Path) -> Command {
        let mut command = Command::new(HELPER);
        command
            .args(["serve".as_ref(), "--config".as_ref(), config.as_ref()])
            .arg("--working-dir")
            .arg(dir);
        command
    }

    /// Starts `command` (a `bash-mcp serve`) and initializes the session.
    pub fn start(mut command: Command) -> Binary {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
        let mut binary = Binary { child, lines };
        binary.request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        );
        binary.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        binary
    }

    pub fn send(&mut self, message: Value) {
        use std::io::Write;
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    pub fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self.lines.next().expect("a reply before the binary exits").unwrap();
            let reply: Value = serde_json::from_str(&line).unwrap();
            if reply["id"] == id {
                return reply;
            }
        }
    }

    /// The structured result of an `execute` call with `args`.
    pub fn execute(&mut self, id: u64, args: Value) -> Value {
        let reply = self.request(id, "tools/call", json!({"name": "execute", "arguments": args}));
        reply["result"]["structuredContent"].clone()
    }
}

impl Drop for Binary {
    /// Closes its input, which ends the server, and reaps it.
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}
