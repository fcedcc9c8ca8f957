//! The size of a text, measured before anything else reads it: past a bound it is
//! not analysed at all.

/// Text longer than this is not analysed: it is opaque at once. The tools refuse longer
/// commands before they run (`execute` at 128 KiB, `session_run` at 1 MiB).
pub const MAX_ANALYSED_BYTES: usize = 1 << 20;

/// Text with more words and operators than this is not analysed: it is opaque at once,
/// and its opacity counts as hidden code (the binary's default gate refuses it). The
/// shell parser costs a few microseconds per token, so this bounds every analysis to
/// tens of milliseconds.
pub const MAX_ANALYSED_TOKENS: usize = 10_000;

/// An upper bound of the number of words and operators the shell parser would see in
/// `text`: each run of word characters and each operator or quote character counts one.
/// One pass, no allocation.
pub(crate) fn token_estimate(text: &str) -> usize {
    let mut count = 0;
    let mut in_word = false;
    for &b in text.as_bytes() {
        match BYTE_KIND[b as usize] {
            OPERATOR => {
                count += 1;
                in_word = false;
            }
            SPACE => in_word = false,
            _ => {
                count += usize::from(!in_word);
                in_word = true;
            }
        }
    }
    count
}

const WORD: u8 = 0;
const OPERATOR: u8 = 1;
const SPACE: u8 = 2;

/// What each byte is to [`token_estimate`]: an operator or quote character, ASCII
/// whitespace, or part of a word (a table, so the pass is one load per byte).
const BYTE_KIND: [u8; 256] = {
    let mut t = [WORD; 256];
    let operators = b"|&;<>()`$\"'{}";
    let mut i = 0;
    while i < operators.len() {
        t[operators[i] as usize] = OPERATOR;
        i += 1;
    }
    let spaces = b" \t\n\x0c\r";
    let mut i = 0;
    while i < spaces.len() {
        t[spaces[i] as usize] = SPACE;
        i += 1;
    }
    t
};

/// Why `text` is too large to analyse, if it is.
pub(crate) fn too_large(text: &str) -> Option<String> {
    if text.len() > MAX_ANALYSED_BYTES {
        return Some(format!(
            "the command is {} bytes, more than the {MAX_ANALYSED_BYTES} analysed",
            text.len()
        ));
    }
    let tokens = token_estimate(text);
    (tokens > MAX_ANALYSED_TOKENS).then(|| {
        format!("the command has about {tokens} words and operators, more than the {MAX_ANALYSED_TOKENS} analysed")
    })
}
