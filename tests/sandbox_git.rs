//! Files that make a later git run code: nothing a sandboxed command writes
//! may make a git command the person runs afterwards, outside any sandbox,
//! run a program of the command's choosing; and git's everyday work (add,
//! commit, branch, stash, worktree add) still works inside. Each attack
//! plants from inside a sandboxed command, then the real `git` runs outside
//! as the person would, and a marker file says whether the planted program
//! ran.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use bash_mcp::{BashServer, McpServer};
use common::*;
use serde_json::{Value, json};

const HELPER: &str = env!("CARGO_BIN_EXE_bash-mcp");

/// `bwrap` runs commands through the supervisor, `bwrap-per-command` gives
/// each a bwrap of its own, `bwrap-network-by-name` too, behind the
/// server's network proxy.
const BACKENDS: &[&str] = &["bwrap", "bwrap-per-command", "bwrap-network-by-name", "landlock"];

fn backend_keys(backend: &str) -> Value {
    match backend {
        "bwrap-per-command" => json!({"backend": "bwrap", "supervisor": false}),
        "bwrap-network-by-name" => json!({"backend": "bwrap", "network": {"allow": ["example.invalid"]}}),
        other => json!({"backend": other}),
    }
}

fn available(backend: &str) -> bool {
    let mut value = json!({"mode": "workspace-write", "helper_path": HELPER});
    for (k, v) in backend_keys(backend).as_object().unwrap() {
        value[k] = v.clone();
    }
    let config = bash_mcp::sandbox::SandboxConfig::default()
        .apply(&value, Path::new("/"))
        .unwrap();
    sandbox_works(&config, backend)
}

/// The backends that work here (a SKIP line names each that does not).
fn backends() -> impl Iterator<Item = &'static str> {
    let git = Command::new("git").arg("--version").output().is_ok();
    if !git {
        skip("git is not installed (apt-get install git)");
    }
    BACKENDS.iter().copied().filter(move |b| git && available(b))
}

/// A server whose commands run in `backend`'s sandbox with `root` writable.
fn sandboxed(root: &Path, backend: &str, extra: Value) -> TestServer {
    let server = tagged(BashServer::new(root, None, Duration::from_secs(30)).unwrap());
    let mut sandbox = json!({"mode": "workspace-write", "helper_path": HELPER, "writable_roots": [root]});
    for (k, v) in backend_keys(backend)
        .as_object()
        .unwrap()
        .iter()
        .chain(extra.as_object().unwrap())
    {
        sandbox[k] = v.clone();
    }
    server.configure(&json!({"sandbox": sandbox}).to_string()).unwrap();
    server
}

/// Runs `command` sandboxed in `cwd`.
fn inside(server: &TestServer, cwd: &Path, command: &str) -> Value {
    call_tagged(server, command, server.tag(), json!({"working_dir": cwd}))
}

/// The person's `git`, outside any sandbox, with no user or system
/// configuration of this machine's.
fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "p")
        .env("GIT_AUTHOR_EMAIL", "p@example.com")
        .env("GIT_COMMITTER_NAME", "p")
        .env("GIT_COMMITTER_EMAIL", "p@example.com")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .expect("git runs")
}

fn git_ok(dir: &Path, args: &[&str]) -> String {
    let out = git(dir, args);
    assert!(out.status.success(), "git {args:?} in {}: {out:?}", dir.display());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository with one commit in `dir`.
fn repository(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git_ok(dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("README"), "hello\n").unwrap();
    git_ok(dir, &["add", "README"]);
    git_ok(dir, &["commit", "-q", "-m", "first"]);
}

/// A shell script that creates `marker`: what a planted hook or program does.
fn payload(marker: &Path) -> String {
    format!("#!/bin/sh\ntouch {}\n", marker.display())
}

/// Where a planted program would leave its mark (outside every root).
struct Marker {
    dir: TempDir,
}

impl Marker {
    fn new() -> Marker {
        Marker {
            dir: TempDir::new("git-marker"),
        }
    }

    fn path(&self) -> PathBuf {
        self.dir.join("ran")
    }

    /// Fails the test, naming `what`, if a planted program ran.
    fn assert_untouched(&self, what: &str) {
        assert!(
            !self.path().exists(),
            "{what}: the person's git ran a program the sandboxed command planted"
        );
    }
}

/// Plants `script` as an executable file at `path` from inside (the shell
/// command), ignoring whether that worked: the person's git decides.
fn plant_script(path: &str, marker: &Marker) -> String {
    format!(
        "printf '%s' '{}' > {path}; chmod +x {path}",
        payload(&marker.path()).replace('\'', "'\\''")
    )
}

#[test]
fn a_submodule_git_dir_keeps_its_config_and_hooks_and_its_git_file() {
    for backend in backends() {
        let root = TempDir::new("git-sub");
        let source = TempDir::new("git-sub-source");
        repository(&source);
        let top = root.join("top");
        repository(&top);
        git_ok(
            &top,
            &[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "add",
                "-q",
                source.to_str().unwrap(),
                "sub",
            ],
        );
        git_ok(&top, &["commit", "-q", "-m", "add sub"]);
        let server = sandboxed(&root, backend, json!({}));
        let marker = Marker::new();
        let fsmonitor = format!("touch {}", marker.path().display());
        let attacks = [
            (
                "fsmonitor in the submodule's config",
                format!("printf '[core]\\n\\tfsmonitor = \"{fsmonitor}\"\\n' >> .git/modules/sub/config"),
            ),
            (
                "a hook in the submodule's git dir",
                plant_script(".git/modules/sub/hooks/pre-commit", &marker),
            ),
            (
                "the submodule's .git file pointed at a planted git dir",
                format!(
                    "cp -r .git/modules/sub evil && printf '[core]\\n\\tfsmonitor = \"{fsmonitor}\"\\n' >> evil/config && echo 'gitdir: ../evil' > sub/.git"
                ),
            ),
        ];
        for (what, attack) in &attacks {
            inside(&server, &top, attack);
            git(&top, &["status", "--short"]);
            git(&top.join("sub"), &["commit", "-q", "--allow-empty", "-m", "x"]);
            marker.assert_untouched(&format!("{backend}: {what}"));
        }
    }
}

#[test]
fn a_hooks_path_in_the_working_tree_stays_read_only() {
    for backend in backends() {
        let root = TempDir::new("git-hookspath");
        repository(&root);
        std::fs::create_dir(root.join(".githooks")).unwrap();
        git_ok(&root, &["config", "core.hooksPath", ".githooks"]);
        let server = sandboxed(&root, backend, json!({}));
        let marker = Marker::new();
        inside(&server, &root, &plant_script(".githooks/pre-commit", &marker));
        inside(
            &server,
            &root,
            "mv .githooks hooks2 && mkdir .githooks && cp -r hooks2/. .githooks/",
        );
        git(&root, &["commit", "-q", "--allow-empty", "-m", "x"]);
        marker.assert_untouched(&format!("{backend}: a hook in core.hooksPath"));
        assert!(root.join(".githooks").is_dir() && !root.join("hooks2").exists());
    }
}

#[test]
fn a_linked_worktree_cannot_be_pointed_at_a_planted_git_dir() {
    for backend in backends() {
        // The repository is one writable root, its worktree lies in another
        // (as one in the temp dir does with the default roots).
        let main = TempDir::new("git-worktree-main");
        repository(&main);
        let elsewhere = TempDir::new("git-worktree-elsewhere");
        let wt = elsewhere.join("wt");
        git_ok(&main, &["worktree", "add", "-q", wt.to_str().unwrap(), "-b", "wt"]);
        let server = sandboxed(&main, backend, json!({"writable_roots": [&*main, &*elsewhere]}));
        let marker = Marker::new();
        let fsmonitor = format!("touch {}", marker.path().display());
        let evil = elsewhere.join("evil");
        let planted_config = format!(
            "mkdir -p {evil} && cp -r {main}/.git/. {evil}/ && rm -f {evil}/commondir && printf '[core]\\n\\tfsmonitor = \"{fsmonitor}\"\\n' >> {evil}/config",
            evil = evil.display(),
            main = main.display()
        );
        let attacks = [
            (
                "the worktree's .git file",
                format!(
                    "{planted_config} && echo 'gitdir: {}' > {}/.git",
                    evil.display(),
                    wt.display()
                ),
            ),
            (
                "the worktree's commondir",
                format!(
                    "{planted_config} && echo '{}' > .git/worktrees/wt/commondir",
                    evil.display()
                ),
            ),
        ];
        for (what, attack) in &attacks {
            inside(&server, &main, attack);
            git(&wt, &["status", "--short"]);
            marker.assert_untouched(&format!("{backend}: {what}"));
        }
    }
}

#[test]
fn files_the_configuration_names_stay_read_only() {
    for backend in backends() {
        let root = TempDir::new("git-named");
        repository(&root);
        std::fs::write(root.join("local.gitconfig"), "[user]\n\tname = p\n").unwrap();
        std::fs::create_dir(root.join("tools")).unwrap();
        std::fs::write(root.join("tools/fsmonitor"), "#!/bin/sh\nexit 1\n").unwrap();
        git_ok(&root, &["config", "include.path", "../local.gitconfig"]);
        git_ok(&root, &["config", "alias.st", "!./tools/fsmonitor"]);
        let server = sandboxed(&root, backend, json!({}));
        let marker = Marker::new();
        let fsmonitor = format!("touch {}", marker.path().display());
        inside(
            &server,
            &root,
            &format!("printf '[core]\\n\\tfsmonitor = \"{fsmonitor}\"\\n' >> local.gitconfig"),
        );
        git(&root, &["status", "--short"]);
        marker.assert_untouched(&format!("{backend}: an included file"));
        inside(&server, &root, &plant_script("tools/fsmonitor", &marker));
        git(&root, &["st"]);
        marker.assert_untouched(&format!("{backend}: a program an alias runs"));
    }
}

#[test]
fn the_everyday_git_workflow_works_inside() {
    for backend in backends() {
        let root = TempDir::new("git-everyday");
        repository(&root);
        let server = sandboxed(&root, backend, json!({}));
        let who = "-c user.name=m -c user.email=m@example.com";
        let steps = [
            "echo more >> README && git add README".to_owned(),
            format!("git {who} commit -q -m second"),
            "git branch feature && git checkout -q feature".to_owned(),
            "echo wip >> README && git stash -q && git stash list | grep -q stash".to_owned(),
            "git stash pop -q && git add README".to_owned(),
            format!("git {who} commit -q -m third && git checkout -q main"),
            format!("git {who} merge -q --no-ff --no-edit feature"),
            "git worktree add -q .worktrees/w -b w && test -f .worktrees/w/README".to_owned(),
            format!("cd .worktrees/w && echo w > w.txt && git add w.txt && git {who} commit -q -m w"),
            "git tag v1 && git log --oneline | wc -l".to_owned(),
            format!(
                "git -c gc.auto=0 gc -q && git checkout -q -b r HEAD~1 && git {who} commit -q --allow-empty -m r && git {who} rebase -q main && git checkout -q main"
            ),
            // The root's own entries, as editors and build tools change them.
            "sed -i s/hello/hi/ README && mkdir -p docs build && echo x > docs/f && umask 077 && echo s > secret".to_owned(),
            "test \"$(stat -c %a secret)\" = 600 && mv docs/f build/f && ln build/f docs/g && test -f docs/g && rm -r docs build secret".to_owned(),
            "git checkout -q README && git status --short | wc -l".to_owned(),
        ];
        for step in &steps {
            let result = inside(&server, &root, step);
            assert_eq!(result["exit_code"], 0, "{backend}: `{step}` failed inside: {result}");
        }
        assert_eq!(git_ok(&root, &["rev-list", "--count", "main"]).trim(), "4");
        assert_eq!(git_ok(&root, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "main");
        assert!(git_ok(&root, &["log", "--oneline", "w"]).contains(" w\n"));
    }
}

/// The writable root is the server's working directory; a call that runs
/// in a repository below it (a checkout inside a workspace) works there as
/// in the root, and its git files stay kept.
#[test]
fn a_repository_in_a_subdirectory_of_the_root_works_and_stays_kept() {
    for backend in backends() {
        let root = TempDir::new("git-nested");
        let repo = root.join("checkout");
        repository(&repo);
        let server = sandboxed(&root, backend, json!({}));
        let who = "-c user.name=m -c user.email=m@example.com";
        for step in [
            "echo more >> README && echo new > new.txt && mkdir -p src && echo s > src/s".to_owned(),
            format!("git add -A && git {who} commit -q -m second && mv new.txt renamed.txt && rm -r src"),
        ] {
            let result = inside(&server, &repo, &step);
            assert_eq!(result["exit_code"], 0, "{backend}: `{step}` failed inside: {result}");
        }
        assert_eq!(git_ok(&repo, &["rev-list", "--count", "HEAD"]).trim(), "2");
        assert!(
            repo.join("renamed.txt").is_file() && !repo.join("src").exists(),
            "{backend}"
        );
        let config = std::fs::read_to_string(repo.join(".git/config")).unwrap();
        let result = inside(&server, &repo, "echo '[core]' >> .git/config; echo rc=$?");
        let output = result["output"].as_str().unwrap_or_default();
        assert!(
            output.contains("rc=") && !output.contains("rc=0"),
            "{backend}: {result}"
        );
        assert_eq!(
            std::fs::read_to_string(repo.join(".git/config")).unwrap(),
            config,
            "{backend}"
        );
    }
}

/// A repository made outside with `git init` and `args` (as the person
/// would), with one commit.
fn repository_with(dir: &Path, args: &[&str]) {
    std::fs::create_dir_all(dir).unwrap();
    let mut init = vec!["init", "-q", "-b", "main"];
    init.extend_from_slice(args);
    git_ok(dir, &init);
    git_ok(dir, &["commit", "-q", "--allow-empty", "-m", "first"]);
}

#[test]
fn git_files_that_do_not_exist_cannot_be_created() {
    for backend in backends() {
        let marker = Marker::new();
        let fsmonitor = format!(
            "printf '[core]\\n\\tfsmonitor = \"touch {}\"\\n'",
            marker.path().display()
        );
        // Each: how the person's repository was made, the attack, and the
        // git command the person runs next.
        let cases: [Case; 5] = [
            (
                "a commondir naming a planted common dir",
                &[],
                &[],
                format!(
                    "mkdir evil && cp -r .git/. evil/ && {fsmonitor} >> evil/config && echo ../evil > .git/commondir"
                ),
                &["status", "--short"],
            ),
            (
                "config.worktree where worktree configuration is on",
                &[],
                &["config", "extensions.worktreeConfig", "true"],
                format!("{fsmonitor} > .git/config.worktree"),
                &["status", "--short"],
            ),
            (
                "a hooks dir in a repository made without one",
                &["--template="],
                &[],
                plant_script_into(".git/hooks", "pre-commit", &marker),
                &["commit", "-q", "--allow-empty", "-m", "x"],
            ),
            (
                "a hooks path that does not exist yet",
                &[],
                &["config", "core.hooksPath", ".githooks"],
                plant_script_into(".githooks", "pre-commit", &marker),
                &["commit", "-q", "--allow-empty", "-m", "x"],
            ),
            (
                "an included file that does not exist yet",
                &[],
                &["config", "include.path", "../local.gitconfig"],
                format!("{fsmonitor} > local.gitconfig"),
                &["status", "--short"],
            ),
        ];
        for (what, init, setup, attack, person) in cases {
            let root = TempDir::new("git-absent");
            repository_with(&root, init);
            if !setup.is_empty() {
                git_ok(&root, setup);
            }
            let server = sandboxed(&root, backend, json!({}));
            let result = inside(&server, &root, &attack);
            git(&root, person);
            marker.assert_untouched(&format!("{backend}: {what} ({result})"));
        }
    }
}

/// One case: what it tries, the `git init` arguments and a `git` command
/// the person's repository was made with, the attack, and the git command
/// the person runs next.
type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a str], String, &'a [&'a str]);

/// A command that makes `dir` and plants an executable `name` in it.
fn plant_script_into(dir: &str, name: &str, marker: &Marker) -> String {
    format!("mkdir -p {dir}; {}", plant_script(&format!("{dir}/{name}"), marker))
}

#[test]
fn the_git_dir_cannot_be_moved_away_and_back_nor_written_directly() {
    for backend in backends() {
        let root = TempDir::new("git-moved");
        repository(&root);
        let server = sandboxed(&root, backend, json!({}));
        let marker = Marker::new();
        let attacks = [
            (
                "hooks written in a moved copy",
                format!(
                    "mv .git g2 && {} && mv g2 .git",
                    plant_script("g2/hooks/pre-commit", &marker)
                ),
            ),
            (
                "a hook written directly",
                plant_script(".git/hooks/pre-commit", &marker),
            ),
            (
                "the config written directly",
                format!(
                    "echo '[core] fsmonitor = \"touch {}\"' >> .git/config",
                    marker.path().display()
                ),
            ),
            (
                "the config replaced by a rename",
                format!(
                    "cp .git/config c2 && echo '[core] fsmonitor = \"touch {}\"' >> c2 && mv -f c2 .git/config",
                    marker.path().display()
                ),
            ),
            (
                "a hook linked in",
                format!("{} && ln h .git/hooks/pre-commit", plant_script("h", &marker)),
            ),
            (
                "the hooks dir swapped",
                format!(
                    "mkdir h2 && {} && mv .git/hooks h3; mv h2 .git/hooks",
                    plant_script("h2/pre-commit", &marker)
                ),
            ),
        ];
        for (what, attack) in &attacks {
            let result = inside(&server, &root, attack);
            git(&root, &["commit", "-q", "--allow-empty", "-m", "x"]);
            git(&root, &["status", "--short"]);
            marker.assert_untouched(&format!("{backend}: {what} ({result})"));
            assert!(
                root.join(".git/HEAD").exists(),
                "{backend}: {what}: the git dir moved: {result}"
            );
        }
    }
}

/// Through the `bash-mcp` binary, on every route a command can take (the
/// supervisor, a bwrap of its own, the fallback when the supervisor cannot
/// start, Landlock): the planted `commondir` and the hooks written in a
/// moved `.git` run nothing; where the handler can run, `git add` works, and
/// where it cannot (the fallback has no helper), `.git` stays as it is.
#[test]
fn through_the_binary_no_route_lets_a_command_plant_what_git_runs() {
    use common::sandboxes::{available_routes, binary_config, exec_json};
    let tag = unique_tag("git-binary");
    for route in available_routes() {
        let root = TempDir::new("git-binary");
        repository(&root);
        let config_dir = TempDir::new("git-binary-config");
        let config = binary_config(&config_dir, route, json!({"writable_roots": [&*root]}));
        let marker = Marker::new();
        let fsmonitor = format!(
            "printf '[core]\\n\\tfsmonitor = \"touch {}\"\\n'",
            marker.path().display()
        );
        let attacks = [
            format!("mkdir evil && cp -r .git/. evil/ && {fsmonitor} >> evil/config && echo ../evil > .git/commondir"),
            format!(
                "mv .git g2 && {} && mv g2 .git",
                plant_script("g2/hooks/pre-commit", &marker)
            ),
        ];
        for attack in &attacks {
            let result = exec_json(&config, &root, &tag, attack);
            git(&root, &["status", "--short"]);
            git(&root, &["commit", "-q", "--allow-empty", "-m", "x"]);
            marker.assert_untouched(&format!("{route}: {attack}: {result}"));
        }
        let add = exec_json(
            &config,
            &root,
            &tag,
            "echo more >> README && git add README && echo added",
        );
        let added = add["output"].as_str().unwrap_or_default().contains("added");
        assert_eq!(added, route != "bwrap-fallback", "{route}: {add}");
    }
    assert_no_survivors(&tag);
}
