#![no_main]
//! Pattern extraction must never panic, and every pattern must satisfy the grammar's
//! properties for the words the command runs.

use bash_mcp::permission::{Dialect, analyze_in, command_pattern_in, fnmatch};
use libfuzzer_sys::fuzz_target;

/// brush-parser 0.4 panics on some malformed input; the library catches those panics and
/// reports the command as opaque. libfuzzer-sys aborts on any panic from its hook, so
/// panics raised inside brush-parser are silenced here: they are caught and are not
/// failures. Every other panic (our assertions) still aborts and is reported.
fn quiet_parser_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let in_parser = info.location().is_some_and(|l| l.file().contains("brush-parser"));
            if !in_parser {
                previous(info);
            }
        }));
    });
}

fuzz_target!(|data: &[u8]| {
    quiet_parser_panics();
    let Ok(command) = std::str::from_utf8(data) else { return };
    // The first byte picks the dialect, so every dialect's rules are exercised.
    let dialect =
        [Dialect::Unknown, Dialect::Bash, Dialect::Posix, Dialect::Other][data.first().map_or(0, |b| *b as usize % 4)];
    let analysis = analyze_in(command, dialect);
    let pattern = command_pattern_in("bash.execute", command, dialect);
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
