//! One word of a command after quote removal, as the stages after the parser
//! see it, and the clipping of text for messages. Apart from `word.rs` (which
//! makes them), so that the stages that only read words do not depend on the
//! word resolver and, through it, on the parser.

/// One word of a command after quote removal.
#[derive(Clone, Debug, Default)]
pub(crate) struct Arg {
    /// The text with quoting removed; expansions are kept as written (`$HOME`, `$(date)`).
    pub text: String,
    /// True when the text is exactly what the shell will pass: no expansion, glob or
    /// brace expansion can change it.
    pub literal: bool,
    /// Command words run by substitutions inside this word.
    pub inner: Vec<String>,
    /// The word is an array assignment `name=(...)` written as such (not quoted or
    /// produced by an expansion).
    pub compound: bool,
}

/// At most 60 characters of `s`, for messages.
pub(crate) fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(60).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}
