//! Where a sandboxed command may write. It is the host's decision, never
//! the call's: a call's `working_dir` gains no write access (execute, jobs
//! and sessions, through the Rust API, the binary and the C API). Its temp
//! dir is its server's or its own, never the host's shared `/tmp`; its
//! `/dev/shm` and SysV IPC are its own and gone after the call. Every
//! backend that works here; every test checks /proc for survivors.

mod cbuild;
mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use bash_mcp::{BashServer, McpServer};
use common::sandboxes::Binary;
use common::*;
use serde_json::{Value, json};

const HELPER: &str = env!("CARGO_BIN_EXE_bash-mcp");
/// `bwrap` runs commands through the long-lived supervisor (the default);
/// `bwrap-per-command` gives each command a bwrap of its own.
const BACKENDS: &[&str] = &["bwrap", "bwrap-per-command", "landlock"];

/// The `sandbox` keys that select `backend` (one of [`BACKENDS`]).
fn backend_keys(backend: &str) -> Value {
    match backend {
        "bwrap-per-command" => json!({"backend": "bwrap", "supervisor": false}),
        other => json!({"backend": other}),
    }
}

/// A `workspace-write` sandbox on `backend` with the default roots, plus `extra`.
fn sandbox(backend: &str, extra: Value) -> Value {
    let mut sandbox = json!({"mode": "workspace-write", "helper_path": HELPER});
    for (k, v) in backend_keys(backend)
        .as_object()
        .unwrap()
        .iter()
        .chain(extra.as_object().unwrap())
    {
        sandbox[k] = v.clone();
    }
    sandbox
}

/// The backends that work here (a SKIP line names each that does not; in CI
/// a missing one fails the test).
fn available_backends() -> impl Iterator<Item = &'static str> {
    BACKENDS.iter().copied().filter(|backend| {
        let config = bash_mcp::sandbox::SandboxConfig::default()
            .apply(&sandbox(backend, json!({})), Path::new("/"))
            .unwrap();
        sandbox_works(&config, backend)
    })
}

/// A tagged server in `dir`, with sessions on, whose commands run in
/// `backend`'s sandbox with the default writable roots.
fn server_in(dir: &Path, backend: &str) -> TestServer {
    let server = tagged(BashServer::new(dir, None, Duration::from_secs(30)).unwrap());
    let config = json!({"sandbox": sandbox(backend, json!({})), "sessions": {"enabled": true}});
    server.configure(&config.to_string()).unwrap();
    server
}

fn output(result: &Value) -> &str {
    result["output"].as_str().unwrap_or_default()
}

/// Whether `result` names a refused write of `path`: by its absolute path,
/// or, where the name comes from the error text (bwrap per command), as
/// the command's error message wrote it (its file name).
fn names_write(result: &Value, path: &Path) -> bool {
    let mut wanted = vec![json!({"op": "write", "path": path.to_str().unwrap()})];
    if result["sandbox"]["denials_from"] == "error text (heuristic)" {
        wanted.push(json!({"op": "write", "path": path.file_name().unwrap().to_str().unwrap()}));
    }
    result["sandbox"]["denied"]
        .as_array()
        .is_some_and(|denied| wanted.iter().any(|w| denied.contains(w)))
}

/// `execute` in `dir`, tagged.
fn run_in(server: &TestServer, dir: &Path, command: &str, extra: Value) -> Value {
    let mut extra = extra;
    extra["working_dir"] = json!(dir);
    call_tagged(server, command, server.tag(), extra)
}

#[test]
fn a_calls_working_dir_gains_no_write_access() {
    for backend in available_backends() {
        let project = TempDir::new("roots-project");
        let elsewhere = TempDir::outside_tmp("roots-elsewhere");
        std::fs::create_dir(project.join("sub")).unwrap();
        let server = server_in(&project, backend);

        let result = run_in(&server, &elsewhere, "touch x; echo rc=$?", json!({}));
        assert!(output(&result).contains("rc=1"), "{backend}: {result}");
        assert!(
            !elsewhere.join("x").exists(),
            "{backend}: the call's working dir became writable"
        );
        assert!(names_write(&result, &elsewhere.join("x")), "{backend}: {result}");

        // The server's own working dir stays writable from anywhere inside it.
        let result = run_in(&server, &project.join("sub"), "touch y; echo rc=$?", json!({}));
        assert!(output(&result).contains("rc=0"), "{backend}: {result}");
        assert!(project.join("sub/y").exists(), "{backend}");
        let result = run_in(
            &server,
            &elsewhere,
            &format!("touch {}/z; echo rc=$?", project.display()),
            json!({}),
        );
        assert!(output(&result).contains("rc=0"), "{backend}: {result}");

        // Nor can the call name its own directory writable.
        let result = run_in(
            &server,
            &elsewhere,
            "touch w",
            json!({"sandbox": {"writable_roots": [&*elsewhere]}}),
        );
        assert_eq!(result["error"], "invalid_arguments", "{backend}: {result}");
        assert!(!elsewhere.join("w").exists(), "{backend}");
    }
}

#[test]
fn a_background_job_in_another_dir_gains_no_write_access() {
    for backend in available_backends() {
        let project = TempDir::new("roots-job-project");
        let elsewhere = TempDir::new("roots-job-elsewhere");
        let server = server_in(&project, backend);
        let started = run_in(&server, &elsewhere, "touch x; echo rc=$?", json!({"background": true}));
        let id = started["job_id"].as_str().unwrap_or_else(|| panic!("{started}"));
        let ended = call_tool(&*server, "job_status", json!({"job_id": id, "wait_seconds": 30}));
        assert_eq!(ended["status"], "finished", "{backend}: {ended}");
        assert!(output(&ended).contains("rc=1"), "{backend}: {ended}");
        assert!(
            !elsewhere.join("x").exists(),
            "{backend}: the job's working dir became writable"
        );
    }
}

#[test]
fn a_session_in_another_dir_gains_no_write_access() {
    for backend in available_backends() {
        let project = TempDir::new("roots-session-project");
        let elsewhere = TempDir::new("roots-session-elsewhere");
        let server = server_in(&project, backend);
        let started = call_tool(
            &*server,
            "session_start",
            json!({"shell": "bash", "working_dir": &*elsewhere, "env": {TAG_VAR: server.tag()}}),
        );
        let id = started["session_id"]
            .as_str()
            .unwrap_or_else(|| panic!("{backend}: {started}"));
        let result = call_tool(
            &*server,
            "session_run",
            json!({"session_id": id, "command": format!("touch x; echo rc=$?; touch {}/y", project.display()), "timeout_seconds": 20}),
        );
        assert!(output(&result).contains("rc=1"), "{backend}: {result}");
        assert!(
            !elsewhere.join("x").exists(),
            "{backend}: the session's working dir became writable"
        );
        assert!(project.join("y").exists(), "{backend}: {result}");
        let closed = call_tool(&*server, "session_close", json!({"session_id": id}));
        assert!(closed.get("error").is_none(), "{closed}");
    }
}

#[test]
fn the_binary_gives_a_calls_working_dir_no_write_access() {
    for backend in available_backends() {
        let project = TempDir::new("roots-bin-project");
        let elsewhere = TempDir::new("roots-bin-elsewhere");
        let etc = TempDir::new("roots-bin-etc");
        let tag = unique_tag("roots-bin");
        let config = etc.config(&json!({"sandbox": sandbox(backend, json!({})), "env": {"set": {TAG_VAR: &tag}}}));
        {
            let mut binary = Binary::serve(&config, &project);
            let result = binary.execute(1, json!({"command": "touch x; echo rc=$?", "working_dir": &*elsewhere}));
            assert!(output(&result).contains("rc=1"), "{backend}: {result}");
            assert!(names_write(&result, &elsewhere.join("x")), "{backend}: {result}");
            let result = binary.execute(2, json!({"command": "touch y; echo rc=$?"}));
            assert!(output(&result).contains("rc=0"), "{backend}: {result}");
        }
        assert!(
            !elsewhere.join("x").exists(),
            "{backend}: the call's working dir became writable"
        );
        assert!(project.join("y").exists(), "{backend}");
        assert_no_survivors(&tag);
    }
}

/// The C API: a server configured from C with the default roots gives a
/// call's `working_dir` no write access.
#[test]
fn the_c_api_gives_a_calls_working_dir_no_write_access() {
    if !cbuild::have("cc") {
        skip("cc is not installed (apt-get install gcc)");
        return;
    }
    let scratch = cbuild::Scratch::new("roots");
    let program = scratch.path("roots");
    cbuild::compile(
        "cc -std=c11 -Wall -Wextra -Werror -I include tests/c/sandbox_roots.c -L {LIB} -Wl,-rpath,{RPATH} -lbash_mcp -o {OUT}",
        &program,
    );
    for backend in available_backends() {
        let project = TempDir::new("roots-c-project");
        let elsewhere = TempDir::new("roots-c-elsewhere");
        let config = json!({"sandbox": sandbox(backend, json!({}))}).to_string();
        let args = json!({"command": "touch x; echo rc=$?", "working_dir": &*elsewhere}).to_string();
        let tag = unique_tag("roots-c");
        let out = cbuild::run(
            Command::new(&program)
                .args([project.to_str().unwrap(), &config, &args])
                .env(TAG_VAR, &tag),
            HANG_GUARD,
        );
        assert_no_survivors(&tag);
        assert!(out.status.success(), "{backend}: {}", cbuild::text(&out.stderr));
        let envelope: Value = serde_json::from_str(cbuild::text(&out.stdout).trim()).unwrap();
        let result: Value = serde_json::from_str(envelope["result"].as_str().unwrap()).unwrap();
        assert!(output(&result).contains("rc=1"), "{backend}: {result}");
        assert!(names_write(&result, &elsewhere.join("x")), "{backend}: {result}");
        assert!(
            !elsewhere.join("x").exists(),
            "{backend}: the call's working dir became writable"
        );
    }
}

/// The host directories the server made as its commands' temp dirs that
/// hold `name`.
fn host_temp_dirs_holding(name: &str) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("bash-mcp-tmp-"))
        .map(|e| e.path())
        .filter(|dir| dir.join(name).exists())
        .collect()
}

#[test]
fn the_temp_dir_is_the_servers_own_kept_between_calls_and_removed_with_it() {
    for backend in available_backends() {
        let project = TempDir::new("temp-project");
        let sibling = TempDir::new("temp-sibling");
        let marker = unique_tag("temp-marker");
        let server = server_in(&project, backend);
        let result = run_in(
            &server,
            &project,
            &format!(
                "echo one > \"$TMPDIR/{marker}\" && echo made; echo x > {}/f; echo rc=$?; echo \"tmpdir=$TMPDIR\"",
                sibling.display()
            ),
            json!({}),
        );
        let text = output(&result);
        assert!(
            text.contains("made\n") && text.contains("rc=") && !text.contains("rc=0"),
            "{backend}: {result}"
        );
        assert!(
            !sibling.join("f").exists(),
            "{backend}: a sibling in the host's /tmp was written"
        );
        if backend == "landlock" {
            assert!(names_write(&result, &sibling.join("f")), "{backend}: {result}");
        } else {
            assert!(text.contains("tmpdir=/tmp\n"), "{backend}: {result}");
        }
        assert!(
            !std::env::temp_dir().join(&marker).exists(),
            "{backend}: written to the host's /tmp"
        );
        let dirs = host_temp_dirs_holding(&marker);
        assert_eq!(dirs.len(), 1, "{backend}: {dirs:?}");

        let again = run_in(&server, &project, &format!("cat \"$TMPDIR/{marker}\""), json!({}));
        assert_eq!(output(&again), "one\n", "{backend}: {again}");
        drop(server);
        assert!(!dirs[0].exists(), "{backend}: the server's temp dir outlived it");
    }
}

/// A SysV shared memory key unique to this test run.
fn shm_key() -> u32 {
    0x5e00_0000 | ((std::process::id() & 0xffff) << 4) | (unique_tag("k").len() as u32 & 0xf)
}

/// Whether the host (this test's IPC namespace) has a SysV segment `key`.
fn host_has_segment(key: u32) -> bool {
    let table = std::fs::read_to_string("/proc/sysvipc/shm").unwrap();
    table
        .lines()
        .skip(1)
        .any(|line| line.split_whitespace().next() == Some(&key.to_string()))
}

#[test]
fn dev_shm_sysv_ipc_and_a_read_only_tmp_are_each_commands_own() {
    for backend in available_backends().filter(|b| *b != "landlock") {
        for mode in ["workspace-write", "read-only"] {
            let project = TempDir::new("shm-project");
            let server = tagged(BashServer::new(&*project, None, Duration::from_secs(30)).unwrap());
            let config = json!({"sandbox": sandbox(backend, json!({"mode": mode}))});
            server.configure(&config.to_string()).unwrap();
            let marker = unique_tag("shm-marker");
            let key = shm_key();
            // The supervisor's inits serve one command after another: each
            // command finds nothing an earlier one left, then leaves its
            // own, until one has run in the PID namespace of an earlier one.
            // (With one sandbox per command there is no such namespace.)
            let supervised = backend == "bwrap";
            let mut namespaces: Vec<String> = Vec::new();
            for call in 0..20 {
                let result = run_in(
                    &server,
                    &project,
                    &format!(
                        "ls -A /dev/shm; cat /tmp/{marker} 2>/dev/null || echo no tmp file; \
                         perl -MIPC::SysV=IPC_CREAT -e 'print defined(shmget({key}, 0, 0)) ? \"found\\n\" : \"none\\n\"; \
                         print defined(shmget({key}, 4096, IPC_CREAT|0600)) ? \"\" : \"no sysv: $!\\n\"'; \
                         echo x > /dev/shm/{marker} && echo shm; echo y > /tmp/{marker} && echo tmp; \
                         readlink /proc/self/ns/pid"
                    ),
                    json!({}),
                );
                let (seen, ns) = output(&result)
                    .rsplit_once("pid:")
                    .map(|(a, b)| (a.to_owned(), b.to_owned()))
                    .unwrap_or_default();
                let tmp = if mode == "read-only" || call == 0 {
                    "no tmp file\n"
                } else {
                    "y\n"
                };
                assert_eq!(
                    seen,
                    format!("{tmp}none\nshm\ntmp\n"),
                    "{backend} {mode}, call {call}: {result}"
                );
                let reused = namespaces.contains(&ns);
                namespaces.push(ns);
                if reused || !supervised {
                    break;
                }
            }
            let distinct: std::collections::HashSet<_> = namespaces.iter().collect();
            assert!(
                !supervised || distinct.len() < namespaces.len(),
                "{backend} {mode}: no command ran in an earlier one's PID namespace: {namespaces:?}"
            );
            drop(server);
            assert!(
                !Path::new("/dev/shm").join(&marker).exists(),
                "{backend} {mode}: leaked into /dev/shm"
            );
            assert!(
                !std::env::temp_dir().join(&marker).exists(),
                "{backend} {mode}: leaked into /tmp"
            );
            assert!(host_temp_dirs_holding(&marker).is_empty(), "{backend} {mode}");
            assert!(
                !host_has_segment(key),
                "{backend} {mode}: the SysV segment leaked to the host"
            );
        }
    }
}

/// The output of one call through the supervisor, before the PID namespace
/// it ran in (`script` ends with `readlink /proc/self/ns/pid`), and that
/// namespace.
fn output_and_namespace(server: &TestServer, project: &Path, script: &str) -> (String, String) {
    let result = run_in(server, project, script, json!({}));
    let (seen, ns) = output(&result)
        .rsplit_once("pid:")
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .unwrap_or_else(|| panic!("no PID namespace in {result}"));
    (seen, ns)
}

/// Runs `script` (which ends by printing its PID namespace) again and
/// again, checking each output but the namespace with `check`, until a
/// command runs in an earlier one's PID namespace: an init served it
/// after another. Fails if none does within 20 commands.
fn until_an_init_serves_again(server: &TestServer, project: &Path, script: &str, mut check: impl FnMut(usize, &str)) {
    let mut namespaces: Vec<String> = Vec::new();
    for call in 0..20 {
        let (seen, ns) = output_and_namespace(server, project, script);
        check(call, &seen);
        if namespaces.contains(&ns) {
            return;
        }
        namespaces.push(ns);
    }
    panic!("no command ran in an earlier one's PID namespace: {namespaces:?}");
}

/// A server in a new project whose commands run through the supervisor,
/// or `None` (with a SKIP line) where bubblewrap does not work.
fn supervised_server(name: &str) -> Option<(TempDir, TestServer)> {
    if !available_backends().any(|b| b == "bwrap") {
        skip("bubblewrap does not work here: no supervisor to test");
        return None;
    }
    let project = TempDir::new(name);
    let server = server_in(&project, "bwrap");
    Some((project, server))
}

/// Makes a background process that outlives its command in every way a
/// command can (its own session, a double fork, holding a file lock, bound
/// to an abstract unix socket), and prints `in place` once they are.
fn leave_behind(lock: &Path, socket: &str) -> String {
    let lock = lock.display();
    format!(
        "setsid sleep 1000 </dev/null >/dev/null 2>&1 & \
         ( sleep 1000 </dev/null >/dev/null 2>&1 & ); \
         setsid flock {lock} sleep 1000 </dev/null >/dev/null 2>&1 & \
         setsid perl -MSocket -e 'socket(my $s, AF_UNIX, SOCK_STREAM, 0) or die; \
           bind($s, pack_sockaddr_un(\"\\0{socket}\")) or die; listen($s, 1); sleep 1000' </dev/null >/dev/null 2>&1 & \
         until ! flock -n {lock} true && {bind_probe} | grep -q taken; do sleep 0.01; done; echo in place; ",
        bind_probe = bind_probe(socket)
    )
}

/// Prints `name free` when the abstract unix socket name `socket` can be
/// bound, `name taken` when it cannot.
fn bind_probe(socket: &str) -> String {
    format!(
        "perl -MSocket -e 'socket(my $s, AF_UNIX, SOCK_STREAM, 0) or die; \
         print bind($s, pack_sockaddr_un(\"\\0{socket}\")) ? \"name free\\n\" : \"name taken\\n\"'"
    )
}

#[test]
fn nothing_a_command_leaves_running_holding_or_bound_reaches_the_next_command_of_its_init() {
    let Some((project, server)) = supervised_server("leftover-project") else {
        return;
    };
    let lock = project.join("lock");
    let socket = unique_tag("abstract");
    // Each command looks (its namespace's processes, the fds a process of
    // it inherits, its umask and working dir, the lock, the socket's name), then leaves everything it can
    // behind, until one runs in the PID namespace of an earlier one.
    let script = format!(
        "cd /proc && echo procs [0-9]* && cd \"$OLDPWD\"; echo fds $(ls /proc/self/fd); umask; pwd; \
         flock -n {lock} true && echo lock free || echo lock held; {probe}; \
         umask 077; cd /; {leave}readlink /proc/self/ns/pid",
        lock = lock.display(),
        probe = bind_probe(&socket),
        leave = leave_behind(&lock, &socket),
    );
    let mut first = None;
    until_an_init_serves_again(&server, &project, &script, |call, seen| {
        // The fds and umask of the first command, in a new init.
        let first = first.get_or_insert_with(|| seen.to_owned());
        assert!(
            seen.starts_with("procs 1 2\n") && seen.ends_with("lock free\nname free\nin place\n"),
            "call {call}: {seen}"
        );
        assert_eq!(seen, first, "call {call}");
    });
}

#[test]
fn what_a_command_changes_on_its_init_never_reaches_a_later_command() {
    let Some((project, server)) = supervised_server("init-traits-project") else {
        return;
    };
    // What the shell inherited from its init, then every change a command
    // may try on its init as the same user. The kernel refuses the
    // scheduling ones (nice value, policy, affinity, I/O priority) to a
    // process with fewer capabilities than its target; it allows the limits
    // always, and the OOM score and core dump filter where /proc/1 belongs
    // to the command's user (as when the host runs as root).
    let script = "prlimit --pid $$; nice; chrt -p $$; taskset -p $$; ionice -p $$; \
         cat /proc/$$/oom_score_adj /proc/$$/coredump_filter; \
         prlimit --pid 1 --nofile=64:64 --core=0:0 && grep -E '^Max open files +64 +64 ' /proc/1/limits >/dev/null \
           && echo limit lowered; \
         { renice -n 7 -p 1; taskset -p 1 1; ionice -c 3 -p 1; chrt -i -p 0 1; \
           echo 700 > /proc/1/oom_score_adj; echo 0x7f > /proc/1/coredump_filter; } >/dev/null 2>&1; \
         readlink /proc/self/ns/pid";
    let mut first = None;
    for call in 0..10 {
        let (seen, _) = output_and_namespace(&server, &project, script);
        assert!(seen.ends_with("limit lowered\n"), "call {call}: {seen}");
        let first = first.get_or_insert_with(|| seen.clone());
        assert_eq!(&seen, first, "call {call}: the values differ from the first command's");
    }
}

#[test]
fn a_command_cannot_stop_kill_trace_or_remount_its_init() {
    let Some((project, server)) = supervised_server("init-attack-project") else {
        return;
    };
    if !common::sandboxes::have_python() {
        return;
    }
    // PTRACE_ATTACH is 16 on every architecture.
    let script = "for s in STOP TERM INT HUP QUIT USR1 KILL; do kill -$s 1; done; echo signals sent; \
         python3 -c 'import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); \
           print(\"ptrace\", libc.ptrace(16, 1, 0, 0), os.strerror(ctypes.get_errno()))'; \
         cat /proc/1/environ >/dev/null 2>&1 && echo environ read || echo environ refused; \
         echo links read: $(for f in /proc/1/fd/* /proc/1/cwd /proc/1/root; do readlink $f; done 2>/dev/null); \
         mount -t tmpfs tmpfs /dev/shm 2>/dev/null && echo mounted || echo mount refused; \
         unshare -U true 2>/dev/null && echo user namespace made || echo user namespace refused; \
         readlink /proc/self/ns/pid";
    // Until an init that every signal was sent to serves another command.
    until_an_init_serves_again(&server, &project, script, |call, seen| {
        assert_eq!(
            seen,
            "signals sent\nptrace -1 Operation not permitted\nenviron refused\nlinks read:\n\
             mount refused\nuser namespace refused\n",
            "call {call}"
        );
    });
}

#[test]
fn landlock_refuses_sysv_ipc_and_dev_shm_and_gives_read_only_commands_a_temp_dir_of_their_own() {
    if !available_backends().any(|b| b == "landlock") {
        return;
    }
    let project = TempDir::new("ll-shm-project");
    let server = tagged(BashServer::new(&*project, None, Duration::from_secs(30)).unwrap());
    let config = json!({"sandbox": sandbox("landlock", json!({"mode": "read-only"}))});
    server.configure(&config.to_string()).unwrap();
    let marker = unique_tag("ll-marker");
    let key = shm_key();
    let first = run_in(
        &server,
        &project,
        &format!(
            "echo x > /dev/shm/{marker} || echo no shm; echo y > \"$TMPDIR/{marker}\" && echo tmp; echo \"$TMPDIR\"; \
             perl -MIPC::SysV=IPC_CREAT -e 'print defined(shmget({key}, 4096, IPC_CREAT|0600)) ? \"sysv\\n\" : \"no sysv: $!\\n\"'"
        ),
        json!({}),
    );
    let text = output(&first);
    assert!(
        text.contains("no shm\ntmp\n") && text.contains("no sysv: Operation not permitted"),
        "{first}"
    );
    assert!(names_write(&first, &Path::new("/dev/shm").join(&marker)), "{first}");
    let own = text.lines().find(|l| l.contains("bash-mcp-tmp-")).unwrap();
    assert!(
        own.starts_with(std::env::temp_dir().to_str().unwrap()) && own.contains("bash-mcp-tmp-"),
        "{first}"
    );
    assert!(!Path::new(own).exists(), "the command's temp dir outlived it");
    let second = run_in(&server, &project, "ls \"$TMPDIR\"; echo \"$TMPDIR\"", json!({}));
    assert!(
        !output(&second).contains(&marker) && !output(&second).contains(own),
        "{second}"
    );
    assert!(!Path::new("/dev/shm").join(&marker).exists());
    assert!(!host_has_segment(key));
}

#[test]
fn the_guard_removes_the_temp_dir_of_a_host_that_was_killed() {
    for backend in available_backends() {
        let project = TempDir::new("temp-killed");
        let etc = TempDir::new("temp-killed-etc");
        let config = etc.config(&json!({"sandbox": sandbox(backend, json!({}))}));
        let marker = unique_tag("temp-killed-marker");
        let started = project.join("started");
        let tag = unique_tag("temp-killed");
        let mut host = Command::new(HELPER)
            .env(TAG_VAR, &tag)
            .args(["exec", "-c", &config, "-C"])
            .arg(&*project)
            .arg(format!(
                "echo x > \"$TMPDIR/{marker}\"; touch {}; sleep 100",
                started.display()
            ))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        wait_until("the command never started", || started.exists());
        let dirs = host_temp_dirs_holding(&marker);
        assert_eq!(dirs.len(), 1, "{backend}: {dirs:?}");
        assert!(
            wait_for_survivors(&tag, 1),
            "{backend}: the command carries the test's tag"
        );
        host.kill().unwrap();
        host.wait().unwrap();
        wait_until("the guard left the killed host's temp dir", || !dirs[0].exists());
        assert_no_survivors(&tag);
    }
}

/// A server in `project` whose commands may run only inside it, with
/// project files on, sandboxed on `backend`.
fn confined_server(project: &Path, backend: &str) -> TestServer {
    let server = tagged(BashServer::new(project, None, Duration::from_secs(30)).unwrap());
    let config = json!({"sandbox": sandbox(backend, json!({})), "allowed_roots": [project],
                        "project_config": true, "tools": {"status": true}});
    server.configure(&config.to_string()).unwrap();
    server
}

#[test]
fn a_project_file_planted_where_none_was_cannot_widen_where_later_calls_run() {
    for backend in available_backends() {
        let project = TempDir::new("plant-new-project");
        let outside = TempDir::outside_tmp("plant-new-outside");
        let server = confined_server(&project, backend);
        // The project's own is kept out, repository or not.
        let root_file = project.join(".bash-mcp.toml");
        let result = run_in(
            &server,
            &project,
            "printf 'allowed_roots = [\"/\"]\\n' > .bash-mcp.toml; echo rc=$?",
            json!({}),
        );
        assert!(output(&result).contains("rc=2"), "{backend}: {result}");
        assert!(names_write(&result, &root_file), "{backend}: {result}");
        assert!(!root_file.exists(), "{backend}: {result}");
        // One deeper down can be made, and is not trusted.
        let result = run_in(
            &server,
            &project,
            "mkdir sub && printf 'allowed_roots = [\"/\"]\\n' > sub/.bash-mcp.toml && echo planted",
            json!({}),
        );
        assert!(output(&result).contains("planted"), "{backend}: {result}");
        let inside = run_in(&server, &project.join("sub"), "pwd", json!({}));
        assert!(output(&inside).ends_with("/sub\n"), "{backend}: {inside}");
        let refused = run_in(&server, &outside, "pwd", json!({}));
        assert_eq!(refused["error"], "working_dir_not_allowed", "{backend}: {refused}");
        let status = call_tool(&*server, "status", json!({}));
        let planted = project.join("sub/.bash-mcp.toml");
        assert!(
            status.to_string().contains(&*planted.to_string_lossy()),
            "{backend}: {status}"
        );
    }
}

#[test]
fn a_planted_project_file_cannot_widen_where_later_calls_run() {
    for backend in available_backends() {
        let project = TempDir::new("plant-project");
        let outside = TempDir::outside_tmp("plant-outside");
        std::fs::write(project.join(".bash-mcp.toml"), "allowed_roots = []\n").unwrap();
        let server = confined_server(&project, backend);
        let file = project.join(".bash-mcp.toml");

        // The existing file is protected, on every backend.
        let result = run_in(
            &server,
            &project,
            "printf 'allowed_roots = [\"/\"]\\n' > .bash-mcp.toml; echo rc=$?",
            json!({}),
        );
        assert!(output(&result).contains("rc=2"), "{backend}: {result}");
        assert!(names_write(&result, &file), "{backend}: {result}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "allowed_roots = []\n");
        // A new one deeper down can be made, in either form.
        let result = run_in(
            &server,
            &project,
            "mkdir -p a b && printf 'allowed_roots = [\"/\"]\\n' > a/.bash-mcp.toml && \
             printf 'allowed_roots = [\"/\"]\\nmode = \"replace\"\\n' > b/.bash-mcp.toml && echo planted",
            json!({}),
        );
        assert!(output(&result).contains("planted"), "{backend}: {result}");

        // None of them lets a later call run outside the operator's roots:
        // not the one at the server's working dir (rewritten on Landlock)...
        let refused = run_in(&server, &outside, "pwd", json!({}));
        assert_eq!(refused["error"], "working_dir_not_allowed", "{backend}: {refused}");
        // ...nor the one nearest to where a call runs.
        let inside = run_in(&server, &project.join("a"), "pwd", json!({}));
        assert!(output(&inside).ends_with("/a\n"), "{backend}: {inside}");
        // The replacing one narrows to nothing it may not say: its own folder is locked out.
        let refused = run_in(&server, &project.join("b"), "pwd", json!({}));
        assert_eq!(refused["error"], "working_dir_not_allowed", "{backend}: {refused}");
        let status = call_tool(&*server, "status", json!({}));
        let warnings = status.to_string();
        for planted in ["a", "b"] {
            let planted = project.join(planted).join(".bash-mcp.toml");
            assert!(
                warnings.contains(&*planted.to_string_lossy()) && warnings.contains("can only narrow"),
                "{backend}: {status}"
            );
        }
    }
}

#[test]
fn the_binary_refuses_a_config_file_its_sandboxed_commands_could_rewrite() {
    let project = TempDir::new("config-inside");
    let config = project.config(&json!({"sandbox": {"mode": "workspace-write", "helper_path": HELPER}}));
    let out = Command::new(HELPER)
        .args(["exec", "-c", &config, "-C"])
        .arg(&*project)
        .arg("echo ran")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && !String::from_utf8_lossy(&out.stdout).contains("ran"),
        "{stderr}"
    );
    assert!(
        stderr.contains("lies inside the sandbox's writable root") && stderr.contains("config.json"),
        "{stderr}"
    );
}

/// The directories of a composed-roots test: the server's working
/// directory, a cache added beside it, and a directory left out.
struct ComposedRoots {
    project: TempDir,
    cache: TempDir,
    elsewhere: TempDir,
}

impl ComposedRoots {
    fn new(name: &str) -> Self {
        ComposedRoots {
            project: TempDir::new(&format!("{name}-project")),
            cache: TempDir::outside_tmp(&format!("{name}-cache")),
            elsewhere: TempDir::outside_tmp(&format!("{name}-elsewhere")),
        }
    }

    /// A command that writes one file in each directory.
    fn command(&self) -> String {
        format!(
            "for d in {} {} {}; do touch $d/f; done; true",
            self.project.display(),
            self.cache.display(),
            self.elsewhere.display()
        )
    }

    /// Asserts the project and the cache took their file and the directory
    /// left out did not, its refusal named.
    fn assert_composed(&self, backend: &str, result: &Value) {
        assert!(self.project.join("f").exists(), "{backend}: the project lost: {result}");
        assert!(self.cache.join("f").exists(), "{backend}: the cache: {result}");
        assert!(
            !self.elsewhere.join("f").exists(),
            "{backend}: a directory outside every root became writable"
        );
        assert!(names_write(result, &self.elsewhere.join("f")), "{backend}: {result}");
    }
}

/// `writable_roots` naming `@workdir` adds directories to the server's
/// working directory instead of replacing it: through the Rust API.
#[test]
fn added_roots_compose_with_the_working_dir_through_the_rust_api() {
    for backend in available_backends() {
        let dirs = ComposedRoots::new("compose-rust");
        let server = tagged(BashServer::new(&dirs.project, None, Duration::from_secs(30)).unwrap());
        let roots = json!({"writable_roots": ["@workdir", &*dirs.cache]});
        server
            .configure(&json!({"sandbox": sandbox(backend, roots)}).to_string())
            .unwrap();
        let result = call_tagged(&server, &dirs.command(), server.tag(), json!({}));
        dirs.assert_composed(backend, &result);
        // The tool's description names both.
        let tools: Value = serde_json::from_str(&server.list_tools()).unwrap();
        let description = tools[0]["description"].as_str().unwrap();
        assert!(
            description.contains(&format!("writable: the working directory, {}", dirs.cache.display())),
            "{backend}: {description}"
        );
        drop(server);
    }
}

/// The same from the binary's TOML file, `~/` entries expanded.
#[test]
fn added_roots_compose_with_the_working_dir_in_the_binarys_toml() {
    for backend in available_backends() {
        let dirs = ComposedRoots::new("compose-toml");
        let etc = TempDir::outside_tmp("compose-toml-etc");
        let tag = unique_tag("compose-toml");
        let mut toml = format!(
            "[sandbox]\nmode = \"workspace-write\"\nhelper_path = \"{HELPER}\"\nwritable_roots = [\"@workdir\", \"~/{}\"]\n",
            dirs.cache.file_name().unwrap().to_str().unwrap()
        );
        for (key, value) in backend_keys(backend).as_object().unwrap() {
            toml.push_str(&format!("{key} = {value}\n"));
        }
        toml.push_str(&format!("[env.set]\n{TAG_VAR} = \"{tag}\"\n"));
        let config = etc.join("config.toml");
        std::fs::write(&config, toml).unwrap();
        {
            // HOME is the cache's parent, so `~/<cache>` is the cache.
            let mut command = Binary::command(&config, &dirs.project);
            command.env("HOME", dirs.cache.parent().unwrap());
            let mut binary = Binary::start(command);
            let result = binary.execute(1, json!({"command": dirs.command()}));
            dirs.assert_composed(backend, &result);
        }
        assert_no_survivors(&tag);
    }
}

/// The same from C, configured with JSON.
#[test]
fn added_roots_compose_with_the_working_dir_through_the_c_api() {
    if !cbuild::have("cc") {
        skip("cc is not installed (apt-get install gcc)");
        return;
    }
    let scratch = cbuild::Scratch::new("compose");
    let program = scratch.path("compose");
    cbuild::compile(
        "cc -std=c11 -Wall -Wextra -Werror -I include tests/c/sandbox_roots.c -L {LIB} -Wl,-rpath,{RPATH} -lbash_mcp -o {OUT}",
        &program,
    );
    for backend in available_backends() {
        let dirs = ComposedRoots::new("compose-c");
        let roots = json!({"writable_roots": ["@workdir", &*dirs.cache]});
        let config = json!({"sandbox": sandbox(backend, roots)}).to_string();
        let args = json!({"command": dirs.command()}).to_string();
        let tag = unique_tag("compose-c");
        let out = cbuild::run(
            Command::new(&program)
                .args([dirs.project.to_str().unwrap(), &config, &args])
                .env(TAG_VAR, &tag),
            HANG_GUARD,
        );
        assert_no_survivors(&tag);
        assert!(out.status.success(), "{backend}: {}", cbuild::text(&out.stderr));
        let envelope: Value = serde_json::from_str(cbuild::text(&out.stdout).trim()).unwrap();
        let result: Value = serde_json::from_str(envelope["result"].as_str().unwrap()).unwrap();
        dirs.assert_composed(backend, &result);
    }
}

/// An entry that looks like a variable or a name the server does not know
/// is refused at configuration, naming the entry and the one that works,
/// instead of becoming a relative directory that does not exist.
#[test]
fn an_unknown_place_name_in_writable_roots_is_refused_naming_the_fix() {
    let project = TempDir::new("compose-unknown");
    let server = BashServer::new(&project, None, Duration::from_secs(30)).unwrap();
    for entry in ["$CWD", "@cwd", "$HOME/.cargo"] {
        let config = json!({"sandbox": {"mode": "workspace-write", "writable_roots": [entry]}});
        let e = server.configure(&config.to_string()).unwrap_err().to_string();
        assert!(e.contains(entry) && e.contains("\"@workdir\""), "{entry}: {e}");
    }
    let etc = TempDir::outside_tmp("compose-unknown-etc");
    let config = etc.join("config.toml");
    std::fs::write(
        &config,
        "[sandbox]\nmode = \"workspace-write\"\nwritable_roots = [\"$CWD\"]\n",
    )
    .unwrap();
    let out = Command::new(HELPER)
        .args(["exec", "-c", config.to_str().unwrap(), "-C"])
        .arg(&*project)
        .arg("true")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("\"$CWD\"") && stderr.contains("\"@workdir\""),
        "{stderr}"
    );
}

/// `bash-mcp exec --json` with the configuration `config`, in `dir`, with
/// `home` as HOME.
fn exec_with_home(config: &Path, dir: &Path, home: &Path, tag: &str, command: &str) -> Value {
    let out = Command::new(HELPER)
        .args(["exec", "--json", "-c"])
        .arg(config)
        .arg("-C")
        .arg(dir)
        .arg(command)
        .env("HOME", home)
        // Where a test runs under rustup, CARGO_HOME names the real one.
        .env_remove("CARGO_HOME")
        .env_remove("PIP_CACHE_DIR")
        .env_remove("npm_config_cache")
        .env_remove("XDG_CACHE_HOME")
        .env(TAG_VAR, tag)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no result ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// cargo's, pip's and npm's caches, read-only in the home directory, are
/// moved into the command's temp dir: the command writes them without a
/// refusal, and the home directory's own (whose config files the host's
/// tools trust) stays untouched. An operator who lists `~/.cargo` keeps it.
#[test]
fn toolchain_caches_move_into_the_temp_dir_unless_writable_where_they_are() {
    // Each tool's place: its variable, else its default in the home directory.
    let write_caches = concat!(
        "for d in \"${CARGO_HOME:-$HOME/.cargo}/registry\" \"${PIP_CACHE_DIR:-$HOME/.cache/pip}\" ",
        "\"${npm_config_cache:-$HOME/.npm}\" \"${XDG_CACHE_HOME:-$HOME/.cache}/go-build\"; ",
        "do mkdir -p \"$d\" && touch \"$d/f\" || exit 1; done"
    );
    for backend in available_backends() {
        let project = TempDir::outside_tmp("caches-project");
        let home = TempDir::outside_tmp("caches-home");
        let etc = TempDir::outside_tmp("caches-etc");
        let tag = unique_tag("caches");
        let config = etc.config(&json!({"sandbox": sandbox(backend, json!({}))}));
        let result = exec_with_home(Path::new(&config), &project, &home, &tag, write_caches);
        assert_eq!(result["exit_code"], 0, "{backend}: {result}");
        // No refusal of a cache write (`mkdir -p` may be told of its
        // `mkdir /tmp` under Landlock, a directory that exists).
        let denied = result["sandbox"]["denied"].as_array().cloned().unwrap_or_default();
        assert!(
            denied.iter().all(|d| d["path"] == "/tmp"),
            "{backend}: a cache write was refused: {result}"
        );
        assert!(
            std::fs::read_dir(&*home).unwrap().next().is_none(),
            "{backend}: the home directory was written"
        );

        std::fs::create_dir(home.join(".cargo")).unwrap();
        let roots = json!({"writable_roots": ["@workdir", "~/.cargo"]});
        let config = etc.config(&json!({"sandbox": sandbox(backend, roots)}));
        let result = exec_with_home(Path::new(&config), &project, &home, &tag, write_caches);
        assert_eq!(result["exit_code"], 0, "{backend}: {result}");
        assert!(
            home.join(".cargo/registry/f").exists(),
            "{backend}: a listed ~/.cargo was redirected: {result}"
        );
        assert_no_survivors(&tag);
    }
}
