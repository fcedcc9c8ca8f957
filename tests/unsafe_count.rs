//! `unsafe` outside `src/ffi/` (the C ABI, which is unsafe by nature) stays
//! where no safe API exists: the count of `unsafe` blocks there is at most
//! [`MAX_UNSAFE_BLOCKS`], and every block has a `// SAFETY:` comment right
//! above it saying why it is sound. Each run prints the count per file, so
//! what is left stays in sight.

#[path = "common/code.rs"]
mod code;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use code::{code_only, sources};

/// The most `unsafe` blocks allowed outside `src/ffi/`. Lower it as blocks
/// go; raising it needs a call that no safe crate or std offers.
const MAX_UNSAFE_BLOCKS: usize = 40;

/// One `unsafe` block: the line it opens on (from 1) and whether a
/// `// SAFETY:` comment is right above it.
#[derive(Debug, PartialEq)]
struct Block {
    line: usize,
    justified: bool,
}

/// The `unsafe` blocks of `text` (not `unsafe fn`, `unsafe impl` or
/// `unsafe extern`), ignoring comments and literals.
fn blocks(text: &str) -> Vec<Block> {
    let code = code_only(text);
    let original: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (index, line) in code.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("unsafe") {
            let before = rest[..at].chars().next_back();
            let after = rest[at + "unsafe".len()..].trim_start();
            let word_starts = !before.is_some_and(|c| c.is_alphanumeric() || c == '_');
            if word_starts && after.starts_with('{') {
                found.push(Block {
                    line: index + 1,
                    justified: safety_comment_above(&original, index),
                });
            }
            rest = &rest[at + "unsafe".len()..];
        }
    }
    found
}

/// Whether the comment lines right above line `index` (no blank line
/// between) include one that starts `// SAFETY:`.
fn safety_comment_above(lines: &[&str], index: usize) -> bool {
    lines[..index]
        .iter()
        .rev()
        .map(|line| line.trim_start())
        .take_while(|line| line.starts_with("//"))
        .any(|line| line.starts_with("// SAFETY:"))
}

/// Every `unsafe` block of `src/` outside `src/ffi/`, by file relative to the
/// crate.
fn unsafe_blocks() -> BTreeMap<String, Vec<Block>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    let mut by_file = BTreeMap::new();
    for path in files {
        let relative = path.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
        if relative.starts_with("src/ffi/") {
            continue;
        }
        let found = blocks(&std::fs::read_to_string(&path).unwrap());
        if !found.is_empty() {
            by_file.insert(relative, found);
        }
    }
    by_file
}

#[test]
fn unsafe_outside_ffi_is_bounded_and_each_block_says_why_it_is_sound() {
    let by_file = unsafe_blocks();
    let total: usize = by_file.values().map(Vec::len).sum();
    // Written to the stderr handle, which libtest does not capture, so the
    // count shows in every run.
    let mut err = std::io::stderr();
    let mut counts: Vec<(&String, usize)> = by_file.iter().map(|(file, b)| (file, b.len())).collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    for (file, count) in &counts {
        let _ = writeln!(err, "unsafe_count: {count:3} {file}");
    }
    let _ = writeln!(
        err,
        "unsafe_count: {total:3} in all outside src/ffi/ (at most {MAX_UNSAFE_BLOCKS})"
    );
    let unjustified: Vec<String> = by_file
        .iter()
        .flat_map(|(file, blocks)| {
            blocks
                .iter()
                .filter(|b| !b.justified)
                .map(move |b| format!("{file}:{}", b.line))
        })
        .collect();
    assert!(
        unjustified.is_empty(),
        "unsafe blocks without a `// SAFETY:` comment right above them (say why the block is sound):\n{}",
        unjustified.join("\n")
    );
    assert!(
        total <= MAX_UNSAFE_BLOCKS,
        "{total} unsafe blocks outside src/ffi/, more than {MAX_UNSAFE_BLOCKS}: use a safe API (rustix, std) \
         or put the call behind one safe function beside those of its kind"
    );
    if total < MAX_UNSAFE_BLOCKS {
        let _ = writeln!(
            err,
            "unsafe_count: {total} < {MAX_UNSAFE_BLOCKS}: lower MAX_UNSAFE_BLOCKS to {total}"
        );
    }
}

#[test]
fn the_counter_finds_blocks_in_code_only_and_reads_their_safety_comments() {
    let text = "\
fn a() {
    // SAFETY: the reason,
    // on two lines.
    let x = unsafe { f() };
    // \"unsafe { in a comment }\"
    let s = \"unsafe { in a string }\";
    let y = unsafe { g() };

    // SAFETY: not right above.

    unsafe {
        h()
    }
}
unsafe fn b() {}
unsafe impl Send for T {}
fn not_unsafe_block() { my_unsafe { } }
";
    assert_eq!(
        blocks(text),
        [
            Block {
                line: 4,
                justified: true
            },
            Block {
                line: 7,
                justified: false
            },
            Block {
                line: 11,
                justified: false
            },
        ],
        "blocks in comments and strings, unsafe fns and impls do not count; a SAFETY comment must be right above"
    );
}
