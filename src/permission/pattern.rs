//! Rendering an analysis as one permission pattern.
//!
//! Grammar (`<tool>` is the tool name with `*?[]\` backslash-escaped):
//!
//! ```text
//! pattern  = <tool> ":" body
//! body     = word " *"                       one command family
//!          | "{" word ("," word)+ "} *"      several families, sorted, deduplicated
//!          | "{unknown}"                     opaque
//! word     = 1*( ALNUM / "_" / "." / "/" / "+" / "@" / "%" / ":" / "=" / "-" ) / "\["
//! ```
//!
//! A word never starts with `{` nor contains `,`, `{`, `}`, `*`, `?` or a space, so a
//! rule `<tool>:W *` or `<tool>:W` can only match the single-family pattern of `W`.

use std::collections::BTreeSet;

use super::Analysis;
use super::fnmatch::fnmatch_escape;

/// The body of the pattern given to every opaque command.
pub const OPAQUE_BODY: &str = "{unknown}";

/// The pattern for opaque commands of `tool`.
pub(crate) fn opaque_pattern(tool: &str) -> String {
    format!("{}:{OPAQUE_BODY}", fnmatch_escape(tool))
}

/// Renders `analysis` for `tool`.
pub(crate) fn render(tool: &str, analysis: &Analysis) -> String {
    if analysis.is_opaque() || analysis.parts.is_empty() {
        return opaque_pattern(tool);
    }
    let words: BTreeSet<String> = analysis
        .parts
        .iter()
        .map(|p| fnmatch_escape(&p.command_word))
        .collect();
    let tool = fnmatch_escape(tool);
    if words.len() == 1 {
        let word = words.into_iter().next().unwrap_or_default();
        format!("{tool}:{word} *")
    } else {
        let list: Vec<String> = words.into_iter().collect();
        format!("{tool}:{{{}}} *", list.join(","))
    }
}
