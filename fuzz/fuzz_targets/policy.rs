#![no_main]
//! The policy must never panic, never allow an opaque command without `<tool>:*`, and
//! always deny a command that runs rm under a `rm *` deny rule; the classifier must never
//! panic and never call an opaque command safe.

use bash_mcp::permission::{Decision, PermissionPolicy, analyze};
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
    let Ok(text) = std::str::from_utf8(data) else { return };
    let policy = PermissionPolicy::new(&["bash.execute:git *", "bash.execute:ls *"], &["bash.execute:rm *"])
        .expect("valid rules");
    let args = serde_json::json!({ "command": text }).to_string();
    let decision = policy.decide("bash.execute", &args);
    let analysis = analyze(text);
    if analysis.is_opaque() || analysis.parts.is_empty() {
        assert_ne!(decision, Decision::Allow);
    }
    if analysis.parts.iter().any(|p| p.command_word == "rm") {
        assert_eq!(decision, Decision::Deny);
    }
    let _ = policy.explain("bash.execute", text);
    // The classifier reads the same text (variables, substitutions, find's expression,
    // downloads): it must not panic either, and an opaque command is never safe.
    let class = bash_mcp::permission::classify(text).class;
    if analysis.is_opaque() || analysis.parts.is_empty() {
        assert!(class >= bash_mcp::permission::Class::Dangerous);
    }
    // Rule entries from the input must either build or be refused, never panic.
    let _ = PermissionPolicy::new(&[text], &[] as &[&str]);
});
