//! Where commands may run: working-directory validation, operator roots,
//! per-project `.bash-mcp.toml` files, and Windows paths under WSL.
//!
//! With roots in force, a working directory is resolved (symlinks and `..`)
//! and must lie inside one of them; the command then runs in the resolved
//! path, so a symlink swapped after the check cannot move it elsewhere.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::SystemTime;

use crate::error::{ErrorCode, ToolError};

/// Name of the per-project file.
pub const PROJECT_FILE: &str = ".bash-mcp.toml";
/// How many parent directories are searched for [`PROJECT_FILE`].
const MAX_HOPS: usize = 64;

/// Whether this process runs under Windows Subsystem for Linux.
pub fn is_wsl() -> bool {
    static WSL: LazyLock<bool> = LazyLock::new(|| {
        Path::new("/proc/sys/fs/binfmt_misc/WSLInterop").exists()
            || std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|r| r.to_ascii_lowercase().contains("microsoft"))
                .unwrap_or(false)
    });
    *WSL
}

/// `C:\Users\x` (or `C:/Users/x`) as `/mnt/c/Users/x`; `None` if not a drive path.
pub fn windows_to_wsl(path: &str) -> Option<PathBuf> {
    let bytes = path.as_bytes();
    if bytes.len() < 2 || !bytes[0].is_ascii_alphabetic() || bytes[1] != b':' {
        return None;
    }
    if bytes.len() > 2 && bytes[2] != b'\\' && bytes[2] != b'/' {
        return None;
    }
    let drive = (bytes[0] as char).to_ascii_lowercase();
    let rest = path[2..].replace('\\', "/");
    Some(PathBuf::from(format!(
        "/mnt/{drive}{}",
        if rest.is_empty() { "/" } else { &rest }
    )))
}

/// The absolute path of a working directory, not checked: Windows paths
/// converted under WSL, a relative one resolved against `base`.
fn absolute_dir(dir: &Path, base: Option<&Path>) -> Result<PathBuf, ToolError> {
    let dir = match dir.to_str().and_then(windows_to_wsl) {
        Some(converted) if is_wsl() => converted,
        Some(_) => {
            return Err(ToolError::new(
                ErrorCode::WorkingDirNotFound,
                format!(
                    "working directory {} is a Windows path, and this is not WSL",
                    dir.display()
                ),
                "pass a POSIX path such as /home/user/project",
            ));
        }
        None => dir.to_path_buf(),
    };
    let joined = match base {
        Some(base) if dir.is_relative() => base.join(&dir),
        _ => dir,
    };
    Ok(std::path::absolute(&joined).unwrap_or(joined))
}

/// Checks a working directory: converts Windows paths under WSL, resolves it
/// against `base` when relative, and requires an existing directory.
/// Returns the absolute path (symlinks not resolved).
pub(crate) fn existing_dir(dir: &Path, base: Option<&Path>) -> Result<PathBuf, ToolError> {
    let hint = "pass an existing directory (absolute, or relative to the server's working directory)";
    let absolute = absolute_dir(dir, base)?;
    match std::fs::metadata(&absolute) {
        Ok(meta) if meta.is_dir() => match searchable(&absolute) {
            Ok(()) => Ok(absolute),
            Err(e) => Err(ToolError::new(
                ErrorCode::WorkingDirNotFound,
                format!("working directory {} cannot be entered: {e}", absolute.display()),
                "pass a directory this process may enter (search permission), or fix its mode",
            )),
        },
        Ok(_) => Err(ToolError::new(
            ErrorCode::WorkingDirNotDirectory,
            format!("working directory {} is not a directory", absolute.display()),
            hint,
        )),
        Err(e) => Err(ToolError::new(
            ErrorCode::WorkingDirNotFound,
            format!("working directory {} cannot be used: {e}", absolute.display()),
            hint,
        )),
    }
}

/// Whether this process may enter `dir`: checked here so that a directory the
/// command could not start in is a working-dir error, not a spawn failure.
fn searchable(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())?;
    use rustix::fs::{Access, AtFlags, CWD};
    Ok(rustix::fs::accessat(
        CWD,
        c.as_c_str(),
        Access::EXEC_OK,
        AtFlags::EACCESS,
    )?)
}

/// Resolves `dir` (symlinks and `..`), for comparing against roots.
fn resolve(dir: &Path) -> Result<PathBuf, ToolError> {
    std::fs::canonicalize(dir).map_err(|e| {
        ToolError::new(
            ErrorCode::WorkingDirNotFound,
            format!("working directory {} cannot be resolved: {e}", dir.display()),
            "pass an existing directory",
        )
    })
}

/// How far per-project files count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProjectTrust {
    /// They are not read.
    Off,
    /// They extend and replace the roots.
    Full,
    /// They only narrow the roots: with a sandbox configured, a project
    /// file is as writable as the project, and sandboxed commands write the
    /// project, so what one says cannot widen where later calls may run.
    NarrowOnly,
}

/// The process-wide cache of per-project files.
static PROJECT_FILES: LazyLock<ProjectFiles> = LazyLock::new(ProjectFiles::default);

/// Problems found in per-project files so far (ignored, fail-soft, or
/// narrowed to what they may say).
pub fn project_file_warnings() -> Vec<String> {
    PROJECT_FILES.warnings()
}

/// An existing directory that the roots in force allow. When roots apply,
/// the resolved path is returned, so a symlink swapped after the check
/// changes nothing.
///
/// `base` is the server's default working directory: a relative `dir`
/// resolves against it, and with `project_config` the project file that
/// governs it applies to every request. The roots in force are then:
///
/// 1. the operator's `allowed_roots` (none: every directory);
/// 2. then the project file nearest to `base`: `extend` adds its roots (to
///    operator roots; without any, every directory stays allowed), `replace`
///    puts its own list in their place;
/// 3. then, if it is another file, the project file nearest to `dir`, the
///    same way.
///
/// With operator roots set, a project file is honoured only if its folder
/// lies inside them; one outside is ignored, with a warning in `status`.
/// With [`ProjectTrust::NarrowOnly`] a project file only narrows: an
/// `extend`, and the roots of a `replace` outside those in force before it,
/// are ignored, with a warning.
pub(crate) fn confined_dir(
    dir: &Path,
    base: Option<&Path>,
    allowed_roots: Option<&[PathBuf]>,
    trust: ProjectTrust,
) -> Result<PathBuf, ToolError> {
    let absolute = existing_dir(dir, base)?;
    if allowed_roots.is_none() && trust == ProjectTrust::Off {
        return Ok(absolute);
    }
    let resolved = resolve(&absolute)?;
    let in_force = if trust == ProjectTrust::Off {
        allowed_roots.map(<[PathBuf]>::to_vec)
    } else {
        let default_dir = base.and_then(|b| std::fs::canonicalize(b).ok());
        PROJECT_FILES.effective_roots(&resolved, default_dir.as_deref(), allowed_roots, home(), trust)
    };
    match in_force {
        Some(roots) => {
            confine(&absolute, &resolved, &roots)?;
            Ok(resolved)
        }
        None => Ok(absolute),
    }
}

/// [`confined_dir`] for a command that starts there at once, outside any
/// sandbox: when no roots apply, the directory is not checked first (two
/// system calls per command), since the spawn's own `chdir` fails on one
/// that is missing, not a directory, or cannot be entered; the caller then
/// asks [`confined_dir`] for the error. The flag says whether it was checked.
pub(crate) fn start_dir(
    dir: &Path,
    base: Option<&Path>,
    allowed_roots: Option<&[PathBuf]>,
    trust: ProjectTrust,
) -> Result<(PathBuf, bool), ToolError> {
    if allowed_roots.is_none() && trust == ProjectTrust::Off {
        return Ok((absolute_dir(dir, base)?, false));
    }
    confined_dir(dir, base, allowed_roots, trust).map(|dir| (dir, true))
}

/// Requires the resolved directory to lie inside one of `roots`.
fn confine(absolute: &Path, resolved: &Path, roots: &[PathBuf]) -> Result<(), ToolError> {
    if roots.iter().any(|root| resolved.starts_with(root)) {
        return Ok(());
    }
    let listed: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
    Err(ToolError::new(
        ErrorCode::WorkingDirNotAllowed,
        format!(
            "working directory {} (resolved: {}) is outside the allowed roots: {}",
            absolute.display(),
            resolved.display(),
            if listed.is_empty() {
                "(none: every directory is locked out)".to_owned()
            } else {
                listed.join(", ")
            }
        ),
        "run the command inside one of the allowed roots",
    ))
}

/// Resolves configured roots; each must exist. Relative roots resolve against `base`.
pub(crate) fn canonical_roots(roots: &[String], base: &Path) -> Result<Vec<PathBuf>, String> {
    roots
        .iter()
        .map(|root| {
            let path = base.join(root);
            std::fs::canonicalize(&path).map_err(|e| format!("root {} cannot be resolved: {e}", path.display()))
        })
        .collect()
}

/// `$HOME` resolved once (symlinks, `..`), where the walk up for project
/// files stops; the raw value if it cannot be resolved.
fn home() -> Option<&'static Path> {
    static HOME: LazyLock<Option<PathBuf>> = LazyLock::new(|| normalized_home(std::env::var_os("HOME")));
    HOME.as_deref()
}

fn normalized_home(raw: Option<std::ffi::OsString>) -> Option<PathBuf> {
    let raw = PathBuf::from(raw.filter(|h| !h.is_empty())?);
    Some(std::fs::canonicalize(&raw).unwrap_or(raw))
}

/// How a project file combines with the operator's roots.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    Extend,
    Replace,
}

#[derive(Debug, Clone)]
struct ProjectFile {
    roots: Vec<PathBuf>,
    mode: Mode,
}

/// Identity of a file version: a changed file gets a new key.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStamp {
    dev: u64,
    ino: u64,
    mtime: Option<SystemTime>,
    len: u64,
}

#[derive(Debug, Clone)]
struct Cached {
    stamp: FileStamp,
    parsed: Result<ProjectFile, String>,
}

/// Finds, parses and caches per-project files; remembers their warnings.
#[derive(Debug, Default)]
struct ProjectFiles {
    cache: Mutex<HashMap<PathBuf, Cached>>,
    /// Files ignored because they lie outside the operator's roots, with why.
    ignored: Mutex<HashMap<PathBuf, String>>,
    /// Files whose widening was ignored (see [`ProjectTrust::NarrowOnly`]),
    /// with what was ignored.
    narrowed: Mutex<HashMap<PathBuf, String>>,
}

impl ProjectFiles {
    /// The roots in force for `dir` (resolved) when the server's default
    /// directory is `default_dir` (resolved): see [`confined_dir`].
    fn effective_roots(
        &self,
        dir: &Path,
        default_dir: Option<&Path>,
        operator: Option<&[PathBuf]>,
        home: Option<&Path>,
        trust: ProjectTrust,
    ) -> Option<Vec<PathBuf>> {
        let governing = default_dir.and_then(|d| self.nearest(d, operator, home));
        let nearest = self
            .nearest(dir, operator, home)
            .filter(|(file, _)| governing.as_ref().is_none_or(|(g, _)| g != file));
        let mut roots = operator.map(<[PathBuf]>::to_vec);
        for (file, project) in governing.into_iter().chain(nearest) {
            let narrow_only = trust == ProjectTrust::NarrowOnly;
            let mut ignored = Vec::new();
            match project.mode {
                Mode::Replace => {
                    let (kept, wider): (Vec<PathBuf>, Vec<PathBuf>) = project.roots.into_iter().partition(|root| {
                        !narrow_only
                            || roots
                                .as_ref()
                                .is_none_or(|in_force| in_force.iter().any(|r| root.starts_with(r)))
                    });
                    ignored.extend(wider);
                    roots = Some(kept);
                }
                // Without roots every directory is allowed already.
                Mode::Extend => {
                    if let Some(roots) = roots.as_mut() {
                        if narrow_only {
                            ignored.extend(project.roots);
                        } else {
                            tracing::debug!(file = %file.display(), "project file extends the allowed roots");
                            roots.extend(project.roots);
                        }
                    }
                }
            }
            self.note_narrowed(&file, &ignored);
        }
        roots
    }

    /// Remembers (for `status`) which roots of `file` were ignored because
    /// they would widen the roots in force, or forgets that none were.
    fn note_narrowed(&self, file: &Path, ignored: &[PathBuf]) {
        let mut narrowed = self.narrowed.lock().unwrap_or_else(PoisonError::into_inner);
        if ignored.is_empty() {
            narrowed.remove(file);
            return;
        }
        let listed: Vec<String> = ignored.iter().map(|r| r.display().to_string()).collect();
        let why = format!(
            "roots not honoured: {}; with a sandbox configured a project file can only narrow the allowed roots (a sandboxed command could have written it); the operator can list them in `allowed_roots`",
            listed.join(", ")
        );
        if narrowed.insert(file.to_path_buf(), why.clone()).as_ref() != Some(&why) {
            tracing::warn!(file = %file.display(), "{why}");
        }
    }

    /// Problems found in project files that still exist, for `status`.
    fn warnings(&self) -> Vec<String> {
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        cache.retain(|path, _| path.exists());
        let mut out: Vec<String> = cache
            .iter()
            .filter_map(|(path, c)| c.parsed.as_ref().err().map(|e| format!("{}: {e}", path.display())))
            .collect();
        drop(cache);
        let mut ignored = self.ignored.lock().unwrap_or_else(PoisonError::into_inner);
        ignored.retain(|path, _| path.exists());
        out.extend(ignored.iter().map(|(path, why)| format!("{}: {why}", path.display())));
        drop(ignored);
        let mut narrowed = self.narrowed.lock().unwrap_or_else(PoisonError::into_inner);
        narrowed.retain(|path, _| path.exists());
        out.extend(narrowed.iter().map(|(path, why)| format!("{}: {why}", path.display())));
        out.sort();
        out
    }

    /// The nearest project file at or above `dir` (resolved), up to `home`
    /// or the filesystem root, if it is valid and honoured: with `operator`
    /// roots, only a file whose folder lies inside them counts.
    fn nearest(&self, dir: &Path, operator: Option<&[PathBuf]>, home: Option<&Path>) -> Option<(PathBuf, ProjectFile)> {
        let mut current = Some(dir);
        for _ in 0..MAX_HOPS {
            let here = current?;
            let file = here.join(PROJECT_FILE);
            match std::fs::metadata(&file) {
                Ok(meta) => {
                    let mut ignored = self.ignored.lock().unwrap_or_else(PoisonError::into_inner);
                    if let Some(roots) = operator
                        && !roots.iter().any(|root| here.starts_with(root))
                    {
                        // Its ancestors lie outside the roots as well: stop here.
                        ignored.entry(file.clone()).or_insert_with(|| {
                            tracing::warn!(file = %file.display(), "ignoring project file outside the operator's allowed roots");
                            "ignored: its folder is outside the operator's allowed roots".to_owned()
                        });
                        return None;
                    }
                    ignored.remove(&file);
                    drop(ignored);
                    return self.load(&file, &meta).map(|p| (file, p));
                }
                Err(_) => self.forget(&file),
            }
            if home == Some(here) {
                return None;
            }
            current = here.parent();
        }
        None
    }

    /// Drops what is remembered about a file that is gone.
    fn forget(&self, file: &Path) {
        self.cache.lock().unwrap_or_else(PoisonError::into_inner).remove(file);
        self.ignored.lock().unwrap_or_else(PoisonError::into_inner).remove(file);
        self.narrowed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(file);
    }

    fn load(&self, file: &Path, meta: &std::fs::Metadata) -> Option<ProjectFile> {
        let stamp = FileStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            mtime: meta.modified().ok(),
            len: meta.len(),
        };
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(hit) = cache.get(file).filter(|c| c.stamp == stamp) {
            return hit.parsed.as_ref().ok().cloned();
        }
        let folder = file.parent().unwrap_or(Path::new("/"));
        let parsed = read_project_file(file).and_then(|text| parse_project_file(&text, folder));
        if let Err(problem) = &parsed {
            tracing::warn!(file = %file.display(), %problem, "ignoring project file; the operator's roots apply");
        }
        let result = parsed.as_ref().ok().cloned();
        cache.insert(file.to_path_buf(), Cached { stamp, parsed });
        result
    }
}

/// The most a project file may hold.
const MAX_PROJECT_FILE: u64 = 64 * 1024;

/// The text of a project file, read through its folder held open, without
/// following a link at its name and only if it is a regular file of at
/// most [`MAX_PROJECT_FILE`] bytes: a sandboxed command may have planted a
/// link to a device, a fifo or another file in its place.
fn read_project_file(file: &Path) -> Result<String, String> {
    use std::io::Read;
    let (Some(folder), Some(name)) = (file.parent(), file.file_name()) else {
        return Err("cannot be read: it has no folder".into());
    };
    let opened = crate::dirfd::Dir::open(folder)
        .and_then(|dir| dir.open_read(name))
        .map_err(|e| format!("cannot be read (it must be a regular file, not a link): {e}"))?;
    let mut text = String::new();
    opened
        .take(MAX_PROJECT_FILE + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot be read: {e}"))?;
    if text.len() as u64 > MAX_PROJECT_FILE {
        return Err(format!("is larger than {} KiB", MAX_PROJECT_FILE / 1024));
    }
    Ok(text)
}

fn parse_project_file(text: &str, folder: &Path) -> Result<ProjectFile, String> {
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| format!("not valid TOML: {}", e.message()))?;
    let mut roots = None;
    let mut mode = Mode::Extend;
    for (key, value) in &table {
        match key.as_str() {
            "allowed_roots" => {
                let items = value.as_array().ok_or("`allowed_roots` must be a list of paths")?;
                let names: Vec<String> = items
                    .iter()
                    .map(|v| {
                        v.as_str()
                            .map(str::to_owned)
                            .ok_or("`allowed_roots` entries must be strings")
                    })
                    .collect::<Result<_, _>>()?;
                roots = Some(canonical_roots(&names, folder)?);
            }
            "mode" => {
                mode = match value.as_str() {
                    Some("extend") => Mode::Extend,
                    Some("replace") => Mode::Replace,
                    _ => return Err(format!("`mode` must be \"extend\" or \"replace\", got {value:?}")),
                }
            }
            other => return Err(format!("unknown key `{other}` (known: allowed_roots, mode)")),
        }
    }
    Ok(ProjectFile {
        roots: roots.unwrap_or_default(),
        mode,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_dir_is_checked_only_where_roots_apply() {
        let missing = Path::new("/no/such/dir");
        assert_eq!(
            start_dir(missing, None, None, ProjectTrust::Off).unwrap(),
            (missing.to_path_buf(), false)
        );
        let relative = start_dir(Path::new("sub"), Some(Path::new("/base")), None, ProjectTrust::Off).unwrap();
        assert_eq!(relative, (PathBuf::from("/base/sub"), false));
        let roots = [PathBuf::from("/")];
        let error = start_dir(missing, None, Some(&roots), ProjectTrust::Off).unwrap_err();
        assert_eq!(error.code, ErrorCode::WorkingDirNotFound);
        assert_eq!(
            start_dir(Path::new("/"), None, Some(&roots), ProjectTrust::Off).unwrap(),
            (PathBuf::from("/"), true)
        );
    }

    #[test]
    fn windows_paths_convert_for_wsl() {
        assert_eq!(windows_to_wsl(r"C:\Users\x"), Some(PathBuf::from("/mnt/c/Users/x")));
        assert_eq!(windows_to_wsl("d:/src/app"), Some(PathBuf::from("/mnt/d/src/app")));
        assert_eq!(windows_to_wsl("C:"), Some(PathBuf::from("/mnt/c/")));
        assert_eq!(windows_to_wsl("/home/x"), None);
        assert_eq!(windows_to_wsl("C:relative"), None);
        assert_eq!(windows_to_wsl("ab:/x"), None);
    }

    /// A fresh, resolved temporary directory.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("bash-mcp-roots-{name}-{}", crate::process::ids::random_id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::canonicalize(dir).unwrap()
    }

    #[test]
    fn a_project_file_is_read_only_as_a_regular_file_of_bounded_size() {
        let base = scratch("planted");
        let file = base.join(PROJECT_FILE);
        std::fs::write(&file, "allowed_roots = []\n").unwrap();
        assert_eq!(read_project_file(&file).unwrap(), "allowed_roots = []\n");
        // A link (to a device that never ends, or to another file) and a
        // fifo are refused without being followed or blocking.
        for planted in ["link-zero", "link-file", "fifo", "large"] {
            std::fs::remove_file(&file).unwrap();
            match planted {
                "link-zero" => std::os::unix::fs::symlink("/dev/zero", &file).unwrap(),
                "link-file" => {
                    std::fs::write(base.join("other"), "allowed_roots = []\n").unwrap();
                    std::os::unix::fs::symlink(base.join("other"), &file).unwrap();
                }
                "fifo" => {
                    use rustix::fs::{CWD, FileType, Mode};
                    rustix::fs::mknodat(CWD, &file, FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
                }
                _ => std::fs::write(&file, "#".repeat(MAX_PROJECT_FILE as usize + 1)).unwrap(),
            }
            let e = read_project_file(&file).unwrap_err();
            assert!(e.contains("cannot be read") || e.contains("larger"), "{planted}: {e}");
        }
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn the_walk_stops_at_home_given_through_a_symlink() {
        let base = scratch("home");
        std::fs::create_dir_all(base.join("real-home/project")).unwrap();
        std::os::unix::fs::symlink(base.join("real-home"), base.join("link-home")).unwrap();
        // A file above home must not govern directories inside it.
        std::fs::write(base.join(PROJECT_FILE), "allowed_roots = []\nmode = \"replace\"\n").unwrap();
        let dir = base.join("real-home/project");
        let files = ProjectFiles::default();
        let raw = base.join("link-home");
        assert!(
            files.nearest(&dir, None, Some(&raw)).is_some(),
            "compared unresolved, the symlinked home is never met"
        );
        let home = normalized_home(Some(raw.into_os_string()));
        assert_eq!(home.as_deref(), Some(base.join("real-home").as_path()));
        assert!(files.nearest(&dir, None, home.as_deref()).is_none());
        // Unresolvable or unset: the raw value, or none.
        assert_eq!(
            normalized_home(Some("/no/such/home".into())),
            Some(PathBuf::from("/no/such/home"))
        );
        assert_eq!(normalized_home(None), None);
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn the_default_dirs_project_file_and_the_nearest_one_combine_in_order() {
        let base = scratch("combine");
        for sub in ["a", "b", "x", "y", "z"] {
            std::fs::create_dir_all(base.join(sub)).unwrap();
        }
        let write = |sub: &str, text: &str| std::fs::write(base.join(sub).join(PROJECT_FILE), text).unwrap();
        let files = ProjectFiles::default();
        let operator = [base.clone()];
        let roots = |dir: &str, default: &str, operator: Option<&[PathBuf]>| {
            files.effective_roots(
                &base.join(dir),
                Some(&base.join(default)),
                operator,
                None,
                ProjectTrust::Full,
            )
        };
        write("a", "allowed_roots = [\"../x\"]\n");
        write("b", "allowed_roots = [\"../y\"]\nmode = \"replace\"\n");
        // The request's own replace wins over everything before it.
        assert_eq!(roots("b", "a", Some(&operator)), Some(vec![base.join("y")]));
        // The default dir's extend applies to requests anywhere.
        assert_eq!(
            roots("z", "a", Some(&operator)),
            Some(vec![base.clone(), base.join("x")])
        );
        // The default dir's replace too; the request's extend adds to it.
        write("z", "allowed_roots = [\".\"]\n");
        assert_eq!(
            roots("z", "b", Some(&operator)),
            Some(vec![base.join("y"), base.join("z")])
        );
        // Without operator roots, extend changes nothing and replace restricts.
        assert_eq!(roots("z", "a", None), None);
        assert_eq!(roots("a", "b", None), Some(vec![base.join("y"), base.join("x")]));
        // One file counts once.
        assert_eq!(
            roots("a", "a", Some(&operator)),
            Some(vec![base.clone(), base.join("x")])
        );
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn with_a_sandbox_project_files_only_narrow_and_say_what_they_could_not_widen() {
        let base = scratch("narrow");
        for sub in ["p", "p/sub", "p/deep", "x"] {
            std::fs::create_dir_all(base.join(sub)).unwrap();
        }
        let write = |sub: &str, text: &str| std::fs::write(base.join(sub).join(PROJECT_FILE), text).unwrap();
        let files = ProjectFiles::default();
        let operator = [base.join("p")];
        let roots = |dir: &str, default: Option<&str>, operator: Option<&[PathBuf]>| {
            let default = default.map(|d| base.join(d));
            files.effective_roots(
                &base.join(dir),
                default.as_deref(),
                operator,
                None,
                ProjectTrust::NarrowOnly,
            )
        };
        let warned = |file: &str| {
            let file = base.join(file).join(PROJECT_FILE);
            files.warnings().iter().any(|w| w.starts_with(&*file.to_string_lossy()))
        };
        // `extend` widens: ignored, and said so.
        write("p", "allowed_roots = [\"../x\"]\n");
        assert_eq!(roots("p", None, Some(&operator)), Some(operator.to_vec()));
        assert!(warned("p"), "{:?}", files.warnings());
        // `replace` keeps only the roots inside those in force.
        write("p", "allowed_roots = [\"sub\", \"/\", \"../x\"]\nmode = \"replace\"\n");
        assert_eq!(roots("p", None, Some(&operator)), Some(vec![base.join("p/sub")]));
        // Without operator roots every directory is in force: a replace narrows.
        assert_eq!(
            roots("p", None, None),
            Some(vec![base.join("p/sub"), PathBuf::from("/"), base.join("x")])
        );
        // A nearer file narrows the default dir's further, never back out.
        write("p", "allowed_roots = [\"sub\"]\nmode = \"replace\"\n");
        write("p/deep", "allowed_roots = [\"..\"]\nmode = \"replace\"\n");
        assert_eq!(roots("p/deep", Some("p"), Some(&operator)), Some(vec![]));
        assert!(warned("p/deep"), "{:?}", files.warnings());
        // A file that narrows is honoured without a warning.
        assert_eq!(roots("p", None, Some(&operator)), Some(vec![base.join("p/sub")]));
        assert!(!warned("p"), "{:?}", files.warnings());
        std::fs::remove_dir_all(base).unwrap();
    }

    #[test]
    fn project_file_parsing() {
        let dir = std::env::temp_dir();
        let p = parse_project_file("allowed_roots = [\".\"]\nmode = \"replace\"", &dir).unwrap();
        assert_eq!(p.mode, Mode::Replace);
        assert_eq!(p.roots, vec![std::fs::canonicalize(&dir).unwrap()]);
        assert!(
            parse_project_file("mode = \"sideways\"", &dir)
                .unwrap_err()
                .contains("mode")
        );
        assert!(
            parse_project_file("allowed_roots = 3", &dir)
                .unwrap_err()
                .contains("allowed_roots")
        );
        assert!(parse_project_file("[[[", &dir).unwrap_err().contains("TOML"));
        assert!(parse_project_file("other = 1", &dir).unwrap_err().contains("other"));
    }
}
