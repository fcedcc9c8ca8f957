//! The server's own files, written or read on a sandboxed command's behalf,
//! cannot be redirected by anything such a command plants where it may
//! write. Through the `bash-mcp` binary on every sandbox backend (bubblewrap
//! through the supervisor and per command, Landlock + seccomp), a command
//! puts a symbolic link, a fifo or a socket in place of a kept output, the
//! output store's spare file, a session's history files and the audit log,
//! all of which lie inside a writable root here; the server's next step must
//! neither write nor read through it, nor hang on it. The output store is
//! also checked through the C API.

mod cbuild;
mod common;
#[path = "common/serve.rs"]
mod serve;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use serve::Serve;

const HELPER: &str = env!("CARGO_BIN_EXE_bash-mcp");
/// `bwrap` runs commands through the long-lived supervisor (the default);
/// `bwrap-per-command` gives each command a bwrap of its own.
const BACKENDS: &[&str] = &["bwrap", "bwrap-per-command", "landlock"];
const SECRET_TEXT: &str = "the-hidden-secret-text";
const VICTIM_TEXT: &str = "the victim file, untouched\n";

fn backend_keys(backend: &str) -> Value {
    match backend {
        "bwrap-per-command" => json!({"backend": "bwrap", "supervisor": false}),
        other => json!({"backend": other}),
    }
}

fn available_backends() -> Vec<&'static str> {
    BACKENDS
        .iter()
        .copied()
        .filter(|backend| {
            let mut keys = json!({"mode": "workspace-write", "helper_path": HELPER});
            for (k, v) in backend_keys(backend).as_object().unwrap() {
                keys[k] = v.clone();
            }
            let config = bash_mcp::sandbox::SandboxConfig::default()
                .apply(&keys, Path::new("/"))
                .unwrap();
            sandbox_works(&config, backend)
        })
        .collect()
}

/// A project (the server's working dir and only writable root, holding its
/// temp dir and audit log) beside a directory commands cannot write, with a
/// secret file (hidden where the backend can hide files) and a victim file.
struct Layout {
    _base: TempDir,
    project: PathBuf,
    tmp: PathBuf,
    secret: PathBuf,
    victim: PathBuf,
    log: PathBuf,
    tag: String,
}

impl Layout {
    fn new(name: &str) -> Layout {
        let base = TempDir::new(name);
        let base_path = base.canonicalize().unwrap();
        let project = base_path.join("project");
        let tmp = project.join("tmp");
        let outside = base_path.join("outside");
        for dir in [&tmp, &outside, &project.join("home"), &project.join("logs")] {
            std::fs::create_dir_all(dir).unwrap();
        }
        let secret = outside.join("secret");
        let victim = outside.join("victim");
        std::fs::write(&secret, SECRET_TEXT).unwrap();
        std::fs::write(&victim, VICTIM_TEXT).unwrap();
        Layout {
            log: base_path.join("server.log"),
            _base: base,
            tag: unique_tag(name),
            project,
            tmp,
            secret,
            victim,
        }
    }

    /// The binary's configuration for `backend`, with `extra` keys.
    fn config(&self, backend: &str, extra: Value) -> PathBuf {
        let mut sandbox = json!({
            "mode": "workspace-write",
            "writable_roots": [self.project],
            "helper_path": HELPER,
        });
        for (k, v) in backend_keys(backend).as_object().unwrap() {
            sandbox[k] = v.clone();
        }
        if backend != "landlock" {
            sandbox["read_deny"] = json!([self.secret]);
        }
        let mut config = json!({
            "sandbox": sandbox,
            "sessions": {"enabled": true},
            "audit": {"path": self.project.join("logs/audit.jsonl")},
            "env": {"set": {TAG_VAR: self.tag}},
        });
        for (k, v) in extra.as_object().unwrap() {
            config[k] = v.clone();
        }
        let path = self.project.parent().unwrap().join("config.json");
        std::fs::write(&path, config.to_string()).unwrap();
        path
    }

    fn serve(&self, backend: &str, extra: Value) -> Serve {
        let config = self.config(backend, extra);
        Serve::start(
            &[HELPER],
            &config,
            &self.project,
            &[("TMPDIR", &self.tmp)],
            self.log.clone(),
        )
    }

    fn assert_victim_untouched(&self, what: &str) {
        assert_eq!(
            std::fs::read_to_string(&self.victim).unwrap(),
            VICTIM_TEXT,
            "{what}: the server wrote through a planted link"
        );
    }
}

fn output(result: &Value) -> String {
    result["output"].as_str().unwrap_or_default().to_owned()
}

/// A command that leaves a Unix socket at `path` (perl's, as no shell makes one).
fn socket_at(path: &str) -> String {
    format!("perl -MIO::Socket::UNIX -e 'IO::Socket::UNIX->new(Local => shift, Listen => 1) or die $!' {path}")
}

/// Whether perl is here to make sockets; a SKIP line says so when it is not.
fn perl() -> bool {
    let ok = cbuild::have("perl");
    if !ok {
        skip_missing("perl");
    }
    ok
}

/// Keeps the whole output of a command that prints `letter` lines (longer
/// than a result holds); returns its output id.
fn keep(serve: &mut Serve, letter: char) -> String {
    let r = serve.run(&format!("yes {letter} | head -c 100000"));
    r["output_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no output_id: {r}"))
        .to_owned()
}

/// Replaces the file `name` of the store in the server's temp dir `tmp`
/// (a writable root here; a command's own `TMPDIR` is elsewhere) with what
/// `make` (given its name, in the store's directory) puts there.
fn plant_in_store(serve: &mut Serve, tmp: &Path, name: &str, make: &str) {
    let command = format!(
        "cd '{}'/bash-mcp-output-*/ && rm -f {name} && {make} && echo planted",
        tmp.display()
    );
    let r = serve.run(&command.replace("{}", name));
    assert!(output(&r).contains("planted"), "{command}: {r}");
}

fn head_line(serve: &mut Serve, id: &str) -> Value {
    serve.call("output_read", json!({"output_id": id, "head_lines": 1}))
}

#[test]
fn kept_outputs_are_not_read_or_written_through_what_a_command_plants() {
    for backend in available_backends() {
        let layout = Layout::new("files-store");
        let mut serve = layout.serve(backend, json!({"output_store": {"max_outputs": 1}}));
        // A kept output's name now leads to a hidden file: not read.
        let a = keep(&mut serve, 'a');
        plant_in_store(
            &mut serve,
            &layout.tmp,
            &a,
            &format!("ln -s {} {{}}", layout.secret.display()),
        );
        let r = serve.call("output_read", json!({"output_id": a}));
        assert_eq!(r["error"], "output_not_found", "{backend}: {r}");
        assert!(!r.to_string().contains(SECRET_TEXT), "{backend}: {r}");
        // Keeping b evicts a, whose name (the link) is the spare: the next
        // output gets a file of its own and writes nothing through the link.
        let b = keep(&mut serve, 'b');
        let c = keep(&mut serve, 'c');
        layout.assert_victim_untouched(backend);
        assert_eq!(head_line(&mut serve, &c)["text"], "c\n", "{backend}");
        // The spare is b now: a link to the victim in its place.
        plant_in_store(
            &mut serve,
            &layout.tmp,
            &b,
            &format!("ln -s {} {{}}", layout.victim.display()),
        );
        let d = keep(&mut serve, 'd');
        layout.assert_victim_untouched(backend);
        assert_eq!(head_line(&mut serve, &d)["text"], "d\n", "{backend}");
        // The spare is c: a fifo in its place neither blocks nor is used.
        plant_in_store(&mut serve, &layout.tmp, &c, "mkfifo {}");
        let e = keep(&mut serve, 'e');
        assert_eq!(head_line(&mut serve, &e)["text"], "e\n", "{backend}");
        // The spare is d: a socket in its place is not used.
        if perl() {
            plant_in_store(&mut serve, &layout.tmp, &d, &socket_at("{}"));
            let f = keep(&mut serve, 'f');
            assert_eq!(head_line(&mut serve, &f)["text"], "f\n", "{backend}");
        }
        serve.stop();
        assert_no_survivors(&layout.tag);
    }
}

#[test]
fn a_sessions_history_is_not_written_through_what_its_shell_plants() {
    for backend in available_backends() {
        let layout = Layout::new("files-history");
        let mut serve = layout.serve(backend, json!({}));
        let home = layout.project.join("home");
        for shell in ["bash", "zsh", "fish"] {
            if bash_mcp::config::resolve_program(shell).is_none() {
                skip_missing(shell);
                continue;
            }
            let mut env = json!({"HOME": home, "XDG_DATA_HOME": layout.project.join("data")});
            env[TAG_VAR] = json!(layout.tag);
            let start = serve.call("session_start", json!({"shell": shell, "env": env}));
            let id = start["session_id"]
                .as_str()
                .unwrap_or_else(|| panic!("{start}"))
                .to_owned();
            let run = |serve: &mut Serve, command: &str, keep: bool, timeout: f64| {
                let mut args = json!({"session_id": id, "command": command, "timeout_seconds": timeout});
                if keep {
                    args["history"] = json!("keep");
                }
                serve.call("session_run", args)
            };
            // The file the shell reads the kept command from, and (fish) the
            // history file its environment names, both lead to the victim.
            let plant = match shell {
                "fish" => format!(
                    "rm -f $__bm_d/h; ln -s {v} $__bm_d/h; mkdir -p $XDG_DATA_HOME/fish; ln -sf {v} $XDG_DATA_HOME/fish/fish_history; echo planted",
                    v = layout.victim.display()
                ),
                _ => format!(
                    "rm -f \"$__bm_d/h\"; ln -s {} \"$__bm_d/h\"; echo planted",
                    layout.victim.display()
                ),
            };
            let r = run(&mut serve, &plant, false, 30.0);
            assert_eq!(r["output"], "planted\n", "{backend} {shell}: {r}");
            let r = run(&mut serve, "echo kept-command-text", true, 30.0);
            assert!(
                r["output"].as_str().unwrap_or_default().contains("kept-command-text"),
                "{backend} {shell}: {r}"
            );
            layout.assert_victim_untouched(&format!("{backend} {shell}"));
            // A fifo in its place: the server writes the history text into
            // the file it keeps open, so only the shell could wait on the
            // fifo, never the server's call.
            let r = run(
                &mut serve,
                "rm -f \"$__bm_d/h\"; mkfifo \"$__bm_d/h\"; echo planted",
                false,
                30.0,
            );
            assert_eq!(r["output"], "planted\n", "{backend} {shell}: {r}");
            let r = run(&mut serve, "echo after-fifo", true, 1.0);
            assert!(r.get("status").is_some(), "{backend} {shell}: {r}");
            let closed = serve.call("session_close", json!({"session_id": id}));
            assert_eq!(closed["closed"], true, "{backend} {shell}: {closed}");
            layout.assert_victim_untouched(&format!("{backend} {shell}"));
        }
        serve.stop();
        assert_no_survivors(&layout.tag);
    }
}

#[test]
fn the_audit_log_is_not_written_through_what_a_command_plants() {
    for backend in available_backends() {
        let layout = Layout::new("files-audit");
        let mut serve = layout.serve(
            backend,
            json!({"audit": {"path": layout.project.join("logs/audit.jsonl"), "max_bytes": 1024,
                             "backups": 2, "gzip_min_bytes": 1}}),
        );
        let live = "logs/audit.jsonl";
        let victim = layout.victim.display();
        // The live file, then backup 1 and its compressed form, as links.
        let r = serve.run(&format!(
            "rm -f {live} && ln -s {victim} {live} && ln -s {victim} {live}.1 && ln -s {victim} {live}.1.gz && echo planted"
        ));
        assert_eq!(output(&r), "planted\n", "{backend}: {r}");
        for i in 0..8 {
            let r = serve.run(&format!("echo call-{i}"));
            assert_eq!(r["exit_code"], 0, "{backend}: {r}");
        }
        layout.assert_victim_untouched(&format!("{backend}: links"));
        // A fifo, then a socket, in the live file's place: no call waits on them.
        let r = serve.run(&format!("rm -f {live} && mkfifo {live} && echo planted"));
        assert_eq!(output(&r), "planted\n", "{backend}: {r}");
        let r = serve.run("echo after-fifo");
        assert_eq!(output(&r), "after-fifo\n", "{backend}: {r}");
        if perl() {
            let r = serve.run(&format!("rm -f {live} && {} && echo planted", socket_at(live)));
            assert_eq!(output(&r), "planted\n", "{backend}: {r}");
            let r = serve.run("echo after-socket");
            assert_eq!(output(&r), "after-socket\n", "{backend}: {r}");
        }
        // With the live name free again the log goes on, rotating as before.
        let r = serve.run(&format!("rm -f {live} && echo freed"));
        assert_eq!(output(&r), "freed\n", "{backend}: {r}");
        for i in 0..8 {
            serve.run(&format!("echo again-{i}"));
        }
        // The last line may have filled the live file and rotated it.
        let reads: Vec<Value> = (0..2)
            .map(|i| serve.call("audit_read", json!({"backup_index": i, "max_entries": 200})))
            .collect();
        assert!(
            reads.iter().any(|read| read["entries"]
                .as_array()
                .is_some_and(|entries| entries.iter().any(|e| e["command"] == "echo again-7"))),
            "{backend}: the log goes on after the planted files are gone: {reads:?}"
        );
        layout.assert_victim_untouched(backend);
        serve.stop();
        assert_no_survivors(&layout.tag);
    }
}

#[test]
fn output_read_through_the_c_api_does_not_follow_a_planted_link() {
    if !cbuild::have("cc") {
        skip_missing("cc");
        return;
    }
    let scratch = cbuild::Scratch::new("server-files");
    let program = scratch.path("server_files");
    cbuild::compile(
        "cc -std=c11 -Wall -Wextra -Werror -I include tests/c/server_files.c -L {LIB} -Wl,-rpath,{RPATH} -lbash_mcp -o {OUT}",
        &program,
    );
    for backend in available_backends() {
        let layout = Layout::new("files-c");
        let mut sandbox = json!({"mode": "workspace-write", "writable_roots": [layout.project], "helper_path": HELPER});
        for (k, v) in backend_keys(backend).as_object().unwrap() {
            sandbox[k] = v.clone();
        }
        if backend != "landlock" {
            sandbox["read_deny"] = json!([layout.secret]);
        }
        let out = cbuild::run(
            Command::new(&program)
                .args([
                    layout.project.to_str().unwrap(),
                    &sandbox.to_string(),
                    layout.secret.to_str().unwrap(),
                    SECRET_TEXT,
                ])
                .env("TMPDIR", &layout.tmp)
                .env(TAG_VAR, &layout.tag),
            Duration::from_secs(120),
        );
        let stdout = cbuild::text(&out.stdout);
        assert!(
            out.status.success() && stdout.trim_end().ends_with(" passed, 0 failed"),
            "{backend}: {}\n{stdout}\n{}",
            out.status,
            cbuild::text(&out.stderr)
        );
        assert_no_survivors(&layout.tag);
    }
}
