//! Just enough of git's configuration syntax to read what a file sets:
//! sections (`[core]`, `[remote "origin"]`, the old `[remote.origin]`),
//! variables with or without a value, quotes, escapes, comments and
//! continued lines. Each entry comes out as `section.subsection.name` with
//! the section and name lowercased, as `git config --list` prints it.

/// One `key = value` of a configuration file (a bare `key` has no value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub value: Option<String>,
}

/// The entries of `text`, in order. A line git would reject is skipped
/// (git refuses such a file; reading on can only find more to protect).
pub fn parse(text: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut rest = text.chars().peekable();
    loop {
        skip_blanks(&mut rest);
        match rest.peek() {
            None => break,
            Some('\n') => {
                rest.next();
            }
            Some('#' | ';') => skip_line(&mut rest),
            Some('[') => {
                rest.next();
                match header(&mut rest) {
                    Some(name) => section = name,
                    None => skip_line(&mut rest),
                }
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let name = variable_name(&mut rest);
                skip_blanks(&mut rest);
                let value = match rest.peek() {
                    Some('=') => {
                        rest.next();
                        match value(&mut rest) {
                            Some(v) => Some(v),
                            None => continue,
                        }
                    }
                    None | Some('\n' | '#' | ';') => {
                        skip_line(&mut rest);
                        None
                    }
                    Some(_) => {
                        skip_line(&mut rest);
                        continue;
                    }
                };
                if section.is_empty() {
                    continue;
                }
                out.push(Entry {
                    key: format!("{section}.{name}"),
                    value,
                });
            }
            Some(_) => skip_line(&mut rest),
        }
    }
    out
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

fn skip_blanks(rest: &mut Chars<'_>) {
    while rest.peek().is_some_and(|c| *c == ' ' || *c == '\t' || *c == '\r') {
        rest.next();
    }
}

fn skip_line(rest: &mut Chars<'_>) {
    for c in rest.by_ref() {
        if c == '\n' {
            break;
        }
    }
}

/// After `[`: `section]`, `section "subsection"]` or `section.subsection]`.
fn header(rest: &mut Chars<'_>) -> Option<String> {
    let mut name = String::new();
    while let Some(&c) = rest.peek() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
            name.push(c.to_ascii_lowercase());
            rest.next();
        } else {
            break;
        }
    }
    skip_blanks(rest);
    match rest.next()? {
        ']' if !name.is_empty() => Some(name),
        '"' if !name.contains('.') && !name.is_empty() => {
            let mut sub = String::new();
            loop {
                match rest.next()? {
                    '"' => break,
                    '\\' => sub.push(rest.next().filter(|c| *c != '\n')?),
                    '\n' => return None,
                    c => sub.push(c),
                }
            }
            (rest.next()? == ']').then(|| format!("{name}.{sub}"))
        }
        _ => None,
    }
}

fn variable_name(rest: &mut Chars<'_>) -> String {
    let mut name = String::new();
    while let Some(&c) = rest.peek() {
        if c.is_ascii_alphanumeric() || c == '-' {
            name.push(c.to_ascii_lowercase());
            rest.next();
        } else {
            break;
        }
    }
    name
}

/// After `=`: the value to the end of the line (or of its continuations),
/// without its comment, unquoted and unescaped, blanks at its ends trimmed
/// unless quoted. `None` for a value git rejects (its line is skipped).
fn value(rest: &mut Chars<'_>) -> Option<String> {
    let mut out = String::new();
    // Length of `out` that must survive trimming (ends inside quotes or an escape).
    let mut kept = 0;
    let mut quoted = false;
    skip_blanks(rest);
    while let Some(c) = rest.next() {
        match c {
            '\n' if !quoted => break,
            // A line that ends inside quotes: the next line is read on its own.
            '\n' => return None,
            '#' | ';' if !quoted => {
                skip_line(rest);
                break;
            }
            '"' => {
                quoted = !quoted;
                kept = out.len();
            }
            '\\' => {
                match rest.next() {
                    Some('\n') => continue,
                    Some('\r') if rest.peek() == Some(&'\n') => {
                        rest.next();
                        continue;
                    }
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some('b') => out.push('\u{8}'),
                    Some(c @ ('"' | '\\')) => out.push(c),
                    Some(_) => {
                        skip_line(rest);
                        return None;
                    }
                    None => return None,
                }
                kept = out.len();
            }
            c if quoted => {
                out.push(c);
                kept = out.len();
            }
            c => out.push(c),
        }
    }
    if quoted {
        return None;
    }
    let trimmed = out[kept..].trim_end_matches([' ', '\t', '\r']).len();
    out.truncate(kept + trimmed);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(text: &str) -> Vec<(String, Option<String>)> {
        parse(text).into_iter().map(|e| (e.key, e.value)).collect()
    }

    fn one(key: &str, value: &str) -> (String, Option<String>) {
        (key.into(), Some(value.into()))
    }

    #[test]
    fn sections_subsections_and_names_are_keyed_as_git_lists_them() {
        let text = "[Core]\n\tHooksPath = .husky/_\n[remote \"Origin\"]\n url = x\n[includeIf \"gitdir:~/w/\"]\npath=a\n[Old.Style]\nx=1\n";
        assert_eq!(
            pairs(text),
            [
                one("core.hookspath", ".husky/_"),
                one("remote.Origin.url", "x"),
                one("includeif.gitdir:~/w/.path", "a"),
                one("old.style.x", "1"),
            ]
        );
    }

    #[test]
    fn values_lose_comments_and_outer_blanks_but_keep_quoted_text() {
        let text = "[alias]\n a = !sh -c 'x' # comment\n b = \"  spaced ; not a comment \" \n c\n d = one\\\n two\n e = tab\\there\n";
        assert_eq!(
            pairs(text),
            [
                one("alias.a", "!sh -c 'x'"),
                one("alias.b", "  spaced ; not a comment "),
                ("alias.c".into(), None),
                one("alias.d", "one two"),
                one("alias.e", "tab\there"),
            ]
        );
    }

    #[test]
    fn a_variable_may_follow_its_header_on_the_same_line() {
        assert_eq!(
            pairs("[core] fsmonitor = ./fs.sh\n"),
            [one("core.fsmonitor", "./fs.sh")]
        );
    }

    #[test]
    fn a_line_git_rejects_is_skipped_and_the_rest_still_read() {
        assert_eq!(
            pairs("[core]\n a = 1\n = bad\n b = 2\n"),
            [one("core.a", "1"), one("core.b", "2")]
        );
        assert_eq!(pairs("[core]\n a = \"open\n b = 2\n"), [one("core.b", "2")]);
        assert_eq!(pairs("a = 1\n[x]\nb\n"), [("x.b".into(), None)]);
    }
}
