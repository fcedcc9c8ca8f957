//! The permission gate the binary puts in front of every call.
//!
//! Enforcement sits behind [`bash_mcp::mcp::Gate`]: [`build`] turns the
//! settings into a gate the MCP handler (and `exec`) consults before a tool
//! runs, and a refusal reaches the model as a result with
//! `error: "permission_denied"`, a message and a hint.
//!
//! What remains: the policy itself lives in the library's `permission`
//! module (`PermissionPolicy::new(allow, deny)`, `decide` → Allow / Deny /
//! Ask, `explain`, `classify` → safe / dangerous / catastrophic,
//! `permission_pattern`), which is not part of this build yet. Once it is,
//! this file becomes: Deny → refuse with `explain`; Ask → refuse with a
//! readable message (stdio has no approval UI) unless the policy is empty,
//! then allow; and, while `refuse_catastrophic` is on, refuse what
//! `classify` calls catastrophic unless an allow rule names it. Until then
//! the binary fails closed: a configuration with permission rules is
//! refused at startup rather than served without them.

use std::sync::Arc;

use bash_mcp::mcp::Gate;

use super::settings::Settings;

const MISSING: &str = "this build of bash-mcp has no permission module";

/// The gate for these settings.
pub fn build(settings: &Settings) -> Result<Option<Arc<dyn Gate>>, String> {
    if let Some(rules) = &settings.permissions
        && !(rules.allow.is_empty() && rules.deny.is_empty())
    {
        return Err(format!(
            "the configuration has permission rules, but {MISSING}: refusing to run without them (remove `permissions` to run unrestricted)"
        ));
    }
    if settings.refuse_catastrophic {
        tracing::warn!("refuse_catastrophic is on, but {MISSING}; commands are not classified");
    }
    Ok(None)
}

/// `bash-mcp pattern`.
pub fn pattern(_command: &str) -> Result<String, String> {
    Err(format!("{MISSING}, so it cannot compute permission patterns"))
}

/// `bash-mcp classify`.
pub fn classify(_command: &str) -> Result<String, String> {
    Err(format!("{MISSING}, so it cannot classify commands"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::args::Common;
    use crate::cli::settings::{self, Permissions};

    #[test]
    fn fails_closed_on_rules_it_cannot_enforce() {
        let mut s = settings::load(&Common::default()).unwrap();
        assert!(build(&s).unwrap().is_none());
        s.permissions = Some(Permissions::default());
        assert!(build(&s).unwrap().is_none(), "an empty policy needs no module");
        s.permissions = Some(Permissions {
            allow: vec![],
            deny: vec!["bash.execute(rm *)".into()],
        });
        assert!(build(&s).err().unwrap().contains("refusing to run"));
    }
}
