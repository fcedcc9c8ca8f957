//! A person at the same terminal: `bash-mcp attach` runs inside tmux (keys
//! typed with `send-keys`, the screen read with `capture-pane`) against a
//! `bash-mcp serve` driven over MCP by this test. Waits poll the screen or
//! the server with generous hang guards only.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_bash-mcp");
/// The hang guard of every wait: far above what any step needs.
const PATIENCE: Duration = Duration::from_secs(60);
const SECRET: &str = "hunter2-not-for-models";

fn have_tmux() -> bool {
    let found = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        common::skip("tmux is not installed (.ci/run installs it)");
    }
    found
}

/// A `bash-mcp serve` with sessions on, an audit log and a debug log on
/// stderr. Its attach socket is in the user's one attach directory, beside
/// those of every other server of this user (other tests' too): the tests
/// attach by session id, which no other server shares.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    dir: TempDir,
    next_id: i64,
    /// Every tool result the model was given.
    seen_by_model: String,
}

impl Server {
    fn start(name: &str) -> Self {
        Self::start_with(name, &[])
    }

    /// [`Server::start`] with extra environment variables (`None` removes one).
    fn start_with(name: &str, env: &[(&str, Option<&str>)]) -> Self {
        Self::spawn(name, json!({}), |command, dir| {
            // A runtime directory of its own, which must not matter.
            command.env("XDG_RUNTIME_DIR", dir.join("run"));
            for (key, value) in env {
                match value {
                    Some(value) => command.env(key, value.replace("{dir}", &dir.display().to_string())),
                    None => command.env_remove(key),
                };
            }
        })
    }

    /// A server with `extra` configuration keys, started as `setup`
    /// prepares its command (given the server's directory).
    fn spawn(name: &str, extra: Value, setup: impl FnOnce(&mut Command, &Path)) -> Self {
        let dir = TempDir::new(name);
        std::fs::DirBuilder::new().mode(0o700).create(dir.join("run")).unwrap();
        let mut config = json!({
            "sessions": {"enabled": true},
            "audit": {"path": dir.join("audit.jsonl")},
        });
        for (key, value) in extra.as_object().unwrap() {
            config[key] = value.clone();
        }
        let config = dir.config(&config);
        let log = std::fs::File::create(dir.join("server.log")).unwrap();
        std::fs::create_dir(dir.join("work")).unwrap();
        let mut command = Command::new(BIN);
        command
            .args(["serve", "--config", &config, "--log-level", "debug", "--working-dir"])
            .arg(dir.join("work"))
            .env("XDG_DATA_HOME", dir.join("data"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log);
        setup(&mut command, &dir);
        let mut child = command.spawn().expect("spawn bash-mcp serve");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut server = Self {
            stdin: child.stdin.take(),
            child,
            lines,
            dir,
            next_id: 1,
            seen_by_model: String::new(),
        };
        server.send(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}));
        server.reply(0);
        server.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        server
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(format!("{message}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    fn reply(&mut self, id: i64) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let line = self
                .lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .expect("a reply from the server");
            let value: Value = serde_json::from_str(&line).unwrap();
            if value["id"] == id {
                return value;
            }
        }
    }

    /// Calls a tool; returns its structured result (the model sees the text).
    fn tool(&mut self, name: &str, args: Value) -> Value {
        let id = self.begin_tool(name, args);
        self.tool_result(id)
    }

    /// Sends a tool call without waiting for its result; returns the request id.
    fn begin_tool(&mut self, name: &str, args: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":args}}));
        id
    }

    /// Calls a tool; returns its `structuredContent`.
    fn tool_structured(&mut self, name: &str, args: Value) -> Value {
        let id = self.begin_tool(name, args);
        let reply = self.reply(id);
        self.seen_by_model.push_str(&reply.to_string());
        reply["result"]["structuredContent"].clone()
    }

    /// The result of the call sent as `id`.
    fn tool_result(&mut self, id: i64) -> Value {
        let reply = self.reply(id);
        self.seen_by_model.push_str(&reply.to_string());
        let result = &reply["result"];
        assert!(result.is_object(), "{reply}");
        let text = result["content"][0]["text"].as_str().unwrap_or("{}");
        serde_json::from_str(text).unwrap_or_else(|_| result["structuredContent"].clone())
    }

    /// This server's attach sockets (`<pid>-<tag>.sock` in the attach directory).
    fn sockets(&self) -> Vec<PathBuf> {
        let mine = format!("{}-", self.child.id());
        std::fs::read_dir(attach_dir())
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with(&mine))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn start_session(&mut self, tag: &str) -> (String, String) {
        let r = self.tool("session_start", json!({"env": {TAG_VAR: tag}}));
        let id = r["session_id"].as_str().expect("a session id").to_owned();
        let name = r["attach_name"].as_str().expect("an attach name").to_owned();
        assert_eq!(r["attach"], format!("bash-mcp attach {name}"), "{r}");
        (id, name)
    }

    /// Ends the server by closing its input; it must exit and remove its socket.
    fn stop(mut self) -> (String, String, String) {
        drop(self.stdin.take());
        let deadline = Instant::now() + PATIENCE;
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "the server did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(self.sockets().is_empty(), "socket left: {:?}", self.sockets());
        let audit = std::fs::read_to_string(self.dir.join("audit.jsonl")).unwrap_or_default();
        let log = std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default();
        (std::mem::take(&mut self.seen_by_model), audit, log)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A tmux server of this test's own, with one window per attached person;
/// its panes carry the test's tag, so survivors are found.
struct Tmux {
    socket: PathBuf,
    tag: String,
    _dir: TempDir,
}

impl Tmux {
    fn new(tag: &str) -> Self {
        let dir = TempDir::new("tmux");
        Self {
            socket: dir.join("tmux.sock"),
            tag: tag.to_owned(),
            _dir: dir,
        }
    }

    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-f").arg("/dev/null").arg("-S").arg(&self.socket);
        c
    }

    /// Opens window `window` running `bash-mcp attach ARGS` for the server;
    /// when attach exits the window stays, with its exit status shown.
    fn attach(&self, window: &str, args: &str) {
        self.open(
            window,
            &format!("'{BIN}' attach {args}; echo \"[attach exited $?]\"; exec sleep 600"),
        );
    }

    /// Opens window `window` running `script` (with this test's tag).
    fn open(&self, window: &str, script: &str) {
        let script = format!("export {TAG_VAR}={}; {script}", self.tag);
        let (verb, target) = if self.socket.exists() {
            (
                "new-window",
                vec!["-t".to_owned(), "main".to_owned(), "-n".to_owned(), window.to_owned()],
            )
        } else {
            (
                "new-session",
                vec![
                    "-s".into(),
                    "main".into(),
                    "-n".into(),
                    window.to_owned(),
                    "-x".into(),
                    "120".into(),
                    "-y".into(),
                    "40".into(),
                ],
            )
        };
        let status = self
            .cmd()
            .arg(verb)
            .arg("-d")
            .args(target)
            .arg(script)
            .status()
            .unwrap();
        assert!(status.success(), "tmux {verb} failed");
    }

    fn keys(&self, window: &str, keys: &[&str]) {
        let status = self
            .cmd()
            .args(["send-keys", "-t", &format!("main:{window}")])
            .args(keys)
            .status()
            .unwrap();
        assert!(status.success());
    }

    fn type_text(&self, window: &str, text: &str) {
        let status = self
            .cmd()
            .args(["send-keys", "-l", "-t", &format!("main:{window}"), text])
            .status()
            .unwrap();
        assert!(status.success());
    }

    fn screen(&self, window: &str) -> String {
        let out = self
            .cmd()
            .args([
                "capture-pane",
                "-p",
                "-J",
                "-S",
                "-200",
                "-t",
                &format!("main:{window}"),
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Polls the window until its screen shows `needle`.
    fn wait_for(&self, window: &str, needle: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let screen = self.screen(window);
            if screen.contains(needle) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "{needle:?} never appeared in window {window}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").stderr(Stdio::null()).status();
    }
}

/// Processes running this test's `bash-mcp attach` (found by the test's tag).
fn attach_processes(tag: &str) -> Vec<i32> {
    survivors(tag)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.split(|b| *b == 0).nth(1) == Some(b"attach".as_slice()))
        })
        .collect()
}

/// The user's attach directory, by the documented rule: the runtime
/// directory when `/run/user/<uid>` is private to the user, else `/tmp`.
fn attach_dir() -> PathBuf {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    let runtime = PathBuf::from(format!("/run/user/{uid}"));
    match std::fs::symlink_metadata(&runtime) {
        Ok(m) if m.is_dir() && m.uid() == uid && m.mode() & 0o077 == 0 => runtime.join("bash-mcp"),
        _ => PathBuf::from(format!("/tmp/bash-mcp-{uid}")),
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: still not so");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_person_watches_types_the_password_interrupts_and_detaches() {
    if !have_tmux() {
        return;
    }
    let tag = unique_tag("attach-main");
    let mut server = Server::start("attach-main");
    let (id, name) = server.start_session(&tag);
    let tmux = Tmux::new(&tag);
    tmux.attach("person", &id);
    tmux.wait_for("person", &format!("[attached to #1 {name}; detach: Ctrl-] then d]"));

    // The person sees the agent's command as typed, and its output.
    let r = server.tool(
        "session_run",
        json!({"session_id": id, "command": "echo hello-from-$((6*7))"}),
    );
    assert_eq!(r["output"], "hello-from-42\n", "{r}");
    assert_eq!(r["people_watching"], 1, "{r}");
    let screen = tmux.wait_for("person", "hello-from-42");
    assert!(screen.contains("$ echo hello-from-$((6*7))"), "{screen}");
    assert!(
        !screen.contains("__bm") && !screen.contains("633;"),
        "plumbing shown:\n{screen}"
    );

    // A password prompt: the agent is told to have the person type it.
    // A program that checks the password by its checksum, so the secret is
    // nowhere in what the agent sends.
    let sum = Command::new("sh")
        .args(["-c", &format!("printf %s '{SECRET}' | cksum")])
        .output()
        .unwrap();
    let sum = String::from_utf8(sum.stdout).unwrap().trim().to_owned();
    let checker = server.dir.join("work/check-password");
    std::fs::write(
        &checker,
        format!("#!/bin/sh\n[ \"$(printf %s \"$1\" | cksum)\" = '{sum}' ] && echo password accepted\n"),
    )
    .unwrap();
    std::fs::set_permissions(&checker, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let command = "read -r -s -p 'Password: ' pw; echo; ./check-password \"$pw\"";
    let r = server.tool(
        "session_run",
        json!({"session_id": id, "command": command, "timeout_seconds": 10}),
    );
    assert_eq!(
        (r["status"].as_str(), r["secret_prompt"].as_bool()),
        (Some("running"), Some(true)),
        "{r}"
    );
    let hint = r["hint"].as_str().unwrap();
    assert!(hint.contains(&format!("`bash-mcp attach {name}`")), "{hint}");
    assert!(hint.contains("never send it with session_write"), "{hint}");
    tmux.wait_for("person", "Password: ");
    // Nobody answers: session_wait waits out its whole timeout (the prompt
    // it was told about does not end it) and says the command still runs.
    let asked = Duration::from_secs(2);
    let began = Instant::now();
    let r = server.tool(
        "session_wait",
        json!({"session_id": id, "timeout_seconds": asked.as_secs_f64()}),
    );
    assert!(began.elapsed() >= asked, "returned after {:?}: {r}", began.elapsed());
    assert_eq!(
        (
            r["status"].as_str(),
            r["secret_prompt"].as_bool(),
            r["timed_out"].as_bool()
        ),
        (Some("running"), Some(true), Some(true)),
        "{r}"
    );
    // The person answers while the agent waits: the wait returns with the
    // command's result, which exists only after the answer.
    let waiting = server.begin_tool("session_wait", json!({"session_id": id, "timeout_seconds": 60}));
    tmux.type_text("person", SECRET);
    tmux.keys("person", &["Enter"]);
    let r = server.tool_result(waiting);
    assert_eq!(
        (r["status"].as_str(), r["exit_code"].as_i64()),
        (Some("finished"), Some(0)),
        "{r}"
    );
    assert!(r["output"].as_str().unwrap().contains("password accepted"), "{r}");
    assert_eq!(r["person_typed"], true, "{r}");
    let screen = tmux.wait_for("person", "password accepted\n$");
    assert!(!screen.contains(SECRET), "the password was echoed:\n{screen}");
    assert_readme_shows(&screen, &name);

    // Ctrl-C from the person interrupts the agent's command.
    let r = server.tool(
        "session_run",
        json!({"session_id": id, "command": "sleep 600", "timeout_seconds": 0.5}),
    );
    assert_eq!(r["status"], "running", "{r}");
    tmux.wait_for("person", "$ sleep 600");
    tmux.keys("person", &["C-c"]);
    let r = server.tool("session_wait", json!({"session_id": id, "timeout_seconds": 30}));
    assert_eq!(
        (r["status"].as_str(), r["exit_code"].as_i64()),
        (Some("finished"), Some(130)),
        "{r}"
    );

    // Detaching leaves the session running.
    tmux.keys("person", &["C-]", "d"]);
    tmux.wait_for("person", &format!("[detached from #1 {name}; it keeps running]"));
    tmux.wait_for("person", "[attach exited 0]");
    let r = server.tool("session_run", json!({"session_id": id, "command": "echo still-here"}));
    assert_eq!(r["output"], "still-here\n", "{r}");
    assert!(r.get("people_watching").is_none(), "{r}");

    wait_until("the attach process ends", || attach_processes(&tag).is_empty());
    drop(tmux);
    let (model, audit, log) = server.stop();
    assert!(model.contains("password accepted"), "the results were recorded");
    assert!(audit.contains("session_run"), "the audit log was written: {audit}");
    for (what, text) in [
        ("the model's results", &model),
        ("the audit log", &audit),
        ("the server's log", &log),
    ] {
        assert!(!text.contains(SECRET), "the password reached {what}");
    }
    assert_no_survivors(&tag);
}

#[test]
fn read_only_cannot_type_and_closing_the_session_ends_every_view() {
    if !have_tmux() {
        return;
    }
    let tag = unique_tag("attach-ro");
    let mut server = Server::start("attach-ro");
    let (id, name) = server.start_session(&tag);
    let tmux = Tmux::new(&tag);
    tmux.attach("typist", &id);
    tmux.attach("watcher", &format!("--read-only {id}"));
    tmux.wait_for("typist", "[attached to");
    tmux.wait_for("watcher", "read-only; detach: Ctrl-] then d]");
    let r = server.tool(
        "session_run",
        json!({"session_id": id, "command": "echo both-see-this"}),
    );
    assert_eq!(r["people_watching"], 2, "{r}");
    tmux.wait_for("typist", "both-see-this");
    tmux.wait_for("watcher", "both-see-this");

    // The watcher's keys go nowhere; the typist's run at the prompt.
    tmux.type_text("watcher", "echo from-the-watcher > typed.txt");
    tmux.keys("watcher", &["Enter"]);
    tmux.type_text("typist", "echo from-the-typist");
    tmux.keys("typist", &["Enter"]);
    tmux.wait_for("watcher", "\nfrom-the-typist");
    let r = server.tool(
        "session_run",
        json!({"session_id": id, "command": "ls typed.txt 2>&1; echo done"}),
    );
    assert!(r["output"].as_str().unwrap().contains("No such file"), "{r}");
    assert_eq!(r["person_typed"], true, "{r}");
    assert!(!tmux.screen("watcher").contains("from-the-watcher"));

    // Closing the session ends both views cleanly; the typist's returns to
    // the shell once the line being typed is over.
    server.tool("session_close", json!({"session_id": id}));
    for window in ["typist", "watcher"] {
        tmux.wait_for(window, &format!("[session #1 {name} ended]"));
    }
    tmux.wait_for("watcher", "[attach exited 0]");
    tmux.wait_for("typist", "press Enter to return to your shell");
    tmux.keys("typist", &["Enter"]);
    tmux.wait_for("typist", "[attach exited 0]");
    wait_until("the attach processes end", || attach_processes(&tag).is_empty());
    drop(tmux);
    server.stop();
    assert_no_survivors(&tag);
}

#[test]
fn without_a_name_attach_lists_the_sessions_of_every_server() {
    let tag = unique_tag("attach-list");
    let mut server = Server::start("attach-list");
    let mut other = Server::start("attach-list-other");
    let run_attach = |args: &[&str]| {
        Command::new(BIN)
            .arg("attach")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let (_, first) = server.start_session(&tag);
    let (_, second) = server.start_session(&tag);
    let (_, third) = other.start_session(&tag);
    // More than one session is open: attach lists them all (other tests'
    // servers may add theirs) and attaches to none.
    let out = run_attach(&[]);
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    for title in [format!("#1 {first}"), format!("#2 {second}"), format!("#1 {third}")] {
        assert!(listing.contains(&title), "{title} is not listed:\n{listing}");
    }
    let out = run_attach(&["nosuch"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no session is called \"nosuch\"") && err.contains(&first),
        "{err}"
    );
    let list = server.tool("session_list", json!({}));
    assert_eq!(list["sessions"].as_array().unwrap().len(), 2, "{list}");
    assert!(
        list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["title"] == format!("#1 {first}")),
        "{list}"
    );
    other.stop();
    server.stop();
    // A user with no server: nothing to attach to, and where attach looked.
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        let out = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN, "attach"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert!(
            err.contains("no session is open") && err.contains("/tmp/bash-mcp-65534"),
            "{err}"
        );
    } else {
        common::skip("attach as a user with no server needs root (CI runs as root)");
    }
    assert_no_survivors(&tag);
}

#[test]
fn another_user_cannot_connect() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        common::skip("dropping to another uid needs root (CI runs as root)");
        return;
    }
    let tag = unique_tag("attach-uid");
    let mut server = Server::start("attach-uid");
    let (_, name) = server.start_session(&tag);
    let socket = server.sockets().pop().expect("the server's socket");
    // The private directory keeps another user out...
    let (status, answer) = connect_as_nobody(&socket);
    assert_eq!(status, 3, "connect must fail: {:?}", String::from_utf8_lossy(&answer));
    // ...and with a path to the socket opened by mistake (a hard link in an
    // open directory, the socket's mode opened), the server's credential check does.
    let link = server.dir.join("opened.sock");
    if let Err(e) = std::fs::hard_link(&socket, &link) {
        common::skip(format!(
            "another_user_cannot_connect: cannot link {} beside the test's files ({e}); the credential check is not reached",
            socket.display()
        ));
    } else {
        let chmod = |mode: &str, path: &Path| Command::new("chmod").arg(mode).arg(path).status().unwrap();
        chmod("0755", &server.dir);
        chmod("0777", &link);
        let (status, answer) = connect_as_nobody(&link);
        let answer = String::from_utf8_lossy(&answer).into_owned();
        assert_eq!(status, 0, "{answer:?}");
        assert!(answer.contains("uid 65534 may not attach"), "{answer:?}");
        assert!(!answer.contains(&name), "the list reached another user: {answer}");
        std::fs::remove_file(&link).unwrap();
    }
    server.stop();
    assert_no_survivors(&tag);
}

#[test]
fn killing_the_server_leaves_no_socket_and_no_process() {
    if !have_tmux() {
        return;
    }
    let tag = unique_tag("attach-kill");
    let mut server = Server::start("attach-kill");
    let (id, name) = server.start_session(&tag);
    let tmux = Tmux::new(&tag);
    tmux.attach("person", &id);
    tmux.wait_for("person", "[attached to");
    let r = server.tool(
        "session_run",
        json!({"session_id": id, "command": "sleep 600", "timeout_seconds": 0.2}),
    );
    assert_eq!(r["status"], "running");
    assert_eq!(server.sockets().len(), 1);
    // SAFETY: kill takes no pointer; the pid is the server this test started.
    unsafe { libc::kill(server.child.id() as i32, libc::SIGKILL) };
    let _ = server.child.wait();
    tmux.wait_for("person", &format!("[the server of session #1 {name} ended]"));
    tmux.wait_for("person", "press Enter to return to your shell");
    tmux.keys("person", &["Enter"]);
    wait_until("the guard removes the socket", || server.sockets().is_empty());
    wait_until("the attach process ends", || attach_processes(&tag).is_empty());
    drop(tmux);
    assert_no_survivors(&tag);
}

#[test]
fn a_server_started_with_a_clients_few_variables_is_found_from_a_full_terminal() {
    if !have_tmux() {
        return;
    }
    let tag = unique_tag("attach-env");
    // What the Python SDK passes to a server it starts: these six and no
    // other (no XDG_RUNTIME_DIR); a TMPDIR of its own besides.
    let mut server = Server::spawn("attach-env", json!({}), |command, dir| {
        command.env_clear();
        for key in ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"] {
            if let Some(value) = std::env::var_os(key) {
                command.env(key, value);
            }
        }
        std::fs::create_dir(dir.join("server-tmp")).unwrap();
        command.env("TMPDIR", dir.join("server-tmp"));
    });
    let (id, name) = server.start_session(&tag);
    let socket = server.sockets().pop().expect("the server's socket");
    assert!(socket.starts_with(attach_dir()), "{}", socket.display());
    // The person's terminal has a runtime directory and a TMPDIR of its own.
    let person = server.dir.join("person");
    std::fs::DirBuilder::new().mode(0o700).create(&person).unwrap();
    let tmux = Tmux::new(&tag);
    tmux.open(
        "person",
        &format!(
            "XDG_RUNTIME_DIR='{0}' TMPDIR='{0}' '{BIN}' attach {id}; echo \"[attach exited $?]\"; exec sleep 600",
            person.display()
        ),
    );
    tmux.wait_for("person", &format!("[attached to #1 {name}"));
    let r = server.tool(
        "session_run",
        json!({"session_id": id, "command": "echo found-$((40+2))"}),
    );
    assert_eq!(r["people_watching"], 1, "{r}");
    tmux.wait_for("person", "found-42");
    tmux.keys("person", &["C-]", "d"]);
    tmux.wait_for("person", "[attach exited 0]");
    drop(tmux);
    server.stop();
    assert_no_survivors(&tag);
}

#[test]
fn keys_typed_as_the_session_closes_never_reach_the_persons_shell() {
    if !have_tmux() {
        return;
    }
    let tag = unique_tag("attach-cut");
    let mut server = Server::start("attach-cut");
    let (id, _) = server.start_session(&tag);
    let tmux = Tmux::new(&tag);
    // The person's own shell, which records every line it runs.
    let history = server.dir.join("outer-history");
    tmux.open(
        "person",
        &format!(
            "cd '{}'; HISTFILE='{}' HISTCONTROL= PROMPT_COMMAND='history -a' PS1='outer$ ' exec bash --norc --noprofile -i",
            server.dir.display(),
            history.display()
        ),
    );
    tmux.wait_for("person", "outer$ ");
    tmux.type_text("person", &format!("'{BIN}' attach {id}"));
    tmux.keys("person", &["Enter"]);
    tmux.wait_for("person", "[attached to");
    let r = server.tool(
        "session_run",
        json!({"session_id": id, "command": "read -r -s -p 'Password: ' pw; echo; echo got-${#pw}", "timeout_seconds": 10}),
    );
    assert_eq!(r["secret_prompt"], true, "{r}");
    tmux.wait_for("person", "Password: ");

    // The person is typing the password when the agent closes the session:
    // keys go on arriving while it closes and after it has closed.
    tmux.type_text("person", "first-half-");
    std::thread::scope(|scope| {
        let typist = scope.spawn(|| {
            for _ in 0..20 {
                tmux.type_text("person", "during-close-");
            }
        });
        server.tool("session_close", json!({"session_id": id}));
        tmux.type_text("person", "after-close-");
        typist.join().unwrap();
    });
    tmux.wait_for("person", "press Enter to return to your shell");
    tmux.type_text("person", "rest-of-the-line");
    tmux.keys("person", &["Enter"]);
    // The shell is the person's again, and it got none of those keys.
    tmux.type_text("person", "echo outer-alive-$((2+3))");
    tmux.keys("person", &["Enter"]);
    let screen = tmux.wait_for("person", "\nouter-alive-5");
    let recorded = std::fs::read_to_string(&history).unwrap();
    assert!(recorded.contains("echo outer-alive-$((2+3))"), "{recorded}");
    for typed in ["first-half", "during-close", "after-close", "rest-of-the-line"] {
        assert!(!screen.contains(typed), "{typed:?} reached the screen:\n{screen}");
        assert!(!recorded.contains(typed), "{typed:?} reached the history:\n{recorded}");
    }
    assert!(!screen.contains("command not found"), "{screen}");
    drop(tmux);
    server.stop();
    assert_no_survivors(&tag);
}

/// Connects to `socket` as uid/gid 65534 (in a forked child), asks for the
/// session list, and returns the child's exit status (3: the connection was
/// refused) and what the server answered.
fn connect_as_nobody(socket: &Path) -> (i32, Vec<u8>) {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: `sockaddr_un` is plain data, for which all-zero bytes are a valid value.
    let mut address: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    address.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (slot, byte) in address.sun_path.iter_mut().zip(socket.as_os_str().as_bytes()) {
        *slot = *byte as libc::c_char;
    }
    let request = *b"L\0\0\0\0";
    let mut pipe = [0; 2];
    // SAFETY: `pipe` is a two-element array for pipe() to fill.
    assert_eq!(unsafe { libc::pipe(pipe.as_mut_ptr()) }, 0);
    // SAFETY: the child makes only system calls on memory prepared before
    // the fork, then _exit()s.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: in the forked child: only async-signal-safe system calls, on memory
        // prepared before the fork (the address, the request, the pipe) or on the stack; no
        // allocation, no lock; every path ends in _exit().
        unsafe {
            libc::close(pipe[0]);
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setresgid(65534, 65534, 65534) != 0
                || libc::setresuid(65534, 65534, 65534) != 0
            {
                libc::_exit(2);
            }
            let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
            let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
            if libc::connect(fd, (&address as *const libc::sockaddr_un).cast(), len) != 0 {
                libc::_exit(3);
            }
            libc::write(fd, request.as_ptr().cast(), request.len());
            let mut buf = [0u8; 4096];
            loop {
                let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
                if n <= 0 {
                    break;
                }
                libc::write(pipe[1], buf.as_ptr().cast(), n as usize);
            }
            libc::_exit(0);
        }
    }
    // SAFETY: the write end is ours and closed once; the child has its own copy.
    unsafe { libc::close(pipe[1]) };
    let mut answer = Vec::new();
    // SAFETY: the read end is ours, open, and owned by the File from here on.
    let mut file = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(pipe[0]) };
    std::io::Read::read_to_end(&mut file, &mut answer).unwrap();
    let mut status = 0;
    // SAFETY: waits for our own child into a local.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(libc::WIFEXITED(status), "the probe failed: {status:#x}");
    let code = libc::WEXITSTATUS(status);
    assert!(
        code == 0 || code == 3,
        "the probe could not become uid 65534: exit {code}"
    );
    (code, answer)
}

/// The capture of a person's view in docs/sessions.md is this test's screen
/// (with the session's random name in place of `falcon`).
fn assert_readme_shows(screen: &str, name: &str) {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/sessions.md")).unwrap();
    let block = docs
        .split("```text")
        .filter_map(|b| b.split_once('\n').map(|(_, body)| body))
        .find(|b| b.starts_with("[attached to #1 falcon"))
        .and_then(|b| b.split("```").next())
        .expect("docs/sessions.md shows a capture of an attached view");
    let expected: Vec<String> = block.lines().map(|l| l.replace("falcon", name)).collect();
    let shown: Vec<&str> = screen.lines().map(str::trim_end).take(expected.len()).collect();
    assert_eq!(
        shown, expected,
        "the capture in docs/sessions.md differs from the screen:\n{screen}"
    );
}

#[test]
fn a_visible_session_opens_a_terminal_window_or_says_why_not() {
    let tag = unique_tag("attach-visible");
    // No graphical session: a plain reason and what the person can run.
    let mut server = Server::start_with("attach-novis", &[("DISPLAY", None), ("WAYLAND_DISPLAY", None)]);
    let r = server.tool("session_start", json!({"env": {TAG_VAR: &tag}, "visible": true}));
    let name = r["attach_name"].as_str().unwrap().to_owned();
    assert_eq!(r["visible"], false, "{r}");
    let reason = r["visible_reason"].as_str().unwrap();
    assert!(
        reason.contains("$DISPLAY") && reason.contains(&format!("`bash-mcp attach {name}`")),
        "{reason}"
    );
    server.stop();

    // With a display, the configured terminal command runs `bash-mcp attach <name>`.
    let mut server = Server::start_with(
        "attach-vis",
        &[
            ("DISPLAY", Some(":99")),
            ("BASH_MCP_TERMINAL", Some("{dir}/fake-terminal --title=bash-mcp -e")),
        ],
    );
    let fake = server.dir.join("fake-terminal");
    std::fs::write(&fake, "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$0.args\"\n").unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let r = server.tool("session_start", json!({"env": {TAG_VAR: &tag}, "visible": true}));
    let name = r["attach_name"].as_str().unwrap().to_owned();
    assert_eq!(r["visible"], true, "{r}");
    let recorded = server.dir.join("fake-terminal.args");
    wait_until("the terminal command runs", || recorded.exists());
    let args = std::fs::read_to_string(&recorded).unwrap();
    let args: Vec<&str> = args.lines().collect();
    assert_eq!(args[..2], ["--title=bash-mcp", "-e"], "{args:?}");
    assert!(
        args[2].ends_with("bash-mcp") && args[3..] == ["attach", name.as_str()],
        "{args:?}"
    );
    server.stop();
    assert_no_survivors(&tag);
}

/// The sandboxes a server can run its commands in, as `sandbox` keys:
/// bubblewrap through the supervisor (its commands observed by seccomp
/// notification), bubblewrap with a bwrap per command (not observed), and
/// Landlock + seccomp through the helper, observed and not.
fn sandboxes() -> Vec<(&'static str, Value)> {
    let all = [
        ("bwrap", json!({"backend": "bwrap"})),
        ("bwrap-per-command", json!({"backend": "bwrap", "supervisor": false})),
        ("landlock", json!({"backend": "landlock"})),
        (
            "landlock-unobserved",
            json!({"backend": "landlock", "notify_denials": false}),
        ),
    ];
    all.into_iter()
        .map(|(name, mut keys)| {
            keys["mode"] = "workspace-write".into();
            // No IP network, as before the binary opened it by name by default.
            keys["network"] = false.into();
            keys["helper_path"] = BIN.into();
            (name, keys)
        })
        .filter(|(name, keys)| {
            let config = bash_mcp::sandbox::SandboxConfig::default()
                .apply(keys, Path::new("/"))
                .unwrap();
            sandbox_works(&config, name)
        })
        .collect()
}

/// Connects to the socket at `$2`, asks to attach to session `$3` and types
/// `touch $4` into it, then prints what came back (or why the connection
/// failed), on one line starting with `PROBE $1`.
const PROBE: &str = r#"
use IO::Socket::UNIX;
my ($name, $path, $id, $marker) = @ARGV;
$SIG{PIPE} = 'IGNORE';
$SIG{ALRM} = sub { print "PROBE $name answer: [still connected after 20 s]\n"; exit 0 };
alarm 20;
my $s = IO::Socket::UNIX->new(Peer => $path) or do { print "PROBE $name connect-failed: $!\n"; exit 0 };
print $s pack("aN/a*", "A", qq({"session":"$id","read_only":false}));
print $s pack("aN/a*", "I", "touch $marker\r");
$s->flush;
my $answer = "";
while (sysread($s, my $chunk, 4096)) { $answer .= $chunk }
$answer =~ s/[^[:print:]]/./g;
print "PROBE $name answer: $answer\n";
"#;

#[test]
fn no_sandboxed_command_reaches_an_attach_socket() {
    if !Command::new("perl").arg("-e1").status().is_ok_and(|s| s.success()) {
        assert!(std::env::var_os("CI").is_none(), "perl must be installed in CI");
        common::skip_missing("perl");
        return;
    }
    let tag = unique_tag("attach-sbx");
    // A server that runs its commands unsandboxed (the binary's default
    // sandbox opted out of), with a session.
    let mut host = Server::spawn(
        "attach-sbx-host",
        json!({"sandbox": {"mode": "off"}}),
        |command, dir| {
            command.env("XDG_RUNTIME_DIR", dir.join("run"));
        },
    );
    let (host_id, _) = host.start_session(&tag);
    let host_socket = host.sockets().pop().expect("the unsandboxed server's socket");
    let host_marker = host.dir.join("work/typed-by-a-sandbox");
    for (name, sandbox) in sandboxes() {
        let mut server = Server::spawn("attach-sbx", json!({"sandbox": sandbox}), |_, _| {});
        let (own_id, _) = server.start_session(&tag);
        let own_socket = server.sockets().pop().expect("the sandboxed server's socket");
        let own_marker = server.dir.join("work/typed-by-a-sandbox");
        // A path to each socket that the command can see: as if it had
        // leaked (a hard link in its working directory).
        let work = server.dir.join("work");
        let linked = std::fs::hard_link(&host_socket, work.join("host.sock")).is_ok()
            && std::fs::hard_link(&own_socket, work.join("own.sock")).is_ok();
        if !linked {
            common::skip(format!(
                "{name}: the attach sockets cannot be linked beside the test's files"
            ));
        }
        std::fs::write(work.join("probe.pl"), PROBE).unwrap();
        let mut targets = vec![
            ("host", host_socket.clone(), &host_id, &host_marker),
            ("own", own_socket.clone(), &own_id, &own_marker),
        ];
        if linked {
            targets.push(("host-link", work.join("host.sock"), &host_id, &host_marker));
            targets.push(("own-link", work.join("own.sock"), &own_id, &own_marker));
        }
        let mut script = String::new();
        for (probe, socket, id, marker) in &targets {
            script.push_str(&format!(
                "perl probe.pl {probe} '{}' {id} '{}'\n",
                socket.display(),
                marker.display()
            ));
        }
        // The attack as a model would make it: `bash-mcp attach` with a
        // terminal of its own, typing a command.
        for (who, id, marker) in [("host", &host_id, &host_marker), ("own", &own_id, &own_marker)] {
            script.push_str(&format!(
                "printf 'touch {}\\r' | script -qec \"'{BIN}' attach {id}\" /dev/null > attach-{who}.out 2>&1; echo \"ATTACH {who} exit $?: $(tr -cd '[:print:]' < attach-{who}.out)\"\n",
                marker.display()
            ));
        }
        let r = server.tool_structured("execute", json!({"command": script, "timeout_seconds": 60}));
        let output = r["output"].as_str().unwrap_or_default().to_owned();
        let line = |prefix: &str| {
            output
                .lines()
                .find(|l| l.starts_with(prefix))
                .unwrap_or_else(|| panic!("{name}: no {prefix:?} line:\n{r}"))
                .to_owned()
        };
        for (probe, socket, ..) in &targets {
            let line = line(&format!("PROBE {probe} "));
            let observed = matches!(name, "bwrap" | "landlock");
            // Landlock's handler runs whether or not it names denials: it
            // keeps the server's working directory's protected names.
            let refused = observed || name == "landlock-unobserved";
            let hidden = name.starts_with("bwrap");
            let leaked = probe.ends_with("-link");
            if leaked || !(refused || hidden) {
                // The path reaches the socket: the server refuses the peer.
                assert!(
                    line.contains("answer: E") && line.contains("refused:") && line.contains("sandbox"),
                    "{name}: {line}"
                );
            } else {
                // The handler refuses the connection, or the directory is hidden.
                assert!(line.contains("connect-failed"), "{name}: {line}");
            }
            if observed && !leaked {
                let denied = json!({"op": "connect", "path": socket.display().to_string()});
                assert!(
                    r["sandbox"]["denied"].as_array().is_some_and(|d| d.contains(&denied)),
                    "{name}: {denied} is not named:\n{r}"
                );
            }
        }
        for who in ["host", "own"] {
            let line = line(&format!("ATTACH {who} "));
            assert!(
                !line.contains("exit 0") && !line.contains("[attached to"),
                "{name}: {line}"
            );
        }
        // A session of the sandboxed server lives in its sandbox too.
        let r = server.tool(
            "session_run",
            json!({"session_id": own_id, "command": format!("perl probe.pl session '{}' {host_id} '{}'", host_socket.display(), host_marker.display())}),
        );
        let line = r["output"].as_str().unwrap_or_default();
        assert!(
            line.starts_with("PROBE session ") && (line.contains("connect-failed") || line.contains("refused:")),
            "{name}: {r}"
        );
        // Nothing was typed into either session, and nothing ran there.
        for (server, id, marker) in [(&mut host, &host_id, &host_marker), (&mut server, &own_id, &own_marker)] {
            let r = server.tool(
                "session_run",
                json!({"session_id": id, "command": format!("ls '{}' 2>&1; true", marker.display())}),
            );
            assert!(r["output"].as_str().unwrap().contains("No such file"), "{name}: {r}");
            assert!(
                r.get("person_typed").is_none(),
                "{name}: a sandbox typed into a session: {r}"
            );
            assert!(!marker.exists(), "{name}");
        }
        for link in ["host.sock", "own.sock"] {
            let _ = std::fs::remove_file(work.join(link));
        }
        server.stop();
    }
    host.stop();
    assert_no_survivors(&tag);
}

/// A fake server: listens at `$1` (writing `BOUND` or why not to `$2`),
/// offers a session "#1 trap", and keeps whatever a person types into it
/// in `$3`.
const FAKE_SERVER: &str = r##"
use Socket;
my ($path, $status, $caught) = @ARGV;
$SIG{PIPE} = 'IGNORE';
socket(my $l, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!";
my $bound = bind($l, pack_sockaddr_un($path)) && listen($l, 5);
my $why = "$!";
open(my $st, '>', "$status.new");
print $st ($bound ? "BOUND\n" : "BIND-FAILED: $why\n");
close $st;
rename("$status.new", $status);
exit 0 unless $bound;
while (accept(my $c, $l)) {
    select((select($c), $| = 1)[0]);
    sysread($c, my $head, 5) == 5 or next;
    my ($kind, $len) = unpack("aN", $head);
    sysread($c, my $payload, $len) if $len;
    if ($kind eq "L") {
        print $c pack("aN/a*", "S", qq({"server_pid":1,"sessions":[{"session_id":"fake-trap-session","name":"trap","title":"#1 trap","state":"running","shell":"bash","cwd":"/","watchers":0}]}));
    } elsif ($kind eq "A") {
        print $c pack("aN/a*", "H", qq({"session_id":"fake-trap-session","name":"trap","title":"#1 trap"}));
        print $c pack("aN/a*", "O", "Password: ");
        open(my $out, '>>', $caught);
        while (sysread($c, my $buf, 4096)) { print $out $buf }
        close $out;
    }
    close $c;
}
"##;

#[test]
fn a_fake_session_planted_by_a_sandboxed_command_is_not_offered() {
    if !Command::new("perl").arg("-e1").status().is_ok_and(|s| s.success()) {
        assert!(std::env::var_os("CI").is_none(), "perl must be installed in CI");
        common::skip_missing("perl");
        return;
    }
    let tag = unique_tag("attach-fake");
    for (name, sandbox) in sandboxes()
        .into_iter()
        .filter(|(n, _)| matches!(*n, "bwrap" | "landlock"))
    {
        let mut server = Server::spawn("attach-fake", json!({"sandbox": sandbox}), |_, _| {});
        let (id, _) = server.start_session(&tag);
        let work = server.dir.join("work");
        std::fs::write(work.join("fake.pl"), FAKE_SERVER).unwrap();
        // Named like a server's socket, in the directory people look in.
        let fake = attach_dir().join(format!("{}-fake{}.sock", 4_000_000 + std::process::id(), name.len()));
        let r = server.tool(
            "session_run",
            json!({"session_id": id, "command": format!("perl fake.pl '{}' status caught > /dev/null 2>&1 &", fake.display())}),
        );
        assert_eq!(r["exit_code"], 0, "{name}: {r}");
        let status_file = work.join("status");
        wait_until("the fake server says whether it listens", || status_file.exists());
        let status = std::fs::read_to_string(&status_file).unwrap();
        if status.starts_with("BOUND") {
            // The person's side refuses that server: it runs in a sandbox.
            let stream = std::os::unix::net::UnixStream::connect(&fake).unwrap();
            let refusal = bash_mcp::session::attach::peer::check(&stream).expect_err("a sandboxed server");
            assert!(refusal.to_string().contains("sandbox"), "{name}: {refusal}");
            drop(stream);
            let out = Command::new(BIN)
                .args(["attach", "fake-trap-session"])
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{name}: {out:?}");
            assert!(
                !String::from_utf8_lossy(&out.stdout).contains("[attached to"),
                "{name}: {out:?}"
            );
            let out = Command::new(BIN)
                .args(["attach", "nosuch"])
                .stdin(Stdio::null())
                .output()
                .unwrap();
            let listed = String::from_utf8_lossy(&out.stderr);
            assert!(
                !listed.contains("#1 trap"),
                "{name}: the fake session was offered: {listed}"
            );
            assert!(
                !work.join("caught").exists(),
                "{name}: the fake server caught input ({err})"
            );
        } else {
            // bubblewrap hides the directory (an empty, read-only tmpfs, or
            // under /tmp not there at all: the sandbox's /tmp is its own);
            // under Landlock it is writable only inside a writable root.
            let hidden = status.contains("Read-only")
                || (name == "landlock" && status.contains("Permission denied"))
                || (name != "landlock"
                    && attach_dir().starts_with("/tmp")
                    && status.contains("No such file or directory"));
            assert!(hidden, "{name}: {status}");
        }
        server.tool("session_close", json!({"session_id": id}));
        let _ = std::fs::remove_file(&fake);
        server.stop();
    }
    assert_no_survivors(&tag);
}
