//! The option parser wrappers share: a getopt-like reader driven by a [`Spec`], each
//! wrapper's table of real options (short letters, long names and whether they take a
//! value), read the way the wrapper's own option parser reads them: bundled short
//! options (`-qc CODE`), values attached or separate (`-n5`, `-n 5`, `--signal=KILL`,
//! `--signal KILL`) and, for programs whose long-option table is known to be complete,
//! GNU abbreviations (`--sig` is `--signal`). Anything the table does not know (an unknown
//! option, an ambiguous or unsupported abbreviation, a value where none is taken, a word
//! produced by an expansion) is an error, which the caller makes opaque.

use crate::permission::words::arg::Arg;
/// Whether an option takes a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arity {
    /// A flag.
    No,
    /// A value, attached (`-n5`, `--adjustment=5`) or in the next word.
    Req,
    /// An optional value, only when attached (`-e[EOF]`, `--replace[=R]`).
    Opt,
}

/// One long option: its name, its arity and the key it is recorded under (its short
/// letter when it has one, so `-S` and `--split-string` are the same option).
pub(crate) struct LongOpt {
    name: &'static str,
    arity: Arity,
    key: &'static str,
}

pub(crate) const fn lo(name: &'static str, arity: Arity, key: &'static str) -> LongOpt {
    LongOpt { name, arity, key }
}

use Arity::{No, Opt, Req};

/// The option syntax of one wrapper.
pub(crate) struct Spec {
    /// Short options in getopt syntax: a letter, then `:` for a value or `::` for an
    /// optional attached value.
    pub(crate) short: &'static str,
    /// Long options.
    pub(crate) long: &'static [LongOpt],
    /// Options may follow operands (GNU getopt without `+`); otherwise the first operand
    /// ends the options.
    pub(crate) permute: bool,
    /// `long` lists every long option of the program, so unique prefixes resolve as
    /// getopt resolves them. When false, only exact long names are accepted and an
    /// abbreviation is opaque (the program may have options the table lacks).
    pub(crate) complete: bool,
    /// Options (by key) whose value sets or unsets a variable in the environment of the
    /// command the wrapper runs (`xargs --process-slot-var=NAME`, `strace -E NAME=V`):
    /// a risky one makes the command opaque, whichever wrapper it is given to.
    pub(crate) env: &'static [(&'static str, EnvValue)],
}

/// What the value of an environment-setting option holds.
#[derive(Clone, Copy)]
pub(crate) enum EnvValue {
    /// A variable name (its value is set or removed by the wrapper).
    Name,
    /// `NAME=VALUE`, or `NAME` alone to remove it.
    Assignment,
}

/// One option as given.
pub(crate) struct Given {
    pub(crate) key: &'static str,
    pub(crate) value: Option<String>,
    /// The index of the word holding the value when it was a separate word.
    pub(crate) value_index: Option<usize>,
}

/// The options and operands of one wrapper invocation.
pub(crate) struct Parsed {
    pub(crate) opts: Vec<Given>,
    /// Indexes of the operands, in order (only for permuting wrappers; otherwise the
    /// operands are `first..`).
    pub(crate) operands: Vec<usize>,
    /// The first operand (or `args.len()`).
    pub(crate) first: usize,
}

impl Parsed {
    pub(crate) fn has(&self, key: &str) -> bool {
        self.opts.iter().any(|o| o.key == key)
    }
    pub(crate) fn last(&self, key: &str) -> Option<&Given> {
        self.opts.iter().rev().find(|o| o.key == key)
    }
    pub(crate) fn values(&self, key: &str) -> impl Iterator<Item = &str> {
        self.opts
            .iter()
            .filter(move |o| o.key == key)
            .filter_map(|o| o.value.as_deref())
    }
    /// The operands form one run at the end of the arguments.
    pub(crate) fn operands_at_end(&self, len: usize) -> bool {
        self.operands.iter().enumerate().all(|(k, &i)| i == self.first + k) && self.first + self.operands.len() == len
    }
}

/// The arity and key of the short option `c` in `spec`.
fn short_opt(spec: &'static str, c: char) -> Option<(Arity, &'static str)> {
    if c == ':' {
        return None;
    }
    let pos = spec.find(c)?;
    let key = &spec[pos..pos + c.len_utf8()];
    let rest = &spec[pos + c.len_utf8()..];
    let arity = if rest.starts_with("::") {
        Opt
    } else if rest.starts_with(':') {
        Req
    } else {
        No
    };
    Some((arity, key))
}

/// The long option `name` (without `--`), resolving abbreviations as getopt does.
fn long_opt(cmd: &str, spec: &Spec, name: &str) -> Result<&'static LongOpt, String> {
    if let Some(o) = spec.long.iter().find(|o| o.name == name) {
        return Ok(o);
    }
    let candidates: Vec<&'static LongOpt> = if name.is_empty() {
        Vec::new()
    } else {
        spec.long.iter().filter(|o| o.name.starts_with(name)).collect()
    };
    match candidates.as_slice() {
        [] => Err(format!("`{cmd}` has no option `--{name}` that we know")),
        _ if !spec.complete => Err(format!(
            "`--{name}` abbreviates an option of `{cmd}`, whose full option list we do not know"
        )),
        [one] => Ok(one),
        [first, rest @ ..] => {
            if rest.iter().all(|o| o.key == first.key && o.arity == first.arity) {
                Ok(first)
            } else {
                Err(format!("`--{name}` is an ambiguous abbreviation for `{cmd}`"))
            }
        }
    }
}

/// Parses the options of `args[0]` from `args[from]` with `spec`.
pub(crate) fn parse(args: &[Arg], from: usize, spec: &Spec) -> Result<Parsed, String> {
    let cmd = args[0].text.rsplit('/').next().unwrap_or(&args[0].text);
    let mut p = Parsed {
        opts: Vec::new(),
        operands: Vec::new(),
        first: args.len(),
    };
    let mut i = from;
    while i < args.len() {
        let a = &args[i];
        if !a.literal {
            return Err(format!("an argument of `{cmd}` is produced by an expansion"));
        }
        let t = a.text.as_str();
        if t == "--" {
            if p.operands.is_empty() {
                p.first = i + 1;
            }
            if spec.permute {
                p.operands.extend(i + 1..args.len());
                if args[i + 1..].iter().any(|w| !w.literal) {
                    return Err(format!("an argument of `{cmd}` is produced by an expansion"));
                }
            }
            return Ok(p);
        }
        if let Some(body) = t.strip_prefix("--") {
            i += long_option(args, i, cmd, spec, body, &mut p)?;
            continue;
        }
        if t.len() > 1 && t.starts_with('-') {
            i += short_options(args, i, cmd, spec, t, &mut p)?;
            continue;
        }
        if p.operands.is_empty() {
            p.first = i;
        }
        if !spec.permute {
            return Ok(p);
        }
        p.operands.push(i);
        i += 1;
    }
    Ok(p)
}

/// The word `args[i]`, the value of the option `what` of `cmd`, when it is literal.
fn value_word(args: &[Arg], i: usize, cmd: &str, what: &str) -> Result<String, String> {
    match args.get(i) {
        Some(a) if a.literal => Ok(a.text.clone()),
        Some(_) => Err(format!("the value of `{what}` for `{cmd}` is produced by an expansion")),
        None => Err(format!("`{what}` of `{cmd}` needs a value")),
    }
}

/// Adds the long option `--body` (`args[i]`) to `p`; returns how many words it took.
fn long_option(args: &[Arg], i: usize, cmd: &str, spec: &Spec, body: &str, p: &mut Parsed) -> Result<usize, String> {
    let t = args[i].text.as_str();
    let (name, attached) = match body.split_once('=') {
        Some((n, v)) => (n, Some(v.to_owned())),
        None => (body, None),
    };
    let o = long_opt(cmd, spec, name)?;
    match o.arity {
        No => {
            if attached.is_some() {
                return Err(format!("`--{name}` of `{cmd}` takes no value"));
            }
            p.opts.push(Given {
                key: o.key,
                value: None,
                value_index: None,
            });
        }
        Opt => p.opts.push(Given {
            key: o.key,
            value: attached,
            value_index: None,
        }),
        Req => {
            if attached.is_some() {
                p.opts.push(Given {
                    key: o.key,
                    value: attached,
                    value_index: None,
                });
            } else {
                let v = value_word(args, i + 1, cmd, t)?;
                p.opts.push(Given {
                    key: o.key,
                    value: Some(v),
                    value_index: Some(i + 1),
                });
                return Ok(2);
            }
        }
    }
    Ok(1)
}

/// Adds the bundle of short options `t` (`args[i]`, `-xvf`) to `p`; returns how many
/// words it took.
fn short_options(args: &[Arg], i: usize, cmd: &str, spec: &Spec, t: &str, p: &mut Parsed) -> Result<usize, String> {
    let mut step = 1;
    for (off, c) in t[1..].char_indices() {
        let Some((arity, key)) = short_opt(spec.short, c) else {
            return Err(format!("`{cmd}` has no option `-{c}` that we know"));
        };
        let rest = &t[1 + off + c.len_utf8()..];
        match arity {
            No => p.opts.push(Given {
                key,
                value: None,
                value_index: None,
            }),
            Opt => {
                p.opts.push(Given {
                    key,
                    value: (!rest.is_empty()).then(|| rest.to_owned()),
                    value_index: None,
                });
                break;
            }
            Req => {
                if rest.is_empty() {
                    let v = value_word(args, i + 1, cmd, &format!("-{c}"))?;
                    p.opts.push(Given {
                        key,
                        value: Some(v),
                        value_index: Some(i + 1),
                    });
                    step = 2;
                } else {
                    p.opts.push(Given {
                        key,
                        value: Some(rest.to_owned()),
                        value_index: None,
                    });
                }
                break;
            }
        }
    }
    Ok(step)
}

pub(crate) const HELP: LongOpt = lo("help", No, "help");
pub(crate) const VERSION: LongOpt = lo("version", No, "version");

/// Whether the invocation only prints help or version information.
pub(crate) fn informational(p: &Parsed, letters: &str) -> bool {
    p.has("help") || p.has("version") || p.opts.iter().any(|o| o.key.len() == 1 && letters.contains(o.key))
}

/// The option syntax of a wrapper whose own parser compares whole words (`bwrap`,
/// `pkexec`, `proxychains`): no bundles, no attached values, no abbreviations, and each
/// option takes a fixed number of the words after it. The first word not starting with
/// `-` ends the options; any other word starting with `-` (`--` included) is unknown.
pub(crate) struct Words {
    /// Each option word, how many words it takes, and the key it is recorded under.
    pub(crate) words: &'static [(&'static str, usize, &'static str)],
    /// As [`Spec::env`]; the value of a two-word option is recorded as `FIRST=SECOND`.
    pub(crate) env: &'static [(&'static str, EnvValue)],
}

/// Parses the options of `args[0]` from `args[from]` with the word table `spec`.
pub(crate) fn parse_words(args: &[Arg], from: usize, spec: &Words) -> Result<Parsed, String> {
    let cmd = args[0].text.rsplit('/').next().unwrap_or(&args[0].text);
    let mut p = Parsed {
        opts: Vec::new(),
        operands: Vec::new(),
        first: args.len(),
    };
    let mut i = from;
    while let Some(a) = args.get(i) {
        if !a.literal {
            return Err(format!("an argument of `{cmd}` is produced by an expansion"));
        }
        let t = a.text.as_str();
        if !t.starts_with('-') {
            p.first = i;
            return Ok(p);
        }
        let Some(&(_, n, key)) = spec.words.iter().find(|(w, _, _)| *w == t) else {
            return Err(format!(
                "`{cmd}` given the option `{}`, which we do not follow",
                crate::permission::words::arg::clip(t)
            ));
        };
        let values = args.get(i + 1..i + 1 + n).filter(|v| v.len() == n);
        let Some(values) = values else {
            return Err(format!("`{cmd} {t}` is missing its arguments"));
        };
        if values.iter().any(|v| !v.literal) {
            return Err(format!("the value of `{t}` for `{cmd}` is produced by an expansion"));
        }
        p.opts.push(Given {
            key,
            value: (n > 0).then(|| values.iter().map(|v| v.text.as_str()).collect::<Vec<_>>().join("=")),
            value_index: (n > 0).then_some(i + 1),
        });
        i += 1 + n;
    }
    Ok(p)
}
