//! The `bash-mcp` binary sandboxes its commands by default — `execute`,
//! background jobs and sessions in `workspace-write` with the network open
//! to the package registries only — says so at start-up and in `status`;
//! an explicit opt-out runs them unsandboxed; where no backend works it
//! still starts, says why and what to do, and every command fails with
//! `sandbox_unavailable`. The library (Rust and C) stays off by default.

mod common;
#[path = "common/serve.rs"]
mod serve;

use std::ffi::{CStr, CString};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use bash_mcp::sandbox::{Mode, SandboxConfig};
use common::{HANG_GUARD, TAG_VAR, TempDir, assert_no_survivors, sandbox_works, unique_tag};
use serde_json::{Value, json};
use serve::Serve;

const BIN: &str = env!("CARGO_BIN_EXE_bash-mcp");

/// The line that runs commands unsandboxed, as every message names it.
const OPT_OUT: &str = "sandbox.mode = \"off\"";

/// Whether the binary's default sandbox has a backend here (a SKIP line,
/// or a failure in CI, when it has none).
fn default_works() -> bool {
    let config = SandboxConfig {
        mode: Mode::WorkspaceWrite,
        ..SandboxConfig::default()
    };
    sandbox_works(&config, "auto")
}

/// A place for the test: the project (the working directory), a directory
/// outside it that commands can see but not write, and the configuration
/// file, beside both (a file inside the writable root is refused).
struct Place {
    project: TempDir,
    outside: TempDir,
    data: TempDir,
}

impl Place {
    fn new(name: &str) -> Place {
        Place {
            project: TempDir::new(&format!("{name}-project")),
            outside: TempDir::outside_tmp(&format!("{name}-outside")),
            data: TempDir::outside_tmp(&format!("{name}-data")),
        }
    }

    /// Writes the configuration file `name` with `text`, outside the project.
    fn config(&self, name: &str, text: &str) -> PathBuf {
        let path = self.data.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// `bash-mcp serve` (with `extra` arguments) in the project, its audit log
    /// in the data dir, its processes tagged with `tag`.
    fn serve_command(&self, config: &Path, tag: &str, extra: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command
            .arg("serve")
            .arg("--config")
            .arg(config)
            .arg("--working-dir")
            .arg(&*self.project)
            .args(extra)
            .env("XDG_DATA_HOME", &*self.data)
            .env(TAG_VAR, tag);
        command
    }

    fn log(&self) -> PathBuf {
        self.data.join("serve.log")
    }

    /// The server's stderr so far.
    fn stderr(&self) -> String {
        std::fs::read_to_string(self.log()).unwrap_or_default()
    }
}

/// The one `bash-mcp: sandbox: ...` line of a server's stderr.
fn sandbox_line(stderr: &str) -> Option<&str> {
    stderr.lines().find(|l| l.starts_with("bash-mcp: sandbox: "))
}

fn denied(result: &Value) -> Vec<Value> {
    result["sandbox"]["denied"].as_array().cloned().unwrap_or_default()
}

#[test]
fn the_binary_runs_commands_in_workspace_write_with_the_registries_only_and_says_so() {
    if !default_works() {
        return;
    }
    let place = Place::new("default-on");
    let config = place.config("empty.toml", "");
    let tag = unique_tag("default-on");
    let mut server = Serve::launch(place.serve_command(&config, &tag, &[]), place.log());
    let project = std::fs::canonicalize(&*place.project).unwrap();

    // The first status says which sandbox is in force, structured.
    let status = server.call("status", json!({}));
    let in_force = &status["sandbox"]["in_force"];
    assert_eq!(in_force["sandboxed"], true, "{status}");
    assert_eq!(in_force["mode"], "workspace-write");
    assert_eq!(in_force["writable_roots"], json!([project.display().to_string()]));
    assert_eq!(in_force["network"]["allow"], json!(["@package-registries"]));
    let backend = in_force["backend"].as_str().unwrap().to_owned();
    assert!(backend == "bwrap" || backend == "landlock", "{in_force}");
    let env = server.call("check_env", json!({}));
    assert_eq!(env["sandbox"]["in_force"], *in_force);

    // The start-up line says the same, at the default log level.
    let stderr = place.stderr();
    let line = sandbox_line(&stderr).unwrap_or_else(|| panic!("no start-up line naming the sandbox: {stderr}"));
    for part in [
        format!("workspace-write ({backend})"),
        format!("writable: {}", project.display()),
        "network: only @package-registries through the server's proxy".to_owned(),
    ] {
        assert!(line.contains(&part), "{part:?} missing from {line:?}");
    }

    // The documents show this line and this structure.
    let shown = |file: &str, info: &str, project_as: &str| {
        let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
        let block = text
            .split(&format!("```{info}\n"))
            .nth(1)
            .and_then(|b| b.split("```").next())
            .unwrap_or_else(|| panic!("{file}: no ```{info} block"));
        block
            .trim()
            .replace(project_as, &project.display().to_string())
            .replace("(bwrap)", &format!("({backend})"))
            .replace("\"bwrap\"", &format!("\"{backend}\""))
    };
    let line_block = "text the start-up line on a machine with bubblewrap; tests/sandbox_default.rs checks each part";
    assert_eq!(shown("README.md", line_block, "/path/to/project"), line);
    assert_eq!(shown("docs/sandbox.md", line_block, "/home/me/project"), line);
    let documented: Value = serde_json::from_str(&shown(
        "docs/sandbox.md",
        "text sandbox.in_force as status returns it; tests/sandbox_default.rs checks these keys",
        "/home/me/project",
    ))
    .unwrap();
    assert_eq!(&documented, in_force);

    // execute: the project is writable, the place beside it is not.
    let inside = project.join("inside.txt");
    let outside = place.outside.join("outside.txt");
    let result = server.run(&format!(
        "echo in > {}; echo out > {}; echo done",
        inside.display(),
        outside.display()
    ));
    assert!(result["output"].as_str().unwrap_or("").contains("done"), "{result}");
    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "in\n");
    assert!(!outside.exists(), "a write outside the project went through: {result}");
    assert!(
        denied(&result).contains(&json!({"op": "write", "path": outside.display().to_string()})),
        "{result}"
    );

    // A background job runs in the same sandbox.
    let job_file = place.outside.join("job.txt");
    let started = server.call(
        "execute",
        json!({"command": format!("echo job > {}", job_file.display()), "background": true}),
    );
    let job_id = started["job_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_owned();
    let job = server.call("job_status", json!({"job_id": job_id, "wait_seconds": 30}));
    assert_ne!(job["exit_code"], 0, "{job}");
    assert!(!job_file.exists(), "a background job wrote outside the project: {job}");

    server.stop();
    assert_no_survivors(&tag);
}

/// Without bubblewrap (none on PATH) the default takes Landlock + seccomp,
/// network by name included, where the kernel has Landlock ABI 6.
#[test]
fn without_bubblewrap_the_default_runs_on_landlock() {
    let landlock = SandboxConfig {
        mode: Mode::WorkspaceWrite,
        backend: bash_mcp::sandbox::BackendChoice::Landlock,
        // The probe runs in this test program, which is not next to the binary.
        helper_path: Some(PathBuf::from(BIN)),
        ..SandboxConfig::default()
    };
    if !sandbox_works(&landlock, "landlock") {
        return;
    }
    let abi = bash_mcp::sandbox::landlock::landlock_abi().unwrap_or(0);
    let place = Place::new("default-landlock");
    let config = place.config("empty.toml", "");
    // A PATH with the usual tools and no bwrap, as where bubblewrap is not installed.
    let tools = TempDir::outside_tmp("default-landlock-path");
    for tool in ["true", "sh", "curl"] {
        if let Some(found) = ["/usr/bin", "/bin"]
            .iter()
            .map(|d| Path::new(d).join(tool))
            .find(|p| p.exists())
        {
            std::os::unix::fs::symlink(found, tools.join(tool)).unwrap();
        }
    }
    let tag = unique_tag("default-landlock");
    let mut command = place.serve_command(&config, &tag, &[]);
    command.env("PATH", &*tools);
    let mut server = Serve::launch(command, place.log());
    let project = std::fs::canonicalize(&*place.project).unwrap();
    let in_force = server.call("status", json!({}))["sandbox"]["in_force"].clone();
    assert_eq!(in_force["backend"], "landlock", "{in_force}");
    assert_eq!(in_force["mode"], "workspace-write", "{in_force}");
    let stderr = place.stderr();
    let line = sandbox_line(&stderr).unwrap_or_else(|| panic!("no start-up line: {stderr}"));
    assert!(line.contains("workspace-write (landlock)"), "{line}");
    if abi >= bash_mcp::sandbox::landlock::BY_NAME_ABI {
        assert_eq!(
            in_force["network"]["allow"],
            json!(["@package-registries"]),
            "{in_force}"
        );
    } else {
        // Landlock cannot open it by name here: off, and the line says why.
        assert_eq!(in_force["network"], false, "{in_force}");
        assert!(line.contains("apt-get install bubblewrap"), "{line}");
    }
    let outside = place.outside.join("landlock.txt");
    let result = server.run(&format!(
        "echo in > {}; echo out > {}; echo done",
        project.join("inside.txt").display(),
        outside.display()
    ));
    assert!(result["output"].as_str().unwrap_or("").contains("done"), "{result}");
    assert!(project.join("inside.txt").exists(), "{result}");
    assert!(!outside.exists(), "a write outside the project went through: {result}");
    if abi >= bash_mcp::sandbox::landlock::BY_NAME_ABI && Path::new("/usr/bin/curl").exists() {
        let result = server.run(
            "/usr/bin/curl -sS -o /dev/null -w 'pypi %{http_code}\\n' https://pypi.org/simple/six/; \
             /usr/bin/curl -sS -o /dev/null https://example.com/ 2>&1; echo end",
        );
        let output = result["output"].as_str().unwrap_or_else(|| panic!("{result}"));
        assert!(output.contains("pypi 200") && output.contains("403"), "{result}");
    }
    server.stop();
    assert_no_survivors(&tag);
}

#[test]
fn the_default_network_reaches_the_registries_and_nothing_else() {
    if !default_works() {
        return;
    }
    if !common::sandboxes::have("curl") {
        return common::skip_missing("curl");
    }
    let place = Place::new("default-net");
    let config = place.config("empty.toml", "");
    let tag = unique_tag("default-net");
    let mut server = Serve::launch(place.serve_command(&config, &tag, &[]), place.log());
    let result = server.run(
        "curl -sS -o /dev/null -w 'pypi %{http_code}\\n' https://pypi.org/simple/six/; \
         curl -sS -o /dev/null https://example.com/ 2>&1; echo end",
    );
    let output = result["output"].as_str().unwrap_or_else(|| panic!("{result}"));
    assert!(output.contains("pypi 200"), "{result}");
    assert!(output.contains("403"), "{result}");
    assert!(
        denied(&result)
            .iter()
            .any(|d| d["op"] == "connect" && d["host"] == "example.com" && d["port"] == 443),
        "{result}"
    );
    server.stop();
    assert_no_survivors(&tag);
}

#[test]
fn sessions_live_in_the_default_sandbox() {
    if !default_works() {
        return;
    }
    if !common::sandboxes::have("bash") {
        return common::skip_missing("bash");
    }
    let place = Place::new("default-session");
    let config = place.config("sessions.toml", "[sessions]\nenabled = true\n");
    let tag = unique_tag("default-session");
    let mut server = Serve::launch(place.serve_command(&config, &tag, &[]), place.log());
    let session = server.call("session_start", json!({"env": {TAG_VAR: tag}}));
    let id = session["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{session}"))
        .to_owned();
    let outside = place.outside.join("session.txt");
    let run = server.call(
        "session_run",
        json!({"session_id": id, "command": format!("echo s > {} ; echo status=$?; echo p > in-session.txt", outside.display())}),
    );
    let output = run["output"].as_str().unwrap_or_else(|| panic!("{run}"));
    assert!(output.contains("status=1") || output.contains("status=2"), "{run}");
    assert!(!outside.exists(), "a session wrote outside the project: {run}");
    assert!(place.project.join("in-session.txt").exists(), "{run}");
    server.call("session_close", json!({"session_id": id}));
    server.stop();
    assert_no_survivors(&tag);
}

/// A configuration file in the protected `~/.config/bash-mcp` is accepted
/// with the home directory as the working directory, and no command can
/// change it.
#[test]
fn a_configuration_file_in_the_protected_config_folder_is_kept_from_commands() {
    if !default_works() {
        return;
    }
    let home = TempDir::new("default-home");
    let data = TempDir::outside_tmp("default-home-data");
    let folder = home.join(".config/bash-mcp");
    std::fs::create_dir_all(&folder).unwrap();
    let config = folder.join("config.toml");
    let text = "timeout_seconds = 60\n";
    std::fs::write(&config, text).unwrap();
    let tag = unique_tag("default-home");
    let mut command = Command::new(BIN);
    command
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .arg("--working-dir")
        .arg(&*home)
        .env("HOME", &*home)
        .env("XDG_DATA_HOME", &*data)
        .env(TAG_VAR, &tag);
    let mut server = Serve::launch(command, data.join("serve.log"));
    let result = server.run(&format!(
        "echo '{OPT_OUT}' >> {}; echo mine > {}; echo done",
        config.display(),
        home.join("mine.txt").display()
    ));
    assert!(result["output"].as_str().unwrap_or("").contains("done"), "{result}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), text, "{result}");
    assert!(
        home.join("mine.txt").exists(),
        "the home directory is the writable root: {result}"
    );
    server.stop();
    assert_no_survivors(&tag);
}

#[test]
fn quiet_hides_the_start_up_line() {
    let place = Place::new("default-quiet");
    let config = place.config("empty.toml", "");
    let tag = unique_tag("default-quiet");
    let server = Serve::launch(place.serve_command(&config, &tag, &["--quiet"]), place.log());
    server.stop();
    let stderr = place.stderr();
    assert_eq!(sandbox_line(&stderr), None, "{stderr}");
}

#[test]
fn the_opt_out_line_and_flag_run_commands_unsandboxed() {
    let place = Place::new("default-off");
    let off = place.config("off.toml", &format!("{OPT_OUT}\n"));
    let empty = place.config("empty.toml", "");
    let cases: [(&str, &Path, &[&str]); 2] = [("line", &off, &[]), ("flag", &empty, &["--no-sandbox"])];
    for (how, config, extra) in cases {
        let tag = unique_tag("default-off");
        let mut server = Serve::launch(place.serve_command(config, &tag, extra), place.log());
        let status = server.call("status", json!({}));
        assert_eq!(status["sandbox"]["in_force"]["sandboxed"], false, "{how}: {status}");
        assert_eq!(status["sandbox"]["in_force"]["mode"], "off", "{how}: {status}");
        let outside = place.outside.join(format!("{how}.txt"));
        let result = server.run(&format!("echo out > {}", outside.display()));
        assert_eq!(result["exit_code"], 0, "{how}: {result}");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "out\n", "{how}");
        server.stop();
        let stderr = place.stderr();
        let line = sandbox_line(&stderr).unwrap_or_else(|| panic!("{how}: no start-up line: {stderr}"));
        assert!(
            line.contains("off: commands run with the server's own rights"),
            "{how}: {line}"
        );
        assert_no_survivors(&tag);
    }
}

/// A seccomp filter under which every Landlock system call fails with
/// ENOSYS, as on a kernel without Landlock or in a container whose seccomp
/// profile predates it.
fn without_landlock() -> seccompiler::BpfProgram {
    let rules = [
        libc::SYS_landlock_create_ruleset,
        libc::SYS_landlock_add_rule,
        libc::SYS_landlock_restrict_self,
    ]
    .into_iter()
    .map(|nr| (nr, vec![]))
    .collect();
    let arch = std::env::consts::ARCH.try_into().unwrap();
    let filter = seccompiler::SeccompFilter::new(
        rules,
        seccompiler::SeccompAction::Allow,
        seccompiler::SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .unwrap();
    filter.try_into().unwrap()
}

/// `command` with no `bwrap` on its PATH and no Landlock: no backend works.
fn with_no_backend(command: &mut Command, empty_path: &Path) {
    let program = without_landlock();
    command.env("PATH", empty_path);
    // SAFETY: between fork and exec the closure only calls prctl and
    // seccomp (through seccompiler::apply_filter, which allocates nothing)
    // on a program built before the fork.
    unsafe {
        command.pre_exec(move || seccompiler::apply_filter(&program).map_err(std::io::Error::other));
    }
}

#[test]
fn with_no_backend_the_server_starts_says_why_and_every_command_fails_naming_the_fix() {
    let place = Place::new("default-none");
    let config = place.config("sessions.toml", "[sessions]\nenabled = true\n");
    let empty_path = TempDir::outside_tmp("default-none-path");
    let tag = unique_tag("default-none");
    let mut command = place.serve_command(&config, &tag, &[]);
    with_no_backend(&mut command, &empty_path);
    let mut server = Serve::launch(command, place.log());

    // It started, and its start-up line says why and what to do.
    let stderr = place.stderr();
    let line = sandbox_line(&stderr).unwrap_or_else(|| panic!("no start-up line: {stderr}"));
    for part in [
        "no backend works here",
        "bwrap (bubblewrap) is not on PATH",
        "apt-get install bubblewrap",
        "Landlock is not available",
        "sandbox_unavailable",
        OPT_OUT,
    ] {
        assert!(line.contains(part), "{part:?} missing from {line:?}");
    }

    // Every command fails, typed, naming the fix and the opt-out line.
    let outside = place.outside.join("none.txt");
    let write = format!("echo out > {}", outside.display());
    let result = server.run(&write);
    assert_eq!(result["error"], "sandbox_unavailable", "{result}");
    let message = result["message"].as_str().unwrap();
    assert!(
        message.contains("apt-get install bubblewrap") && message.contains(OPT_OUT),
        "{message}"
    );
    let job = server.call("execute", json!({"command": write, "background": true}));
    assert_eq!(job["error"], "sandbox_unavailable", "{job}");
    let session = server.call("session_start", json!({"shell": "/bin/sh", "env": {TAG_VAR: tag}}));
    assert_eq!(session["error"], "sandbox_unavailable", "{session}");
    assert!(!outside.exists(), "a command ran unsandboxed");

    // status says the same, structured.
    let status = server.call("status", json!({}));
    let in_force = &status["sandbox"]["in_force"];
    assert_eq!(in_force["sandboxed"], false, "{status}");
    assert_eq!(in_force["commands"], "fail with sandbox_unavailable");
    assert_eq!(in_force["unsandboxed_line"], OPT_OUT);
    assert!(
        in_force["fix"].as_str().unwrap().contains("apt-get install bubblewrap"),
        "{in_force}"
    );
    server.stop();

    // `exec` fails the same way, with its "could not run" status.
    let mut exec = Command::new(BIN);
    exec.args(["exec", "-C"])
        .arg(&*place.project)
        .arg(&write)
        .env("XDG_DATA_HOME", &*place.data)
        .stdin(Stdio::null());
    with_no_backend(&mut exec, &empty_path);
    let out = exec.output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{text}");
    assert!(
        text.contains("[sandbox_unavailable]") && text.contains("apt-get install bubblewrap") && text.contains(OPT_OUT),
        "{text}"
    );

    // The opt-out runs them, on the same machine.
    let mut opted = Command::new(BIN);
    opted
        .args(["exec", "--no-sandbox", "-C"])
        .arg(&*place.project)
        .arg(format!("/bin/echo out > {}", outside.display()))
        .env("XDG_DATA_HOME", &*place.data)
        .stdin(Stdio::null());
    with_no_backend(&mut opted, &empty_path);
    let out = opted.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "out\n");
    assert_no_survivors(&tag);
}

#[test]
fn the_library_default_stays_off_in_rust_and_c() {
    let dir = TempDir::new("default-library");
    let outside = TempDir::outside_tmp("default-library-outside");
    assert_eq!(bash_mcp::Config::with_timeout(HANG_GUARD).sandbox.mode, Mode::Off);

    // Rust: a server as a host makes it runs commands unsandboxed.
    let server = bash_mcp::BashServer::new(&dir, None, Duration::from_secs(30)).unwrap();
    let in_force = bash_mcp::sandbox::in_force(&server.config().sandbox, &server.working_dir());
    assert_eq!(in_force, bash_mcp::sandbox::InForce::Off);
    let file = outside.join("rust.txt");
    let output = server
        .run(&bash_mcp::ExecRequest::new(format!("echo rust > {}", file.display())))
        .unwrap();
    assert!(output.success(), "{output:?}");
    assert!(file.exists());

    // C: the same through the exported functions.
    use bash_mcp::ffi::server::{bash_mcp_server_execute, bash_mcp_server_free, bash_mcp_server_new};
    let c = |s: &str| CString::new(s).unwrap();
    let mut raw = std::ptr::null_mut();
    let dir_c = c(dir.to_str().unwrap());
    // SAFETY: `dir_c` is a C string for the call; NULL data dir is allowed; `raw` is writable.
    let rc = unsafe { bash_mcp_server_new(dir_c.as_ptr(), std::ptr::null(), 30, &mut raw) };
    assert_eq!(rc, bash_mcp::ffi::bash_mcp_result::Ok);
    let file = outside.join("c.txt");
    let (tool, args) = (
        c("execute"),
        c(&json!({"command": format!("echo c > {}", file.display())}).to_string()),
    );
    // SAFETY: `raw` is the live server made above; the strings live for the call.
    let envelope = unsafe { bash_mcp_server_execute(raw, tool.as_ptr(), args.as_ptr()) };
    // SAFETY: a NUL-terminated string the library returned.
    let text = unsafe { CStr::from_ptr(envelope) }.to_str().unwrap().to_owned();
    // SAFETY: the caller owns the string and frees it once.
    unsafe { bash_mcp::ffi::string::bash_mcp_string_free(envelope) };
    // SAFETY: the server made above, freed once.
    unsafe { bash_mcp_server_free(raw) };
    let envelope: Value = serde_json::from_str(&text).unwrap();
    let result: Value = serde_json::from_str(envelope["result"].as_str().unwrap()).unwrap();
    assert_eq!(result["exit_code"], 0, "{result}");
    assert!(file.exists(), "{result}");
}
