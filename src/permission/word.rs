//! Turning one shell word into its text after quote removal, noting what it expands.

use std::panic::{AssertUnwindSafe, catch_unwind};

use brush_parser::word::{ParameterExpr, ParameterTransformOp, WordPiece, WordPieceWithSource};

use super::parse::Walker;

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
}

/// Resolves the word `value` (as written in the command), analysing its substitutions.
pub(crate) fn resolve(value: &str, w: &mut Walker) -> Arg {
    let mut arg = Arg {
        literal: true,
        ..Arg::default()
    };
    let options = &w.options;
    match catch_unwind(AssertUnwindSafe(|| brush_parser::word::parse(value, options))) {
        Ok(Ok(pieces)) => pieces_into(&pieces, value, false, w, &mut arg),
        _ => {
            w.opaque(
                format!("the shell word `{}` could not be parsed", clip(value)),
                Vec::new(),
            );
            arg.text = value.to_owned();
            arg.literal = false;
        }
    }
    arg
}

/// Resolves a here-document body whose delimiter was unquoted (so it is expanded).
pub(crate) fn resolve_heredoc(body: &str, w: &mut Walker) -> Arg {
    let mut arg = Arg {
        literal: true,
        ..Arg::default()
    };
    let options = &w.options;
    match catch_unwind(AssertUnwindSafe(|| brush_parser::word::parse_heredoc(body, options))) {
        Ok(Ok(pieces)) => pieces_into(&pieces, body, true, w, &mut arg),
        _ => {
            w.opaque("a here-document body could not be parsed".into(), Vec::new());
            arg.text = body.to_owned();
            arg.literal = false;
        }
    }
    arg
}

/// At most 60 characters of `s`, for messages.
pub(crate) fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(60).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

fn pieces_into(pieces: &[WordPieceWithSource], src: &str, quoted: bool, w: &mut Walker, arg: &mut Arg) {
    for p in pieces {
        let source = src.get(p.start_index..p.end_index).unwrap_or("");
        match &p.piece {
            WordPiece::Text(s) => {
                if ["$(", "${", "$[", "`", "<(", ">("].iter().any(|m| s.contains(m)) {
                    w.opaque(
                        format!("an expansion the parser left unparsed in `{}`", clip(s)),
                        Vec::new(),
                    );
                    arg.literal = false;
                }
                if !quoted && expands_unquoted(s) {
                    arg.literal = false;
                }
                arg.text.push_str(s);
            }
            WordPiece::SingleQuotedText(s) => arg.text.push_str(s),
            WordPiece::AnsiCQuotedText(s) => {
                if s.contains('\\') {
                    arg.literal = false;
                }
                arg.text.push_str(s);
            }
            WordPiece::DoubleQuotedSequence(inner) => pieces_into(inner, src, true, w, arg),
            WordPiece::GettextDoubleQuotedSequence(inner) => {
                arg.literal = false;
                pieces_into(inner, src, true, w, arg);
            }
            WordPiece::TildeExpansion(_) => {
                arg.literal = false;
                arg.text.push_str(source);
            }
            WordPiece::ParameterExpansion(expr) => {
                arg.literal = false;
                if ["$(", "`", "<(", ">("].iter().any(|m| source.contains(m)) {
                    w.opaque(
                        format!(
                            "a command substitution inside the parameter expansion `{}`",
                            clip(source)
                        ),
                        Vec::new(),
                    );
                }
                if matches!(
                    expr,
                    ParameterExpr::Transform {
                        op: ParameterTransformOp::PromptExpand,
                        ..
                    }
                ) {
                    w.opaque(
                        format!("`{}` expands a value as a prompt, which runs code", clip(source)),
                        Vec::new(),
                    );
                }
                arg.text.push_str(source);
            }
            WordPiece::CommandSubstitution(code) | WordPiece::BackquotedCommandSubstitution(code) => {
                arg.literal = false;
                let words = w.substitution(code);
                arg.inner.extend(words);
                arg.text.push_str(source);
            }
            WordPiece::EscapeSequence(s) => {
                let rest = s.strip_prefix('\\').unwrap_or(s);
                if rest != "\n" {
                    arg.text.push_str(rest);
                }
            }
            WordPiece::ArithmeticExpression(e) => {
                arg.literal = false;
                if e.value.contains("$(") || e.value.contains('`') {
                    w.opaque(
                        format!("a command substitution inside arithmetic `{}`", clip(source)),
                        Vec::new(),
                    );
                }
                arg.text.push_str(source);
            }
        }
    }
}

/// Whether unquoted text is subject to pathname or brace expansion.
fn expands_unquoted(s: &str) -> bool {
    if s.contains('*') || s.contains('?') || s.contains('(') {
        return true;
    }
    if let Some(open) = s.find('[')
        && s[open + 1..].contains(']')
    {
        return true;
    }
    if let Some(open) = s.find('{') {
        let rest = &s[open..];
        if rest.contains('}') && (rest.contains(',') || rest.contains("..")) {
            return true;
        }
    }
    false
}
