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

/// The scanner's state: a position in the text and the contexts open there.
struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    stack: Vec<Ctx>,
    /// Parentheses open now.
    parens: usize,
    /// The most parentheses open at once so far.
    max_parens: usize,
    /// The deepest nesting so far.
    max: usize,
    docs: Vec<HereDoc>,
    /// Here-documents whose operator was read and whose body has not begun, in order.
    pending: Vec<usize>,
    word_start: bool,
    line_start: bool,
    /// Consecutive prefix keywords (`! ! ! x`, `coproc coproc x`) just seen in code.
    prefixes: usize,
}

/// Upper bounds of the nesting depth of `b` and of its parenthesis nesting, following
/// its quoting contexts; one step per construct, each in a method of [`Scanner`].
fn scan(b: &[u8]) -> (usize, usize) {
    let mut s = Scanner {
        b,
        i: 0,
        stack: Vec::new(),
        parens: 0,
        max_parens: 0,
        max: 0,
        docs: Vec::new(),
        pending: Vec::new(),
        word_start: true,
        line_start: true,
        prefixes: 0,
    };
    while s.i < b.len() {
        s.max = s.max.max(s.stack.len() + s.prefixes);
        s.max_parens = s.max_parens.max(s.parens);
        if s.max > MAX_NESTING || s.max_parens > MAX_PAREN_NESTING {
            // Already too deep: the exact figure does not matter, and stopping here keeps
            // the stack (and every walk of it) short.
            return (s.max, s.max_parens);
        }
        match s.stack.last().copied() {
            Some(Ctx::Heredoc(d)) => s.heredoc_byte(d),
            top if !is_code(top.as_ref()) => s.quoted_byte(top),
            top => s.code_byte(top),
        }
    }
    (s.max.max(s.stack.len()), s.max_parens.max(s.parens))
}

impl Scanner<'_> {
    fn next_is(&self, c: u8) -> bool {
        self.b.get(self.i + 1) == Some(&c)
    }

    /// One step in the body of here-document `d`: its delimiter line closes it, an
    /// expanding body opens substitutions as double quotes do, and parentheses count
    /// in any body.
    fn heredoc_byte(&mut self, d: usize) {
        if self.line_start {
            if self.heredoc_ends(d) {
                return;
            }
            self.line_start = false;
        }
        let c = self.b[self.i];
        if c == b'(' {
            self.parens += 1;
            self.max_parens = self.max_parens.max(self.parens);
        } else if c == b')' && self.parens > paren_floor(&self.stack) {
            self.parens -= 1;
        }
        if c == b'\n' {
            self.line_start = true;
        } else if self.docs[d].expand && self.expansion(c) {
            return;
        }
        self.i += 1;
    }

    /// At the start of a line of here-document `d`: whether the line is its
    /// delimiter, and if so closes it (starting the next pending one).
    fn heredoc_ends(&mut self, d: usize) -> bool {
        let (b, i) = (self.b, self.i);
        let end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p);
        let mut line = &b[i..end];
        if self.docs[d].strip_tabs {
            while let [b'\t', rest @ ..] = line {
                line = rest;
            }
        }
        if line != self.docs[d].delim.as_slice() {
            return false;
        }
        self.stack.pop();
        self.i = end + 1;
        self.line_start = true;
        self.word_start = true;
        self.start_pending_heredoc();
        true
    }

    /// Enters the body of the first pending here-document, if any.
    fn start_pending_heredoc(&mut self) {
        if !self.pending.is_empty() {
            let next = self.pending.remove(0);
            self.stack.push(Ctx::Heredoc(next));
        }
    }

    /// One step inside double quotes, or inside `${` within them.
    fn quoted_byte(&mut self, top: Option<Ctx>) {
        let c = self.b[self.i];
        match c {
            b'"' if top == Some(Ctx::Dq) => {
                self.stack.pop();
            }
            b'"' => self.stack.push(Ctx::Dq),
            b'}' if top == Some(Ctx::DqParam) => {
                self.stack.pop();
            }
            _ => {
                if self.expansion(c) {
                    return;
                }
            }
        }
        self.i += 1;
    }

    /// A backslash escape or an opening substitution where double quotes expand
    /// (in them, in `${` within them, in an expanding here-document body): whether
    /// `c` is one, the position then moved past it.
    fn expansion(&mut self, c: u8) -> bool {
        match c {
            b'\\' => self.i += 2,
            b'$' if self.next_is(b'(') => {
                // One level, as in code: the `(` is skipped with the `$`, so a
                // here-document body's count has not seen it.
                self.stack.push(Ctx::Paren);
                self.parens += 1;
                self.i += 2;
                self.word_start = true;
            }
            b'$' if self.next_is(b'{') => {
                self.stack.push(Ctx::DqParam);
                self.i += 2;
            }
            b'`' => {
                self.stack.push(Ctx::Backquote);
                self.word_start = true;
                self.i += 1;
            }
            _ => return false,
        }
        true
    }

    /// One step of code: quoting, comments and here-document operators skip ahead;
    /// openers and closers move the stack; words are checked for keywords.
    fn code_byte(&mut self, top: Option<Ctx>) {
        let c = self.b[self.i];
        if self.skip_quoted(c) || self.comment_or_heredoc(c) {
            return;
        }
        self.open_or_close(c, top);
        if self.word_start && c == b'!' && self.b.get(self.i + 1).is_none_or(|n| is_word_break(*n)) {
            self.prefixes += 1;
            self.i += 1;
            self.word_start = true;
            return;
        }
        if self.word_start && c.is_ascii_alphabetic() {
            self.word(top);
            return;
        }
        self.word_start = is_word_break(c);
        self.i += 1;
    }

    /// A backslash escape, single quotes or `$'...'` in code: whether `c` opens
    /// one, the position then moved past it (nothing inside them nests).
    fn skip_quoted(&mut self, c: u8) -> bool {
        let (b, i) = (self.b, self.i);
        match c {
            b'\\' => self.i += 2,
            b'\'' => {
                self.i = b[i + 1..]
                    .iter()
                    .position(|&x| x == b'\'')
                    .map_or(b.len(), |p| i + 1 + p + 1);
            }
            b'$' if self.next_is(b'\'') => {
                let mut j = i + 2;
                while j < b.len() && b[j] != b'\'' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                self.i = j + 1;
            }
            _ => return false,
        }
        self.word_start = false;
        true
    }

    /// A comment, a here-document operator, or the end of a line that starts a
    /// pending here-document body: whether `c` is one, the position then moved
    /// past it.
    fn comment_or_heredoc(&mut self, c: u8) -> bool {
        let b = self.b;
        match c {
            b'#' if self.word_start => {
                while self.i < b.len() && b[self.i] != b'\n' {
                    self.i += 1;
                }
            }
            b'<' if self.next_is(b'<') && b.get(self.i + 2) != Some(&b'<') => {
                self.i = heredoc_operator(b, self.i + 2, &mut self.docs, &mut self.pending);
                self.word_start = true;
            }
            b'\n' if !self.pending.is_empty() => {
                self.start_pending_heredoc();
                self.line_start = true;
                self.i += 1;
            }
            _ => return false,
        }
        true
    }

    /// Quotes, backquotes, parentheses, braces and brackets opened or closed in code.
    fn open_or_close(&mut self, c: u8, top: Option<Ctx>) {
        match c {
            b'"' => self.stack.push(Ctx::Dq),
            b'`' => {
                if top == Some(Ctx::Backquote) {
                    self.stack.pop();
                } else {
                    self.stack.push(Ctx::Backquote);
                }
            }
            b'(' => {
                self.stack.push(Ctx::Paren);
                self.parens += 1;
            }
            b')' if top == Some(Ctx::Paren) => {
                self.stack.pop();
                self.parens -= 1;
            }
            b'{' => self.stack.push(Ctx::Brace),
            b'}' if top == Some(Ctx::Brace) => {
                self.stack.pop();
            }
            b'[' => self.stack.push(Ctx::Bracket),
            b']' if top == Some(Ctx::Bracket) => {
                self.stack.pop();
            }
            _ => {}
        }
    }

    /// A word at the start of a word in code: prefix keywords count while they
    /// repeat, `if`, `case` and loops open a level their closing word ends.
    fn word(&mut self, top: Option<Ctx>) {
        let (b, i) = (self.b, self.i);
        let end = b[i..]
            .iter()
            .position(|x| !x.is_ascii_alphanumeric() && *x != b'_')
            .map_or(b.len(), |p| i + p);
        if is_prefix_keyword(&b[i..end]) {
            self.prefixes += 1;
        } else {
            self.prefixes = 0;
        }
        match &b[i..end] {
            b"if" => self.stack.push(Ctx::If),
            b"case" => self.stack.push(Ctx::Case),
            b"while" | b"until" | b"for" | b"select" => self.stack.push(Ctx::Loop),
            b"fi" if top == Some(Ctx::If) => {
                self.stack.pop();
            }
            b"esac" if top == Some(Ctx::Case) => {
                self.stack.pop();
            }
            b"done" if top == Some(Ctx::Loop) => {
                self.stack.pop();
            }
            _ => {}
        }
        self.word_start = false;
        self.i = end;
    }
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
