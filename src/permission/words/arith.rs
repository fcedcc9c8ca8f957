//! Places where bash evaluates text as arithmetic or as a variable name.
//!
//! Bash evaluates array subscripts as arithmetic, and arithmetic evaluates the *value* of
//! every variable it names, recursively: with `x='a[$(touch p)]'`, `$((x))`,
//! `[[ x -eq 1 ]]`, `${y[x]}` and `${!x}` all run `touch p`. So do names given to
//! `read`, `printf -v`, `test -v`, `declare`, `unset`, ... when they carry a subscript.
//! The rules here are deliberately simple:
//!
//! - arithmetic (`$(( ))`, `$[ ]`, `(( ))`, `for (( ))`, the operands of `[[ -eq ]]`
//!   and friends, `let`, `${x:offset:length}`, array subscripts)
//!   may contain only digits, blanks, operators and `$#`, `$?`, `$$`, `$!`: any variable
//!   name or other expansion is opaque;
//! - a subscript in a variable name (`a[...]`) may contain only digits, `@` or `*`;
//! - `${!name}` indirection, namerefs (`declare -n`) and the integer attribute
//!   (`declare -i`) are opaque, and so are `declare` values bash may read as array
//!   assignments (`declare -a a="$v"`).

use super::arg::Arg;
use super::vars::is_risky_variable;

/// Whether `expr` is arithmetic that reads no variable: digits, blanks, operators and
/// the always-numeric special parameters `$#`, `$?`, `$$`, `$!`.
pub(crate) fn is_literal_arithmetic(expr: &str) -> bool {
    let mut rest = expr;
    let mut clean = String::with_capacity(expr.len());
    while let Some(p) = rest.find('$') {
        clean.push_str(&rest[..p]);
        let after = &rest[p + 1..];
        if after.starts_with(['#', '?', '$', '!']) {
            rest = &after[1..];
            clean.push('0');
        } else {
            return false;
        }
    }
    clean.push_str(rest);
    clean
        .chars()
        .all(|c| c.is_ascii_digit() || " \t\n+-*/%<>=!&|^~?:(),".contains(c))
}

/// Whether the name `word` (`NAME` or `NAME[subscript]`, possibly followed by `=value`)
/// is written out (no expansion: `"$x"` could hold a subscript) and carries no subscript
/// that bash would evaluate: the subscript is digits, `@` or `*`.
pub(crate) fn is_plain_name(word: &str) -> bool {
    let name = word.split('=').next().unwrap_or(word);
    if name.contains(['$', '`']) {
        return false;
    }
    let Some(open) = name.find('[') else {
        return true;
    };
    let Some(close) = name.rfind(']') else {
        return false;
    };
    close > open && is_plain_subscript(&name[open + 1..close])
}

/// Whether an array subscript is evaluated to nothing but a number or `@`/`*`.
pub(crate) fn is_plain_subscript(sub: &str) -> bool {
    matches!(sub, "@" | "*") || (!sub.is_empty() && sub.chars().all(|c| c.is_ascii_digit()))
}

/// Decodes the body of an ANSI-C quoted string (`$'...'`) the way bash does.
pub(crate) fn decode_ansi_c(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    let hex = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>, max: usize| {
        let mut v = 0u32;
        let mut n = 0;
        while n < max
            && let Some(d) = chars.peek().and_then(|c| c.to_digit(16))
        {
            v = v * 16 + d;
            chars.next();
            n += 1;
        }
        (n > 0).then_some(v)
    };
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            out.push('\\');
            break;
        };
        let decoded = match e {
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' | 'E' => Some('\x1b'),
            'f' => Some('\x0c'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            'x' => hex(&mut chars, 2).and_then(char::from_u32),
            'u' => hex(&mut chars, 4).and_then(char::from_u32),
            'U' => hex(&mut chars, 8).and_then(char::from_u32),
            'c' => chars.next().map(|k| char::from((k as u8) & 0x1f)),
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                char::from_u32(v & 0xff)
            }
            '\\' | '\'' | '"' | '?' => Some(e),
            _ => None,
        };
        match decoded {
            Some(d) => out.push(d),
            None => {
                out.push('\\');
                out.push(e);
            }
        }
    }
    out
}

/// Why running the builtin `argv[0]` with these arguments evaluates text as arithmetic
/// or as a variable name bash could abuse; `None` when it does not.
pub(crate) fn builtin_hazard(argv: &[Arg]) -> Option<String> {
    let name = argv[0].text.as_str();
    let args = &argv[1..];
    let bad_name = |a: &Arg| bad_name(name, a);
    match name {
        "let" => args.iter().find(|a| !is_literal_arithmetic(&a.text)).map(|a| {
            format!(
                "`let {}` evaluates arithmetic that reads variables",
                super::arg::clip(&a.text)
            )
        }),
        "declare" | "typeset" | "local" | "export" | "readonly" => declare_hazard(name, args),
        "read" => read_hazard(name, args),
        "set" => args
            .iter()
            .enumerate()
            .find(|(i, a)| {
                let t = a.text.as_str();
                (t.starts_with('-') && !t.starts_with("--") && t.contains('k'))
                    || (t == "-o" && args.get(i + 1).is_some_and(|n| n.text == "keyword"))
            })
            .map(|_| "`set -k` passes every later assignment word to the command's environment".to_owned()),
        "printf" | "wait" => variable_option_hazard(name, args),
        "unset" | "getopts" => args.iter().filter(|a| !a.text.starts_with('-')).find_map(bad_name),
        "test" | "[" => args
            .windows(2)
            .find(|w| w[0].text == "-v" || w[0].text == "-R")
            .and_then(|w| bad_name(&w[1])),
        _ => None,
    }
}

/// Why the builtin `name` given the variable name `a` evaluates its subscript; `None`
/// for a plain name.
fn bad_name(name: &str, a: &Arg) -> Option<String> {
    (!is_plain_name(&a.text)).then(|| {
        format!(
            "`{name}` is given the variable name `{}`, whose subscript bash evaluates as code",
            super::arg::clip(&a.text)
        )
    })
}

/// [`builtin_hazard`] of `declare`, `typeset`, `local`, `export` and `readonly`: a
/// name reference, an integer attribute, a name with a subscript, or a value that
/// may be read as an array assignment.
fn declare_hazard(name: &str, args: &[Arg]) -> Option<String> {
    let mut array = false;
    for a in args {
        let t = a.text.as_str();
        if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 && !t.contains('=') {
            if t.contains('n') {
                return Some(format!("`{name} {t}` makes a name refer to another variable"));
            }
            if t.starts_with('-') && t.contains('i') {
                // Every later assignment to the name is evaluated as arithmetic.
                return Some(format!(
                    "`{name} {t}` makes assignments evaluate their values as arithmetic"
                ));
            }
            array |= t.contains(['a', 'A']);
            continue;
        }
        if let Some(reason) = bad_name(name, a) {
            return Some(reason);
        }
        // A value that reads as `(...)`, or comes from an expansion where the
        // variable may be an array, is evaluated as an array assignment, subscripts
        // and all (`declare -a a="$v"` with v='([x]=1)').
        if let Some((_, value)) = t.split_once('=')
            && !a.compound
            && (value.starts_with('(') || (!a.literal && (array || matches!(name, "declare" | "typeset"))))
        {
            return Some(format!(
                "`{name}` may read the value of `{}` as an array assignment, whose subscripts run code",
                super::arg::clip(t)
            ));
        }
    }
    None
}

/// [`builtin_hazard`] of `read`: a variable name (after the options, or the array of
/// `-a`) with a subscript.
fn read_hazard(name: &str, args: &[Arg]) -> Option<String> {
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if t.len() > 1 && t.starts_with('-') {
            let last = t.chars().last().unwrap_or('-');
            let takes_value = "dinNptua".contains(last);
            if last == 'a'
                && let Some(r) = args.get(i + 1).and_then(|a| bad_name(name, a))
            {
                return Some(r);
            }
            i += if takes_value { 2 } else { 1 };
            continue;
        }
        break;
    }
    args.get(i..).unwrap_or_default().iter().find_map(|a| bad_name(name, a))
}

/// [`builtin_hazard`] of `printf` and `wait`: the variable their `-v` (or `-p`)
/// sets, when it changes what runs or has a subscript.
fn variable_option_hazard(name: &str, args: &[Arg]) -> Option<String> {
    for (i, a) in args.iter().enumerate() {
        if a.text == "--" || !a.text.starts_with('-') {
            break;
        }
        if a.text == "-v" || a.text == "-p" {
            let target = args.get(i + 1)?;
            if is_risky_variable(target.text.split('[').next().unwrap_or("")) {
                return Some(format!("`{name}` sets {}, which changes what runs", target.text));
            }
            return bad_name(name, target);
        }
        if let Some(rest) = a.text.strip_prefix("-v").or_else(|| a.text.strip_prefix("-p"))
            && !is_plain_name(rest)
        {
            return bad_name(name, a);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_arithmetic() {
        assert!(is_literal_arithmetic("1 + 2 * (3 - 4)"));
        assert!(is_literal_arithmetic("$# > 1"));
        assert!(!is_literal_arithmetic("x"));
        assert!(!is_literal_arithmetic("$x + 1"));
        assert!(!is_literal_arithmetic("a[1]"));
        assert!(!is_literal_arithmetic("1 + $(id)"));
        assert!(!is_literal_arithmetic("$#x"));
    }

    #[test]
    fn plain_names() {
        assert!(is_plain_name("x"));
        assert!(is_plain_name("a[0]=1"));
        assert!(is_plain_name("a[@]"));
        assert!(!is_plain_name("a[i]"));
        assert!(!is_plain_name("a[$(touch p)]"));
        assert!(!is_plain_name("a["));
        assert!(!is_plain_name("$x"));
        assert!(is_plain_name("x=$y"));
    }

    #[test]
    fn ansi_c_decoding() {
        assert_eq!(decode_ansi_c(r"a[\x24(touch p)]"), "a[$(touch p)]");
        assert_eq!(decode_ansi_c(r"\x60id\x60"), "`id`");
        assert_eq!(decode_ansi_c(r"\044\u0028"), "$(");
        assert_eq!(decode_ansi_c(r"\'\\"), "'\\");
        assert_eq!(decode_ansi_c(r"\q"), "\\q");
    }
}
