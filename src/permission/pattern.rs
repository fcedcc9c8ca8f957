//! Rendering an analysis as one permission pattern.
//!
//! Grammar:
//!
//! ```text
//! pattern  = <tool> ":" body               <tool> verbatim (an MCP tool name)
//! body     = word " *"                       one command family
//!          | "{" word ("," word)+ "} *"      several families, sorted, deduplicated
//!          | "{unknown}"                     opaque
//! word     = 1*( ALNUM / "_" / "." / "/" / "+" / "@" / "%" / ":" / "=" / "-" )
//! ```
//!
//! A word never starts with `{` nor contains `,`, `{`, `}`, `*`, `?`, `[`, `\\` or a
//! space, so a rule `<tool>:W *` or `<tool>:W` can only match the single-family pattern of
//! `W`, and every pattern matches itself under fnmatch (nothing in it needs escaping:
//! an escaped pattern would not match its own text). Command words with any other
//! character are opaque.

use std::collections::BTreeSet;

use super::Analysis;

/// The body of the pattern given to every opaque command.
pub const OPAQUE_BODY: &str = "{unknown}";

/// The pattern for opaque commands of `tool`.
pub(crate) fn opaque_pattern(tool: &str) -> String {
    format!("{tool}:{OPAQUE_BODY}")
}

/// Renders `analysis` for `tool`.
pub(crate) fn render(tool: &str, analysis: &Analysis) -> String {
    if analysis.is_opaque() || analysis.parts.is_empty() {
        return opaque_pattern(tool);
    }
    let words: BTreeSet<&str> = analysis.parts.iter().map(|p| p.command_word.as_str()).collect();
    if words.len() == 1 {
        let word = words.into_iter().next().unwrap_or_default();
        format!("{tool}:{word} *")
    } else {
        let list: Vec<&str> = words.into_iter().collect();
        format!("{tool}:{{{}}} *", list.join(","))
    }
}
