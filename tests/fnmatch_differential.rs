//! libc fnmatch (flags 0) against a known-answer table and an independent matcher.

use bash_mcp::permission::{fnmatch, fnmatch_escape};

#[test]
fn known_answers() {
    let table: &[(&str, &str, bool)] = &[
        ("*", "", true),
        ("*", "anything/with/slashes", true),
        ("a*", "a/b/c", true),
        ("?", "/", true),
        ("?", "", false),
        ("*", ".hidden", true),
        (".*", ".x", true),
        ("\\*", "*", true),
        ("\\*", "a", false),
        ("\\\\", "\\", true),
        ("\\a", "a", true),
        ("[abc]", "b", true),
        ("[abc]", "d", false),
        ("[!a]", "b", true),
        ("[!a]", "a", false),
        ("[^a]", "b", true),
        ("[a-c]", "b", true),
        ("[a-c]", "d", false),
        ("[]]", "]", true),
        ("[!]]", "a", true),
        ("[!]]", "]", false),
        ("a[", "a[", true),
        ("[", "[", true),
        ("{a,b}", "a", false),
        ("{a,b}", "{a,b}", true),
        ("bash.execute:git *", "bash.execute:git *", true),
        ("bash.execute:git *", "bash.execute:git status", true),
        ("bash.execute:git *", "bash.execute:git", false),
        ("bash.execute:git *", "bash.execute:gitk x", false),
        ("bash.execute:git *", "bash.execute:{git,rm} *", false),
        ("bash.execute:{git,rm} *", "bash.execute:{git,rm} *", true),
        ("bash.execute:{git,rm} *", "bash.execute:{git,rm,sh} *", false),
        ("bash.execute:*", "bash.execute:{unknown}", true),
        ("bash.*", "bash.execute", true),
        ("bash.*", "bash", false),
        ("bash.execute:git status*", "bash.execute:git status --short", true),
        ("a*b*c", "aXXbYYc", true),
        ("a*b*c", "aXXbYY", false),
    ];
    for &(p, s, want) in table {
        assert_eq!(fnmatch(p, s), want, "fnmatch({p:?}, {s:?})");
    }
    assert!(!fnmatch("a\0", "a"), "NUL never matches");
}

/// An independent matcher for well-formed patterns (no trailing backslash, brackets
/// closed and not starting with `]`).
fn reference(p: &[char], s: &[char]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some('*') => (0..=s.len()).any(|k| reference(&p[1..], &s[k..])),
        Some('?') => !s.is_empty() && reference(&p[1..], &s[1..]),
        Some('\\') => !s.is_empty() && s[0] == p[1] && reference(&p[2..], &s[1..]),
        Some('[') => {
            let mut i = 1;
            let negate = p[i] == '!';
            if negate {
                i += 1;
            }
            let mut hit = false;
            while p[i] != ']' {
                if p.get(i + 1) == Some(&'-') && p.get(i + 2).is_some_and(|c| *c != ']') {
                    if !s.is_empty() && p[i] <= s[0] && s[0] <= p[i + 2] {
                        hit = true;
                    }
                    i += 3;
                } else {
                    if !s.is_empty() && s[0] == p[i] {
                        hit = true;
                    }
                    i += 1;
                }
            }
            !s.is_empty() && hit != negate && reference(&p[i + 1..], &s[1..])
        }
        Some(c) => !s.is_empty() && s[0] == *c && reference(&p[1..], &s[1..]),
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[(self.next() % items.len() as u64) as usize]
    }
}

fn random_pattern(r: &mut Rng) -> String {
    let mut p = String::new();
    for _ in 0..r.next() % 7 {
        match r.next() % 8 {
            0 => p.push('*'),
            1 => p.push('?'),
            2 => {
                p.push('\\');
                p.push(r.pick(&['a', '*', '?', '[', '\\', 'b']));
            }
            3 => {
                p.push('[');
                if r.next().is_multiple_of(3) {
                    p.push('!');
                }
                if r.next().is_multiple_of(2) {
                    p.push_str("a-b");
                } else {
                    p.push(r.pick(&['a', 'c', '/', '.']));
                    p.push(r.pick(&['b', '*', '?']));
                }
                p.push(']');
            }
            _ => p.push(r.pick(&['a', 'b', 'c', '/', '.', ' '])),
        }
    }
    p
}

fn random_subject(r: &mut Rng) -> String {
    (0..r.next() % 7)
        .map(|_| r.pick(&['a', 'b', 'c', '/', '.', ' ', '*', '?', '[']))
        .collect()
}

#[test]
fn agrees_with_an_independent_matcher() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut matched = 0;
    for _ in 0..50_000 {
        let p = random_pattern(&mut r);
        let s = random_subject(&mut r);
        let want = reference(&p.chars().collect::<Vec<_>>(), &s.chars().collect::<Vec<_>>());
        assert_eq!(fnmatch(&p, &s), want, "fnmatch({p:?}, {s:?})");
        matched += usize::from(want);
    }
    assert!(matched > 1000, "the generator must produce matches too ({matched})");
}

#[test]
fn escape_round_trips() {
    let mut r = Rng(42);
    for _ in 0..10_000 {
        let s = random_subject(&mut r) + &random_pattern(&mut r);
        let p = fnmatch_escape(&s);
        assert!(fnmatch(&p, &s), "{p:?} vs {s:?}");
        assert!(!fnmatch(&p, &format!("{s}x")));
    }
}
