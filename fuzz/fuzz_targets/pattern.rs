#![no_main]
//! Pattern extraction must never panic, and every pattern must satisfy the grammar's
//! properties for the words the command runs.

use bash_mcp::permission::{analyze, command_pattern, fnmatch};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(command) = std::str::from_utf8(data) else { return };
    let analysis = analyze(command);
    let pattern = command_pattern("bash.execute", command);
    assert!(fnmatch(&pattern, &pattern));
    let opaque = analysis.is_opaque() || analysis.parts.is_empty();
    assert_eq!(opaque, pattern == "bash.execute:{unknown}");
    let words: Vec<&str> = analysis.parts.iter().map(|p| p.command_word.as_str()).collect();
    for w in &words {
        let only = !opaque && words.iter().all(|x| x == w);
        assert_eq!(fnmatch(&format!("bash.execute:{w} *"), &pattern), only);
        assert!(!fnmatch(&format!("bash.execute:{w}"), &pattern));
    }
});
