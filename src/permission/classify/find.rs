//! `find`'s expression read as find reads it, to tell whether what it deletes is chosen
//! by a name test (`find ~ -name '*.pyc' -delete`) or is everything under its starting
//! points (`find ~ -delete`, `find / -type f -exec rm {} +`, `find ~ ! -name x -delete`).

use super::super::analyze;
use super::super::wrappers::unwrap::basename;
use super::rules::in_set;

/// Options before the starting points; `-D` takes a value.
const LEADING: &[&str] = &["-H", "-L", "-P"];

/// Tests that choose files by name, and so delete only those (`-empty` chooses files
/// that hold nothing).
const NAME_TESTS: &[&str] = &[
    "-name",
    "-iname",
    "-lname",
    "-ilname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-samefile",
    "-inum",
];

/// Primaries that take one value and choose files by something other than name: they
/// leave most files of a tree in (`-type f`, `-mtime +30`, `-user bob`).
const VALUE_TESTS: &[&str] = &[
    "-newer", "-anewer", "-cnewer", "-links", "-size", "-type", "-xtype", "-user", "-group", "-uid", "-gid", "-perm",
    "-mtime", "-atime", "-ctime", "-mmin", "-amin", "-cmin", "-used", "-fstype", "-context",
];

/// Options that take one value (always true).
const VALUE_OPTIONS: &[&str] = &["-maxdepth", "-mindepth", "-regextype", "-files0-from"];

/// Actions whose output goes to standard output (what `xargs` reads).
const OUTPUT_ACTIONS: &[&str] = &["-print", "-print0"];

/// One node of find's expression.
#[derive(Debug)]
enum Expr {
    /// A test or option; `selective` when it chooses files by name.
    Test {
        selective: bool,
    },
    /// An action; `destroys` when it deletes, truncates or shreds the file, `outputs`
    /// when it prints the name on standard output, `changes` the command it runs when
    /// that changes permissions or owners.
    Action {
        destroys: bool,
        outputs: bool,
        changes: Option<Vec<String>>,
    },
    Not(Box<Expr>),
    And(Vec<Expr>),
    Or(Vec<Expr>),
    /// `a , b`: both run.
    List(Vec<Expr>),
}

/// What a `find` command does with the files it finds.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Effect {
    /// Its starting points (`.` when none is given), as written.
    pub roots: Vec<usize>,
    /// Some file is deleted, truncated or shredded.
    pub destroys: bool,
    /// Some file is deleted, truncated or shredded without a name test choosing it.
    pub destroys_all: bool,
    /// Some name is printed on standard output.
    pub outputs: bool,
    /// Some name is printed without a name test choosing it.
    pub outputs_all: bool,
    /// The commands (`-exec` words up to `;` or `+`) that change the permissions or
    /// owner of every file, no name test choosing them (`-exec chmod 777 {} +`).
    pub changes_all: Vec<Vec<String>>,
}

/// The effect of `find` with the arguments `args` (without the command word). The
/// indices in `roots` are into `args`; an empty list means `.`.
pub(super) fn effect(args: &[String]) -> Effect {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if LEADING.contains(&a) || a.starts_with("-O") {
            i += 1;
        } else if a == "-D" {
            i += 2;
        } else {
            break;
        }
    }
    let mut roots = Vec::new();
    while i < args.len() && !starts_expression(&args[i]) {
        roots.push(i);
        i += 1;
    }
    let tokens = &args[i.min(args.len())..];
    let mut parser = Parser { tokens, at: 0 };
    let expr = parser.list();
    // Text find could not read as an expression: judged as if every action in it
    // ran for every file.
    let unread = parser.at < tokens.len();
    let has_action = contains_action(&expr);
    let mut effect = Effect {
        roots,
        ..Effect::default()
    };
    walk(&expr, false, &mut effect);
    if !has_action {
        // No action: find prints what the whole expression selects.
        effect.outputs = true;
        effect.outputs_all = !selective(&expr);
    }
    if unread {
        effect.destroys_all |= effect.destroys;
        effect.outputs_all |= effect.outputs;
    }
    effect
}

/// Whether `word` starts find's expression (an option, test, action or operator).
fn starts_expression(word: &str) -> bool {
    word.len() > 1 && word.starts_with('-') || matches!(word, "!" | "(" | ")" | ",")
}

struct Parser<'a> {
    tokens: &'a [String],
    at: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a str> {
        self.tokens.get(self.at).map(String::as_str)
    }

    fn list(&mut self) -> Expr {
        let mut items = vec![self.or()];
        while self.peek() == Some(",") {
            self.at += 1;
            items.push(self.or());
        }
        if items.len() == 1 {
            items.remove(0)
        } else {
            Expr::List(items)
        }
    }

    fn or(&mut self) -> Expr {
        let mut items = vec![self.and()];
        while matches!(self.peek(), Some("-o" | "-or")) {
            self.at += 1;
            items.push(self.and());
        }
        if items.len() == 1 {
            items.remove(0)
        } else {
            Expr::Or(items)
        }
    }

    fn and(&mut self) -> Expr {
        let mut items = vec![self.unary()];
        loop {
            match self.peek() {
                Some("-a" | "-and") => self.at += 1,
                None | Some(")" | "-o" | "-or" | ",") => break,
                Some(_) => {}
            }
            items.push(self.unary());
        }
        if items.len() == 1 {
            items.remove(0)
        } else {
            Expr::And(items)
        }
    }

    fn unary(&mut self) -> Expr {
        match self.peek() {
            Some("!" | "-not") => {
                self.at += 1;
                Expr::Not(Box::new(self.unary()))
            }
            Some("(") => {
                self.at += 1;
                let inner = self.list();
                if self.peek() == Some(")") {
                    self.at += 1;
                }
                inner
            }
            _ => self.primary(),
        }
    }

    /// One test, option or action with its values.
    fn primary(&mut self) -> Expr {
        let Some(word) = self.peek() else {
            return Expr::Test { selective: false };
        };
        self.at += 1;
        let value = |p: &mut Self| {
            let v = p.tokens.get(p.at).cloned().unwrap_or_default();
            p.at += 1;
            v
        };
        match word {
            "-delete" => Expr::Action {
                destroys: true,
                outputs: false,
                changes: None,
            },
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let start = self.at;
                while let Some(t) = self.peek() {
                    self.at += 1;
                    let plus_end = t == "+" && self.at >= 2 && self.tokens[self.at - 2] == "{}";
                    if t == ";" || plus_end {
                        break;
                    }
                }
                let end = if self.at > start { self.at - 1 } else { start };
                let (destroys, changes) = exec_effect(&self.tokens[start..end]);
                Expr::Action {
                    destroys,
                    outputs: false,
                    changes,
                }
            }
            w if OUTPUT_ACTIONS.contains(&w) => Expr::Action {
                destroys: false,
                outputs: true,
                changes: None,
            },
            "-printf" | "-fprint" | "-fprint0" | "-fls" => {
                let outputs = word == "-printf";
                value(self);
                Expr::Action {
                    destroys: false,
                    outputs,
                    changes: None,
                }
            }
            "-fprintf" => {
                value(self);
                value(self);
                Expr::Action {
                    destroys: false,
                    outputs: false,
                    changes: None,
                }
            }
            "-ls" | "-quit" => Expr::Action {
                destroys: false,
                outputs: false,
                changes: None,
            },
            w if NAME_TESTS.contains(&w) => {
                let pattern = value(self);
                Expr::Test {
                    selective: chooses_by_name(w, &pattern),
                }
            }
            "-empty" => Expr::Test { selective: true },
            w if VALUE_TESTS.contains(&w) || VALUE_OPTIONS.contains(&w) || w.starts_with("-newer") => {
                value(self);
                Expr::Test { selective: false }
            }
            // `-prune`, `-true`, `-depth`, `-xdev`, ... and anything not known: chooses
            // nothing by name.
            _ => Expr::Test { selective: false },
        }
    }
}

/// Whether the name test `test` with `pattern` leaves files out: a pattern with a
/// literal character (`*.pyc`, `node_modules`), not one that matches every name (`*`,
/// `.*`, `?*`, `.*` as a regex) or only names system or home directories
/// (`-path '/usr/*'`).
fn chooses_by_name(test: &str, pattern: &str) -> bool {
    if matches!(test, "-samefile" | "-inum") {
        return true;
    }
    if test.ends_with("regex") {
        return without_brackets(pattern).chars().any(|c| c.is_alphanumeric());
    }
    // A character other than a glob's, after an optional leading `.` (`.*` is every
    // hidden file; `*~` and `*.pyc` choose).
    let literal = |component: &str| {
        let plain: String = without_brackets(component)
            .chars()
            .filter(|c| !matches!(c, '*' | '?'))
            .collect();
        let plain = plain.strip_prefix('.').unwrap_or(&plain);
        !plain.is_empty() && !matches!(component, "." | ".." | "~")
    };
    let components: Vec<&str> = pattern.split('/').filter(|c| literal(c)).collect();
    if test.ends_with("path") || test.ends_with("wholename") {
        // `/usr/*` or `/home/*/*` still takes all of a system or home directory.
        let mut dir = String::new();
        let mut all_system = !components.is_empty();
        for c in pattern.split('/').filter(|c| !c.is_empty()) {
            dir.push('/');
            dir.push_str(c);
            if literal(c) && !in_set("system-dirs", &dir, true) && !in_set("home", &dir, true) {
                all_system = false;
            }
        }
        return !components.is_empty() && !all_system;
    }
    !components.is_empty()
}

/// `pattern` without its bracket expressions (`[a-z]*` is `*`), whose letters match a
/// set of names rather than spell one.
fn without_brackets(pattern: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '[' {
            out.push(c);
            continue;
        }
        // To the closing `]`; one right after `[` or `[!` is literal.
        let mut first = true;
        for d in chars.by_ref() {
            if d == ']' && !first {
                break;
            }
            first = first && matches!(d, '!' | '^');
        }
    }
    out
}

/// What the command `-exec` runs (its words, up to `;` or `+`) does, read as shell
/// code through wrappers (`sudo rm`) and `sh -c` strings: whether it deletes, truncates
/// or shreds, and its words from the command word on when it changes permissions or
/// owners.
fn exec_effect(words: &[String]) -> (bool, Option<Vec<String>>) {
    if words.is_empty() {
        return (false, None);
    }
    let code: Vec<String> = words
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', "'\\''")))
        .collect();
    let parts = analyze(&code.join(" ")).parts;
    let destroys = parts
        .iter()
        .any(|p| in_set("file-destroyers", basename(&p.command_word), false));
    let changes = parts
        .into_iter()
        .find(|p| in_set("permission-changers", basename(&p.command_word), false))
        .map(|p| p.args);
    (destroys, changes)
}

fn contains_action(e: &Expr) -> bool {
    match e {
        Expr::Action { .. } => true,
        Expr::Test { .. } => false,
        Expr::Not(inner) => contains_action(inner),
        Expr::And(v) | Expr::Or(v) | Expr::List(v) => v.iter().any(contains_action),
    }
}

/// Whether `e` being true means a name test chose the file.
fn selective(e: &Expr) -> bool {
    match e {
        Expr::Test { selective } => *selective,
        Expr::Action { .. } | Expr::Not(_) => false,
        Expr::And(v) => v.iter().any(selective),
        Expr::Or(v) => v.iter().all(selective),
        Expr::List(v) => v.last().is_some_and(selective),
    }
}

/// Records the actions of `e`, reached when `guarded` (a name test chose the file).
fn walk(e: &Expr, guarded: bool, out: &mut Effect) {
    match e {
        Expr::Action {
            destroys,
            outputs,
            changes,
        } => {
            out.destroys |= destroys;
            out.destroys_all |= destroys & !guarded;
            out.outputs |= outputs;
            out.outputs_all |= outputs & !guarded;
            if let Some(words) = changes.as_ref().filter(|_| !guarded) {
                out.changes_all.push(words.clone());
            }
        }
        Expr::Test { .. } => {}
        // What runs inside `!` runs whether or not it is chosen by name.
        Expr::Not(inner) => walk(inner, guarded, out),
        Expr::And(items) => {
            let mut g = guarded;
            for item in items {
                walk(item, g, out);
                g |= selective(item);
            }
        }
        // A later branch runs when an earlier one was false: no more chosen than before.
        Expr::Or(items) | Expr::List(items) => {
            for item in items {
                walk(item, guarded, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(text: &str) -> Effect {
        let args: Vec<String> = text.split(' ').map(str::to_owned).collect();
        effect(&args)
    }

    #[test]
    fn deleting_everything_or_only_what_a_name_test_chose() {
        assert!(of("~ -delete").destroys_all);
        assert!(of("/ -type f -exec rm {} +").destroys_all);
        assert!(of("~ ! -name *.pyc -delete").destroys_all);
        assert!(of("~ -name *.pyc -o -delete").destroys_all);
        assert!(of("~ -name * -delete").destroys_all);
        assert!(of("/ -path /usr/* -delete").destroys_all);
        let sh: Vec<String> = ["/", "-exec", "sh", "-c", "rm -rf \"$1\"", "_", "{}", ";"]
            .map(str::to_owned)
            .to_vec();
        assert!(effect(&sh).destroys_all);
        let chosen = of("~ -name *.pyc -delete");
        assert!(chosen.destroys && !chosen.destroys_all);
        assert!(!of("~ ( -name a -o -name b ) -exec rm {} +").destroys_all);
        assert!(!of("~ -name *.o -print").destroys);
        assert_eq!(of("-L ~ /tmp -delete").roots, [1, 2]);
    }

    #[test]
    fn printing_everything_or_only_what_a_name_test_chose() {
        assert!(of("~ -type f").outputs_all);
        assert!(of("/ -print0").outputs_all);
        assert!(!of("~ -name *.pyc").outputs_all);
        assert!(!of("~ -name *.pyc -print0").outputs_all);
        assert!(!of("~ -delete").outputs);
    }
}
