//! Where git finds programs to run, for the repositories a sandboxed
//! command can reach: every file or directory that, written from inside
//! the sandbox, would make a git command run later by the person (outside
//! any sandbox) run code of the command's choosing.
//!
//! For each repository found from a start directory (as git finds it:
//! the nearest `.git` above, a directory or a `gitdir:` file), with the
//! repositories it links to (its linked worktrees and its submodules):
//!
//! - the `.git` file of a worktree or submodule (it names the git dir);
//! - in the git dir: `commondir` (it names the common dir, and with it the
//!   configuration and hooks), `config.worktree`;
//! - in the common dir: `config`, `hooks`, and the `commondir` and
//!   `config.worktree` of every linked worktree;
//! - every file an include (`include.path`, `includeIf.*.path`) of any of
//!   those configurations, or of the user's, names, whatever its condition;
//! - `core.hooksPath` (the directory, or the hook names in it when it is a
//!   start directory itself or above one), `init.templateDir` (its hooks
//!   reach every repository cloned later);
//! - every program a configuration key that runs one names by path
//!   ([`COMMANDS`]): `core.fsmonitor = ./tools/watch` and the like.
//!
//! Paths that do not exist are listed too: git would read them if they
//! appeared. The caller keeps those inside writable roots.

pub mod config;

use std::collections::HashSet;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use super::fsread::{self, read_text};
use super::settled::{Found, Places};
use config::Entry;

/// Configuration keys whose value is a command git runs, as
/// `(section, name)` with any subsection (`"*"`: any name). From
/// git-config(1): every key documented to run a program or a shell command.
pub const COMMANDS: &[(&str, &str)] = &[
    ("core", "fsmonitor"),
    ("core", "sshcommand"),
    ("core", "editor"),
    ("core", "pager"),
    ("core", "askpass"),
    ("core", "gitproxy"),
    ("sequence", "editor"),
    ("gpg", "program"),
    ("gpg", "defaultkeycommand"),
    ("diff", "external"),
    ("diff", "command"),
    ("diff", "textconv"),
    ("filter", "clean"),
    ("filter", "smudge"),
    ("filter", "process"),
    ("merge", "driver"),
    ("mergetool", "cmd"),
    ("mergetool", "path"),
    ("difftool", "cmd"),
    ("difftool", "path"),
    ("credential", "helper"),
    ("alias", "*"),
    ("pager", "*"),
    ("browser", "cmd"),
    ("browser", "path"),
    ("man", "cmd"),
    ("man", "path"),
    ("remote", "uploadpack"),
    ("remote", "receivepack"),
    ("sendemail", "smtpserver"),
    ("sendemail", "sendmailcmd"),
    ("sendemail", "tocmd"),
    ("sendemail", "cccmd"),
    ("interactive", "difffilter"),
    ("uploadpack", "packobjectshook"),
    ("instaweb", "httpd"),
    ("guitool", "cmd"),
];

/// The hooks git runs, by name (githooks(5)): protected one by one when
/// `core.hooksPath` names a directory that cannot be protected whole.
pub const HOOKS: &[&str] = &[
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "fsmonitor-watchman",
    "p4-changelist",
    "p4-prepare-changelist",
    "p4-post-changelist",
    "p4-pre-submit",
    "post-index-change",
];

/// How deep includes nest before git gives up (its own limit).
const MAX_INCLUDE_DEPTH: usize = 10;
/// How many repositories one search visits at most (worktrees and
/// submodules of submodules included): a bound on the work per command.
const MAX_REPOSITORIES: usize = 64;

/// Where the user's own configuration lives.
#[derive(Debug, Clone, Default)]
pub struct Home {
    pub home: Option<PathBuf>,
    pub xdg_config_home: Option<PathBuf>,
}

impl Home {
    /// From this process's environment, as git reads it.
    pub fn from_env() -> Home {
        let var = |name| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        Home {
            home: var("HOME"),
            xdg_config_home: var("XDG_CONFIG_HOME"),
        }
    }

    /// The user's configuration files, in the order git reads them.
    fn config_files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        match (&self.xdg_config_home, &self.home) {
            (Some(xdg), _) => files.push(xdg.join("git/config")),
            (None, Some(home)) => files.push(home.join(".config/git/config")),
            (None, None) => {}
        }
        if let Some(home) = &self.home {
            files.push(home.join(".gitconfig"));
        }
        files
    }

    fn expand(&self, path: &str) -> Option<PathBuf> {
        match path.strip_prefix("~/") {
            Some(rest) => self.home.as_ref().map(|h| h.join(rest)),
            None => Some(PathBuf::from(path)),
        }
    }
}

/// One repository as git finds it from a directory.
#[derive(Debug, Clone)]
struct Repository {
    /// The top of its working tree (`None`: a bare repository).
    top: Option<PathBuf>,
    git_dir: PathBuf,
    /// The git dir's identity, when it was found as the `.git` directory
    /// of `top` (else it is looked at when visited).
    key: Option<(u64, u64)>,
}

impl Repository {
    fn new(top: Option<PathBuf>, git_dir: PathBuf) -> Repository {
        Repository {
            top,
            git_dir,
            key: None,
        }
    }
}

/// Every path whose content can make git run a program, for the
/// repositories found from `starts` (absolute directories). Existing or
/// not; inside writable roots or not (the caller keeps what matters).
/// `places` answers for what lies outside writable places.
pub fn code_paths(starts: &[PathBuf], home: &Home, places: &mut Places) -> Vec<PathBuf> {
    let mut search = Search {
        home,
        places,
        out: Vec::new(),
        seen: HashSet::new(),
        commons: Vec::new(),
        user: Vec::new(),
        starts,
    };
    for file in home.config_files() {
        let entries = search.read_config(&file, 0);
        search.user.extend(entries);
    }
    if let Some(dir) = search.user_template_dir() {
        search.out.push(dir);
    }
    // A root is often the command's directory too: each looked for once.
    for (i, start) in starts.iter().enumerate() {
        if starts[..i].contains(start) {
            continue;
        }
        if let Some(repository) = find(start, search.places) {
            search.visit(repository);
        }
    }
    let mut seen = HashSet::new();
    search.out.retain(|p| seen.insert(p.clone()));
    search.out
}

/// The repository git uses in `start` (canonical): the nearest `.git` at
/// or above it, or `start` itself when it is a bare repository.
fn find(start: &Path, places: &mut Places) -> Option<Repository> {
    let holds = |places: &mut Places, dir: &Path, name: &str| places.entry(dir, OsStr::new(name)) != Found::Absent;
    if holds(places, start, "HEAD") && is_git_dir(start) {
        return Some(Repository::new(None, start.to_path_buf()));
    }
    start.ancestors().filter(|dir| holds(places, dir, ".git")).find_map(at)
}

/// The repository whose `.git` is in `dir`, if any.
fn at(dir: &Path) -> Option<Repository> {
    use std::os::unix::fs::MetadataExt;
    let dot_git = dir.join(".git");
    let meta = dot_git.metadata().ok()?;
    if meta.is_dir() {
        // Its `.git` is its git dir, looked at here once.
        return Some(Repository {
            top: Some(dir.to_path_buf()),
            git_dir: dot_git,
            key: Some((meta.dev(), meta.ino())),
        });
    }
    Some(Repository::new(Some(dir.to_path_buf()), pointed_git_dir(&dot_git)?))
}

/// The git dir a `.git` file names (`gitdir: <path>`, relative to the file).
fn pointed_git_dir(dot_git: &Path) -> Option<PathBuf> {
    let text = read_text(dot_git)?;
    let target = text.strip_prefix("gitdir:")?.trim();
    (!target.is_empty()).then(|| dot_git.parent().unwrap_or(Path::new("/")).join(target))
}

/// What git checks before taking a directory as a git dir.
fn is_git_dir(dir: &Path) -> bool {
    dir.join("HEAD").is_file() && dir.join("objects").is_dir() && dir.join("refs").is_dir()
}

/// A file or directory by identity, so one reached by two paths (a
/// symlink, `..`) is visited once, at the cost of one `stat`.
fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    path.metadata().ok().map(|m| (m.dev(), m.ino()))
}

struct Search<'a> {
    home: &'a Home,
    places: &'a mut Places,
    out: Vec<PathBuf>,
    /// Git dirs already visited.
    seen: HashSet<(u64, u64)>,
    /// The entries of each common dir's configuration, read once.
    commons: Vec<((u64, u64), Vec<Entry>)>,
    /// The user's configuration, which applies in every repository.
    user: Vec<Entry>,
    starts: &'a [PathBuf],
}

impl Search<'_> {
    fn visit(&mut self, repository: Repository) {
        let Some(key) = repository.key.or_else(|| identity(&repository.git_dir)) else {
            return;
        };
        if self.seen.len() >= MAX_REPOSITORIES || !self.seen.insert(key) {
            return;
        }
        let git_dir = &repository.git_dir;
        // A `.git` file names the git dir (a `.git` directory is it).
        if let Some(top) = &repository.top {
            let dot_git = top.join(".git");
            let found_as_dir = repository.key.is_some() && *git_dir == dot_git;
            if !found_as_dir && !dot_git.is_dir() {
                self.out.push(dot_git);
            }
        }
        self.out.push(git_dir.join("commondir"));
        self.out.push(git_dir.join("config.worktree"));
        let common = read_text(&git_dir.join("commondir"))
            .map(|text| git_dir.join(text.trim_end_matches(['\n', '\r'])))
            .unwrap_or_else(|| git_dir.clone());
        let common_key = match common == *git_dir {
            true => Some(key),
            false => identity(&common),
        };
        let (first, common_entries) = self.common_config(&common, common_key);
        let mut entries = self.user.clone();
        entries.extend(common_entries);
        entries.extend(self.read_config(&git_dir.join("config.worktree"), 0));
        let base = repository.top.clone().unwrap_or_else(|| git_dir.clone());
        self.programs(&entries, &base);
        self.hooks_path(&entries, &base);
        if first {
            self.linked_worktrees(&common);
            self.module_git_dirs(&common);
        }
        if let Some(top) = &repository.top {
            self.gitmodules(top);
        }
    }

    /// The configuration of the common dir `common` (its `config` and
    /// `hooks` listed the first time), and whether this was the first time.
    fn common_config(&mut self, common: &Path, key: Option<(u64, u64)>) -> (bool, Vec<Entry>) {
        if let Some((_, entries)) = self.commons.iter().find(|(k, _)| Some(*k) == key) {
            return (false, entries.clone());
        }
        self.out.push(common.join("config"));
        self.out.push(common.join("hooks"));
        let entries = self.read_config(&common.join("config"), 0);
        if let Some(key) = key {
            self.commons.push((key, entries.clone()));
        }
        (true, entries)
    }
    /// The entries of the configuration file `file` with those of the
    /// files it includes, each include target listed.
    fn read_config(&mut self, file: &Path, depth: usize) -> Vec<Entry> {
        let Some(text) = self.places.read_text(file) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for entry in config::parse(&text) {
            let include =
                entry.key == "include.path" || (entry.key.starts_with("includeif.") && entry.key.ends_with(".path"));
            let target = include
                .then_some(entry.value.as_deref())
                .flatten()
                .and_then(|v| self.home.expand(v))
                .map(|p| file.parent().unwrap_or(Path::new("/")).join(p));
            out.push(entry);
            if let Some(target) = target {
                self.out.push(target.clone());
                if depth < MAX_INCLUDE_DEPTH {
                    out.extend(self.read_config(&target, depth + 1));
                }
            }
        }
        out
    }

    /// The programs that command-valued keys name by path, relative to `base`.
    fn programs(&mut self, entries: &[Entry], base: &Path) {
        for entry in entries {
            let Some(value) = &entry.value else { continue };
            if !is_command_key(&entry.key) {
                continue;
            }
            for (i, word) in words(value.trim_start_matches('!')).into_iter().enumerate() {
                let Some(path) = self.home.expand(&word).filter(|_| word.contains('/')) else {
                    continue;
                };
                let path = base.join(path);
                // The program itself whether or not it exists; a later
                // argument only when it names a file (a script it runs).
                if i == 0 || path.is_file() {
                    self.out.push(path);
                }
            }
        }
    }

    /// `core.hooksPath`: the last one set wins, relative to `base`.
    fn hooks_path(&mut self, entries: &[Entry], base: &Path) {
        let Some(dir) = entries
            .iter()
            .rev()
            .find(|e| e.key == "core.hookspath")
            .and_then(|e| e.value.as_deref())
            .and_then(|v| self.home.expand(v))
            .map(|p| base.join(p))
        else {
            return;
        };
        // A hooks directory that holds a start directory (`hooksPath = .`)
        // cannot be kept read-only whole: its hooks are kept one by one.
        if self.starts.iter().any(|s| s.starts_with(&dir)) {
            self.out.extend(HOOKS.iter().map(|h| dir.join(h)));
        } else {
            self.out.push(dir);
        }
    }

    /// `init.templateDir` of the user's configuration (git copies its hooks
    /// into every repository it creates).
    fn user_template_dir(&self) -> Option<PathBuf> {
        let value = self
            .user
            .iter()
            .rev()
            .find(|e| e.key == "init.templatedir")?
            .value
            .as_deref()?;
        self.home.expand(value).filter(|p| p.is_absolute())
    }

    /// Every linked worktree of the common dir `common`: its `commondir`
    /// and `config.worktree`, and its `.git` file.
    fn linked_worktrees(&mut self, common: &Path) {
        let worktrees = common.join("worktrees");
        for (name, kind) in fsread::list(&worktrees) {
            if kind != fsread::Entry::Dir {
                continue;
            }
            let git_dir = worktrees.join(name);
            let Some(dot_git) =
                read_text(&git_dir.join("gitdir")).map(|t| PathBuf::from(t.trim_end_matches(['\n', '\r'])))
            else {
                self.out.push(git_dir.join("commondir"));
                self.out.push(git_dir.join("config.worktree"));
                continue;
            };
            self.visit(Repository::new(dot_git.parent().map(Path::to_path_buf), git_dir));
        }
    }

    /// The submodules' git dirs under `common/modules`, with the working
    /// trees their `core.worktree` names.
    fn module_git_dirs(&mut self, common: &Path) {
        let mut module_dirs = Vec::new();
        collect_git_dirs(&common.join("modules"), &mut module_dirs, 0);
        for git_dir in module_dirs {
            let work_tree = config::parse(&read_text(&git_dir.join("config")).unwrap_or_default())
                .into_iter()
                .rev()
                .find(|e| e.key == "core.worktree")
                .and_then(|e| e.value)
                .map(|v| git_dir.join(v));
            self.visit(Repository::new(work_tree, git_dir));
        }
    }

    /// The `.git` of every submodule path `.gitmodules` in the working tree
    /// `top` names (a file naming the submodule's git dir, or the git dir
    /// itself), and the repository there.
    fn gitmodules(&mut self, top: &Path) {
        let Some(text) = read_text(&top.join(".gitmodules")) else {
            return;
        };
        for entry in config::parse(&text) {
            if entry.key.starts_with("submodule.")
                && entry.key.ends_with(".path")
                && let Some(path) = entry.value
            {
                let work_tree = top.join(path);
                self.out.push(work_tree.join(".git"));
                if let Some(repository) = at(&work_tree) {
                    self.visit(repository);
                }
            }
        }
    }
}

/// The git dirs at or below `dir` (submodule names may hold slashes, so a
/// git dir can lie several levels down); a git dir's own subdirectories are
/// not searched (its `modules` are found from it).
fn collect_git_dirs(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    if depth > 8 || out.len() >= MAX_REPOSITORIES {
        return;
    }
    if is_git_dir(dir) {
        out.push(dir.to_path_buf());
        return;
    }
    for (name, kind) in fsread::list(dir) {
        if kind == fsread::Entry::Dir {
            collect_git_dirs(&dir.join(name), out, depth + 1);
        }
    }
}

fn is_command_key(key: &str) -> bool {
    let section = key.split('.').next().unwrap_or_default();
    let name = key.rsplit('.').next().unwrap_or_default();
    COMMANDS.iter().any(|(s, n)| *s == section && (*n == "*" || *n == name))
}

/// The words of a command line, with quotes taken off (enough to find the
/// paths in it; the shell's full grammar is not needed for that).
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    let mut in_word = false;
    for c in command.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')') => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn git_dir(dir: &Path, config: &str) {
        write(&dir.join("HEAD"), "ref: refs/heads/main\n");
        std::fs::create_dir_all(dir.join("objects")).unwrap();
        std::fs::create_dir_all(dir.join("refs")).unwrap();
        write(&dir.join("config"), config);
    }

    /// A repository with a hooks path, an include, programs named by path,
    /// a linked worktree and a submodule whose name holds a slash.
    #[test]
    fn every_place_git_takes_a_program_from_is_found() {
        let base = std::env::temp_dir().join(format!("bm-git-paths-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let top = base.join("top");
        let wt = base.join("wt");
        git_dir(
            &top.join(".git"),
            "[core]\n\thooksPath = .githooks\n\tfsmonitor = ./tools/fsmon\n[include]\n\tpath = ../inc.cfg\n",
        );
        write(&top.join("inc.cfg"), "[alias]\n\tx = !sh ./scripts/x.sh --out build\n");
        write(&top.join("scripts/x.sh"), "");
        write(
            &top.join(".git/worktrees/w/gitdir"),
            &format!("{}\n", wt.join(".git").display()),
        );
        write(&top.join(".git/worktrees/w/commondir"), "../..\n");
        write(
            &wt.join(".git"),
            &format!("gitdir: {}\n", top.join(".git/worktrees/w").display()),
        );
        git_dir(&top.join(".git/modules/a/b"), "[core]\n\tworktree = ../../../../sub\n");
        write(&top.join("sub/.git"), "gitdir: ../.git/modules/a/b\n");
        write(&top.join(".gitmodules"), "[submodule \"a/b\"]\n\tpath = sub\n");
        let found = code_paths(
            &[top.join("src")],
            &Home::default(),
            &mut Places::new(vec![base.clone()]),
        );
        let expected = [
            top.join(".git/commondir"),
            top.join(".git/config"),
            top.join(".git/config.worktree"),
            top.join(".git/hooks"),
            top.join(".git/../inc.cfg"),
            top.join(".githooks"),
            top.join("./tools/fsmon"),
            top.join("./scripts/x.sh"),
            top.join(".git/worktrees/w/commondir"),
            top.join(".git/worktrees/w/config.worktree"),
            wt.join(".git"),
            wt.join(".githooks"),
            top.join(".git/modules/a/b/config"),
            top.join(".git/modules/a/b/hooks"),
            top.join(".git/modules/a/b/commondir"),
            top.join(".git/modules/a/b/../../../../sub/.git"),
            top.join("sub/.git"),
        ];
        for path in &expected {
            assert!(found.contains(path), "{} not found in {found:#?}", path.display());
        }
        assert!(
            !found.contains(&top.join("build")),
            "an argument that names no file is no program"
        );
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_hooks_path_that_holds_a_start_is_kept_hook_by_hook() {
        let base = std::env::temp_dir().join(format!("bm-git-hooks-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        git_dir(&base.join(".git"), "[core]\n\thooksPath = .\n");
        let found = code_paths(
            std::slice::from_ref(&base),
            &Home::default(),
            &mut Places::new(vec![base.clone()]),
        );
        assert!(found.contains(&base.join("./pre-commit")), "{found:#?}");
        assert!(!found.contains(&base.join(".")), "{found:#?}");
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn command_keys_match_with_or_without_a_subsection() {
        assert!(is_command_key("core.fsmonitor"));
        assert!(is_command_key("credential.https://x.helper"));
        assert!(is_command_key("filter.lfs.process"));
        assert!(is_command_key("alias.st"));
        assert!(!is_command_key("core.worktree"));
        assert!(!is_command_key("remote.origin.url"));
    }

    #[test]
    fn words_split_a_command_line_and_drop_quotes() {
        assert_eq!(
            words("sh -c './x.sh a' && \"./my tool\" b;c"),
            ["sh", "-c", "./x.sh a", "./my tool", "b", "c"]
        );
    }
}
