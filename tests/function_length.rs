//! No function of `src/permission/` or `src/sandbox/` is longer than a screen
//! ([`MAX_LINES`]) unless it is a table, named in [`TABLES`]: a long function
//! is where a security decision hides. [`STILL_LONG`] names the sandbox
//! functions not yet shortened; each run prints them, so they stay in sight.

#[path = "common/code.rs"]
mod code;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;

use code::{code_only, sources};

/// The longest a function may be, from its `fn` line to its closing brace.
const MAX_LINES: usize = 80;

/// Functions that are tables (rows of data in code), by file and name.
const TABLES: &[(&str, &str)] = &[];

/// Functions longer than [`MAX_LINES`] that are not tables, to be shortened.
const STILL_LONG: &[(&str, &str)] = &[];

/// One function of a source text: its name, the line of its `fn` and how many
/// lines it spans.
#[derive(Debug, PartialEq)]
struct Function {
    name: String,
    line: usize,
    lines: usize,
}

/// The name of the function a line declares, if it does (`pub(crate) fn x(`,
/// `unsafe extern "C" fn x(`, `const fn x<T>(`).
fn declared(line: &str) -> Option<String> {
    let at = line.find("fn ")?;
    if at > 0 && !line[..at].ends_with(' ') {
        return None;
    }
    let before = line[..at].trim();
    let allowed = [
        "pub",
        "pub(crate)",
        "pub(super)",
        "const",
        "async",
        "unsafe",
        "extern",
        "\"C\"",
        "default",
    ];
    if !before
        .split_whitespace()
        .all(|w| allowed.contains(&w) || w.starts_with("pub("))
    {
        return None;
    }
    let name: String = line[at + 3..]
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// Every function with a body in `text`, with its length in lines.
fn functions(text: &str) -> Vec<Function> {
    let code = code_only(text);
    let lines: Vec<&str> = code.lines().collect();
    let mut found = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        let Some(name) = declared(line) else { continue };
        // The body opens at the first `{` after the signature, unless a `;` ends
        // it first (a declaration without a body, in a trait or `extern` block).
        let mut depth = 0usize;
        let mut opened = false;
        'scan: for (offset, body_line) in lines[start..].iter().enumerate() {
            let from = if offset == 0 { line.find("fn ").unwrap_or(0) } else { 0 };
            for c in body_line[from..].chars() {
                match c {
                    ';' if !opened => break 'scan,
                    '{' => {
                        opened = true;
                        depth += 1;
                    }
                    '}' if opened => {
                        depth -= 1;
                        if depth == 0 {
                            found.push(Function {
                                name,
                                line: start + 1,
                                lines: offset + 1,
                            });
                            break 'scan;
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    found
}

/// Every function over [`MAX_LINES`] in the checked folders, as (file relative
/// to the crate, name, line, lines).
fn long_functions() -> Vec<(String, String, usize, usize)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for folder in ["src/permission", "src/sandbox"] {
        sources(&root.join(folder), &mut files);
    }
    let mut long = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let relative = path.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
        for f in functions(&text) {
            if f.lines > MAX_LINES {
                long.push((relative.clone(), f.name, f.line, f.lines));
            }
        }
    }
    long
}

#[test]
fn no_function_in_permission_or_sandbox_is_longer_than_a_screen_unless_a_table() {
    let long = long_functions();
    let named: BTreeSet<(&str, &str)> = TABLES.iter().chain(STILL_LONG).copied().collect();
    let mut problems = Vec::new();
    for (file, name, line, lines) in &long {
        if !named.contains(&(file.as_str(), name.as_str())) {
            problems.push(format!(
                "{file}:{line}: fn {name} is {lines} lines, more than {MAX_LINES}: split it into its steps (or, if it is a table of data, name it in TABLES)"
            ));
        }
    }
    for (file, name) in TABLES {
        if !long.iter().any(|(f, n, ..)| f == file && n == name) {
            problems.push(format!(
                "{file}: fn {name} is named as a long table but is not (any more) over {MAX_LINES} lines: take it out of TABLES"
            ));
        }
    }
    assert!(problems.is_empty(), "functions too long:\n{}", problems.join("\n"));
    // Written to the stderr handle, which libtest does not capture, so that the
    // functions still to shorten show in every run.
    let mut err = std::io::stderr();
    for (file, name) in STILL_LONG {
        if !long.iter().any(|(f, n, ..)| f == file && n == name) {
            let _ = writeln!(
                err,
                "function_length: {file}: fn {name} is no longer over {MAX_LINES} lines: take it out of STILL_LONG"
            );
        }
    }
    for (file, name, line, lines) in &long {
        let kind = if TABLES.contains(&(file.as_str(), name.as_str())) {
            "a table"
        } else {
            "STILL LONG, to be shortened"
        };
        let _ = writeln!(err, "function_length: {file}:{line}: fn {name}, {lines} lines: {kind}");
    }
}

#[test]
fn the_checker_measures_a_function_from_fn_to_its_closing_brace() {
    let text = "fn short() {\n    let s = \"}}}\";\n    let c = '{';\n    // }\n}\n\n\
                pub(crate) fn longer<'a>(x: &'a str) -> &'a str {\n    if x.is_empty() {\n        \
                return r#\"{\"#;\n    }\n    /* { */\n    x\n}\n\ntrait T {\n    fn declared(&self);\n}\n";
    let found = functions(text);
    assert_eq!(
        found,
        [
            Function {
                name: "short".into(),
                line: 1,
                lines: 5
            },
            Function {
                name: "longer".into(),
                line: 7,
                lines: 7
            },
        ],
        "braces in strings, characters and comments do not count; a declaration without a body is no function"
    );
}
