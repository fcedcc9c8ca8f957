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

/// Checks a working directory: converts Windows paths under WSL, resolves it
/// against `base` when relative, and requires an existing directory.
/// Returns the absolute path (symlinks not resolved).
pub(crate) fn existing_dir(dir: &Path, base: Option<&Path>) -> Result<PathBuf, ToolError> {
    let hint = "pass an existing directory (absolute, or relative to the server's working directory)";
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
    let absolute = std::path::absolute(&joined).unwrap_or(joined);
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
    // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
    if unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), libc::X_OK, libc::AT_EACCESS) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
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

/// The process-wide cache of per-project files.
static PROJECT_FILES: LazyLock<ProjectFiles> = LazyLock::new(ProjectFiles::default);

/// Problems found in per-project files so far (ignored, fail-soft).
pub fn project_file_warnings() -> Vec<String> {
    PROJECT_FILES.warnings()
}

/// An existing directory that the roots in force allow (`allowed_roots`,
/// combined with the nearest `.bash-mcp.toml` when `project_config`). When
/// roots apply, the resolved path is returned, so a symlink swapped after the
/// check changes nothing.
pub(crate) fn confined_dir(
    dir: &Path,
    base: Option<&Path>,
    allowed_roots: Option<&[PathBuf]>,
    project_config: bool,
) -> Result<PathBuf, ToolError> {
    let absolute = existing_dir(dir, base)?;
    if allowed_roots.is_none() && !project_config {
        return Ok(absolute);
    }
    let resolved = resolve(&absolute)?;
    let in_force = if project_config {
        PROJECT_FILES.effective_roots(&resolved, allowed_roots)
    } else {
        allowed_roots.map(<[PathBuf]>::to_vec)
    };
    match in_force {
        Some(roots) => {
            confine(&absolute, &resolved, &roots)?;
            Ok(resolved)
        }
        None => Ok(absolute),
    }
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
}

impl ProjectFiles {
    /// The roots in force for `dir` (already resolved): the operator's
    /// `global` roots combined with the nearest project file, if any.
    fn effective_roots(&self, dir: &Path, global: Option<&[PathBuf]>) -> Option<Vec<PathBuf>> {
        let Some((file, project)) = self.nearest(dir) else {
            return global.map(<[PathBuf]>::to_vec);
        };
        match (project.mode, global) {
            (Mode::Replace, _) => Some(project.roots),
            // Without operator roots every directory is allowed already.
            (Mode::Extend, None) => None,
            (Mode::Extend, Some(global)) => {
                tracing::debug!(file = %file.display(), "project file extends the allowed roots");
                Some(global.iter().cloned().chain(project.roots).collect())
            }
        }
    }

    /// Problems found in project files, for `status`.
    fn warnings(&self) -> Vec<String> {
        let cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out: Vec<String> = cache
            .iter()
            .filter_map(|(path, c)| c.parsed.as_ref().err().map(|e| format!("{}: {e}", path.display())))
            .collect();
        out.sort();
        out
    }

    fn nearest(&self, dir: &Path) -> Option<(PathBuf, ProjectFile)> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let mut current = Some(dir);
        for _ in 0..MAX_HOPS {
            let here = current?;
            let file = here.join(PROJECT_FILE);
            if let Ok(meta) = std::fs::metadata(&file) {
                return self.load(&file, &meta).map(|p| (file, p));
            }
            if home.as_deref() == Some(here) {
                return None;
            }
            current = here.parent();
        }
        None
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
        let parsed = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot be read: {e}"))
            .and_then(|text| parse_project_file(&text, folder));
        if let Err(problem) = &parsed {
            tracing::warn!(file = %file.display(), %problem, "ignoring project file; the operator's roots apply");
        }
        let result = parsed.as_ref().ok().cloned();
        cache.insert(file.to_path_buf(), Cached { stamp, parsed });
        result
    }
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
    fn windows_paths_convert_for_wsl() {
        assert_eq!(windows_to_wsl(r"C:\Users\x"), Some(PathBuf::from("/mnt/c/Users/x")));
        assert_eq!(windows_to_wsl("d:/src/app"), Some(PathBuf::from("/mnt/d/src/app")));
        assert_eq!(windows_to_wsl("C:"), Some(PathBuf::from("/mnt/c/")));
        assert_eq!(windows_to_wsl("/home/x"), None);
        assert_eq!(windows_to_wsl("C:relative"), None);
        assert_eq!(windows_to_wsl("ab:/x"), None);
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
