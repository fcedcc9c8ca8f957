//! The image built for real, from the Containerfile, and its entry point run
//! as the image says:
//!
//! - a Debian base made without a registry (`scripts/debian-base.sh`, cached
//!   in `target/image/`) is imported into buildah storage of the test's own;
//! - `buildah build` builds the Containerfile on it, with the binary this
//!   test run built standing in for the build stage (`--build-context build=`),
//!   tagged with the image reference `deploy/sandbox-template.yaml` names;
//! - the image's configuration holds the Containerfile's entry point, user,
//!   working directory and port;
//! - `buildah run` runs that entry point in a network namespace of its own,
//!   with the user, working directory and environment the image sets and the
//!   token file mounted where the pod mounts it: `/healthz` answers without
//!   the token, `/mcp` refuses a request without it, and with it an
//!   `execute` runs as the image's user, finds bubblewrap, and is confined by
//!   the configured sandbox, which `status` reports in force;
//! - the server ends on SIGTERM with status 0, and nothing is left: no
//!   process, no buildah container or image, nothing in buildah's temp dir.
//!
//! It needs root (buildah's rootless mode needs subordinate id ranges, and the
//! network namespace is made with `unshare`), buildah, iproute2, Debian's
//! archive, and mmdebstrap while the base is not cached. Without them it
//! prints a SKIP line saying what is missing; with `BASH_MCP_REQUIRE_IMAGE=1`
//! (set by `.ci/run`) it fails instead.

mod common;
#[path = "common/http.rs"]
mod http;
mod k8s;

use std::fs::File;
use std::net::ToSocketAddrs;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{HANG_GUARD, TAG_VAR, TempDir, assert_no_lasting_zombies, assert_no_survivors, survivors, unique_tag};
use http::HttpServe;
use k8s::containerfile::Containerfile;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_bash-mcp");
const REQUIRE: &str = "BASH_MCP_REQUIRE_IMAGE";
/// The local name the imported base gets (`localhost/` keeps it from ever
/// being looked up in a registry).
const BASE_NAME: &str = "localhost/debian-base";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `target/image/`: the base's root filesystem, kept between runs.
fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap().join("image")
}

/// Skips with `why`, or fails where the image is required.
fn skip_or_fail(why: &str) {
    assert!(std::env::var(REQUIRE).as_deref() != Ok("1"), "{REQUIRE}=1 but {why}");
    common::skip(why);
}

fn has_program(name: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()))
}

/// The Debian release of this machine, the one the binary built here links
/// against, or why there is none.
fn debian_release() -> Result<String, String> {
    let text = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .map(|v| v.trim_matches('"').to_owned())
    };
    match (field("ID").as_deref(), field("VERSION_CODENAME")) {
        (Some("debian"), Some(release)) if !release.is_empty() => Ok(release),
        _ => Err(
            "this machine is not Debian: the binary built here goes into a Debian base and must \
             link against the same C library; run on Debian, as CI does"
                .to_owned(),
        ),
    }
}

/// What this machine lacks for building and running the image, if anything.
fn missing(rootfs_cached: bool) -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some(
            "building and running the image needs root here (buildah's rootless mode needs \
             /etc/subuid ranges, and the server's network namespace is made with unshare): run \
             as root, as CI does"
                .to_owned(),
        );
    }
    let mut programs = vec![("buildah", "buildah"), ("unshare", "util-linux"), ("ip", "iproute2")];
    if !rootfs_cached {
        programs.push(("mmdebstrap", "mmdebstrap"));
    }
    for (program, package) in programs {
        if !has_program(program) {
            return Some(format!(
                "{program} is not installed: `apt-get install {package}` installs it (.ci/run \
                 installs every tool the suite uses)"
            ));
        }
    }
    if ("deb.debian.org", 80).to_socket_addrs().is_err() {
        return Some(
            "deb.debian.org does not resolve: the image installs its packages from Debian's \
             archive"
                .to_owned(),
        );
    }
    let netns = Command::new("unshare")
        .args(["--net", "--", "ip", "link", "set", "lo", "up"])
        .output()
        .unwrap();
    if !netns.status.success() {
        return Some(format!(
            "no network namespace can be made here (`unshare --net`): {}",
            String::from_utf8_lossy(&netns.stderr).trim()
        ));
    }
    None
}

/// buildah with storage of the test's own (vfs, in a scratch directory) and
/// its temp files there too, so the test neither sees nor touches the
/// machine's images; its processes carry the test's tag.
struct Buildah {
    dir: PathBuf,
    tag: String,
}

impl Buildah {
    fn new(dir: &Path, tag: &str) -> Buildah {
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        Buildah {
            dir: dir.to_owned(),
            tag: tag.to_owned(),
        }
    }

    fn temp_dir(&self) -> PathBuf {
        self.dir.join("tmp")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("buildah");
        command
            .arg("--root")
            .arg(self.dir.join("storage"))
            .arg("--runroot")
            .arg(self.dir.join("run"))
            .args(["--storage-driver", "vfs"])
            .args(args)
            .env("TMPDIR", self.temp_dir())
            .env(TAG_VAR, &self.tag);
        command
    }

    /// Runs `buildah ARGS` to success; its standard output.
    fn run(&self, args: &[&str]) -> String {
        let output = self.command(args).output().unwrap();
        assert_success(&format!("buildah {}", args.join(" ")), &output);
        String::from_utf8(output.stdout).unwrap()
    }
}

fn assert_success(what: &str, output: &Output) {
    assert!(
        output.status.success(),
        "{what}: {}\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Where the base's root filesystem is kept: named by the release and by the
/// script that makes it, so that a changed script makes a fresh one.
fn rootfs_path(release: &str) -> PathBuf {
    // FNV-1a: a hash that stays the same from one Rust release to the next.
    let script = std::fs::read(root().join("scripts/debian-base.sh")).unwrap();
    let hash = script.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    cache_dir().join(format!("debian-{release}-slim-{hash:016x}.tar"))
}

/// The base's root filesystem, made by `scripts/debian-base.sh` on the first
/// run and kept in `target/image/` for the next (those made by an older
/// script are removed).
fn base_rootfs(release: &str, temp: &Path, tag: &str) -> PathBuf {
    let rootfs = rootfs_path(release);
    if !rootfs.exists() {
        std::fs::create_dir_all(cache_dir()).unwrap();
        let prefix = format!("debian-{release}-slim-");
        for old in std::fs::read_dir(cache_dir()).unwrap().flatten() {
            let name = old.file_name().to_string_lossy().into_owned();
            if name.starts_with(&prefix) && name.ends_with(".tar") {
                let _ = std::fs::remove_file(old.path());
            }
        }
        let output = Command::new(root().join("scripts/debian-base.sh"))
            .arg(&rootfs)
            .arg(release)
            .env("TMPDIR", temp)
            .env(TAG_VAR, tag)
            .output()
            .unwrap();
        assert_success("scripts/debian-base.sh", &output);
    }
    rootfs
}

/// The image reference the SandboxTemplate runs.
fn template_image() -> String {
    let text = std::fs::read_to_string(root().join("deploy/sandbox-template.yaml")).unwrap();
    let docs = k8s::load_yaml(&text).unwrap();
    let template = docs
        .iter()
        .find(|d| d["kind"] == "SandboxTemplate")
        .expect("deploy/sandbox-template.yaml holds a SandboxTemplate");
    template["spec"]["podTemplate"]["spec"]["containers"][0]["image"]
        .as_str()
        .expect("the template's container names an image")
        .to_owned()
}

/// Runs `work` on a thread inside the network namespace of process `pid`,
/// where the server listens.
fn in_network_of<T: Send>(pid: u32, work: impl FnOnce() -> T + Send) -> T {
    let ns = File::open(format!("/proc/{pid}/ns/net")).expect("the server's network namespace");
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                // SAFETY: setns takes a descriptor held open by `ns` for the
                // call; CLONE_NEWNET moves only the calling thread, a scoped
                // thread that ends with `work`.
                let rc = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
                assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
                work()
            })
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// The server process: the tagged `bash-mcp` whose parent is not one
/// (buildah's own processes in between carry the tag too).
fn server_pid(tag: &str) -> i32 {
    let comm = |pid: i32| std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    let parent = |pid: i32| -> i32 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        rest.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0)
    };
    let servers: Vec<i32> = survivors(tag)
        .into_iter()
        .filter(|&pid| comm(pid).trim() == "bash-mcp" && comm(parent(pid)).trim() != "bash-mcp")
        .collect();
    assert_eq!(
        servers.len(),
        1,
        "one bash-mcp server among the tagged processes: {servers:?}"
    );
    servers[0]
}

/// Entries of the machine's temp dirs named as buildah and mmdebstrap name
/// theirs. Other programs use these dirs at the same time, so only those
/// names are compared: the test points both at a temp dir of its own, and
/// what either puts in the machine's instead is a leak.
fn tool_temp_files() -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in ["/tmp", "/var/tmp", "/dev/shm"] {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("buildah") || name.starts_with("mmdebstrap") {
                found.push(entry.path());
            }
        }
    }
    found
}

#[test]
fn the_image_builds_and_serves_a_sandboxed_workspace() {
    let release = match debian_release() {
        Ok(release) => release,
        Err(why) => return skip_or_fail(&why),
    };
    let cached = rootfs_path(&release).exists();
    if let Some(why) = missing(cached) {
        return skip_or_fail(&why);
    }
    let file = Containerfile::parse(&std::fs::read_to_string(root().join("Containerfile")).unwrap());
    let temp_before = tool_temp_files();
    let tag = unique_tag("image");
    let scratch = TempDir::outside_tmp("image");
    let buildah = Buildah::new(&scratch.join("buildah"), &tag);

    // The base, imported as an image without a registry.
    let rootfs = base_rootfs(&release, &buildah.temp_dir(), &tag);
    let base = format!("{BASE_NAME}:{release}-slim");
    let container = buildah.run(&["from", "scratch"]).trim().to_owned();
    buildah.run(&["add", &container, rootfs.to_str().unwrap(), "/"]);
    buildah.run(&["commit", "--rm", "--quiet", &container, &base]);

    // The binary this run built, where the build stage leaves its own.
    let binary = scratch.join("binary");
    std::fs::create_dir_all(binary.join("usr/local/bin")).unwrap();
    std::fs::copy(BIN, binary.join("usr/local/bin/bash-mcp")).unwrap();

    // The image, under the name the template runs.
    let image = template_image();
    buildah.run(&[
        "build",
        "--isolation",
        "chroot",
        "--build-arg",
        &format!("DEBIAN_RELEASE={release}"),
        "--build-arg",
        &format!("BASE={base}"),
        "--build-context",
        &format!("build={}", binary.display()),
        "--tag",
        &image,
        "--file",
        root().join("Containerfile").to_str().unwrap(),
        root().to_str().unwrap(),
    ]);

    // Its configuration is the Containerfile's.
    let inspected: Value = serde_json::from_str(&buildah.run(&["inspect", "--type", "image", &image])).unwrap();
    let config = &inspected["OCIv1"]["config"];
    let entrypoint = file.entrypoint();
    assert_eq!(config["Entrypoint"], json!(entrypoint), "the image's entry point");
    let user = &file.last("USER").expect("USER").args;
    assert_eq!(config["User"], json!(user), "the image's user");
    let workdir = &file.last("WORKDIR").expect("WORKDIR").args;
    assert_eq!(config["WorkingDir"], json!(workdir), "the image's working directory");
    let port = entrypoint
        .iter()
        .skip_while(|a| *a != "--http")
        .nth(1)
        .and_then(|addr| addr.rsplit_once(':'))
        .map(|(_, port)| port.to_owned())
        .expect("the entry point's --http ADDR");
    assert!(
        config["ExposedPorts"].get(format!("{port}/tcp")).is_some(),
        "the image exposes the entry point's port {port}: {config:#}"
    );
    let (uid, gid) = user.split_once(':').unwrap_or((user, user));
    // What a container of the image runs: its entry point, then its Cmd.
    let mut command = entrypoint.clone();
    for arg in config["Cmd"].as_array().into_iter().flatten() {
        command.push(arg.as_str().expect("Cmd holds strings").to_owned());
    }

    // The token file, mounted read-only where the entry point reads it and
    // readable by the image's user, as the pod's Secret volume is.
    let token_path = entrypoint
        .iter()
        .skip_while(|a| *a != "--auth-token-file")
        .nth(1)
        .expect("the entry point's --auth-token-file")
        .clone();
    let token = format!("image-test-token-{}", unique_tag("secret"));
    let token_file = scratch.join("token");
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    std::os::unix::fs::chown(&token_file, Some(uid.parse().unwrap()), Some(gid.parse().unwrap())).unwrap();

    // The entry point, run as the image says, in a network namespace of its own.
    let working = buildah.run(&["from", "--pull=never", &image]).trim().to_owned();
    let mut run = Command::new("unshare");
    run.args(["--net", "--", "sh", "-c", "ip link set lo up && exec \"$@\"", "sh"]);
    let buildah_run = buildah.command(&[
        "run",
        "--isolation",
        "chroot",
        "--env",
        &format!("{TAG_VAR}={tag}"),
        "--volume",
        &format!("{}:{token_path}:ro", token_file.display()),
        &working,
        "--",
    ]);
    run.arg(buildah_run.get_program())
        .args(buildah_run.get_args())
        .args(&command)
        .envs(buildah_run.get_envs().filter_map(|(k, v)| Some((k, v?))));
    let mut server = HttpServe::spawn(run, scratch.join("server.log"));
    server.addr = format!("127.0.0.1:{port}");
    let log = server.log();
    assert!(
        log.contains(&format!("serving MCP on http://0.0.0.0:{port}/mcp")),
        "{log}"
    );

    let landlock = bash_mcp::sandbox::SandboxConfig::default()
        .apply(&json!({"backend": "landlock", "helper_path": BIN}), &scratch)
        .unwrap();
    let sandbox_here = common::sandbox_works(&landlock, "landlock");
    in_network_of(server.child_id(), || {
        let health = server.request("GET", "/healthz", &[], b"");
        assert_eq!(health.status, 200, "/healthz without a token: {health:?}");

        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "image-test", "version": "0"}}});
        let refused = server.post(&initialize, &[]);
        assert_eq!(refused.status, 401, "/mcp without the token: {refused:?}");
        let bearer = format!("Bearer {token}");
        let answer = server.post(&initialize, &[("Authorization", &bearer)]);
        assert_eq!(answer.status, 200, "{answer:?}\n{}", server.log());
        let session = answer.header("mcp-session-id").expect("a session").to_owned();
        let headers = [
            ("Authorization", bearer.as_str()),
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ];
        let initialized = server.post(
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            &headers,
        );
        assert_eq!(initialized.status, 202, "{initialized:?}");
        let call = |id: u64, name: &str, arguments: Value| -> Value {
            let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, "arguments": arguments}});
            let answer = server.post(&request, &headers);
            assert_eq!(answer.status, 200, "{answer:?}");
            let result = answer.json();
            result["result"]["structuredContent"].clone()
        };

        let who = call(2, "execute", json!({"command": "id -u; id -g; pwd; bwrap --version"}));
        if !sandbox_here {
            assert_eq!(who["error"]["code"], "sandbox_unavailable", "{who:#}");
            return;
        }
        assert_eq!(who["exit_code"], 0, "{who:#}");
        let output = who["output"].as_str().unwrap_or_default();
        let lines: Vec<&str> = output.lines().collect();
        assert_eq!(
            lines.first().copied(),
            Some(uid),
            "the command runs as the image's user: {who:#}"
        );
        assert_eq!(lines.get(1).copied(), Some(gid), "in the image's group: {who:#}");
        assert_eq!(
            lines.get(2).copied(),
            Some(workdir.as_str()),
            "in the image's working directory: {who:#}"
        );
        assert!(
            lines.get(3).is_some_and(|l| l.starts_with("bubblewrap ")),
            "the image has bubblewrap: {who:#}"
        );
        assert_eq!(who["sandbox"]["backend"], "landlock", "{who:#}");

        // The audit log's folder is the user's, but not the commands'.
        let planted = "/var/log/bash-mcp/planted";
        let refused = call(3, "execute", json!({"command": format!("echo x > {planted}")}));
        assert_ne!(
            refused["exit_code"], 0,
            "a command wrote next to the audit log: {refused:#}"
        );
        assert!(
            refused["sandbox"]["denied"]
                .as_array()
                .is_some_and(|d| d.contains(&json!({"op": "write", "path": planted}))),
            "the sandbox names the refused write: {refused:#}"
        );

        let status = call(4, "status", json!({}));
        let in_force = &status["sandbox"]["in_force"];
        assert_eq!(in_force["sandboxed"], true, "{in_force:#}");
        assert_eq!(in_force["backend"], "landlock", "{in_force:#}");
        assert_eq!(in_force["mode"], "workspace-write", "{in_force:#}");
        assert_eq!(status["working_dir"], json!(workdir), "{status:#}");
    });

    // SIGTERM to the server itself (buildah answers its own with SIGKILL),
    // which ends it, and `buildah run` with it, with status 0.
    let pid = server_pid(&tag);
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let status = server.wait();
    assert!(status.success(), "the entry point ended with {status} on SIGTERM");
    assert_no_survivors(&tag);
    assert_no_lasting_zombies();

    // Nothing of buildah's is left: no container, no image, no temp file.
    buildah.run(&["rm", &working]);
    buildah.run(&["rmi", "--all", "--force"]);
    assert_eq!(
        buildah.run(&["containers", "--quiet", "--all"]).trim(),
        "",
        "buildah containers left"
    );
    assert_eq!(
        buildah.run(&["images", "--quiet", "--all"]).trim(),
        "",
        "buildah images left"
    );
    let temp_left: Vec<_> = std::fs::read_dir(buildah.temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(temp_left.is_empty(), "buildah left temp files: {temp_left:?}");
    let leaked: Vec<PathBuf> = tool_temp_files()
        .into_iter()
        .filter(|p| !temp_before.contains(p))
        .collect();
    assert!(
        leaked.is_empty(),
        "buildah or mmdebstrap left files in the machine's temp dirs: {leaked:?}"
    );
    assert_no_survivors(&tag);
}

/// docs/deploy.md's steps for building without a registry are the ones the
/// test above takes: the same script, build arguments, build context layout,
/// isolation and image name.
#[test]
fn the_docs_show_the_build_this_test_runs() {
    let docs = std::fs::read_to_string(root().join("docs/deploy.md")).unwrap();
    let info = "```text needs root, buildah, mmdebstrap and Debian's archive; tests/image.rs runs these steps\n";
    let block = docs
        .split_once(info)
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(block, _)| block)
        .expect("docs/deploy.md shows the build without a registry");
    let image = template_image();
    for step in [
        "scripts/debian-base.sh ".to_owned(),
        "buildah from scratch".to_owned(),
        "buildah commit --rm ".to_owned(),
        format!("--build-arg BASE={BASE_NAME}:bookworm-slim"),
        "--build-context build=".to_owned(),
        "/usr/local/bin/".to_owned(),
        "--isolation chroot".to_owned(),
        format!("-t {image} -f Containerfile ."),
    ] {
        assert!(block.contains(&step), "the docs' build lacks `{step}`:\n{block}");
    }
}
