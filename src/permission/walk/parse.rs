//! Walking the parsed shell program to find every command the text would execute.

use std::panic::{AssertUnwindSafe, catch_unwind};

use brush_parser::ParserOptions;
use brush_parser::ast::{
    AndOr, Assignment, AssignmentName, AssignmentValue, BinaryPredicate, CaseItemPostAction, Command,
    CommandPrefixOrSuffixItem, CompoundCommand, CompoundList, ExtendedTestExpr, IoFileRedirectKind,
    IoFileRedirectTarget, IoRedirect, Pipeline, RedirectList, SimpleCommand, SubshellCommand, UnaryPredicate,
};

use super::word::{resolve, resolve_heredoc};
use crate::permission::dialect::{Dialect, not_plain, other_shell_command_hazard};
use crate::permission::redirect::{Redirect, RedirectMode};
use crate::permission::scan::depth::{MAX_NESTING, MAX_PAREN_NESTING, nesting_depth};
use crate::permission::scan::hazards::{continued_heredoc, named_descriptor, parser_hazard};
use crate::permission::words::arg::{Arg, clip};
use crate::permission::words::arith::{builtin_hazard, is_literal_arithmetic, is_plain_name, is_plain_subscript};
use crate::permission::words::vars::{is_risky_variable, is_shell_code_variable, risky_setting};
use crate::permission::wrappers::follow::unwrap;
use crate::permission::wrappers::unwrap::{Unwrap, basename};
use crate::permission::{Opacity, Part};

/// Characters allowed in a command word that gets a pattern of its own.
pub(crate) fn is_safe_command_word(word: &str) -> bool {
    !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./+@%:=-".contains(c))
}

/// Longest chain of wrappers (`nice`, `sudo`, `env`, ...) followed to the command.
const MAX_WRAPPERS: usize = 32;

/// At most this many redirections are reported; more make the command opaque.
const MAX_REDIRECTS: usize = 4096;

/// At most this many commands are named as feeding a shell's standard input.
const MAX_FEEDERS: usize = 16;

/// At most this many variable assignments are recorded for the classifier; past that the
/// command is opaque, since a value it can no longer follow may decide a path.
const MAX_ASSIGNMENTS: usize = 1024;

/// A shell variable given a value, recorded for the classifier (`d=/` alone,
/// `export d=/`, `for d in / ~`, `read d`): which values a later `$d` may hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Assigned {
    /// How many parts were found before it: it holds for the parts after.
    pub at: usize,
    /// The variable's name.
    pub name: String,
    /// The values it may take, as written (expansions kept); `None` for one read at run
    /// time (`read d`), which may be anything, also empty.
    pub values: Vec<Option<String>>,
    /// Whether it replaces the earlier values: false when it may not run (after `&&` or
    /// `||`, in a branch, a loop body) or does not last (a subshell, a pipeline, `sh -c`,
    /// a substitution), so the earlier values stay possible.
    pub replaces: bool,
}

/// What standard input a simple command gets from its own redirections.
enum Stdin {
    Inherited,
    /// A here-document or here-string whose text is known.
    Text(String),
    /// A here-document or here-string with expansions, or a file.
    Unknown,
}

/// Collects parts and reasons for opacity while walking one command text.
pub(crate) struct Walker {
    pub parts: Vec<Part>,
    pub opaque: Vec<Opacity>,
    /// Every redirection, in text order.
    pub redirects: Vec<Redirect>,
    pub options: ParserOptions,
    /// The shell that reads the text being walked.
    pub dialect: Dialect,
    depth: usize,
    /// Walking a script a shell reads from its standard input, which `exec 0<x`
    /// would replace with the rest of the script.
    stdin_script: bool,
    /// The working directory wrappers around the command being walked start it in
    /// (`env -C DIR`), for [`Part::directory`].
    directory: Option<String>,
    /// Variable assignments, in text order, for the classifier.
    pub assignments: Vec<Assigned>,
    /// How many enclosing constructs may skip what is being walked or keep its
    /// assignments from lasting (see [`Assigned::replaces`]).
    conditional: usize,
    /// How many command or process substitutions enclose what is being walked.
    substituting: usize,
}

impl Walker {
    pub(crate) fn new(dialect: Dialect) -> Self {
        Walker {
            parts: Vec::new(),
            opaque: Vec::new(),
            redirects: Vec::new(),
            options: ParserOptions::default(),
            dialect,
            depth: 0,
            stdin_script: false,
            directory: None,
            assignments: Vec::new(),
            conditional: 0,
            substituting: 0,
        }
    }

    /// Walks `f` as code that may not run, or whose assignments do not last.
    fn conditionally(&mut self, f: impl FnOnce(&mut Self)) {
        self.conditional += 1;
        f(self);
        self.conditional -= 1;
    }

    /// Records that `name` may hold `values` for the parts found after this point.
    fn assigned(&mut self, name: &str, values: Vec<Option<String>>) {
        if self.assignments.len() == MAX_ASSIGNMENTS {
            self.opaque(format!("more than {MAX_ASSIGNMENTS} variable assignments"), Vec::new());
        }
        if self.assignments.len() >= MAX_ASSIGNMENTS {
            return;
        }
        self.assignments.push(Assigned {
            at: self.parts.len(),
            name: name.to_owned(),
            values,
            replaces: self.conditional == 0,
        });
    }

    /// Records that a bash-only construct is opaque unless the dialect is bash.
    fn bash_only(&mut self, what: &str) {
        if self.dialect.bash_only_is_opaque() {
            self.opaque(
                format!("{what} is bash-only: a POSIX sh reads it differently"),
                Vec::new(),
            );
        }
    }

    /// Records a reason the command cannot be known from its text.
    pub(crate) fn opaque(&mut self, reason: String, fed_by: Vec<String>) {
        if self.opaque.len() < 32 {
            self.opaque.push(Opacity::new(reason, fed_by));
        }
    }

    /// Records that a shell or `eval` runs code the text does not show.
    pub(crate) fn hidden_code(&mut self, reason: String, fed_by: Vec<String>) {
        if self.opaque.len() < 32 {
            let mut o = Opacity::new(reason, fed_by);
            o.hidden_code = true;
            self.opaque.push(o);
        } else if let Some(last) = self.opaque.last_mut() {
            last.hidden_code = true;
        }
    }

    /// Analyses `text` as shell code one nesting level below the current one.
    pub(crate) fn text(&mut self, text: &str) {
        if text.contains('\0') {
            self.opaque("the command contains a NUL byte".into(), Vec::new());
            return;
        }
        let (depth, parens) = nesting_depth(text);
        if parens > MAX_PAREN_NESTING {
            self.opaque(
                format!("the command nests parentheses deeper than {MAX_PAREN_NESTING} levels"),
                Vec::new(),
            );
            return;
        }
        if self.depth + depth > MAX_NESTING {
            self.opaque(
                format!("the command nests deeper than {MAX_NESTING} levels"),
                Vec::new(),
            );
            return;
        }
        if let Some(reason) = parser_hazard(text) {
            self.opaque(reason, Vec::new());
            return;
        }
        if let Some(reason) = continued_heredoc(text) {
            self.opaque(reason, Vec::new());
            return;
        }
        if let Some(reason) = named_descriptor(text.as_bytes()) {
            self.opaque(reason, Vec::new());
        }
        if self.dialect == Dialect::Other
            && let Some(reason) = not_plain(text)
        {
            // Still walked as bash below, so that deny rules and the classifier see
            // the commands bash would find.
            self.opaque(reason, Vec::new());
        }
        let options = &self.options;
        // The parser has panicked on input it should reject; a panic means opaque.
        let parsed = catch_unwind(AssertUnwindSafe(|| {
            brush_parser::Parser::new(std::io::Cursor::new(text.as_bytes()), options).parse_program()
        }));
        // Nested text (a substitution, `sh -c` code, a script on standard input) runs in
        // another shell or a subshell: its assignments do not last.
        let nested = usize::from(self.depth > 0);
        self.conditional += nested;
        match parsed {
            Ok(Ok(program)) => {
                for list in &program.complete_commands {
                    self.list(list);
                }
            }
            Ok(Err(e)) => self.opaque(format!("the shell parser rejected `{}`: {e}", clip(text)), Vec::new()),
            Err(_) => self.opaque(format!("the shell parser failed on `{}`", clip(text)), Vec::new()),
        }
        self.conditional -= nested;
    }

    /// Analyses `text`, read by a shell of `dialect`.
    fn text_in(&mut self, text: &str, dialect: Dialect) {
        let outer = std::mem::replace(&mut self.dialect, dialect);
        self.text(text);
        self.dialect = outer;
    }

    /// Analyses nested code (a substitution, `sh -c` string, ...) and returns the command
    /// words it runs.
    pub(crate) fn substitution(&mut self, code: &str) -> Vec<String> {
        let before = self.parts.len();
        self.substituting += 1;
        self.nested(|w| w.text(code));
        self.substituting -= 1;
        self.parts[before..].iter().map(|p| p.command_word.clone()).collect()
    }

    fn nested(&mut self, f: impl FnOnce(&mut Self)) {
        if self.depth >= MAX_NESTING {
            self.opaque(
                format!("the command nests deeper than {MAX_NESTING} levels"),
                Vec::new(),
            );
            return;
        }
        self.depth += 1;
        f(self);
        self.depth -= 1;
    }

    fn list(&mut self, list: &CompoundList) {
        for item in &list.0 {
            self.pipeline(&item.0.first);
            for next in &item.0.additional {
                match next {
                    AndOr::And(p) | AndOr::Or(p) => self.conditionally(|w| w.pipeline(p)),
                }
            }
        }
    }

    fn pipeline(&mut self, p: &Pipeline) {
        if p.timed.is_some() && self.dialect != Dialect::Bash && starts_with_assignment(p) {
            // dash and other shells have no `time` keyword: they run the program `time`,
            // which runs its first word, `NAME=value`, as a command.
            self.opaque(
                "`time NAME=value ...`: bash reads an assignment, a shell without the `time` keyword runs the program `time`, which runs `NAME=value` as a command".to_owned(),
                Vec::new(),
            );
        }
        // The command words of earlier commands in the pipeline, grown as the pipeline
        // is walked (rebuilding it per command made long pipelines quadratic).
        let mut feeders: Vec<String> = Vec::new();
        // Each command of a pipeline runs in a subshell.
        let piped = usize::from(p.seq.len() > 1);
        self.conditional += piped;
        for cmd in &p.seq {
            let before = self.parts.len();
            self.command(cmd, &feeders);
            if feeders.len() < MAX_FEEDERS {
                let room = MAX_FEEDERS - feeders.len();
                feeders.extend(self.parts[before..].iter().take(room).map(|p| p.command_word.clone()));
            }
        }
        self.conditional -= piped;
    }

    fn command(&mut self, cmd: &Command, feeders: &[String]) {
        match cmd {
            Command::Simple(s) => self.simple(s, feeders),
            Command::Compound(c, redirects) => {
                let start = self.parts.len();
                self.nested(|w| w.compound(c, feeders));
                self.redirect_list(redirects.as_ref(), start);
            }
            Command::Function(f) => {
                self.opaque(
                    format!(
                        "defines the function `{}`, so later names may not run what they say",
                        clip(&f.fname.value)
                    ),
                    Vec::new(),
                );
            }
            Command::ExtendedTest(t, redirects) => {
                self.bash_only("`[[ ... ]]`");
                let start = self.parts.len();
                self.nested(|w| w.test_expr(&t.expr));
                self.redirect_list(redirects.as_ref(), start);
            }
        }
    }

    fn redirect_list(&mut self, redirects: Option<&RedirectList>, start: usize) {
        let Some(list) = redirects else { return };
        let mut writes = Vec::new();
        let mut stdin = Stdin::Inherited;
        for r in &list.0 {
            self.redirect(r, &mut writes, &mut stdin);
        }
        for part in &mut self.parts[start..] {
            part.writes.extend(writes.iter().cloned());
        }
    }

    fn test_expr(&mut self, e: &ExtendedTestExpr) {
        // Iterative over the left spine; depth of the rest is bounded by the pre-scan.
        match e {
            ExtendedTestExpr::And(a, b) | ExtendedTestExpr::Or(a, b) => {
                self.nested(|w| w.test_expr(a));
                self.nested(|w| w.test_expr(b));
            }
            ExtendedTestExpr::Not(a) | ExtendedTestExpr::Parenthesized(a) => self.nested(|w| w.test_expr(a)),
            ExtendedTestExpr::UnaryTest(op, word) => {
                let arg = resolve(&word.value, self);
                if matches!(
                    op,
                    UnaryPredicate::ShellVariableIsSetAndAssigned | UnaryPredicate::ShellVariableIsSetAndNameRef
                ) && !is_plain_name(&arg.text)
                {
                    self.opaque(
                        format!("`[[ {op} {} ]]` evaluates the subscript as code", clip(&word.value)),
                        Vec::new(),
                    );
                }
            }
            ExtendedTestExpr::BinaryTest(op, a, b) => {
                resolve(&a.value, self);
                resolve(&b.value, self);
                let arithmetic = matches!(
                    op,
                    BinaryPredicate::ArithmeticEqualTo
                        | BinaryPredicate::ArithmeticNotEqualTo
                        | BinaryPredicate::ArithmeticLessThan
                        | BinaryPredicate::ArithmeticLessThanOrEqualTo
                        | BinaryPredicate::ArithmeticGreaterThan
                        | BinaryPredicate::ArithmeticGreaterThanOrEqualTo
                );
                if arithmetic {
                    for w in [a, b] {
                        self.arithmetic(&w.value);
                    }
                }
            }
        }
    }

    fn arithmetic(&mut self, expr: &str) {
        if expr.contains("$(") || expr.contains('`') {
            self.opaque(
                format!("a command substitution inside arithmetic `{}`", clip(expr)),
                Vec::new(),
            );
        } else if !is_literal_arithmetic(expr) {
            self.opaque(
                format!(
                    "the arithmetic `{}` reads variables, whose values bash evaluates as code",
                    clip(expr)
                ),
                Vec::new(),
            );
        }
    }

    fn compound(&mut self, c: &CompoundCommand, feeders: &[String]) {
        match c {
            CompoundCommand::Arithmetic(a) => {
                self.bash_only("`(( ... ))`");
                self.arithmetic(&a.expr.value);
            }
            CompoundCommand::ArithmeticForClause(f) => {
                self.bash_only("`for (( ... ))`");
                for e in [&f.initializer, &f.condition, &f.updater].into_iter().flatten() {
                    self.arithmetic(&e.value);
                }
                self.conditionally(|w| w.list(&f.body.list));
            }
            CompoundCommand::BraceGroup(b) => self.list(&b.list),
            CompoundCommand::Subshell(s) => self.conditionally(|w| w.list(&s.list)),
            CompoundCommand::ForClause(f) => {
                if is_risky_variable(&f.variable_name) {
                    self.opaque(
                        format!("the loop sets {}, which changes what runs", f.variable_name),
                        Vec::new(),
                    );
                }
                // `for d; do` loops over the positional parameters, which are not known.
                let values = match &f.values {
                    Some(words) => words.iter().map(|v| Some(resolve(&v.value, self).text)).collect(),
                    None => vec![None],
                };
                if !values.is_empty() {
                    self.assigned(&f.variable_name, values);
                }
                self.conditionally(|w| w.list(&f.body.list));
            }
            CompoundCommand::CaseClause(c) => {
                resolve(&c.value.value, self);
                for item in &c.cases {
                    if !matches!(item.post_action, CaseItemPostAction::ExitCase) {
                        self.bash_only("the case terminator `;&` or `;;&`");
                    }
                    for p in &item.patterns {
                        resolve(&p.value, self);
                    }
                    if let Some(list) = &item.cmd {
                        self.conditionally(|w| w.list(list));
                    }
                }
            }
            CompoundCommand::IfClause(i) => {
                self.list(&i.condition);
                self.conditionally(|w| {
                    w.list(&i.then);
                    for e in i.elses.iter().flatten() {
                        if let Some(cond) = &e.condition {
                            w.list(cond);
                        }
                        w.list(&e.body);
                    }
                });
            }
            CompoundCommand::WhileClause(w) | CompoundCommand::UntilClause(w) => {
                self.list(&w.0);
                self.conditionally(|walker| walker.list(&w.1.list));
            }
            CompoundCommand::Coprocess(c) => {
                self.bash_only("`coproc`");
                if let Some(name) = &c.name
                    && is_risky_variable(&name.value)
                {
                    self.opaque(
                        format!("`coproc {}` sets {}, which changes what runs", name.value, name.value),
                        Vec::new(),
                    );
                }
                self.conditionally(|w| w.nested(|w| w.command(&c.body, feeders)));
            }
        }
    }

    fn process_substitution(&mut self, sub: &SubshellCommand) -> Arg {
        self.bash_only("process substitution `<(...)` or `>(...)`");
        let before = self.parts.len();
        self.substituting += 1;
        self.conditionally(|w| w.nested(|w| w.list(&sub.list)));
        self.substituting -= 1;
        let inner = self.parts[before..].iter().map(|p| p.command_word.clone()).collect();
        Arg {
            text: "<(...)".into(),
            literal: false,
            inner,
            compound: false,
        }
    }

    /// Checks an assignment; returns the variable's name and value (as written) when it
    /// is a plain scalar one (`d=/`, not `a[i]=x`, `a=(x)` or `d+=x`).
    fn assignment(&mut self, a: &Assignment) -> Option<(String, String)> {
        let name = match &a.name {
            AssignmentName::VariableName(n) | AssignmentName::ArrayElementName(n, _) => n,
        };
        let mut written = None;
        let value = match &a.value {
            AssignmentValue::Scalar(w) => {
                let arg = resolve(&w.value, self);
                written = Some(arg.text.clone());
                arg.literal.then_some(arg.text)
            }
            AssignmentValue::Array(_) => None,
        };
        if let Some(reason) = risky_setting(name, value.as_deref()) {
            if is_shell_code_variable(name) {
                self.hidden_code(reason, Vec::new());
            } else {
                self.opaque(reason, Vec::new());
            }
        }
        if let AssignmentName::ArrayElementName(_, index) = &a.name {
            self.bash_only("an array element assignment");
            let arg = resolve(index, self);
            if !is_plain_subscript(&arg.text) {
                self.opaque(
                    format!("the subscript in `{name}[{}]=` is evaluated as code", clip(index)),
                    Vec::new(),
                );
            }
        }
        if a.append {
            self.bash_only("`+=` assignment");
        }
        match &a.value {
            AssignmentValue::Scalar(_) => {}
            AssignmentValue::Array(items) => {
                self.bash_only("an array assignment");
                for (k, v) in items {
                    if let Some(k) = k {
                        let key = resolve(&k.value, self);
                        if !is_plain_subscript(&key.text) {
                            self.opaque(
                                format!("the subscript `[{}]=` is evaluated as code", clip(&k.value)),
                                Vec::new(),
                            );
                        }
                    }
                    resolve(&v.value, self);
                }
            }
        }
        let plain = matches!(a.name, AssignmentName::VariableName(_)) && !a.append;
        written.filter(|_| plain).map(|v| (name.clone(), v))
    }

    /// Opacity for keys of an array assignment given as an argument (`declare a=([i]=1)`)
    /// that are not plain subscripts; the word itself is resolved as an argument.
    fn array_keys(&mut self, a: &Assignment) {
        if let AssignmentValue::Array(items) = &a.value {
            for k in items.iter().filter_map(|(k, _)| k.as_ref()) {
                if !is_plain_subscript(&k.value) {
                    self.opaque(
                        format!("the subscript `[{}]=` is evaluated as code", clip(&k.value)),
                        Vec::new(),
                    );
                }
            }
        }
    }

    fn redirect(&mut self, r: &IoRedirect, writes: &mut Vec<String>, stdin: &mut Stdin) {
        match r {
            IoRedirect::File(fd, kind, target) => self.file_redirect(*fd, kind, target, writes, stdin),
            // Only a here-document or here-string on descriptor 0 is standard input;
            // on another descriptor (`sh 3<<EOF`) it is not what a shell reads.
            IoRedirect::HereDocument(fd, doc) => {
                let text = if doc.requires_expansion {
                    let arg = resolve_heredoc(&doc.doc.value, self);
                    arg.literal.then_some(arg.text)
                } else {
                    Some(doc.doc.value.clone())
                };
                if fd.is_none_or(|f| f == 0) {
                    *stdin = text.map_or(Stdin::Unknown, Stdin::Text);
                }
            }
            IoRedirect::HereString(fd, w) => {
                self.bash_only("the here-string `<<<`");
                let arg = resolve(&w.value, self);
                if fd.is_none_or(|f| f == 0) {
                    *stdin = if arg.literal {
                        Stdin::Text(arg.text)
                    } else {
                        Stdin::Unknown
                    };
                }
            }
            IoRedirect::OutputAndError(w, append) => {
                self.bash_only("the redirection `&>`");
                let arg = resolve(&w.value, self);
                writes.push(arg.text.clone());
                let mode = if *append {
                    RedirectMode::Append
                } else {
                    RedirectMode::Write
                };
                self.record(1, mode, arg);
            }
        }
    }

    /// A redirection to or from a file or a descriptor (`>f`, `2>>f`, `<f`, `>&2`).
    fn file_redirect(
        &mut self,
        fd: Option<i32>,
        kind: &IoFileRedirectKind,
        target: &IoFileRedirectTarget,
        writes: &mut Vec<String>,
        stdin: &mut Stdin,
    ) {
        // Whatever a redirection puts on descriptor 0 replaces the standard input
        // a here-document or here-string gave before it (`sh <<EOF <&3`).
        let default_fd = match kind {
            IoFileRedirectKind::Read | IoFileRedirectKind::ReadAndWrite | IoFileRedirectKind::DuplicateInput => 0,
            _ => 1,
        };
        if fd.unwrap_or(default_fd) == 0 {
            *stdin = Stdin::Unknown;
        }
        let fd = u32::try_from(fd.unwrap_or(default_fd)).unwrap_or(u32::MAX);
        let mode = match kind {
            IoFileRedirectKind::Read => RedirectMode::Read,
            IoFileRedirectKind::Write | IoFileRedirectKind::Clobber => RedirectMode::Write,
            IoFileRedirectKind::Append => RedirectMode::Append,
            IoFileRedirectKind::ReadAndWrite => RedirectMode::ReadWrite,
            IoFileRedirectKind::DuplicateInput | IoFileRedirectKind::DuplicateOutput => RedirectMode::Duplicate,
        };
        match target {
            IoFileRedirectTarget::Filename(w) => {
                let arg = resolve(&w.value, self);
                if mode.writes() {
                    writes.push(arg.text.clone());
                }
                self.record(fd, mode, arg);
            }
            // Only `|&` produces a bare descriptor target (`2>&1` written out is a word).
            IoFileRedirectTarget::Fd(_) => self.bash_only("the pipe `|&`"),
            IoFileRedirectTarget::ProcessSubstitution(_, sub) => {
                self.process_substitution(sub);
            }
            IoFileRedirectTarget::Duplicate(w) => {
                let arg = resolve(&w.value, self);
                let descriptor = arg.literal && (arg.text == "-" || arg.text.bytes().all(|b| b.is_ascii_digit()));
                // bash reads `>&word` with a word that is not a descriptor as
                // `&>word`: a write of stdout and stderr to the file `word`.
                if !descriptor && matches!(kind, IoFileRedirectKind::DuplicateOutput) {
                    writes.push(arg.text.clone());
                    self.record(fd, RedirectMode::Write, arg);
                } else {
                    self.record(fd, mode, arg);
                }
            }
        }
    }

    /// Reports a redirection (a bounded number: past that, the command is opaque).
    fn record(&mut self, fd: u32, mode: RedirectMode, target: Arg) {
        if self.redirects.len() >= MAX_REDIRECTS {
            if self.redirects.len() == MAX_REDIRECTS {
                self.opaque(format!("more than {MAX_REDIRECTS} redirections"), Vec::new());
                self.redirects.push(Redirect {
                    fd,
                    mode,
                    target: String::new(),
                    literal: false,
                });
            }
            return;
        }
        self.redirects.push(Redirect {
            fd,
            mode,
            literal: target.literal,
            target: target.text,
        });
    }

    fn simple(&mut self, cmd: &SimpleCommand, feeders: &[String]) {
        let mut argv: Vec<Arg> = Vec::new();
        let mut writes = Vec::new();
        let mut stdin = Stdin::Inherited;
        let mut prefix_assignments = Vec::new();
        let items = cmd.prefix.iter().flat_map(|p| p.0.iter());
        for item in items {
            match item {
                CommandPrefixOrSuffixItem::IoRedirect(r) => self.redirect(r, &mut writes, &mut stdin),
                CommandPrefixOrSuffixItem::AssignmentWord(a, _) => {
                    prefix_assignments.extend(self.assignment(a));
                }
                CommandPrefixOrSuffixItem::Word(w) => argv.push(resolve(&w.value, self)),
                CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                    let arg = self.process_substitution(sub);
                    argv.push(arg);
                }
            }
        }
        if let Some(w) = &cmd.word_or_name {
            argv.push(resolve(&w.value, self));
        }
        for item in cmd.suffix.iter().flat_map(|s| s.0.iter()) {
            match item {
                CommandPrefixOrSuffixItem::IoRedirect(r) => self.redirect(r, &mut writes, &mut stdin),
                CommandPrefixOrSuffixItem::AssignmentWord(a, w) => {
                    // An argument such as `declare -a a=([i]=1)`: its keys are
                    // evaluated like those of a standalone array assignment.
                    self.array_keys(a);
                    let mut arg = resolve(&w.value, self);
                    arg.compound = matches!(a.value, AssignmentValue::Array(_));
                    argv.push(arg);
                }
                CommandPrefixOrSuffixItem::Word(w) => {
                    argv.push(resolve(&w.value, self));
                }
                CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                    let arg = self.process_substitution(sub);
                    argv.push(arg);
                }
            }
        }
        if argv.is_empty() {
            // Assignments alone set shell variables; before a command they are only in
            // its environment, and `$d` in its arguments is expanded before them.
            for (name, value) in prefix_assignments {
                self.assigned(&name, vec![Some(value)]);
            }
            return;
        }
        self.builtin_assignments(&argv);
        if self.stdin_script && !matches!(stdin, Stdin::Inherited) && argv.iter().any(|a| a.text == "exec") {
            self.opaque(
                "`exec` replaces the standard input a shell reads its script from, so the rest of the \
                 script comes from elsewhere"
                    .into(),
                Vec::new(),
            );
        }
        self.run(argv, &stdin, &writes, feeders);
    }

    /// Records the variables `export d=/`, `declare`, `local`, `readonly`, `typeset` and
    /// `read` set.
    fn builtin_assignments(&mut self, argv: &[Arg]) {
        match argv[0].text.as_str() {
            "export" | "declare" | "typeset" | "local" | "readonly" => {
                for a in &argv[1..] {
                    if let Some((name, value)) = a.text.split_once('=')
                        && is_plain_name(name)
                    {
                        self.assigned(name, vec![Some(value.to_owned())]);
                    }
                }
            }
            "read" => {
                // Options that take a value: -a (an array), -d, -i, -n, -N, -p, -t, -u.
                let mut words = argv[1..].iter().map(|a| a.text.as_str());
                while let Some(word) = words.next() {
                    if let Some(flags) = word.strip_prefix('-') {
                        if flags.ends_with(['a', 'd', 'i', 'n', 'N', 'p', 't', 'u']) {
                            words.next();
                        }
                    } else if is_plain_name(word) {
                        self.assigned(word, vec![None]);
                    }
                }
            }
            _ => {}
        }
    }

    fn push_part(&mut self, argv: &[Arg], wrappers: &[String], writes: &[String]) {
        let args: Vec<String> = argv.iter().map(|a| a.text.clone()).collect();
        let substitutions = argv
            .iter()
            .enumerate()
            .filter(|(_, a)| !a.inner.is_empty())
            .map(|(i, a)| (i, a.inner.clone()))
            .collect();
        self.parts.push(Part {
            command_word: args[0].clone(),
            normalized_text: args.join(" "),
            args,
            wrappers: wrappers.to_vec(),
            writes: writes.to_vec(),
            directory: self.directory.clone(),
            substitutions,
            in_substitution: self.substituting > 0,
        });
    }

    /// Follows wrappers from the command `argv` to every command it runs; a directory
    /// a wrapper sets holds for what it runs only.
    fn run(&mut self, all: Vec<Arg>, stdin: &Stdin, writes: &[String], feeders: &[String]) {
        let outer = self.directory.clone();
        self.run_wrapped(all, stdin, writes, feeders);
        self.directory = outer;
    }

    /// Switches to the directory the wrapper `argv[0]` starts its command in, if it
    /// changes it.
    fn enter_directory(&mut self, argv: &[Arg]) {
        if let Some(dir) = crate::permission::wrappers::chdir::directory(argv) {
            self.directory = crate::permission::wrappers::chdir::join(self.directory.as_deref(), &dir);
        }
    }

    fn run_wrapped(&mut self, all: Vec<Arg>, stdin: &Stdin, writes: &[String], feeders: &[String]) {
        let mut wrappers: Vec<String> = Vec::new();
        // Each wrapper moves `start` on instead of draining `all`, which made long
        // wrapper chains (`nice nice nice ... ls`) quadratic.
        let mut start_of_command = 0;
        loop {
            if wrappers.len() > MAX_WRAPPERS {
                // Each visible wrapper is a part holding the rest of the arguments, so
                // long chains (`sudo sudo sudo ...`) would take quadratic time and space.
                self.opaque(
                    format!("more than {MAX_WRAPPERS} wrappers around one command"),
                    Vec::new(),
                );
                return;
            }
            let argv = &all[start_of_command..];
            if let Some((reason, fed)) = self.command_word_hazard(argv) {
                self.opaque(reason, fed);
                return;
            }
            let unwrapped = self.unwrap_checked(argv);
            let Some(start) = self.follow(argv, unwrapped, &wrappers, stdin, writes, feeders) else {
                return;
            };
            wrappers.push(basename(&argv[0].text).to_owned());
            start_of_command += start;
            if start_of_command >= all.len() {
                return;
            }
        }
    }

    /// Why the command word of `argv` cannot be followed, and the commands that feed
    /// it: produced by an expansion, with unsafe characters, an option, or a builtin
    /// that changes what later names run.
    fn command_word_hazard(&self, argv: &[Arg]) -> Option<(String, Vec<String>)> {
        let word = &argv[0];
        if !word.literal {
            let reason = format!("the command word `{}` is produced by an expansion", clip(&word.text));
            return Some((reason, word.inner.clone()));
        }
        if !is_safe_command_word(&word.text) {
            let reason = format!(
                "the command word `{}` has characters outside A-Z a-z 0-9 _ . / + @ % : = -",
                clip(&word.text)
            );
            return Some((reason, Vec::new()));
        }
        if word.text.starts_with('-') {
            // An option a wrapper or keyword did not take as one (`env - rm x`,
            // `time -- rm x`): what runs is the word after it.
            let reason = format!(
                "the command word `{}` is an option, so the command is probably the next word",
                clip(&word.text)
            );
            return Some((reason, Vec::new()));
        }
        if self.dialect == Dialect::Other
            && let Some(reason) = other_shell_command_hazard(&word.text)
        {
            return Some((reason, Vec::new()));
        }
        history_hazard(argv)
            .or_else(|| builtin_hazard(argv))
            .map(|reason| (reason, Vec::new()))
    }

    /// What `argv` runs ([`unwrap`]), with the wrapper's own arguments that come from
    /// an expansion made opaque; a wrapper refused for them is still followed as if
    /// each expansion were one word.
    fn unwrap_checked(&mut self, argv: &[Arg]) -> Unwrap {
        let unwrapped = unwrap(argv);
        let fixed = match &unwrapped {
            Unwrap::Inner { start, .. } | Unwrap::ScriptJoin { start, .. } => *start,
            Unwrap::Script { index, .. } => *index,
            Unwrap::Multi(_) => 0,
            _ => 0,
        };
        if let Some(bad) = argv.get(1..fixed).and_then(|a| a.iter().find(|a| !a.literal)) {
            let reason = format!(
                "`{}` gets the argument `{}` from an expansion, so what it runs is unknown",
                argv[0].text,
                clip(&bad.text)
            );
            let fed = bad.inner.clone();
            if runs_hidden_code(argv) {
                self.hidden_code(reason, fed);
            } else {
                self.opaque(reason, fed);
            }
            // Still followed as if the expansion were one word, so that deny rules
            // and the classifier see what it most likely runs (`sudo -u "$U" rm -rf /`).
        }
        match unwrapped {
            // A wrapper given a word from an expansion (`sudo -u "$U" rm -rf /`,
            // `find "$d" -delete`): opaque, and still followed as if each expansion
            // were one word, so that deny rules and the classifier see what it most
            // likely runs. Not for code a shell or `source` reads.
            Unwrap::Opaque(reason) if argv[1..].iter().any(|a| !a.literal) && !runs_hidden_code(argv) => {
                let as_words: Vec<Arg> = argv
                    .iter()
                    .map(|a| Arg {
                        literal: true,
                        ..a.clone()
                    })
                    .collect();
                match unwrap(&as_words) {
                    Unwrap::Opaque(_) | Unwrap::InputCode(_) | Unwrap::Stdin => Unwrap::Opaque(reason),
                    then => {
                        let fed = argv.iter().flat_map(|a| a.inner.clone()).collect();
                        self.opaque(reason, fed);
                        then
                    }
                }
            }
            other => other,
        }
    }

    /// Records what `argv` runs, as `unwrapped` says, under `wrappers`; returns where
    /// the command it wraps starts in `argv` when the walk goes on into it.
    fn follow(
        &mut self,
        argv: &[Arg],
        unwrapped: Unwrap,
        wrappers: &[String],
        stdin: &Stdin,
        writes: &[String],
        feeders: &[String],
    ) -> Option<usize> {
        match unwrapped {
            Unwrap::Command => {
                self.push_part(argv, wrappers, writes);
                None
            }
            Unwrap::Inner { start, visible } => {
                if visible {
                    self.push_part(argv, wrappers, writes);
                }
                self.enter_directory(argv);
                Some(start)
            }
            Unwrap::Script { index, visible } => {
                if visible {
                    self.push_part(argv, wrappers, writes);
                }
                self.enter_directory(argv);
                let code = argv[index].clone();
                self.script(&argv[0].text, &code);
                None
            }
            Unwrap::ScriptJoin { start, visible } => {
                if visible {
                    self.push_part(argv, wrappers, writes);
                }
                self.enter_directory(argv);
                self.script(&argv[0].text, &joined(&argv[start..]));
                None
            }
            Unwrap::Stdin => {
                self.shell_stdin(argv, stdin, feeders);
                None
            }
            Unwrap::Multi(ranges) => {
                self.push_part(argv, wrappers, writes);
                for (s, e) in ranges {
                    let inner = argv[s..e].to_vec();
                    self.nested(|w| w.run(inner, &Stdin::Inherited, &[], &[]));
                }
                None
            }
            Unwrap::InputCode(reason) => {
                // The words read from standard input become code: the pipeline
                // before feeds it (`curl x | xargs sh -c`).
                let mut fed: Vec<String> = argv.iter().flat_map(|a| a.inner.clone()).collect();
                fed.extend(feeders.iter().cloned());
                self.opaque(reason, fed);
                // What it runs with no input words added is still found, for deny
                // rules and the classifier (`xargs find / -delete`).
                match crate::permission::wrappers::follow::unwrap_unchecked(argv) {
                    Unwrap::Inner { start, .. } => Some(start),
                    _ => None,
                }
            }
            Unwrap::Opaque(reason) => {
                // `source f` and `. f` run the file's code: the part says which file
                // (deny rules and the classifier see it).
                if matches!(basename(&argv[0].text), "source" | ".") && argv.len() > 1 {
                    self.push_part(argv, wrappers, writes);
                }
                let fed = argv.iter().flat_map(|a| a.inner.clone()).collect();
                if runs_hidden_code(argv) {
                    self.hidden_code(reason, fed);
                } else {
                    self.opaque(reason, fed);
                }
                None
            }
        }
    }

    /// Walks the script the shell `argv[0]` reads from its standard input, when the
    /// text says what it is (a here-document or here-string).
    fn shell_stdin(&mut self, argv: &[Arg], stdin: &Stdin, feeders: &[String]) {
        if crate::permission::wrappers::follow::is_shell(&argv[0].text)
            && let Some(path) = argv[1..].iter().find(|a| names_other_stream(&a.text))
        {
            self.hidden_code(
                format!(
                    "`{}` may read commands from `{}`, not from its standard input",
                    argv[0].text,
                    clip(&path.text)
                ),
                Vec::new(),
            );
            return;
        }
        match stdin {
            Stdin::Text(code) => {
                let code = code.clone();
                let dialect = Dialect::for_shell(&argv[0].text);
                if spans_lines(&code) {
                    // Still walked below, so that deny rules and the
                    // classifier see the commands found.
                    self.opaque(
                        format!(
                            "`{}` reads a script of several lines from standard input, which \
                             the commands it runs may read from too",
                            argv[0].text
                        ),
                        Vec::new(),
                    );
                }
                let outer = std::mem::replace(&mut self.stdin_script, true);
                self.nested(|w| w.text_in(&code, dialect));
                self.stdin_script = outer;
            }
            Stdin::Unknown => self.hidden_code(
                format!(
                    "`{}` reads commands from a file or an expanded here-document",
                    argv[0].text
                ),
                Vec::new(),
            ),
            Stdin::Inherited => self.hidden_code(
                format!("`{}` reads commands from standard input", argv[0].text),
                feeders.to_vec(),
            ),
        }
    }

    fn script(&mut self, runner: &str, code: &Arg) {
        if code.literal {
            let text = code.text.clone();
            let dialect = script_dialect(runner);
            self.nested(|w| w.text_in(&text, dialect));
        } else {
            self.hidden_code(
                format!("`{runner}` runs a command string produced by an expansion"),
                code.inner.clone(),
            );
        }
    }
}

/// The words `args` joined by spaces as one argument, the code `watch ls -l` runs:
/// literal only when every word is.
fn joined(args: &[Arg]) -> Arg {
    Arg {
        text: args.iter().map(|a| a.text.as_str()).collect::<Vec<_>>().join(" "),
        literal: args.iter().all(|a| a.literal),
        inner: args.iter().flat_map(|a| a.inner.clone()).collect(),
        compound: false,
    }
}

/// Whether an opaque command runs code its text does not show: `eval`, `source` or `.`
/// of an expansion or a stream, or an assignment (`env BASH_ENV=f`, `export ENV=f`) of a
/// variable that makes a shell read code.
fn runs_hidden_code(argv: &[Arg]) -> bool {
    let name = basename(&argv[0].text);
    let sourced = |a: &Arg| !a.literal || names_other_stream(&a.text) || a.text == "/dev/stdin";
    name == "eval"
        || (matches!(name, "source" | ".") && argv[1..].iter().any(sourced))
        // A shell given words from an expansion may be given code (`sh -c "$(cat f)"`).
        || (crate::permission::wrappers::follow::is_shell(&argv[0].text) && argv[1..].iter().any(|a| !a.literal))
        || argv[1..].iter().any(|a| {
            a.text
                .split_once('=')
                .is_some_and(|(n, _)| is_shell_code_variable(n.trim_end_matches('+')))
        })
}

/// The shell that runs the code string of `runner` (`sh -c CODE`, `su -c CODE`, ...).
/// `watch` uses `sh -c`; `su`, `sudo -s`, `flock` and `script` use the user's shell,
/// which may be anything.
fn script_dialect(runner: &str) -> Dialect {
    let name = basename(runner);
    if crate::permission::wrappers::shells::SHELLS.contains(&name) {
        Dialect::for_shell(name)
    } else if name == "watch" {
        Dialect::Unknown
    } else {
        Dialect::Other
    }
}

/// Whether a shell's script of `code`, read from standard input, has non-blank text on
/// more than one line (lines ending in a backslash joined to the next). Any command
/// of the script may read standard input (`read x`, `head -n 1`), so that what the shell
/// reads next is not what the text shows; the shell reads a whole line before running
/// it, so only later lines can be affected.
fn spans_lines(code: &str) -> bool {
    code.replace("\\\n", "")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .nth(1)
        .is_some()
}

/// A path a shell given no `-c` may take as its script that is a stream other than its
/// standard input: `/dev/fd/3`, `/proc/self/fd/3`, `/dev/tty` (slashes collapsed).
fn names_other_stream(arg: &str) -> bool {
    let mut path = String::with_capacity(arg.len());
    for c in arg.chars() {
        if !(c == '/' && path.ends_with('/')) {
            path.push(c);
        }
    }
    if !path.starts_with('/') {
        return false;
    }
    if let Some((_, fd)) = path.rsplit_once("/fd/") {
        return fd != "0";
    }
    (path.starts_with("/dev/") || path.starts_with("/proc/")) && path != "/dev/stdin"
}

/// `set`, `shopt` and the `history` builtin turning on or feeding bash's history
/// expansion, and a shell started with it (`bash -H -c CODE`): with it, `!:1` and the
/// like rebuild later commands out of earlier text, even in a `-c` string.
fn history_hazard(argv: &[Arg]) -> Option<String> {
    let name = argv.first()?.text.as_str();
    let args = &argv[1..];
    let named = |a: &Arg| matches!(a.text.as_str(), "history" | "histexpand");
    // The options before the first operand: `-H`, bundled (`-eH`), or `-o NAME` (`-Ho
    // NAME`, and `-O NAME` for a shell). One produced by an expansion may be any of them:
    // for `set` that is opaque here; a shell given one is opaque anyway (its script
    // becomes unknown), with a better reason.
    let options = |shell: bool| {
        let mut i = 0;
        while let Some(a) = args.get(i) {
            let t = a.text.as_str();
            if !a.literal {
                return !shell;
            }
            if t == "--" || t == "-" || !(t.starts_with('-') || t.starts_with('+')) {
                return false;
            }
            if t.starts_with('-') && t.contains('H') {
                return true;
            }
            // `-o NAME`: the next word is the option's name, not an operand.
            if t.ends_with('o') || (shell && t.ends_with('O')) {
                if args.get(i + 1).is_some_and(named) {
                    return true;
                }
                i += 1;
            }
            i += 1;
        }
        false
    };
    let hazard = match name {
        "set" => options(false),
        "shopt" => args.iter().any(|a| named(a) || !a.literal),
        "history" => args.iter().any(|a| a.text.starts_with('-') || !a.literal),
        _ if crate::permission::wrappers::follow::is_shell(name) => options(true),
        _ => false,
    };
    hazard.then(|| format!("`{name}` may turn on or feed history expansion, which rebuilds later commands"))
}

/// Whether the first command of `p` starts with an assignment (`a=b cmd`).
fn starts_with_assignment(p: &Pipeline) -> bool {
    let Some(Command::Simple(first)) = p.seq.first() else {
        return false;
    };
    first
        .prefix
        .iter()
        .flat_map(|prefix| prefix.0.iter())
        .find(|item| !matches!(item, CommandPrefixOrSuffixItem::IoRedirect(_)))
        .is_some_and(|item| matches!(item, CommandPrefixOrSuffixItem::AssignmentWord(..)))
}
