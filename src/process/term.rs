//! Terminal output cleaning: what a program drew for a terminal, reduced to
//! the text a reader sees. Used the same way for every output a person or a
//! model reads as text (session commands, background jobs running or
//! finished); raw views skip it.

/// Removes terminal control sequences (CSI, OSC, DCS and other escapes),
/// BEL and shift characters, and resolves carriage returns: `\r\n` becomes
/// `\n`, and a line redrawn with bare `\r` (a progress bar) keeps only its
/// last non-empty state, the text after the last `\r` that has any.
///
/// A string sequence (OSC, DCS, APC, PM) ends at BEL or `ESC \`; an ESC
/// followed by anything else also ends it, and starts a new sequence, so a
/// sequence that was never terminated cannot swallow the text after it or
/// leave pieces of the next one behind.
pub(crate) fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    // Where the current output line starts, and where its last `\r` segment starts.
    let mut line_start = 0;
    let mut segment_start = 0;
    let mut chars = text.chars().peekable();
    let mut pending: Option<char> = None;
    while let Some(c) = pending.take().or_else(|| chars.next()) {
        match c {
            '\x1b' => match chars.next() {
                Some('[') => {
                    // CSI: parameters and intermediates, then a final byte 0x40..=0x7e.
                    for c in chars.by_ref() {
                        if ('\x40'..='\x7e').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') | Some('P') | Some('_') | Some('^') => {
                    // OSC/DCS/APC/PM: up to BEL or ESC \; another ESC ends it too.
                    while let Some(c) = chars.next() {
                        if c == '\x07' {
                            break;
                        }
                        if c == '\x1b' {
                            if chars.peek() == Some(&'\\') {
                                chars.next();
                            } else {
                                pending = Some(c);
                            }
                            break;
                        }
                    }
                }
                Some('(') | Some(')') | Some('*') | Some('+') => {
                    chars.next();
                }
                Some('\x1b') => pending = Some('\x1b'),
                _ => {}
            },
            '\r' if chars.peek() == Some(&'\n') => {}
            '\r' => {
                // The line is redrawn: what follows replaces what came before,
                // unless nothing visible follows before the next `\r`.
                if out.len() > segment_start {
                    out.drain(line_start..segment_start);
                    segment_start = out.len();
                }
            }
            '\n' => {
                if out.len() > segment_start {
                    out.drain(line_start..segment_start);
                }
                out.push('\n');
                line_start = out.len();
                segment_start = line_start;
            }
            '\x07' | '\x0e' | '\x0f' => {}
            c => out.push(c),
        }
    }
    if out.len() > segment_start {
        out.drain(line_start..segment_start);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_sequences_are_stripped() {
        assert_eq!(clean("\x1b[1;31mred\x1b[0m\r\nx\x1b]0;title\x07y\x07"), "red\nxy");
    }

    #[test]
    fn an_unterminated_osc_ends_at_the_next_escape() {
        assert_eq!(clean("\x1b]0;title\x1b]0;b\x07 after"), " after");
        let fake =
            "\x1b]633;D;deadbeefdeadbeefdeadbeefdeadbeef;0;/\x1b]633;E;deadbeefdeadbeefdeadbeefdeadbeef\x07 hidden?";
        assert_eq!(clean(fake), " hidden?");
        // ESC \ still ends it; an ESC starting a CSI ends it and is removed too.
        assert_eq!(clean("a\x1b]0;t\x1b\\b\x1b]0;u\x1b[1mc"), "abc");
        assert_eq!(clean("\x1bP1$r\x1b\x1b[0mtext"), "text");
    }

    #[test]
    fn carriage_return_redraws_keep_the_last_state() {
        assert_eq!(clean("10%\r50%\r100%\ndone\n"), "100%\ndone\n");
        assert_eq!(clean("working 1\rworking 2\r"), "working 2");
        assert_eq!(clean("a\r\nb\r\n"), "a\nb\n");
        assert_eq!(clean("x\r\x1b[K\ry\n"), "y\n");
        assert_eq!(clean("\r\rz\n\r"), "z\n");
        assert_eq!(clean("é\rü ö\n"), "ü ö\n");
    }
}
