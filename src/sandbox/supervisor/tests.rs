//! A guarded directory's writable subdirectory that the host removes
//! between the plan and the sandbox (`rm -rf build` in a build running
//! beside the server): the sandbox starts without it, and its name stays
//! the read-only directory's. On the real bubblewrap, with the `bash-mcp`
//! helper built beside the test binary.

use std::ffi::{CStr, CString};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;
use crate::process::spawn::Streams;
use crate::sandbox::guard::{Keeping, Layout};
use crate::sandbox::notify;
use crate::sandbox::plan::Plan;
use crate::sandbox::temp::Temp;

/// What a command writes in the sandbox: into the subdirectory still there,
/// then the removed name made again beside it.
const SCRIPT: &str = "echo x > kept/written && echo wrote; mkdir gone 2>/dev/null && echo remade";

/// `bwrap` and the `bash-mcp` helper, or `None` (said on stderr) when
/// either is missing: the helper is built by `cargo build --features cli`.
fn tools() -> Option<(PathBuf, PathBuf)> {
    let Some(bwrap) = crate::sandbox::helper::on_path("bwrap") else {
        eprintln!("skipped: bwrap is not installed (apt-get install bubblewrap)");
        return None;
    };
    let exe = std::env::current_exe().ok()?;
    // target/<profile>/deps/<test binary> beside target/<profile>/bash-mcp.
    let helper = exe.parent()?.parent()?.join(crate::sandbox::helper::HELPER_NAME);
    if !helper.is_file() {
        eprintln!(
            "skipped: {} is not built (cargo build --all-features)",
            helper.display()
        );
        return None;
    }
    Some((bwrap, helper))
}

/// A working dir with two subdirectories, `kept` and `gone`, and the temp
/// dir its commands get at `/tmp`, both removed when dropped.
struct Project(PathBuf);

impl Project {
    fn new(name: &str) -> Project {
        let dir = std::env::temp_dir()
            .join(format!("bm-vanished-{name}-{}", std::process::id()))
            .join("project");
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["kept", "gone", "../tmp"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        Project(dir.canonicalize().unwrap())
    }

    /// The server's plan for this working dir (a writable root, guarded
    /// for its absent `.bash-mcp.toml`, with the temp dir at `/tmp`), and
    /// its layout, listing both subdirectories writable.
    fn plan(&self) -> (Plan, Layout) {
        let plan = Plan {
            cwd: self.0.clone(),
            writable: vec![self.0.clone()],
            protected: Vec::new(),
            workdir: Some(self.0.clone()),
            absent: vec![self.0.join(".bash-mcp.toml")],
            read_deny: Vec::new(),
            network: false,
            temp: Temp::AtTmp(self.0.with_file_name("tmp")),
        };
        let layout = Layout::new(&plan, Keeping::MountPoints);
        assert_eq!(
            bwrap::bound_paths(&plan, &layout).if_present,
            [self.0.join("gone"), self.0.join("kept")]
        );
        (plan, layout)
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.0.parent().expect("a parent"));
    }
}

/// The observer of a supervised command, with a policy that judges nothing.
fn observer(plan: &Plan, layout: &Layout) -> Observer {
    Observer {
        observation: Arc::new(Observation::new()),
        policy: notify::Policy {
            judge: notify::Judge::new(plan, layout),
            network_off: true,
            own_loopback: true,
            proxy: None,
            guard: None,
        },
    }
}

/// Runs `sh -c SCRIPT` in `dir` through `supervisor`: its exit status and
/// output.
fn run_supervised(supervisor: &Supervisor, observer: &Observer, dir: &Path) -> (Option<i32>, String) {
    let argv = [c"sh".to_owned(), c"-c".to_owned(), CString::new(SCRIPT).unwrap()];
    let envp: [&CStr; 1] = [c"PATH=/usr/bin:/bin"];
    let cwd = CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
    let spec = SpawnSpec {
        program: c"/bin/sh",
        argv: &argv,
        envp: &envp,
        cwd: &cwd,
        stdin_pipe: false,
        streams: Streams::Merged,
        via: None,
        pass_fds: &[],
        new_session: true,
    };
    let child = supervisor
        .launch_observed(&spec, observer)
        .unwrap_or_else(|e| panic!("the command did not start: {e}"));
    let status = child.group.reap_status();
    // The command has ended: its output is all in the pipe.
    let mut output = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n @ 1..) = rustix::io::read(child.stdout.as_fd(), &mut buf) {
        output.extend_from_slice(&buf[..n]);
    }
    (status, String::from_utf8_lossy(&output).into_owned())
}

/// The options of a supervisor without the observing filter: nothing does
/// a command's writes in the guarded directory for it.
const OPTIONS: Options = Options {
    observe: false,
    max_processes: crate::sandbox::limits::DEFAULT_MAX_PROCESSES,
    by_name: false,
    stand_ins: false,
};

/// Whether the host pid `pid` is gone (reaped, not a zombie).
fn is_gone(pid: libc::pid_t) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

/// What a command's run left: it wrote in `kept`, could not make `gone`.
fn assert_written_not_remade(project: &Project, (status, output): (Option<i32>, String)) {
    assert_eq!(status, Some(1), "{output}");
    assert_eq!(output, "wrote\n", "`gone` was made again in the read-only working dir");
    assert_eq!(std::fs::read_to_string(project.0.join("kept/written")).unwrap(), "x\n");
    assert!(!project.0.join("gone").exists());
}

#[test]
fn a_command_bwrap_starts_without_a_writable_subdirectory_removed_since_the_plan() {
    let Some((bwrap_path, _)) = tools() else { return };
    let project = Project::new("own");
    let (plan, layout) = project.plan();
    std::fs::remove_dir(project.0.join("gone")).unwrap();
    let options = BwrapOptions {
        die_with_parent: true,
        disable_userns: false,
        supervisor: false,
        seccomp_fd: None,
        stand_ins_from: None,
    };
    let command = [c"/bin/sh".to_owned(), c"-c".to_owned(), CString::new(SCRIPT).unwrap()];
    let argv = bwrap::argv(&bwrap_path, &plan, &layout, options, &command);
    let out = std::process::Command::new(&bwrap_path)
        .args(argv[1..].iter().map(|a| std::ffi::OsStr::from_bytes(a.as_bytes())))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let output = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_written_not_remade(&project, (out.status.code(), output));
}

#[test]
fn a_supervisor_starts_without_a_writable_subdirectory_removed_since_the_plan() {
    let Some((bwrap_path, helper)) = tools() else { return };
    let project = Project::new("start");
    let (plan, layout) = project.plan();
    std::fs::remove_dir(project.0.join("gone")).unwrap();
    let supervisors = Supervisors::new();
    let supervisor = supervisors
        .get(&bwrap_path, &helper, &plan, &layout, OPTIONS)
        .unwrap_or_else(|e| panic!("{e}"));
    let result = run_supervised(&supervisor, &observer(&plan, &layout), &project.0);
    assert_written_not_remade(&project, result);
    assert!(
        supervisor.spare.is_full(),
        "the next command's fds, made once this one started"
    );
    let pids = supervisors.pids();
    drop((supervisor, supervisors));
    assert!(pids.iter().all(|pid| is_gone(*pid)), "{pids:?}");
}

#[test]
fn a_supervisor_serves_on_when_the_host_removes_a_writable_subdirectory_but_not_when_it_remakes_it() {
    let Some((bwrap_path, helper)) = tools() else { return };
    let project = Project::new("serve");
    let (plan, layout) = project.plan();
    let supervisors = Supervisors::new();
    let supervisor = supervisors
        .get(&bwrap_path, &helper, &plan, &layout, OPTIONS)
        .unwrap_or_else(|e| panic!("{e}"));
    let first = supervisors.pids();
    std::fs::remove_dir(project.0.join("gone")).unwrap();
    let observer = observer(&plan, &layout);
    let result = run_supervised(&supervisor, &observer, &project.0);
    assert_written_not_remade(&project, result);
    assert_eq!(supervisors.pids(), first, "a removed subdirectory needs no new sandbox");
    // Made again on the host, it is a directory no mount holds: stale.
    std::fs::create_dir(project.0.join("gone")).unwrap();
    let (status, output) = run_supervised(&supervisor, &observer, &project.0);
    assert_eq!(status, Some(1), "`gone` exists, so mkdir fails: {output}");
    assert_ne!(supervisors.pids(), first, "the stale supervisor was replaced");
    let pids: Vec<_> = first.into_iter().chain(supervisors.pids()).collect();
    drop((supervisor, supervisors));
    assert!(pids.iter().all(|pid| is_gone(*pid)), "{pids:?}");
}
