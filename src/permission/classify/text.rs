//! Whole-command rules that read the text itself: top-level pipelines (`curl x |
//! python3`), text without whitespace, and fork bombs under any function name.

use super::super::wrappers::unwrap::basename;
use super::super::{Part, analyze};
use super::rules::Rule;

/// Whether the interpreter part reads its program from standard input: no operand, or
/// `-` as the first operand.
pub(super) fn reads_code_from_stdin(part: &Part) -> bool {
    match part
        .args
        .iter()
        .skip(1)
        .find(|a| !a.starts_with('-') || a.as_str() == "-")
    {
        None => true,
        Some(a) => a == "-",
    }
}

/// Where a byte of shell text stands, as a scan from the start sees it.
pub(super) enum Byte {
    /// A quote mark, or a byte between quotes.
    Quoted,
    /// A backslash outside single quotes: the next byte is taken literally.
    Escape,
    /// Any other byte: one the shell reads as syntax.
    Plain,
}

/// The quoting state of an approximate left-to-right scan of shell text.
#[derive(Default)]
pub(super) struct Quotes {
    single: bool,
    double: bool,
}

impl Quotes {
    /// Takes the next byte `c` and says where it stands.
    pub(super) fn take(&mut self, c: u8) -> Byte {
        if self.single {
            self.single = c != b'\'';
            Byte::Quoted
        } else if c == b'\\' {
            Byte::Escape
        } else if self.double {
            self.double = c != b'"';
            Byte::Quoted
        } else if c == b'\'' || c == b'"' {
            (self.single, self.double) = (c == b'\'', c == b'"');
            Byte::Quoted
        } else {
            Byte::Plain
        }
    }
}

/// The top-level pipelines of `text`: split at `;`, `&`, `&&`, `||` and newlines outside
/// quotes, parentheses and braces. Approximate (advisory use only).
pub(super) fn pipelines(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let (mut depth, mut start, mut i) = (0i32, 0, 0);
    let mut quotes = Quotes::default();
    while i < b.len() {
        let c = b[i];
        match quotes.take(c) {
            Byte::Escape => i += 1,
            Byte::Quoted => {}
            Byte::Plain => match c {
                b'(' | b'{' => depth += 1,
                b')' | b'}' => depth -= 1,
                b';' | b'\n' if depth <= 0 => {
                    out.push(&text[start..i]);
                    start = i + 1;
                }
                b'&' | b'|' if depth <= 0 => {
                    let pair = b.get(i + 1) == Some(&c);
                    if c == b'&' && b.get(i + 1) == Some(&b'>') {
                        // `&>` redirection
                    } else if c == b'&' && i > 0 && matches!(b[i - 1], b'>' | b'<') {
                        // `>&2`
                    } else if pair || c == b'&' {
                        out.push(&text[start..i]);
                        i += usize::from(pair);
                        start = i + 1;
                    }
                }
                _ => {}
            },
        }
        i += 1;
    }
    out.push(&text[start.min(text.len())..]);
    out
}

/// `text` with all whitespace removed (what `raw` rules match); ASCII text byte by byte.
pub(super) fn without_whitespace(text: &str) -> String {
    if text.is_ascii() {
        let bytes: Vec<u8> = text
            .bytes()
            .filter(|b| !b.is_ascii_whitespace() && *b != 0x0b)
            .collect();
        // Only ASCII bytes were kept out of ASCII text.
        return String::from_utf8(bytes).unwrap_or_default();
    }
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// A function definition that calls itself twice with `|` or `&` in its body: a fork
/// bomb under any name.
pub(super) fn has_fork_bomb(text: &str) -> bool {
    let is_name = |c: char| c.is_ascii_alphanumeric() || "_:.-".contains(c);
    if !text.contains('{') {
        return false;
    }
    // The next `}` at or after each byte, computed once (linear).
    let mut next_close = vec![text.len(); text.len() + 1];
    for (i, b) in text.bytes().enumerate().rev() {
        next_close[i] = if b == b'}' { i } else { next_close[i + 1] };
    }
    let mut definitions = 0;
    for (open, _) in text.match_indices('{') {
        let before = text[..open].trim_end();
        let head = before.strip_suffix("()").map(str::trim_end).unwrap_or(before);
        let name_start = head
            .char_indices()
            .rev()
            .find(|(_, c)| !is_name(*c))
            .map_or(0, |(p, c)| p + c.len_utf8());
        let name = &head[name_start..];
        let is_definition = before.ends_with("()") || head[..name_start].trim_end().ends_with("function");
        if !is_definition || name.is_empty() {
            continue;
        }
        definitions += 1;
        if definitions > 64 {
            return false;
        }
        let body = &text[open + 1..next_close[open + 1]];
        if (body.contains('|') || body.contains('&'))
            && body.split(|c: char| !is_name(c)).filter(|w| *w == name).count() >= 2
        {
            return true;
        }
    }
    false
}

/// Whether a part matching `rule` (an interpreter reading code from standard input) is
/// fed by a part matching `rule.piped_from` in the same pipeline.
pub(super) fn piped_into(rule: &Rule, command: &str) -> bool {
    pipelines(command).into_iter().any(|p| {
        if !p.contains('|') {
            return false;
        }
        let mut fed = false;
        for part in analyze(p).parts {
            let name = basename(&part.command_word);
            if fed
                && rule.commands.matches(name, false)
                && !part.args.iter().skip(1).any(|a| rule.none.matches(a, false))
                && reads_code_from_stdin(&part)
            {
                return true;
            }
            fed |= rule.piped_from.matches(name, false);
        }
        false
    })
}
