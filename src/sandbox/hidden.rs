//! Places no sandboxed command may see: the directories where bash-mcp
//! servers offer their sessions to `bash-mcp attach` (this user's, of this
//! server and of every other). A command that could connect there could
//! type into a session that runs outside its sandbox, or plant a fake one
//! for a person to type a password into. bubblewrap puts an empty,
//! read-only tmpfs over each; the servers' check of every peer holds on
//! every backend (see the session module's attach `peer`).

use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;

use super::plan::Plan;

/// The attach directories to cover in a sandbox of `plan`: each that is a
/// real directory on the host and visible inside (the sandbox's own `/tmp`
/// hides those under it already, unless a root or the working dir bound
/// over it holds them). The one servers choose is made first (mode
/// 0700) if missing, so a sandbox started before any server had sessions
/// hides it too; a directory is never removed while a sandbox may cover
/// it, since its removal would take the cover with it.
pub fn attach_dirs(plan: &Plan) -> Vec<PathBuf> {
    let chosen = crate::process::ids::attach_dir();
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&chosen);
    crate::process::ids::attach_dirs()
        .into_iter()
        .filter(|dir| !dir.starts_with("/tmp") || plan.host_path_at(dir))
        .filter(|dir| std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()))
        .collect()
}
