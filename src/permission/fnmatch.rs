//! POSIX `fnmatch(3)` through libc, and escaping of literal text for it.

use std::ffi::CString;

/// Characters that `fnmatch(pattern, s, 0)` treats specially.
const SPECIAL: &[char] = &['*', '?', '[', ']', '\\'];

/// Matches `subject` against `pattern` exactly as POSIX `fnmatch(pattern, subject, 0)`:
/// `*` and `?` cross `/`, a backslash escapes the next character, `[...]` is a bracket
/// expression.
///
/// Strings containing a NUL byte cannot be passed to C and never match.
///
/// ```
/// use bash_mcp::permission::fnmatch;
/// assert!(fnmatch("bash.execute:git *", "bash.execute:git push origin"));
/// assert!(!fnmatch("bash.execute:git *", "bash.execute:gitx"));
/// assert!(fnmatch("a\\*", "a*"));
/// ```
pub fn fnmatch(pattern: &str, subject: &str) -> bool {
    fnmatch_flags(pattern, subject.as_bytes(), 0)
}

/// Like [`fnmatch`] for a subject that need not be UTF-8 (an environment
/// variable's name, as the host gives it).
pub(crate) fn fnmatch_bytes(pattern: &str, subject: &[u8]) -> bool {
    fnmatch_flags(pattern, subject, 0)
}

/// Like [`fnmatch`] but with `FNM_PATHNAME`: `*`, `?` and brackets never match `/`.
pub(crate) fn fnmatch_pathname(pattern: &str, subject: &str) -> bool {
    fnmatch_flags(pattern, subject.as_bytes(), libc::FNM_PATHNAME)
}

fn fnmatch_flags(pattern: &str, subject: &[u8], flags: libc::c_int) -> bool {
    with_c_string(pattern.as_bytes(), |p| {
        with_c_string(subject, |s| {
            // SAFETY: both pointers are valid NUL-terminated strings that outlive the
            // call; fnmatch only reads them.
            unsafe { libc::fnmatch(p, s, flags) == 0 }
        })
    })
    .flatten()
    .unwrap_or(false)
}

/// Bytes of text copied onto the stack for a C call; longer text is allocated.
const STACK_COPY: usize = 256;

/// Calls `f` with `text` as a NUL-terminated C string (on the stack when short: the
/// classifier matches thousands of short arguments per command, and allocating each
/// one cost more than the match); `None` when `text` holds a NUL byte.
fn with_c_string<R>(text: &[u8], f: impl FnOnce(*const libc::c_char) -> R) -> Option<R> {
    if text.len() < STACK_COPY {
        if text.contains(&0) {
            return None;
        }
        let mut buf = [0u8; STACK_COPY];
        buf[..text.len()].copy_from_slice(text);
        return Some(f(buf.as_ptr().cast()));
    }
    let c = CString::new(text).ok()?;
    Some(f(c.as_ptr()))
}

/// Escapes `text` so that, as an fnmatch pattern, it matches exactly `text`.
///
/// ```
/// use bash_mcp::permission::{fnmatch, fnmatch_escape};
/// let p = fnmatch_escape("[*?]\\");
/// assert_eq!(p, "\\[\\*\\?\\]\\\\");
/// assert!(fnmatch(&p, "[*?]\\"));
/// assert!(!fnmatch(&p, "a"));
/// ```
pub fn fnmatch_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if SPECIAL.contains(&c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
