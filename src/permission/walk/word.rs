//! Turning one shell word into its text after quote removal, noting what it expands.

use std::panic::{AssertUnwindSafe, catch_unwind};

use brush_parser::ast::UnexpandedArithmeticExpr;
use brush_parser::word::{Parameter, ParameterExpr, ParameterTransformOp, WordPiece, WordPieceWithSource};

use super::parse::Walker;
use crate::permission::words::arg::{Arg, clip};
use crate::permission::words::arith::{decode_ansi_c, is_literal_arithmetic, is_plain_subscript};
use crate::permission::words::vars::is_risky_variable;

/// The text of a word as the shell sees it after decoding `$'...'` escapes and removing
/// quotes, with every expansion replaced by a placeholder: what bash would re-read if
/// the word were used as a variable name or arithmetic.
#[derive(Default)]
struct Decoded {
    text: String,
    /// A `$'...'` string contributed text.
    ansi_c: bool,
    /// The word as the expansion steps see it: unquoted text as written, every quoted
    /// character as [`QUOTED`] and every expansion as [`EXPANDED`]. Brace expansion,
    /// globbing and tilde expansion act on the unquoted characters of the whole word,
    /// whichever pieces they come from (`{"5",rm}`, `["-"]exec`).
    shape: String,
}

/// Stands for the value of an expansion in [`Decoded`] text.
const EXPANDED: char = '\u{1}';

/// Stands for a quoted character in [`Decoded::shape`].
const QUOTED: char = '\u{2}';

/// Resolves the word `value` (as written in the command), analysing its substitutions.
pub(crate) fn resolve(value: &str, w: &mut Walker) -> Arg {
    let mut arg = Arg {
        literal: true,
        ..Arg::default()
    };
    let options = &w.options;
    match catch_unwind(AssertUnwindSafe(|| brush_parser::word::parse(value, options))) {
        Ok(Ok(pieces)) => {
            let mut decoded = Decoded::default();
            pieces_into(&pieces, value, false, w, &mut arg, &mut decoded);
            if expands_in_shape(&decoded.shape) {
                arg.literal = false;
            }
            let d = &decoded.text;
            if d.contains('[') && (d.contains("$(") || d.contains('`') || (decoded.ansi_c && d.contains('\\'))) {
                w.opaque(
                    format!(
                        "`{}` holds a subscript with code, which bash runs when the text is used as a name or arithmetic",
                        clip(value)
                    ),
                    Vec::new(),
                );
            }
        }
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
        Ok(Ok(pieces)) => pieces_into(&pieces, body, true, w, &mut arg, &mut Decoded::default()),
        _ => {
            w.opaque("a here-document body could not be parsed".into(), Vec::new());
            arg.text = body.to_owned();
            arg.literal = false;
        }
    }
    arg
}

fn pieces_into(
    pieces: &[WordPieceWithSource],
    src: &str,
    quoted: bool,
    w: &mut Walker,
    arg: &mut Arg,
    decoded: &mut Decoded,
) {
    let bash_only = w.dialect.bash_only_is_opaque();
    for p in pieces {
        let source = src.get(p.start_index..p.end_index).unwrap_or("");
        match &p.piece {
            WordPiece::Text(s) => text_piece(s, quoted, bash_only, w, arg, decoded),
            WordPiece::SingleQuotedText(s) => {
                arg.text.push_str(s);
                decoded.text.push_str(s);
                push_shape(decoded, s, true);
            }
            WordPiece::AnsiCQuotedText(s) => {
                if s.contains('\\') {
                    arg.literal = false;
                }
                if bash_only {
                    w.opaque(
                        format!("`$'{}'` quoting is bash-only: sh reads it differently", clip(s)),
                        Vec::new(),
                    );
                }
                arg.text.push_str(s);
                decoded.text.push_str(&decode_ansi_c(s));
                decoded.ansi_c = true;
                push_shape(decoded, s, true);
            }
            WordPiece::DoubleQuotedSequence(inner) => pieces_into(inner, src, true, w, arg, decoded),
            WordPiece::GettextDoubleQuotedSequence(inner) => {
                arg.literal = false;
                if bash_only {
                    w.opaque(
                        "`$\"...\"` quoting is bash-only: sh reads it differently".into(),
                        Vec::new(),
                    );
                }
                pieces_into(inner, src, true, w, arg, decoded);
            }
            WordPiece::TildeExpansion(_) => expansion(source, arg, decoded),
            WordPiece::ParameterExpansion(expr) => parameter_piece(expr, source, bash_only, w, arg, decoded),
            WordPiece::CommandSubstitution(code) | WordPiece::BackquotedCommandSubstitution(code) => {
                let words = w.substitution(code);
                arg.inner.extend(words);
                expansion(source, arg, decoded);
            }
            WordPiece::EscapeSequence(s) => {
                let rest = s.strip_prefix('\\').unwrap_or(s);
                if rest != "\n" {
                    arg.text.push_str(rest);
                    decoded.text.push_str(rest);
                    push_shape(decoded, rest, true);
                }
            }
            WordPiece::ArithmeticExpression(e) => arithmetic_piece(e, source, bash_only, w, arg, decoded),
        }
    }
}

/// Unquoted or double-quoted text: opaque when it holds an expansion the parser
/// left unparsed or an extended glob where bash-only constructs are opaque.
fn text_piece(s: &str, quoted: bool, bash_only: bool, w: &mut Walker, arg: &mut Arg, decoded: &mut Decoded) {
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
    if bash_only && !quoted && s.contains('(') {
        w.opaque(
            format!("`{}` is an extended glob, a bash-only construct", clip(s)),
            Vec::new(),
        );
    }
    arg.text.push_str(s);
    decoded.text.push_str(s);
    push_shape(decoded, s, quoted);
}

/// A parameter expansion (`$x`, `${x:-y}`): never literal, and opaque when it
/// hides a substitution or expands a value as a prompt.
fn parameter_piece(
    expr: &ParameterExpr,
    source: &str,
    bash_only: bool,
    w: &mut Walker,
    arg: &mut Arg,
    decoded: &mut Decoded,
) {
    expansion(source, arg, decoded);
    if let Some(reason) = parameter_hazard(expr, source, bash_only) {
        w.opaque(reason, Vec::new());
    }
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
}

/// An arithmetic expansion (`$((...))`): never literal, and opaque unless it is
/// literal arithmetic.
fn arithmetic_piece(
    e: &UnexpandedArithmeticExpr,
    source: &str,
    bash_only: bool,
    w: &mut Walker,
    arg: &mut Arg,
    decoded: &mut Decoded,
) {
    expansion(source, arg, decoded);
    if e.value.contains("$(") || e.value.contains('`') {
        w.opaque(
            format!("a command substitution inside arithmetic `{}`", clip(source)),
            Vec::new(),
        );
    } else if !is_literal_arithmetic(&e.value) {
        w.opaque(
            format!(
                "the arithmetic `{}` reads variables, whose values bash evaluates as code",
                clip(source)
            ),
            Vec::new(),
        );
    }
    if bash_only && source.starts_with("$[") {
        w.opaque("`$[...]` arithmetic is bash-only".into(), Vec::new());
    }
}

/// An expansion written as `source`: the word is not literal, and its value
/// stands as [`EXPANDED`] in the decoded text and shape.
fn expansion(source: &str, arg: &mut Arg, decoded: &mut Decoded) {
    arg.literal = false;
    arg.text.push_str(source);
    decoded.text.push(EXPANDED);
    decoded.shape.push(EXPANDED);
}

/// The parameter and indirection flag of a parameter expansion, if it has one.
fn parameter_of(expr: &ParameterExpr) -> Option<(&Parameter, bool)> {
    use ParameterExpr as P;
    match expr {
        P::Parameter { parameter, indirect }
        | P::UseDefaultValues {
            parameter, indirect, ..
        }
        | P::AssignDefaultValues {
            parameter, indirect, ..
        }
        | P::IndicateErrorIfNullOrUnset {
            parameter, indirect, ..
        }
        | P::UseAlternativeValue {
            parameter, indirect, ..
        }
        | P::ParameterLength { parameter, indirect }
        | P::RemoveSmallestSuffixPattern {
            parameter, indirect, ..
        }
        | P::RemoveLargestSuffixPattern {
            parameter, indirect, ..
        }
        | P::RemoveSmallestPrefixPattern {
            parameter, indirect, ..
        }
        | P::RemoveLargestPrefixPattern {
            parameter, indirect, ..
        }
        | P::Substring {
            parameter, indirect, ..
        }
        | P::Transform {
            parameter, indirect, ..
        }
        | P::UppercaseFirstChar {
            parameter, indirect, ..
        }
        | P::UppercasePattern {
            parameter, indirect, ..
        }
        | P::LowercaseFirstChar {
            parameter, indirect, ..
        }
        | P::LowercasePattern {
            parameter, indirect, ..
        }
        | P::ReplaceSubstring {
            parameter, indirect, ..
        } => Some((parameter, *indirect)),
        P::VariableNames { .. } | P::MemberKeys { .. } => None,
    }
}

/// Why a parameter expansion can run code or means something else outside bash.
fn parameter_hazard(expr: &ParameterExpr, source: &str, bash_only: bool) -> Option<String> {
    use ParameterExpr as P;
    let shown = clip(source);
    let param = parameter_of(expr);
    if let Some((_, true)) = param {
        return Some(format!(
            "`{shown}` expands the variable named by a value, which bash may evaluate as code"
        ));
    }
    if let Some((Parameter::NamedWithIndex { index, .. }, _)) = param
        && !is_plain_subscript(index)
    {
        return Some(format!(
            "the subscript in `{shown}` is evaluated as arithmetic, which runs code hidden in variables"
        ));
    }
    if let P::Substring { offset, length, .. } = expr
        && (!is_literal_arithmetic(&offset.value) || length.as_ref().is_some_and(|l| !is_literal_arithmetic(&l.value)))
    {
        return Some(format!(
            "the offset in `{shown}` is evaluated as arithmetic, which runs code hidden in variables"
        ));
    }
    if let P::AssignDefaultValues {
        parameter:
            Parameter::Named(name) | Parameter::NamedWithIndex { name, .. } | Parameter::NamedWithAllIndices { name, .. },
        ..
    } = expr
        && is_risky_variable(name)
    {
        return Some(format!("`{shown}` may set {name}, which changes what runs"));
    }
    if bash_only {
        let posix = matches!(
            expr,
            P::Parameter { .. }
                | P::UseDefaultValues { .. }
                | P::AssignDefaultValues { .. }
                | P::IndicateErrorIfNullOrUnset { .. }
                | P::UseAlternativeValue { .. }
                | P::ParameterLength { .. }
                | P::RemoveSmallestSuffixPattern { .. }
                | P::RemoveLargestSuffixPattern { .. }
                | P::RemoveSmallestPrefixPattern { .. }
                | P::RemoveLargestPrefixPattern { .. }
        ) && matches!(
            param,
            Some((
                Parameter::Positional(_) | Parameter::Special(_) | Parameter::Named(_),
                _
            ))
        );
        if !posix {
            return Some(format!("`{shown}` is a bash-only expansion"));
        }
        if source.contains(['\'', '"']) {
            return Some(format!("quotes inside `{shown}` are read differently by bash and sh"));
        }
    }
    None
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

/// Adds `s` to the shape of the word: as written when unquoted, one [`QUOTED`] per
/// character otherwise.
fn push_shape(decoded: &mut Decoded, s: &str, quoted: bool) {
    if quoted {
        decoded.shape.extend(s.chars().map(|_| QUOTED));
    } else {
        decoded.shape.push_str(s);
    }
}

/// Whether some expansion of bash or a POSIX sh may turn the word of this shape into
/// other text or into several words, judged on its unquoted characters wherever they
/// come from: a glob character (`*`, `?`, `[` with anything after it, an extended
/// glob's `(`), a brace expansion (an unquoted `{`, then an unquoted `,` or `.`, then an
/// unquoted `}`), or a tilde that bash expands (at the start or after an unquoted `=` or
/// `:`). Erring towards "may" keeps the analysis closed: such a word is never used to
/// decide what runs.
pub(crate) fn expands_in_shape(shape: &str) -> bool {
    let chars: Vec<char> = shape.chars().collect();
    if chars.iter().any(|c| matches!(c, '*' | '?' | '(')) {
        return true;
    }
    if let Some(open) = chars.iter().position(|c| *c == '[')
        && open + 1 < chars.len()
    {
        return true;
    }
    for (i, c) in chars.iter().enumerate() {
        if *c == '~' && (i == 0 || matches!(chars[i - 1], '=' | ':')) {
            return true;
        }
    }
    brace_expands(&chars)
}

/// An unquoted `{` followed by an unquoted `,` or `.` and later an unquoted `}`.
fn brace_expands(chars: &[char]) -> bool {
    let mut open = false;
    let mut separated = false;
    for c in chars {
        match c {
            '{' => open = true,
            ',' | '.' if open => separated = true,
            '}' if open && separated => return true,
            _ => {}
        }
    }
    false
}
