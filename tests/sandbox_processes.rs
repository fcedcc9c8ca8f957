//! What a sandboxed command shares with its host besides files and the
//! network: the host's terminal, the kernel keyrings, system calls a
//! filter might not list. Through the `bash-mcp` binary, on every route a
//! command can take (bubblewrap through the supervisor, a bwrap of its own,
//! the fallback when the supervisor cannot start, Landlock + seccomp).

mod common;

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

use bash_mcp::McpServer;
use common::sandboxes::*;
use common::*;
use serde_json::{Value, json};

/// Tries to type into every terminal it can reach: `/dev/tty` (the
/// controlling terminal), each inherited fd that is a terminal, and a
/// terminal of its own made its controlling one (so only a seccomp rule,
/// not the kernel's own checks, can refuse it). One line per attempt.
const TERMINAL_PROBE: &str = r#"
import errno, fcntl, os, pty, termios
def tiocsti(fd, what):
    try:
        for c in b"echo INJECTED\n":
            fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))
        print(what, "INJECTED", flush=True)
    except OSError as e:
        print(what, "refused", errno.errorcode[e.errno], flush=True)
try:
    tiocsti(os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY), "host-tty")
except OSError as e:
    print("host-tty cannot-open", errno.errorcode[e.errno], flush=True)
for name in os.listdir("/proc/self/fd"):
    try:
        if os.isatty(int(name)):
            tiocsti(int(name), "fd" + name)
    except OSError:
        pass
pid, master = pty.fork()
if pid == 0:
    tiocsti(os.open("/dev/tty", os.O_RDWR), "own-tty")
    os._exit(0)
out = b""
while True:
    try:
        chunk = os.read(master, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
os.waitpid(pid, 0)
print(out.decode().replace("\r", "").strip(), flush=True)
"#;

/// A pseudo-terminal pair: the test keeps the master, the server gets the
/// slave as its controlling terminal.
struct Pty {
    _master: OwnedFd,
    slave: OwnedFd,
}

fn open_pty() -> Pty {
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two fds into the integers given; the name,
    // termios and winsize pointers may be null.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: openpty returned two fresh fds that we now own.
    let pty = unsafe {
        Pty {
            _master: OwnedFd::from_raw_fd(master),
            slave: OwnedFd::from_raw_fd(slave),
        }
    };
    // Non-canonical, so every injected byte counts as pending input at once.
    // SAFETY: termios is plain data; tcgetattr/tcsetattr act on our fd.
    unsafe {
        let mut tio: libc::termios = std::mem::zeroed();
        assert_eq!(libc::tcgetattr(pty.slave.as_raw_fd(), &mut tio), 0);
        libc::cfmakeraw(&mut tio);
        assert_eq!(libc::tcsetattr(pty.slave.as_raw_fd(), libc::TCSANOW, &tio), 0);
    }
    pty
}

impl Pty {
    /// Bytes waiting in the terminal's input queue (what a shell reading
    /// this terminal would read next).
    fn pending_input(&self) -> i32 {
        let mut n: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int.
        let rc = unsafe { libc::ioctl(self.slave.as_raw_fd(), libc::FIONREAD, &mut n) };
        assert_eq!(rc, 0);
        n
    }

    fn flush_input(&self) {
        // SAFETY: tcflush on our own fd.
        unsafe { libc::tcflush(self.slave.as_raw_fd(), libc::TCIFLUSH) };
    }

    /// Runs the `bash-mcp` binary with this terminal as its controlling
    /// terminal (and stdin and stderr); returns its JSON result.
    fn run_binary(&self, args: &[&std::ffi::OsStr], tag: &str) -> Value {
        let slave = self.slave.as_raw_fd();
        let mut command = Command::new(HELPER);
        command
            .args(args)
            .env(TAG_VAR, tag)
            .stdin(Stdio::from(self.slave.try_clone().unwrap()))
            .stderr(Stdio::from(self.slave.try_clone().unwrap()));
        // SAFETY: only async-signal-safe calls between fork and exec: a new
        // session, then the terminal (on fd `slave`, inherited) as its
        // controlling terminal.
        unsafe {
            command.pre_exec(move || {
                if libc::setsid() < 0 || libc::ioctl(slave, libc::TIOCSCTTY, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = command.output().unwrap();
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("no result ({e}): {}", String::from_utf8_lossy(&out.stdout)))
    }
}

/// Whether TIOCSTI works for an unprivileged process on its own terminal
/// here (`dev.tty.legacy_tiocsti`, Linux 6.2+; older kernels always allow it).
fn legacy_tiocsti() -> bool {
    std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti").map_or(true, |v| v.trim() == "1")
}

#[test]
fn no_sandboxed_command_can_type_into_the_hosts_terminal_or_any_other() {
    if !have_python() {
        return;
    }
    let dir = TempDir::new("sbx-tty");
    std::fs::write(dir.join("probe.py"), TERMINAL_PROBE).unwrap();
    let pty = open_pty();
    let tag = unique_tag("tty");
    let exec = |config: Option<&Path>| {
        let mut args: Vec<&std::ffi::OsStr> = vec!["exec".as_ref(), "--json".as_ref(), "-C".as_ref(), dir.as_os_str()];
        match config {
            Some(config) => args.extend(["-c".as_ref(), config.as_os_str()]),
            // The control: the binary's default sandbox opted out of.
            None => args.push("--no-sandbox".as_ref()),
        }
        args.push("python3 probe.py".as_ref());
        pty.run_binary(&args, &tag)
    };

    // The control: unsandboxed, the command has the host's terminal and
    // types into it, which the test sees as pending input.
    let control = exec(None);
    assert!(output_of(&control).contains("host-tty"), "{control}");
    if pty.pending_input() == 0 {
        skip("TIOCSTI is refused by this kernel anyway (dev.tty.legacy_tiocsti=0): the control injected nothing");
    }
    pty.flush_input();

    for route in available_routes() {
        let config = binary_config(&dir, route, json!({}));
        let result = exec(Some(&config));
        let text = output_of(&result);
        assert_eq!(result["sandbox"]["backend"], backend_of(route), "{route}: {result}");
        assert!(
            !text.contains("INJECTED"),
            "{route}: a command typed into a terminal: {result}"
        );
        assert!(
            text.contains("host-tty cannot-open ENXIO"),
            "{route}: the command still has a controlling terminal: {result}"
        );
        let own = if legacy_tiocsti() {
            "own-tty refused EPERM"
        } else {
            "own-tty refused"
        };
        assert!(
            text.contains(own),
            "{route}: TIOCSTI was not refused by seccomp: {result}"
        );
        assert_eq!(pty.pending_input(), 0, "{route}: input reached the host's terminal");
        pty.flush_input();
    }
    assert_no_survivors(&tag);
}

fn output_of(result: &Value) -> String {
    result["output"].as_str().unwrap_or_default().to_owned()
}

/// A session shell lives on a terminal of its own, which is its controlling
/// terminal: typing into it is refused too.
#[test]
fn a_sandboxed_session_cannot_type_into_its_own_terminal() {
    if !have_python() {
        return;
    }
    for route in available_routes().filter(|r| ["bwrap", "landlock"].contains(r)) {
        let dir = TempDir::new("sbx-tty-session");
        std::fs::write(dir.join("probe.py"), TERMINAL_PROBE).unwrap();
        let server = sandboxed_server(&dir, route, json!({}));
        server
            .configure(&json!({"sessions": {"enabled": true}}).to_string())
            .unwrap();
        let started = call_tool(
            &server,
            "session_start",
            json!({"shell": "bash", "env": {TAG_VAR: server.tag()}}),
        );
        let id = started["session_id"].as_str().unwrap_or_else(|| panic!("{started}"));
        let result = call_tool(
            &server,
            "session_run",
            json!({"session_id": id, "command": "python3 probe.py", "timeout_seconds": 20}),
        );
        let text = result["output"].as_str().unwrap_or_default();
        assert!(text.contains("host-tty refused EPERM"), "{route}: {result}");
        assert!(!text.contains("INJECTED"), "{route}: {result}");
        let _ = call_tool(&server, "session_close", json!({"session_id": id}));
    }
}

/// Reads the session keyring (`keyctl(KEYCTL_DESCRIBE, @s)`) and adds a key
/// (to its own process keyring, so a failing run leaves nothing behind).
const KEYRING_PROBE: &str = r#"
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(256)
r = libc.syscall(250, 6, ctypes.c_long(-3), buf, 256)  # keyctl(KEYCTL_DESCRIBE, KEY_SPEC_SESSION_KEYRING)
print("describe", "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()])
r = libc.syscall(248, b"user", b"bash-mcp-probe", b"x", 1, ctypes.c_long(-2))  # add_key(..., KEY_SPEC_PROCESS_KEYRING)
print("add_key", "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()])
"#;

#[test]
fn the_kernel_keyrings_are_out_of_reach() {
    if !have_python() || std::env::consts::ARCH != "x86_64" {
        return;
    }
    let dir = TempDir::new("sbx-keys");
    std::fs::write(dir.join("keys.py"), KEYRING_PROBE).unwrap();
    let tag = unique_tag("keys");
    let plain = dir.join("plain.json");
    // The control runs unsandboxed: the binary's default sandbox is opted out of.
    std::fs::write(&plain, r#"{"sandbox": {"mode": "off"}}"#).unwrap();
    let control = exec_json(&plain, &dir, &tag, "python3 keys.py");
    if !output_of(&control).contains("describe ok") {
        skip(format_args!("this host has no session keyring to reach: {control}"));
    }
    for route in available_routes() {
        let config = binary_config(&dir, route, json!({}));
        let result = exec_json(&config, &dir, &tag, "python3 keys.py");
        assert_eq!(
            output_of(&result),
            "describe EPERM\nadd_key EPERM\n",
            "{route}: {result}"
        );
    }
    assert_no_survivors(&tag);
}

/// Opens an `AF_VSOCK` socket (which no network namespace isolates) and
/// makes an x32 system call (`getpid` with bit 30 set).
const CHANNEL_PROBE: &str = r#"
import ctypes, errno, socket
libc = ctypes.CDLL(None, use_errno=True)
try:
    socket.socket(40, socket.SOCK_STREAM)
    print("vsock ok")
except OSError as e:
    print("vsock", errno.errorcode[e.errno])
r = libc.syscall(0x40000000 | 39)
print("x32", "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()])
"#;

#[test]
fn with_network_off_no_socket_escapes_the_namespace_and_x32_calls_are_refused() {
    if !have_python() || std::env::consts::ARCH != "x86_64" {
        return;
    }
    let dir = TempDir::new("sbx-vsock");
    std::fs::write(dir.join("channels.py"), CHANNEL_PROBE).unwrap();
    let tag = unique_tag("vsock");
    let plain = dir.join("plain.json");
    // The control runs unsandboxed: the binary's default sandbox is opted out of.
    std::fs::write(&plain, r#"{"sandbox": {"mode": "off"}}"#).unwrap();
    let control = output_of(&exec_json(&plain, &dir, &tag, "python3 channels.py"));
    // Without a filter the kernel answers the x32 call itself: ENOSYS
    // where x32 is not built in, a pid where it is.
    assert!(!control.contains("x32 EPERM"), "{control}");
    if !control.contains("vsock ok") {
        skip(format_args!(
            "AF_VSOCK is not available on this host ({control}); only the x32 call is checked"
        ));
    }
    for route in available_routes() {
        let config = binary_config(&dir, route, json!({"network": false}));
        let result = exec_json(&config, &dir, &tag, "python3 channels.py");
        assert_eq!(output_of(&result), "vsock EPERM\nx32 EPERM\n", "{route}: {result}");
    }
    assert_no_survivors(&tag);
}

/// The command tries to kill what keeps it (the Landlock helper, or the
/// init of its PID namespace) after leaving a child that drops its
/// environment (so no run marker finds it) and its process group; the call
/// still ends as the shell does, and that child dies with it.
#[test]
fn a_command_cannot_kill_what_keeps_it_and_nothing_it_starts_outlives_the_call() {
    let dir = TempDir::new("sbx-keeper");
    let tag = unique_tag("keeper");
    for route in available_routes() {
        let config = binary_config(&dir, route, json!({}));
        let sleep = unique_sleep();
        let result = exec_json(
            &config,
            &dir,
            &tag,
            &format!(
                "env -i setsid sh -c 'sleep {sleep} >/dev/null 2>&1 &'; kill -KILL $PPID 2>/dev/null; \
                 kill -STOP $PPID 2>/dev/null; echo after; exit 3"
            ),
        );
        assert_eq!(result["exit_code"], 3, "{route}: {result}");
        assert_eq!(output_of(&result), "after\n", "{route}: {result}");
        assert!(result["sandbox"].get("notes").is_none(), "{route}: {result}");
        assert_none_sleeping(&sleep, route);
    }
    assert_no_survivors(&tag);
}

/// A time limit's SIGTERM, then SIGKILL, ends a command and everything it
/// started, also what ignores SIGTERM and left the group without its
/// environment: the helper is not in the way of its own kill.
#[test]
fn a_timeout_kills_children_that_left_the_group_and_ignore_sigterm() {
    let dir = TempDir::new("sbx-timeout-escape");
    // Beside the root it configures: the binary refuses a configuration a
    // sandboxed command could rewrite.
    let etc = TempDir::new("sbx-timeout-escape-etc");
    let tag = unique_tag("timeout-escape");
    for route in available_routes() {
        for grace_ms in [0, 200] {
            let config = etc.join("grace.json");
            std::fs::write(
                &config,
                json!({"sandbox": sandbox_value(route, &dir, json!({})), "kill_grace_ms": grace_ms}).to_string(),
            )
            .unwrap();
            let sleep = unique_sleep();
            let out = Command::new(HELPER)
                .args(["exec", "--json", "-t", "1", "-c"])
                .arg(&config)
                .arg("-C")
                .arg(&*dir)
                .arg(format!(
                    "env -i setsid sh -c 'trap \"\" TERM; sleep {sleep} >/dev/null 2>&1 &'; trap '' TERM; sleep 120"
                ))
                .env(TAG_VAR, &tag)
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let result: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(result["error"], "timeout", "{route}: {result}");
            assert_none_sleeping(&sleep, route);
        }
    }
    assert_no_survivors(&tag);
}

/// Killed from outside (the command itself cannot), the Landlock helper
/// leaves a result that says so instead of a bare 137, and the command's
/// process group dies with it.
#[test]
fn a_helper_killed_from_outside_is_named_in_the_result() {
    if !route_available("landlock") {
        return;
    }
    let dir = TempDir::new("sbx-helper-killed");
    let tag = unique_tag("helper-killed");
    let config = binary_config(&dir, "landlock", json!({}));
    let sleep = unique_sleep();
    let host = Command::new(HELPER)
        .args(["exec", "--json", "-c"])
        .arg(&config)
        .arg("-C")
        .arg(&*dir)
        .arg(format!("sleep {sleep}"))
        .env(TAG_VAR, &tag)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the command never started", || !sleeping(&sleep).is_empty());
    let host_pid = host.id().to_string();
    let parent_is_host = |pid: &i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.split_whitespace().nth(1) == Some(host_pid.as_str()))
        })
    };
    let helpers: Vec<i32> = processes_with("__sandbox-exec")
        .into_iter()
        .filter(parent_is_host)
        .collect();
    assert_eq!(helpers.len(), 1, "the helper of this host: {helpers:?}");
    // SAFETY: kill takes plain integers; the pid is this test's helper, a
    // child of the host the test started.
    unsafe { libc::kill(helpers[0], libc::SIGKILL) };
    let out = host.wait_with_output().unwrap();
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["exit_code"], 137, "{result}");
    assert_eq!(
        result["sandbox"]["notes"],
        json!([{"note": "helper_killed", "signal": "SIGKILL"}]),
        "{result}"
    );
    assert!(
        result["sandbox_message"]
            .as_str()
            .unwrap()
            .contains("helper process was killed (SIGKILL) from outside"),
        "{result}"
    );
    assert_none_sleeping(&sleep, "landlock");
    // The killed helper could not remove its command's cgroup; the next
    // helper to make one removes it.
    let left = format!("bash-mcp-{}", helpers[0]);
    let next = Command::new(HELPER)
        .args(["exec", "-c"])
        .arg(&config)
        .arg("-C")
        .arg(&*dir)
        .arg("true")
        .env(TAG_VAR, &tag)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(next.status.success(), "{next:?}");
    assert!(
        !cgroup_exists(&left),
        "the killed helper's cgroup {left} is still there"
    );
    assert_no_survivors(&tag);
}

/// When the host dies, everything its commands started dies too, on every
/// route: also a child that dropped its environment (so the guard's run
/// marker cannot find it) and left the command's process group.
#[test]
fn a_killed_host_leaves_no_escapee_on_any_route() {
    let dir = TempDir::new("sbx-host-dies");
    let tag = unique_tag("host-dies");
    for route in available_routes() {
        let config = binary_config(&dir, route, json!({}));
        let sleep = unique_sleep();
        let mut host = Command::new(HELPER)
            .args(["exec", "-c"])
            .arg(&config)
            .arg("-C")
            .arg(&*dir)
            .arg(format!(
                "env -i setsid sh -c 'sleep {sleep} >/dev/null 2>&1 &'; sleep 120"
            ))
            .env(TAG_VAR, &tag)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_until("the escapee never started", || !sleeping(&sleep).is_empty());
        host.kill().unwrap();
        host.wait().unwrap();
        assert_none_sleeping(&sleep, route);
    }
    assert_no_survivors(&tag);
}

/// Forks `sleep` processes until a fork fails or it has made CAP of them
/// (the hang guard: a machine without a bound never sees more), then says
/// how many it made.
const FORK_PROBE: &str = r#"
import os, sys
cap, duration = int(sys.argv[1]), sys.argv[2]
made = 0
while made < cap:
    try:
        pid = os.fork()
    except OSError as e:
        print("fork failed after", made, "fork:", e, flush=True)
        break
    if pid == 0:
        try:
            os.execv("/bin/sleep", ["sleep", duration])
        finally:
            os._exit(1)
    made += 1
else:
    print("no limit after", made, flush=True)
"#;

/// How many processes the probe's output says it made before a fork failed.
fn forks_made(text: &str) -> Option<u32> {
    text.split_whitespace()
        .skip_while(|w| *w != "after")
        .nth(1)
        .and_then(|n| n.parse().ok())
}

/// A command that forks without end stops at `sandbox.max_processes` on
/// every route (bubblewrap through the supervisor, a bwrap of its own,
/// Landlock), the bound is counted per sandbox (what `status` reports is
/// in force), the result says it hit the limit, and nothing it started
/// survives. The fallback when the supervisor cannot start because the
/// helper binary is missing has no code of ours inside to set a bound:
/// status says so and names the fix.
#[test]
fn a_fork_bomb_stops_at_the_process_limit_and_the_result_names_it() {
    if !have_python() {
        return;
    }
    const LIMIT: u32 = 400;
    let dir = TempDir::new("sbx-nproc");
    std::fs::write(dir.join("fork.py"), FORK_PROBE).unwrap();
    let tag = unique_tag("nproc");
    for route in available_routes() {
        let server = sandboxed_server(&dir, route, json!({"max_processes": LIMIT}));
        server
            .configure(&json!({"tools": {"status": true}}).to_string())
            .unwrap();
        let status = call_tool(&server, "status", json!({}));
        let limit = &status["sandbox"]["process_limit"];
        assert_eq!(limit["max_processes"], LIMIT, "{route}: {status}");
        let unbounded = limit["unbounded"].as_str().unwrap_or_default();
        if route == "bwrap-fallback" {
            assert!(limit["bound_by"].is_null(), "{route}: {status}");
            assert!(
                unbounded.contains("every command and session shell") && unbounded.contains("helper"),
                "{route}: {status}"
            );
            continue;
        }
        let Some(bound_by) = limit["bound_by"].as_str() else {
            assert!(!unbounded.is_empty(), "{route}: an unbounded route says why: {status}");
            skip(format_args!("{route}: no process limit here ({unbounded})"));
            continue;
        };
        let config = binary_config(&dir, route, json!({"max_processes": LIMIT}));
        let sleep = unique_sleep();
        let result = exec_json(
            &config,
            &dir,
            &tag,
            &format!("python3 fork.py {} {sleep}; echo exit=$?", 3 * LIMIT),
        );
        let text = output_of(&result);
        let made = forks_made(&text).unwrap_or_else(|| panic!("{route}: {result}"));
        assert!(text.contains("fork failed after") && made < LIMIT, "{route}: {result}");
        assert!(made > LIMIT / 2, "{route}: far fewer than the limit: {result}");
        assert_eq!(
            result["sandbox"]["notes"],
            json!([{"note": "process_limit", "max_processes": LIMIT, "bound_by": bound_by}]),
            "{route}: {result}"
        );
        assert!(
            result["sandbox_message"]
                .as_str()
                .unwrap_or_default()
                .contains("limit of 400 processes"),
            "{route}: {result}"
        );
        assert_none_sleeping(&sleep, route);
    }
    assert_no_survivors(&tag);
}

/// A fork bomb in a session shell stops at `sandbox.max_processes` too,
/// counted over the session's sandbox alone: while the session's processes
/// fill its bound, another command of the same server runs, and once the
/// session is closed nothing of it is left (nor its cgroup, where one
/// bounds it).
#[test]
fn a_fork_bomb_in_a_session_stops_at_the_process_limit() {
    if !have_python() {
        return;
    }
    const LIMIT: u32 = 400;
    for route in available_routes().filter(|r| ["bwrap", "bwrap-per-command", "landlock"].contains(r)) {
        let dir = TempDir::new("sbx-nproc-session");
        std::fs::write(dir.join("fork.py"), FORK_PROBE).unwrap();
        let server = sandboxed_server(&dir, route, json!({"max_processes": LIMIT}));
        server
            .configure(&json!({"sessions": {"enabled": true}, "tools": {"status": true}}).to_string())
            .unwrap();
        let status = call_tool(&server, "status", json!({}));
        let limit = &status["sandbox"]["process_limit"];
        if limit["sessions_bound_by"].is_null() {
            let unbounded = limit["unbounded"].as_str().unwrap_or_default();
            assert!(unbounded.contains("session shell"), "{route}: {status}");
            skip(format_args!(
                "{route}: no process limit for sessions here ({unbounded})"
            ));
            continue;
        }
        let started = call_tool(
            &server,
            "session_start",
            json!({"shell": "bash", "env": {TAG_VAR: server.tag()}}),
        );
        let id = started["session_id"].as_str().unwrap_or_else(|| panic!("{started}"));
        let sleep = unique_sleep();
        let result = call_tool(
            &server,
            "session_run",
            json!({
                "session_id": id,
                "command": format!("python3 fork.py {} {sleep}; echo exit=$?", 3 * LIMIT),
                "timeout_seconds": 120,
            }),
        );
        let text = output_of(&result);
        let made = forks_made(&text).unwrap_or_else(|| panic!("{route}: {result}"));
        assert!(text.contains("fork failed after") && made < LIMIT, "{route}: {result}");
        assert!(made > LIMIT / 2, "{route}: far fewer than the limit: {result}");
        // The session's sleeps still fill its bound: the server's other
        // commands are not held by it. The last children forked may still be
        // on their way to exec'ing sleep.
        wait_until(&format!("{route}: the session's processes are gone early"), || {
            sleeping(&sleep).len() as u32 >= made
        });
        let held = sleeping(&sleep);
        let cgroups: std::collections::BTreeSet<String> = held
            .iter()
            .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok())
            .filter_map(|c| c.lines().find(|l| l.contains("bash-mcp-sandbox-")).map(str::to_owned))
            .collect();
        let other = call_tool(&server, "execute", json!({"command": "echo other-ok"}));
        assert_eq!(output_of(&other).trim(), "other-ok", "{route}: {other}");
        let _ = call_tool(&server, "session_close", json!({"session_id": id}));
        assert_none_sleeping(&sleep, route);
        if limit["sessions_bound_by"]
            .as_str()
            .unwrap_or_default()
            .contains("cgroup")
        {
            assert!(
                !cgroups.is_empty(),
                "{route}: the session's processes are in no cgroup of its own"
            );
        }
        for line in cgroups {
            let name = line.rsplit('/').next().unwrap_or_default().to_owned();
            wait_until(&format!("{route}: the session's cgroup {name} is left behind"), || {
                !cgroup_exists(&name)
            });
        }
        assert_no_survivors(server.tag());
    }
}

/// Whether a cgroup directory called `name` exists in any hierarchy.
fn cgroup_exists(name: &str) -> bool {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    mounts
        .lines()
        .filter(|l| l.contains(" - cgroup"))
        .filter_map(|l| l.split_whitespace().nth(4))
        .any(|point| walk_finds(Path::new(point), name, 4))
}

fn walk_finds(dir: &Path, name: &str, depth: u32) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .any(|e| e.file_name().to_string_lossy() == name || (depth > 0 && walk_finds(&e.path(), name, depth - 1)))
}
