//! Text the shell parser is known to mishandle (panic, loop, backtrack exponentially,
//! allocate without bound) or to read differently from bash, found by cheap scans of
//! the raw text before it is parsed.

/// Inputs known to make the parser panic or loop instead of returning an error: a run of
/// nine or more digits used as a redirection's file descriptor (`11111111111<x`) or as a
/// directory-stack tilde (`~99999999999`), and here-documents without a delimiter.
/// Refused before parsing.
pub(crate) fn parser_hazard(text: &str) -> Option<String> {
    // Scanned as the parser reads it: a line continuation between `$` and `{` (or
    // anywhere else) must not hide what it joins.
    let joined = text.replace("\\\n", "");
    let (text, b) = (joined.as_str(), joined.as_bytes());
    if let Some(reason) = empty_heredoc_delimiter(b) {
        return Some(reason);
    }
    if let Some(reason) = heredoc_in_unclosed_substitution(b) {
        return Some(reason);
    }
    if let Some(reason) = nested_subscripts(b) {
        return Some(reason);
    }
    if let Some(reason) = unclosed_cases(text) {
        return Some(reason);
    }
    if let Some(reason) = crowded_brackets(b) {
        return Some(reason);
    }
    if let Some(reason) = extended_glob_with_brackets(b) {
        return Some(reason);
    }
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i - start < 9 {
            continue;
        }
        let before = &b[..start];
        let tilde = before.ends_with(b"~") || before.ends_with(b"~+") || before.ends_with(b"~-");
        if tilde || matches!(b.get(i), Some(b'<' | b'>')) {
            return Some("a number too large for a file descriptor or directory-stack index".into());
        }
    }
    None
}

/// More than two parameter expansions with array subscripts (`${name[`): nested ones
/// make the parser backtrack exponentially (`${x["${y["${z["${w[0]}"]}"]}"]}` takes
/// 27 ms, one level more half a second), and quotes can hide the nesting from any
/// cheap scan, so the count alone decides.
fn nested_subscripts(b: &[u8]) -> Option<String> {
    const MAX_SUBSCRIPTS: usize = 2;
    let mut total = 0usize;
    for i in 0..b.len().saturating_sub(2) {
        if b[i] == b'$' && b[i + 1] == b'{' {
            let name_end = b[i + 2..]
                .iter()
                .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
                .map_or(b.len(), |p| i + 2 + p);
            if name_end > i + 2 && b.get(name_end) == Some(&b'[') {
                total += 1;
                if total > MAX_SUBSCRIPTS {
                    return Some("more than two array subscripts in parameter expansions".into());
                }
            }
        }
    }
    None
}

/// More than twelve `[` (counted without regard to quoting or words): the parser
/// tries each `[` followed by an escape as a subscript and then as text, backtracking
/// exponentially (`e[\W` sixteen times in one word: 34 ms; a 190-character mix: 24 s),
/// and quoted blanks between the pieces do not stop it, so the count alone decides.
/// Ordinary commands hold a few (three at most in the corpora).
fn crowded_brackets(b: &[u8]) -> Option<String> {
    const MAX_BRACKETS: usize = 12;
    (b.iter().filter(|c| **c == b'[').count() > MAX_BRACKETS)
        .then(|| format!("more than {MAX_BRACKETS} `[`, more than the shell parser is run on"))
}

/// An extended-glob opener (`*(`, `?(`, `+(`, `@(`, `!(`) in text that also holds a
/// `[` (both counted without regard to quoting): the parser tries the opener as a
/// pattern and as text, and with a bracket before it reads what follows again for
/// each try (a 97-character command took 1.2 s, found by fuzzing). Ordinary commands
/// hold no such pair (none in the corpora); the shell needs `shopt -s extglob` for
/// most of these patterns anyway.
fn extended_glob_with_brackets(b: &[u8]) -> Option<String> {
    let opener = b
        .windows(2)
        .any(|w| w[1] == b'(' && matches!(w[0], b'*' | b'?' | b'+' | b'@' | b'!'));
    (opener && b.contains(&b'['))
        .then(|| "an extended-glob pattern beside a `[`, more than the shell parser is run on".into())
}

/// More than eight `case` words without their `esac` (counted without regard to
/// quoting): the parser backtracks exponentially on nested unclosed `case` (twenty
/// levels take seconds). Such text cannot run as written anyway.
fn unclosed_cases(text: &str) -> Option<String> {
    const MAX_UNCLOSED_CASES: usize = 8;
    let (mut cases, mut esacs) = (0usize, 0usize);
    for w in text.split(|c: char| !c.is_ascii_alphanumeric() && c != '_') {
        match w {
            "case" => cases += 1,
            "esac" => esacs += 1,
            _ => {}
        }
    }
    (cases.saturating_sub(esacs) > MAX_UNCLOSED_CASES).then(|| "more than eight unclosed `case` commands".into())
}

/// `{name}>file` (and `{name}<`, `{name}>&-`, ...) anywhere, counted without regard
/// to quoting: bash assigns a new file descriptor's number to `name` there, even in an
/// argument (`echo {PATH}>x; git` sets PATH to `10`), and the parser reads it as a
/// plain word.
pub(crate) fn named_descriptor(b: &[u8]) -> Option<String> {
    let mut i = 0;
    while let Some(p) = b[i..].iter().position(|c| *c == b'{') {
        let start = i + p + 1;
        let len = b[start..]
            .iter()
            .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
            .unwrap_or(b.len() - start);
        let end = start + len;
        if len > 0 && b.get(end) == Some(&b'}') && matches!(b.get(end + 1), Some(b'<' | b'>')) {
            return Some(format!(
                "`{{{}}}` before a redirection makes bash assign a file descriptor to that name",
                String::from_utf8_lossy(&b[start..end])
            ));
        }
        i = start;
    }
    None
}

/// A here-document operator in text with more `(` than `)` (counted without regard
/// to quoting): inside an unclosed `$(`, a here-document makes the parser allocate
/// without bound (`$(<<  x ` with two blanks). Such text cannot run as written anyway.
fn heredoc_in_unclosed_substitution(b: &[u8]) -> Option<String> {
    let opens = b.iter().filter(|c| **c == b'(').count();
    let closes = b.iter().filter(|c| **c == b')').count();
    let heredoc = b
        .windows(2)
        .enumerate()
        .any(|(i, w)| w == b"<<" && b.get(i + 2) != Some(&b'<') && (i == 0 || b[i - 1] != b'<'));
    (opens > closes && heredoc).then(|| "a here-document inside an unclosed `$(`".into())
}

/// A here-document operator whose delimiter is not a plain word (`<< ""`, `<<$[`, `<<`
/// followed by a carriage return or an operator), or a run of four or more `<`: the
/// parser can loop without end on those.
fn empty_heredoc_delimiter(b: &[u8]) -> Option<String> {
    let is_break = |c: &u8| {
        matches!(
            c,
            b' ' | b'\t' | b'\r' | b'\n' | b';' | b'&' | b'|' | b'<' | b'>' | b'(' | b')'
        )
    };
    let plain = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-');
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'<' {
            i += 1;
            continue;
        }
        let run = b[i..].iter().take_while(|c| **c == b'<').count();
        i += run;
        if run >= 4 {
            return Some("an unusual run of `<` redirections".into());
        }
        if run != 2 {
            continue;
        }
        let mut j = i;
        if b.get(j) == Some(&b'-') {
            j += 1;
        }
        let blanks_from = j;
        while matches!(b.get(j), Some(b' ' | b'\t')) {
            j += 1;
        }
        // Two or more blanks before the delimiter make the parser allocate without
        // bound inside `$(` (found by fuzzing); nobody needs them.
        if j - blanks_from > 1 {
            return Some("blanks before a here-document delimiter".into());
        }
        // The delimiter word, up to a blank or an operator: once quotes and backslashes
        // are removed it must be a plain non-empty word (EOF, 'END', \EOT, _MARK-1); the
        // parser mishandles empty and expanding delimiters.
        let end = b[j..].iter().position(is_break).map_or(b.len(), |p| j + p);
        // A quote left open runs the delimiter on past the blank (to the end of
        // the text, here), and the parser allocates without bound on that (found
        // by fuzzing).
        let unclosed = |q: u8| b[j..end].iter().filter(|c| **c == q).count() % 2 == 1;
        if unclosed(b'"') || unclosed(b'\'') {
            return Some("an unterminated quote in a here-document delimiter".into());
        }
        let word: Vec<u8> = b[j..end]
            .iter()
            .copied()
            .filter(|c| !matches!(c, b'\'' | b'"' | b'\\'))
            .collect();
        if word.is_empty() || !word.iter().all(plain) {
            return Some("a here-document delimiter that is not a plain word".into());
        }
        i = end;
    }
    None
}

/// A here-document operator in text that also has a backslash-newline (anywhere, quoted
/// or not): the shells join a line ending in a backslash to the next one inside an
/// unquoted here-document's body (`$\` then `(touch p)` is a substitution) and in
/// bash even on the delimiter line (`EO\` then `F` ends the document early), which the
/// parser does not. Checked after joining, so `<\` then `<EOF` counts too; a here-string
/// (`<<<`) has no body or delimiter line and does not count.
pub(crate) fn continued_heredoc(text: &str) -> Option<String> {
    let joined = text.replace("\\\n", "");
    let b = joined.as_bytes();
    // `<<` that is not part of a here-string's `<<<`.
    let heredoc = b
        .windows(2)
        .enumerate()
        .any(|(i, w)| w == b"<<" && b.get(i + 2) != Some(&b'<') && (i == 0 || b[i - 1] != b'<'));
    (joined.len() != text.len() && heredoc)
        .then(|| "a here-document in text with a line continuation (a backslash at the end of a line)".into())
}
