//! Helpers shared by the integration tests: a server, JSON calls, and /proc
//! checks that nothing a test started survived it.
#![allow(dead_code)]

pub mod host_service;
pub mod sandboxes;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bash_mcp::{BashServer, McpServer};
use serde_json::Value;

/// The variable that tags every process a test starts, so /proc can find them.
pub const TAG_VAR: &str = "BASH_MCP_TEST_TAG";

/// A tag unique to this process and call site.
pub fn unique_tag(name: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("{name}-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst))
}

/// A server whose every command carries a tag of its own (through
/// `env.set`), and which checks /proc when dropped that none of them
/// survived the test.
pub struct TestServer {
    server: BashServer,
    tag: String,
}

impl TestServer {
    /// The tag every command of this server carries.
    pub fn tag(&self) -> &str {
        &self.tag
    }
}

impl std::ops::Deref for TestServer {
    type Target = BashServer;
    fn deref(&self) -> &BashServer {
        &self.server
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            assert_no_survivors(&self.tag);
        }
    }
}

impl McpServer for TestServer {
    fn name(&self) -> &str {
        self.server.name()
    }
    fn tools(&self) -> &bash_mcp::ToolRegistry {
        self.server.tools()
    }
    fn call_tool(
        &self,
        tool: &str,
        args: &bash_mcp::ToolArgs,
        options: bash_mcp::CallOptions<'_>,
    ) -> bash_mcp::ToolResponse {
        self.server.call_tool(tool, args, options)
    }
    fn get_permission_pattern(&self, tool: &str, args_json: &str) -> String {
        self.server.get_permission_pattern(tool, args_json)
    }
    fn skip_duplicate_check(&self, tool: &str) -> bool {
        self.server.skip_duplicate_check(tool)
    }
    /// Keeps the tag: a configuration that sets `env.set` gets it added.
    fn configure(&self, config_json: &str) -> Result<(), bash_mcp::ToolError> {
        let mut config: Value = serde_json::from_str(config_json).unwrap_or(Value::Null);
        if let Some(env) = config.get_mut("env").and_then(Value::as_object_mut) {
            let set = env.entry("set").or_insert_with(|| serde_json::json!({}));
            if let Some(set) = set.as_object_mut() {
                set.entry(TAG_VAR).or_insert_with(|| self.tag.clone().into());
            }
            return self.server.configure(&config.to_string());
        }
        self.server.configure(config_json)
    }
    fn set_working_dir(&self, path: &Path) -> Result<(), bash_mcp::ToolError> {
        self.server.set_working_dir(path)
    }
    fn task_support(&self, tool: &str) -> bool {
        self.server.task_support(tool)
    }
    fn start_task_job(
        &self,
        tool: &str,
        args: &bash_mcp::ToolArgs,
        sandbox: Option<&bash_mcp::sandbox::SandboxConfig>,
        principal: Option<&str>,
        asker: Option<std::sync::Arc<dyn bash_mcp::approval::ClientAsker>>,
    ) -> Result<String, bash_mcp::ToolResponse> {
        self.server.start_task_job(tool, args, sandbox, principal, asker)
    }
    fn task_job(&self, job: &str, wait: Duration) -> bash_mcp::TaskJob {
        self.server.task_job(job, wait)
    }
    fn cancel_task_job(&self, job: &str) {
        self.server.cancel_task_job(job)
    }
    fn release_task_job(&self, job: &str) {
        self.server.release_task_job(job)
    }
}

/// A [`TestServer`] in the temporary directory with a 30 s limit.
pub fn server() -> TestServer {
    tagged(BashServer::new(std::env::temp_dir(), None, Duration::from_secs(30)).expect("server"))
}

/// Wraps a server so that its commands are tagged and checked for survivors.
pub fn tagged(server: BashServer) -> TestServer {
    let tag = unique_tag("server");
    server
        .configure(&serde_json::json!({"env": {"set": {TAG_VAR: &tag}}}).to_string())
        .expect("tag the server's commands");
    TestServer { server, tag }
}

/// Calls `execute` with `args` and returns the parsed `result` document.
pub fn call(server: &impl McpServer, args: Value) -> Value {
    let envelope = server.execute("execute", &args.to_string());
    let envelope: Value = serde_json::from_str(&envelope).expect("envelope is JSON");
    assert_eq!(envelope["directives"], Value::Array(vec![]), "{envelope}");
    let result = envelope["result"].as_str().expect("result is a string");
    serde_json::from_str(result).expect("result is JSON")
}

/// Calls any tool with JSON `args` and returns the parsed `result` document.
pub fn call_tool(server: &impl McpServer, tool: &str, args: Value) -> Value {
    let envelope: Value = serde_json::from_str(&server.execute(tool, &args.to_string())).expect("envelope is JSON");
    serde_json::from_str(envelope["result"].as_str().expect("result is a string")).expect("result is JSON")
}

/// Calls `execute` for `command`, tagging the command's processes with `tag`.
pub fn call_tagged(server: &impl McpServer, command: &str, tag: &str, extra: Value) -> Value {
    let mut args = serde_json::json!({"command": command, "env": {TAG_VAR: tag}});
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            args[k] = v;
        }
    }
    call(server, args)
}

/// Runs `request` on `server` with `token` as its cancel token and no
/// output callback.
pub fn run_cancellable(
    server: &BashServer,
    request: &bash_mcp::ExecRequest,
    token: &bash_mcp::CancelToken,
) -> bash_mcp::ExecOutcome {
    server
        .run_with(
            request,
            bash_mcp::CallOptions {
                cancel: Some(token),
                on_output: None,
                sandbox: None,
                principal: None,
                client: None,
            },
        )
        .expect("run_with")
}

/// Live (non-zombie) processes whose environment carries `tag`.
pub fn survivors(tag: &str) -> Vec<i32> {
    let needle = format!("{TAG_VAR}={tag}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc") {
        let Ok(entry) = entry else { continue };
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ.split(|b| *b == 0).any(|var| var == needle.as_bytes()) && !is_zombie(pid) {
            found.push(pid);
        }
    }
    found
}

/// How long a test waits for something that normally takes milliseconds
/// before it calls it a hang: far above normal, so that a loaded machine
/// never fails a test by being slow.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// Polls `done` every 20 ms until it holds; fails the test, saying `what`
/// did not happen, after [`HANG_GUARD`].
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < HANG_GUARD, "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (up to [`HANG_GUARD`]) until at least `count` tagged processes are
/// alive: a process in the middle of `exec` shows no environment for a moment.
pub fn wait_for_survivors(tag: &str, count: usize) -> bool {
    let start = Instant::now();
    while survivors(tag).len() < count {
        if start.elapsed() > HANG_GUARD {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Waits for tagged processes to vanish (a SIGKILLed process needs a moment
/// to be torn down, longer on a loaded machine), then asserts none is left.
pub fn assert_no_survivors(tag: &str) {
    let start = Instant::now();
    loop {
        let left = survivors(tag);
        if left.is_empty() {
            return;
        }
        if start.elapsed() > Duration::from_secs(10) {
            for pid in &left {
                // SAFETY: kill takes no pointer; the pid is a tagged process of this test.
                unsafe { libc::kill(*pid, libc::SIGKILL) };
            }
            panic!("processes survived the call: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills tagged processes (for escapees a test expects to exist).
pub fn kill_tagged(tag: &str) -> usize {
    let left = survivors(tag);
    for pid in &left {
        // SAFETY: kill takes no pointer; the pid is a tagged process of this test.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    left.len()
}

pub fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

/// Whether `pid` still exists at all (alive or zombie).
pub fn pid_exists(pid: i32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Zombie children of this process.
pub fn zombie_children() -> Vec<i32> {
    let me = std::process::id() as i32;
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.first() == Some(&"Z") && fields.get(1).and_then(|p| p.parse::<i32>().ok()) == Some(me) {
            found.push(pid);
        }
    }
    found
}

/// Asserts that no child of this process stays a zombie. Other tests of the
/// same binary run in parallel, and their children are zombies for a moment
/// between exit and reap; only a zombie that stays for 10 s is a leak.
pub fn assert_no_lasting_zombies() {
    let mut lasting: Vec<i32> = zombie_children();
    let start = Instant::now();
    while !lasting.is_empty() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
        let now = zombie_children();
        lasting.retain(|pid| now.contains(pid));
    }
    assert!(lasting.is_empty(), "children left as zombies: {lasting:?}");
}

/// Number of open fds of this process.
pub fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd").count()
}

/// Peak resident set size of this process, in KiB.
pub fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

/// A fresh directory under the temp dir, removed with its contents when
/// dropped, so test runs leave nothing in /tmp.
pub struct TempDir(std::path::PathBuf);

impl TempDir {
    /// `<temp>/bash-mcp-<name>-<pid>-<n>`, created empty.
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(unique_tag(&format!("bash-mcp-{name}")));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// `<target>/tmp/bash-mcp-<name>-<pid>-<n>`, created empty: a directory
    /// outside the host's `/tmp`, for a test that needs a place a sandboxed
    /// command can see but not write (bubblewrap gives a command a `/tmp` of
    /// its own, so it does not even see the host's).
    pub fn outside_tmp(name: &str) -> Self {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(unique_tag(&format!("bash-mcp-{name}")));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir.canonicalize().unwrap())
    }

    /// Writes `config` as a JSON configuration file and returns its path.
    pub fn config(&self, config: &Value) -> String {
        let path = self.0.join("config.json");
        std::fs::write(&path, config.to_string()).unwrap();
        path.to_str().unwrap().to_owned()
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::fs::remove_dir_all(&self.0).is_err() && self.0.exists() {
            // A test may have locked a directory (mode 000): open it up first.
            let _ = std::process::Command::new("chmod")
                .arg("-R")
                .arg("u+rwx")
                .arg(&self.0)
                .status();
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A command that waits until `path` exists (checking every 20 ms) or,
/// after about [`HANG_GUARD`], prints `gave up` and ends: a test holds a
/// command at a point and releases it by creating the file, instead of
/// guessing how long a step takes on a loaded machine. It runs under `sh -c`,
/// so any session shell (bash, zsh, fish, sh) accepts it.
pub fn until_file_exists(path: &Path) -> String {
    let polls = HANG_GUARD.as_millis() / 20;
    format!(
        "sh -c 'i=0; while [ ! -e \"{}\" ]; do i=$((i+1)); if [ $i -ge {polls} ]; then echo gave up; break; fi; sleep 0.02; done'",
        path.display()
    )
}

/// Reports a check skipped because `program` is not installed, with how to
/// get it.
pub fn skip_missing(program: &str) {
    let package = match program {
        "sh" => "dash",
        "readelf" | "objcopy" => "binutils",
        "cc" => "gcc",
        "setpriv" => "util-linux",
        other => other,
    };
    skip(format_args!(
        "{program} is not installed: `apt-get install {package}` installs it (.ci/run installs every tool the suite uses)"
    ));
}

/// Reports a check this test skipped, with the reason, where a plain
/// `cargo test` shows it: libtest hides what a passing test prints with
/// `println!`/`eprintln!`, but not what it writes to the stderr handle itself.
pub fn skip(reason: impl std::fmt::Display) {
    use std::io::Write;
    let test = std::thread::current().name().unwrap_or("?").to_owned();
    let _ = writeln!(std::io::stderr().lock(), "SKIP {test}: {reason}");
}

/// A session manager with sessions turned on, keeping its files in the temp dir.
pub fn session_manager() -> bash_mcp::session::SessionManager {
    use bash_mcp::session::{SessionConfig, SessionManager};
    let config = SessionConfig {
        enabled: true,
        ..Default::default()
    };
    SessionManager::new(config, std::env::temp_dir()).unwrap()
}

/// Whether a sandbox with `config` works here, by the library's own probe.
/// A SKIP line names `backend` and the reason when it does not; in CI a
/// backend that does not work fails the test instead.
pub fn sandbox_works(config: &bash_mcp::sandbox::SandboxConfig, backend: &str) -> bool {
    let probe = bash_mcp::sandbox::Probe::run(config);
    if probe.chosen.is_some() {
        return true;
    }
    let (reason, _) = probe.unavailable_reason();
    assert!(
        std::env::var_os("CI").is_none(),
        "backend {backend} must work in CI: {reason}"
    );
    skip(format_args!("sandbox backend {backend} unavailable here: {reason}"));
    false
}
