//! Corpus tests for permission pattern extraction: every property, on every entry of
//! `tests/data/permission_corpus.jsonl`. Entries are analysed in the dialect they name
//! (`"dialect"`: `bash`, `posix`, `other` or `unknown`), bash when they name none.

use std::collections::BTreeSet;

use bash_mcp::permission::{
    Analysis, Dialect, analyze_in, command_pattern, command_pattern_in, fnmatch, fnmatch_escape, permission_pattern,
};

const TOOL: &str = "bash.execute";

struct Entry {
    command: String,
    expect: String,
    dialect: Dialect,
}

impl Entry {
    fn pattern(&self) -> String {
        self.pattern_of(&self.command)
    }
    fn pattern_of(&self, command: &str) -> String {
        command_pattern_in(TOOL, command, self.dialect)
    }
    fn analysis(&self) -> Analysis {
        analyze_in(&self.command, self.dialect)
    }
}

fn dialect(name: Option<&str>) -> Dialect {
    match name {
        None | Some("bash") => Dialect::Bash,
        Some("posix") => Dialect::Posix,
        Some("other") => Dialect::Other,
        Some("unknown") => Dialect::Unknown,
        Some(other) => panic!("unknown dialect {other:?} in the corpus"),
    }
}

fn corpus() -> Vec<Entry> {
    let text = include_str!("data/permission_corpus.jsonl");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("bad corpus line {l}: {e}"));
            Entry {
                command: v["command"].as_str().expect("command").to_owned(),
                expect: v["expect"].as_str().expect("expect").to_owned(),
                dialect: dialect(v["dialect"].as_str()),
            }
        })
        .collect()
}

fn opaque() -> String {
    format!("{TOOL}:{{unknown}}")
}

#[test]
fn corpus_is_large_enough() {
    assert!(corpus().len() >= 300, "the corpus must hold at least 300 commands");
}

#[test]
fn expected_patterns() {
    let mut failures = Vec::new();
    for e in corpus() {
        let got = e.pattern();
        let want = format!("{TOOL}:{}", e.expect);
        if got != want {
            failures.push(format!(
                "{:?} ({:?})\n    want {want}\n    got  {got}",
                clip(&e.command),
                e.dialect
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn clip(s: &str) -> String {
    s.chars().take(120).collect()
}

/// Every command word seen anywhere in the corpus, plus a few that matter.
fn universe() -> BTreeSet<String> {
    let mut words: BTreeSet<String> = [
        "git", "rm", "sh", "bash", "ls", "unknown", "sudo", "env", "echo", "true", "unknown", "[", "test",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for e in corpus() {
        for p in e.analysis().parts {
            words.insert(p.command_word);
        }
    }
    words
}

#[test]
fn no_single_command_rule_matches_anything_else() {
    let words = universe();
    for e in corpus() {
        let pattern = e.pattern();
        for w in &words {
            let family = format!("{TOOL}:{} *", fnmatch_escape(w));
            let bare = format!("{TOOL}:{}", fnmatch_escape(w));
            if pattern == family {
                continue;
            }
            assert!(
                !fnmatch(&family, &pattern),
                "rule {family} matches {pattern} for {:?}",
                clip(&e.command)
            );
            assert!(
                !fnmatch(&bare, &pattern),
                "rule {bare} matches {pattern} for {:?}",
                clip(&e.command)
            );
        }
    }
}

#[test]
fn compound_patterns_never_start_with_one_of_their_words() {
    for e in corpus() {
        let a = e.analysis();
        let pattern = e.pattern();
        let names: BTreeSet<&str> = a.parts.iter().map(|p| p.command_word.as_str()).collect();
        if names.len() > 1 || a.is_opaque() {
            for w in &names {
                let prefix = format!("{TOOL}:{} ", fnmatch_escape(w));
                assert!(
                    !pattern.starts_with(&prefix),
                    "{pattern} begins with {prefix} for {:?}",
                    clip(&e.command)
                );
            }
        }
    }
}

#[test]
fn opaque_pattern_is_fixed_and_only_matched_by_the_wildcard() {
    for e in corpus() {
        let a = e.analysis();
        let pattern = e.pattern();
        assert_eq!(
            a.is_opaque() || a.parts.is_empty(),
            pattern == opaque(),
            "{:?}",
            clip(&e.command)
        );
        assert!(pattern.contains("unknown") == (pattern == opaque()) || !pattern.contains("{unknown}"));
        assert!(fnmatch(&format!("{TOOL}:*"), &pattern));
    }
    for bad in [
        "",
        "{",
        "[]",
        "{\"cmd\":\"ls\"}",
        "{\"command\":1}",
        "{\"command\":null}",
        "\"ls\"",
        "[\"ls\"]",
    ] {
        assert_eq!(permission_pattern(TOOL, bad), opaque(), "{bad}");
    }
    assert_eq!(
        permission_pattern(TOOL, r#"{"command":"git status","working_dir":"/x"}"#),
        format!("{TOOL}:git *")
    );
}

#[test]
fn every_pattern_matches_itself() {
    for e in corpus() {
        let pattern = e.pattern();
        assert!(fnmatch(&pattern, &pattern), "{pattern} does not match itself");
    }
    // Command words with fnmatch characters are opaque rather than escaped: an escaped
    // pattern would not match its own text.
    assert!(!fnmatch("a\\[ *", "a\\[ *"));
    assert_eq!(command_pattern(TOOL, "[ -f x ]"), opaque());
}

#[test]
fn deterministic() {
    for e in corpus() {
        assert_eq!(e.pattern(), e.pattern());
        assert_eq!(e.analysis(), e.analysis());
    }
}

#[test]
fn whitespace_and_comments_do_not_change_the_pattern() {
    for e in corpus() {
        let c = &e.command;
        if c.contains('\n') || c.ends_with('\\') || c.len() > 10_000 {
            continue;
        }
        if e.dialect == Dialect::Other {
            // `#` is not plain: comments are not read the same by every shell.
            continue;
        }
        let padded = format!("  \t{c} \t# trailing comment");
        assert_eq!(e.pattern(), e.pattern_of(&padded), "{:?}", clip(c));
        let led = format!("# leading comment\n\t {c}\n\n");
        assert_eq!(e.pattern(), e.pattern_of(&led), "{:?}", clip(c));
    }
}

#[test]
fn normalized_text_drops_assignments_wrappers_and_quotes() {
    let a = analyze_in(
        "FOO=1 env -i BAR='x y' nice -n 5 git commit -m 'a  b' \"c\"",
        Dialect::Bash,
    );
    assert_eq!(a.parts.len(), 1);
    assert_eq!(a.parts[0].normalized_text, "git commit -m a  b c");
    assert_eq!(a.parts[0].args, ["git", "commit", "-m", "a  b", "c"]);
    assert_eq!(a.parts[0].wrappers, ["env", "nice"]);
}
