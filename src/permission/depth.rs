//! A cheap, linear, non-recursive estimate of how deeply shell text nests.
//!
//! The parser recurses once per nesting level, so text nested deeper than
//! [`MAX_NESTING`] is refused before it reaches the parser. The scanner follows the
//! shell's quoting contexts (single and double quotes, `$'...'`, backquotes, `$(`,
//! `${`, here-documents) with an explicit stack, so it uses constant native stack
//! whatever the input. Openers it cannot pair are never popped, so the estimate errs
//! upwards: over-estimating only makes a command opaque, never more trusted.

/// Deepest nesting (summed over nested re-parses) the analysis accepts.
pub const MAX_NESTING: usize = 48;

/// Deepest nesting of parentheses accepted in one text. The parser backtracks
/// exponentially on unclosed parentheses (`((((((((((((((x` takes seconds at 28), so
/// they get a much smaller budget than other constructs.
pub const MAX_PAREN_NESTING: usize = 12;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Paren,
    Brace,
    Bracket,
    Backquote,
    If,
    Case,
    Loop,
    /// Inside double quotes.
    Dq,
    /// `${` opened inside double quotes: like double quotes, closed by `}`.
    DqParam,
    /// A here-document body; index into the delimiter list.
    Heredoc(usize),
}

struct HereDoc {
    delim: Vec<u8>,
    strip_tabs: bool,
    expand: bool,
}

/// Returns upper bounds of the nesting depth of `text` and of its parenthesis nesting.
///
/// Quote-blind counting of every opener is an upper bound too, and is used first because
/// it is the cheapest: most commands have few openers at all.
pub(crate) fn nesting_depth(text: &str) -> (usize, usize) {
    let parens = text.bytes().filter(|b| *b == b'(').count();
    let openers = text
        .bytes()
        .filter(|b| matches!(b, b'{' | b'[' | b'`' | b'"' | b'!'))
        .count()
        + parens
        + keyword_count(text);
    if openers <= MAX_NESTING && parens <= MAX_PAREN_NESTING {
        return (openers, parens);
    }
    // Two estimates of parenthesis nesting that fail differently: the scanner can be
    // misled where its idea of quoting or here-documents differs from the parser's, the
    // quote-blind count by closing parentheses inside quotes. Take the larger.
    let (depth, scanned) = scan(text.as_bytes());
    (depth, scanned.max(quote_blind_parens(text.as_bytes())))
}

/// Deepest parenthesis nesting, ignoring all quoting.
fn quote_blind_parens(b: &[u8]) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for &c in b {
        match c {
            b'(' => {
                depth += 1;
                max = max.max(depth);
            }
            b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

fn keyword_count(text: &str) -> usize {
    text.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter(|w| {
            matches!(*w, "if" | "case" | "while" | "until" | "for" | "select") || is_prefix_keyword(w.as_bytes())
        })
        .count()
}

/// Words the parser recurses on when they are repeated before a command (`! ! x`,
/// `coproc coproc x`, `time time x`): each adds a level while it lasts.
fn is_prefix_keyword(w: &[u8]) -> bool {
    matches!(w, b"!" | b"coproc" | b"time" | b"function")
}

fn is_code(ctx: Option<&Ctx>) -> bool {
    !matches!(ctx, Some(Ctx::Dq) | Some(Ctx::DqParam) | Some(Ctx::Heredoc(_)))
}

fn is_word_break(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'{' | b'}' | b'`' | b'<' | b'>'
    )
}

fn scan(b: &[u8]) -> (usize, usize) {
    let mut stack: Vec<Ctx> = Vec::new();
    let mut parens = 0usize;
    let mut max_parens = 0usize;
    let mut docs: Vec<HereDoc> = Vec::new();
    let mut pending: Vec<usize> = Vec::new();
    let mut max = 0usize;
    let mut i = 0usize;
    let mut word_start = true;
    let mut line_start = true;
    // Consecutive prefix keywords (`! ! ! x`, `coproc coproc x`) just seen in code.
    let mut prefixes = 0usize;
    while i < b.len() {
        max = max.max(stack.len() + prefixes);
        max_parens = max_parens.max(parens);
        if max > MAX_NESTING || max_parens > MAX_PAREN_NESTING {
            // Already too deep: the exact figure does not matter, and stopping here keeps
            // the stack (and every walk of it) short.
            return (max, max_parens);
        }
        let top = stack.last().copied();
        if let Some(Ctx::Heredoc(d)) = top {
            if line_start {
                let end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p);
                let mut line = &b[i..end];
                if docs[d].strip_tabs {
                    while let [b'\t', rest @ ..] = line {
                        line = rest;
                    }
                }
                if line == docs[d].delim.as_slice() {
                    stack.pop();
                    i = end + 1;
                    line_start = true;
                    word_start = true;
                    if !pending.is_empty() {
                        let next = pending.remove(0);
                        stack.push(Ctx::Heredoc(next));
                    }
                    continue;
                }
                line_start = false;
            }
            let c = b[i];
            if c == b'(' {
                parens += 1;
                max_parens = max_parens.max(parens);
            } else if c == b')' && parens > paren_floor(&stack) {
                parens -= 1;
            }
            if c == b'\n' {
                line_start = true;
            } else if docs[d].expand {
                match c {
                    b'\\' => {
                        i += 2;
                        continue;
                    }
                    b'$' if matches!(b.get(i + 1), Some(b'(')) => {
                        // One level, as in double quotes and code: the `(` is skipped
                        // with the `$`, so the body's count above has not seen it.
                        stack.push(Ctx::Paren);
                        parens += 1;
                        i += 2;
                        word_start = true;
                        continue;
                    }
                    b'$' if matches!(b.get(i + 1), Some(b'{')) => {
                        stack.push(Ctx::DqParam);
                        i += 2;
                        continue;
                    }
                    b'`' => {
                        stack.push(Ctx::Backquote);
                        word_start = true;
                    }
                    _ => {}
                }
            }
            i += 1;
            continue;
        }
        let c = b[i];
        if !is_code(top.as_ref()) {
            // Double quotes, or `${` inside double quotes.
            match c {
                b'\\' => {
                    i += 2;
                    continue;
                }
                b'"' if top == Some(Ctx::Dq) => {
                    stack.pop();
                }
                b'"' => stack.push(Ctx::Dq),
                b'}' if top == Some(Ctx::DqParam) => {
                    stack.pop();
                }
                b'$' if matches!(b.get(i + 1), Some(b'(')) => {
                    stack.push(Ctx::Paren);
                    parens += 1;
                    i += 2;
                    word_start = true;
                    continue;
                }
                b'$' if matches!(b.get(i + 1), Some(b'{')) => {
                    stack.push(Ctx::DqParam);
                    i += 2;
                    continue;
                }
                b'`' => {
                    stack.push(Ctx::Backquote);
                    word_start = true;
                }
                _ => {}
            }
            i += 1;
            continue;
        }
        // Code context.
        match c {
            b'\\' => {
                i += 2;
                word_start = false;
                continue;
            }
            b'\'' => {
                i = b[i + 1..]
                    .iter()
                    .position(|&x| x == b'\'')
                    .map_or(b.len(), |p| i + 1 + p + 1);
                word_start = false;
                continue;
            }
            b'$' if matches!(b.get(i + 1), Some(b'\'')) => {
                let mut j = i + 2;
                while j < b.len() && b[j] != b'\'' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                i = j + 1;
                word_start = false;
                continue;
            }
            b'"' => stack.push(Ctx::Dq),
            b'`' => {
                if top == Some(Ctx::Backquote) {
                    stack.pop();
                } else {
                    stack.push(Ctx::Backquote);
                }
            }
            b'(' => {
                stack.push(Ctx::Paren);
                parens += 1;
            }
            b')' if top == Some(Ctx::Paren) => {
                stack.pop();
                parens -= 1;
            }
            b'{' => stack.push(Ctx::Brace),
            b'}' if top == Some(Ctx::Brace) => {
                stack.pop();
            }
            b'[' => stack.push(Ctx::Bracket),
            b']' if top == Some(Ctx::Bracket) => {
                stack.pop();
            }
            b'#' if word_start => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'<' if b.get(i + 1) == Some(&b'<') && b.get(i + 2) != Some(&b'<') => {
                i = heredoc_operator(b, i + 2, &mut docs, &mut pending);
                word_start = true;
                continue;
            }
            b'\n' if !pending.is_empty() => {
                let next = pending.remove(0);
                stack.push(Ctx::Heredoc(next));
                line_start = true;
                i += 1;
                continue;
            }
            _ => {}
        }
        if word_start && c == b'!' && b.get(i + 1).is_none_or(|n| is_word_break(*n)) {
            prefixes += 1;
            i += 1;
            word_start = true;
            continue;
        }
        if word_start && c.is_ascii_alphabetic() {
            let end = b[i..]
                .iter()
                .position(|x| !x.is_ascii_alphanumeric() && *x != b'_')
                .map_or(b.len(), |p| i + p);
            if is_prefix_keyword(&b[i..end]) {
                prefixes += 1;
            } else {
                prefixes = 0;
            }
            match &b[i..end] {
                b"if" => stack.push(Ctx::If),
                b"case" => stack.push(Ctx::Case),
                b"while" | b"until" | b"for" | b"select" => stack.push(Ctx::Loop),
                b"fi" if top == Some(Ctx::If) => {
                    stack.pop();
                }
                b"esac" if top == Some(Ctx::Case) => {
                    stack.pop();
                }
                b"done" if top == Some(Ctx::Loop) => {
                    stack.pop();
                }
                _ => {}
            }
            word_start = false;
            i = end;
            continue;
        }
        word_start = is_word_break(c);
        i += 1;
    }
    (max.max(stack.len()), max_parens.max(parens))
}

/// Parentheses opened by code contexts on the stack (a body's `)` never closes those).
fn paren_floor(stack: &[Ctx]) -> usize {
    stack.iter().filter(|c| **c == Ctx::Paren).count()
}

/// Reads the delimiter word after `<<` (at `i`) and records a pending here-document.
fn heredoc_operator(b: &[u8], mut i: usize, docs: &mut Vec<HereDoc>, pending: &mut Vec<usize>) -> usize {
    let strip_tabs = b.get(i) == Some(&b'-');
    if strip_tabs {
        i += 1;
    }
    while matches!(b.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    let mut delim = Vec::new();
    let mut quoted = false;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' | b'"' => {
                quoted = true;
                let end = b[i + 1..].iter().position(|&x| x == c).map_or(b.len(), |p| i + 1 + p);
                delim.extend_from_slice(&b[i + 1..end]);
                i = end + 1;
            }
            b'\\' => {
                quoted = true;
                if let Some(&n) = b.get(i + 1) {
                    delim.push(n);
                }
                i += 2;
            }
            _ if is_word_break(c) => break,
            _ => {
                delim.push(c);
                i += 1;
            }
        }
    }
    if !delim.is_empty() {
        docs.push(HereDoc {
            delim,
            strip_tabs,
            expand: !quoted,
        });
        pending.push(docs.len() - 1);
    }
    i.min(b.len())
}

#[cfg(test)]
mod tests {
    use super::scan;

    fn depth(s: &str) -> usize {
        scan(s.as_bytes()).0
    }

    fn too_deep(s: &str) -> bool {
        let (d, p) = scan(s.as_bytes());
        d > super::MAX_NESTING || p > super::MAX_PAREN_NESTING
    }

    #[test]
    fn counts_parenthesis_nesting() {
        assert_eq!(scan(b"((((a))))").1, 4);
        assert_eq!(scan("(a) ".repeat(100).as_bytes()).1, 1);
        assert_eq!(scan(b"echo '((((((' \\( $(a)").1, 1);
        assert!(scan("((".repeat(20).as_bytes()).1 > super::MAX_PAREN_NESTING);
        // Parentheses in a here-document body count too.
        assert!(scan(format!("cat <<E\n{}\nE\n", "(".repeat(20)).as_bytes()).1 > super::MAX_PAREN_NESTING);
    }

    #[test]
    fn counts_substitutions_and_keywords() {
        assert_eq!(depth("echo hi"), 0);
        assert_eq!(depth("echo $(echo $(echo))"), 2);
        assert_eq!(depth("if a; then if b; then c; fi; fi"), 2);
        assert_eq!(depth("echo '(((((('"), 0);
        assert_eq!(depth("echo \"((((\""), 1);
        assert_eq!(depth("echo \"$($(x))\""), 3);
        assert_eq!(depth("# (((((\necho"), 0);
        assert!(too_deep(&"$(".repeat(10_000)));
    }

    #[test]
    fn sequences_do_not_accumulate() {
        assert_eq!(depth(&"if a; then b; fi; ".repeat(1000)), 1);
        assert_eq!(depth(&"(a); ".repeat(1000)), 1);
        assert_eq!(depth(&"case x in a) b;; esac; ".repeat(100)), 1);
    }

    /// `depth` nested substitutions (`$(echo $(echo x))` is two).
    fn nested(depth: usize) -> String {
        format!("{}x{}", "$(echo ".repeat(depth), ")".repeat(depth))
    }

    /// Flat substitutions (one level each), enough that the quote-blind count
    /// is over the parenthesis budget and the scanner decides.
    fn padding() -> String {
        "$(true) ".repeat(super::MAX_PAREN_NESTING + 1)
    }

    #[test]
    fn a_substitution_in_a_here_document_nests_one_level() {
        for depth in [1, 5, super::MAX_PAREN_NESTING, super::MAX_PAREN_NESTING + 1] {
            let plain = format!("echo {} {}", nested(depth), padding());
            let in_doc = format!("cat <<E {}\n{}\nE\n", padding(), nested(depth));
            assert_eq!(scan(plain.as_bytes()).1, depth, "{plain}");
            assert_eq!(scan(in_doc.as_bytes()).1, depth, "{in_doc}");
        }
    }

    #[test]
    fn the_same_nesting_gives_the_same_pattern_in_a_here_document_and_an_argument() {
        use crate::permission::{OPAQUE_BODY, command_pattern};
        // At the limit both are read; one level deeper, both are opaque.
        for (depth, refused) in [
            (3, false),
            (super::MAX_PAREN_NESTING, false),
            (super::MAX_PAREN_NESTING + 1, true),
        ] {
            let plain = format!("echo {} {}", nested(depth), padding());
            let in_doc = format!("cat <<E {}\n{}\nE\n", padding(), nested(depth));
            for text in [plain, in_doc] {
                let pattern = command_pattern("bash.execute", &text);
                assert_eq!(pattern.ends_with(OPAQUE_BODY), refused, "{text}: {pattern}");
            }
        }
    }

    #[test]
    fn quotes_inside_substitutions_do_not_hide_openers() {
        // The single quotes sit inside double quotes within the substitution.
        let s = format!("\"$(echo \"'\" {} \"'\")\"", "{ ".repeat(100));
        assert!(too_deep(&s));
        // A here-document body with a lone quote does not hide the code after it.
        let s = format!("cat <<EOF\n'\nEOF\n{}", "{ ".repeat(100));
        assert!(too_deep(&s));
        // Fake closers in quotes do not reduce the count.
        let s = "$(echo \")\" ".repeat(100);
        assert!(too_deep(&s));
    }
}
