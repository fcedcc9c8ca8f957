//! The marker protocol: OSC 633-style sequences that the shell's hooks print
//! around each command, carrying a per-session random nonce.
//!
//! - `ESC ] 633 ; C ; <nonce> BEL` — the command starts executing (printed
//!   after the shell has read the command line, so any echo comes before it);
//! - `ESC ] 633 ; D ; <nonce> ; <status> ; <cwd> ESC ] 633 ; E ; <nonce> BEL`
//!   — the command finished with `<status>` and the shell is now in `<cwd>`
//!   (printed by the prompt hook; the `E` part ends the variable-length cwd);
//! - `ESC ] 633 ; F ; <nonce> BEL` — fish only: the command asked the shell to
//!   exit; what fish prints next is its own (a refusal while jobs run), up to
//!   an end marker from the next prompt, or the shell's exit.
//!
//! A sequence with any other nonce is ordinary output, so a program that
//! prints marker-like text cannot end a command early.

/// What the parser found in the terminal's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    Output(Vec<u8>),
    Start,
    End {
        status: i32,
        cwd: Vec<u8>,
    },
    /// fish is about to exit, or to refuse to.
    Exiting,
}

const INTRO: &[u8] = b"\x1b]633;";
/// Longest cwd we wait for before treating a pending `D` as plain output.
const MAX_PENDING: usize = 64 * 1024;

/// Incremental parser: feed it chunks as they are read.
pub(crate) struct Parser {
    start: Vec<u8>,
    exiting: Vec<u8>,
    end_head: Vec<u8>,
    end_tail: Vec<u8>,
    pending: Vec<u8>,
}

impl Parser {
    pub fn new(nonce: &str) -> Self {
        Self {
            start: format!("\x1b]633;C;{nonce}\x07").into_bytes(),
            exiting: format!("\x1b]633;F;{nonce}\x07").into_bytes(),
            end_head: format!("\x1b]633;D;{nonce};").into_bytes(),
            end_tail: format!("\x1b]633;E;{nonce}\x07").into_bytes(),
            pending: Vec::new(),
        }
    }

    pub fn feed(&mut self, data: &[u8], events: &mut Vec<Event>) {
        // Most reads start clean: scan them where they are, without a copy.
        if self.pending.is_empty() {
            self.scan(data, events);
        } else {
            let mut buf = std::mem::take(&mut self.pending);
            buf.extend_from_slice(data);
            self.scan(&buf, events);
        }
    }

    /// Parses `buf` (what was pending, then the new read); what may be the
    /// start of a marker cut by the read is left in `self.pending`.
    fn scan(&mut self, buf: &[u8], events: &mut Vec<Event>) {
        let mut pos = 0;
        let mut out_from = 0;
        let flush = |events: &mut Vec<Event>, bytes: &[u8]| {
            if !bytes.is_empty() {
                match events.last_mut() {
                    Some(Event::Output(prev)) => prev.extend_from_slice(bytes),
                    _ => events.push(Event::Output(bytes.to_vec())),
                }
            }
        };
        while let Some(off) = find(&buf[pos..], INTRO) {
            let at = pos + off;
            let rest = &buf[at..];
            let fixed = [(&self.start, Event::Start), (&self.exiting, Event::Exiting)]
                .into_iter()
                .find(|(marker, _)| rest.starts_with(marker));
            if let Some((marker, event)) = fixed {
                flush(events, &buf[out_from..at]);
                events.push(event);
                pos = at + marker.len();
                out_from = pos;
                continue;
            }
            if rest.starts_with(&self.end_head) {
                let body = &rest[self.end_head.len()..];
                match find(body, &self.end_tail) {
                    Some(end) => {
                        if let Some((status, cwd)) = parse_end(&body[..end]) {
                            flush(events, &buf[out_from..at]);
                            events.push(Event::End { status, cwd });
                            pos = at + self.end_head.len() + end + self.end_tail.len();
                            out_from = pos;
                            continue;
                        }
                    }
                    None if body.len() < MAX_PENDING => {
                        flush(events, &buf[out_from..at]);
                        self.pending = buf[at..].to_vec();
                        return;
                    }
                    None => {}
                }
                pos = at + 1;
                continue;
            }
            // A prefix of one of our markers cut by the read: wait for more.
            if self.start.starts_with(rest) || self.exiting.starts_with(rest) || self.end_head.starts_with(rest) {
                flush(events, &buf[out_from..at]);
                self.pending = rest.to_vec();
                return;
            }
            pos = at + 1;
        }
        // Keep a trailing partial introducer (e.g. a lone ESC) for the next read.
        let keep = (1..INTRO.len())
            .rev()
            .find(|&k| buf.len() >= k && buf.len() - k >= out_from && buf.ends_with(&INTRO[..k]))
            .unwrap_or(0);
        flush(events, &buf[out_from..buf.len() - keep]);
        self.pending = buf[buf.len() - keep..].to_vec();
    }
}

fn parse_end(body: &[u8]) -> Option<(i32, Vec<u8>)> {
    let semi = body.iter().position(|b| *b == b';')?;
    let status = std::str::from_utf8(&body[..semi]).ok()?.parse().ok()?;
    Some((status, body[semi + 1..].to_vec()))
}

/// Where `needle` first occurs in `hay`: a fast scan for its first byte,
/// then a comparison there.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, tail) = needle.split_first()?;
    let mut from = 0;
    while hay.len() - from >= needle.len() {
        let at = from + find_byte(&hay[from..hay.len() - tail.len()], first)?;
        if hay[at + 1..].starts_with(tail) {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// Where `byte` first occurs in `hay`, eight bytes per step (the output of a
/// chatty command is scanned once or twice per byte on its way through).
pub(super) fn find_byte(hay: &[u8], byte: u8) -> Option<usize> {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let pattern = LOW * u64::from(byte);
    let mut chunks = hay.chunks_exact(8);
    let mut offset = 0;
    for chunk in chunks.by_ref() {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes")) ^ pattern;
        // A zero byte in `word` is a match (the classic has-zero-byte test).
        if (word.wrapping_sub(LOW) & !word & HIGH) != 0 {
            return chunk.iter().position(|b| *b == byte).map(|i| offset + i);
        }
        offset += 8;
    }
    chunks.remainder().iter().position(|b| *b == byte).map(|i| offset + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: &str = "0123456789abcdef0123456789abcdef";

    fn run(chunks: &[&[u8]]) -> Vec<Event> {
        let mut p = Parser::new(N);
        let mut events = Vec::new();
        for c in chunks {
            p.feed(c, &mut events);
        }
        // Merge adjacent outputs for comparison.
        let mut merged: Vec<Event> = Vec::new();
        for e in events {
            match (merged.last_mut(), e) {
                (Some(Event::Output(a)), Event::Output(b)) => a.extend(b),
                (_, e) => merged.push(e),
            }
        }
        merged
    }

    #[test]
    fn markers_split_anywhere_are_found() {
        let stream =
            format!("echo\x1b]633;C;{N}\x07hello\n\x1b]633;F;{N}\x07\x1b]633;D;{N};3;/tmp/a b\x1b]633;E;{N}\x07prompt");
        let bytes = stream.as_bytes();
        for cut in 0..bytes.len() {
            let events = run(&[&bytes[..cut], &bytes[cut..]]);
            assert_eq!(
                events,
                vec![
                    Event::Output(b"echo".to_vec()),
                    Event::Start,
                    Event::Output(b"hello\n".to_vec()),
                    Event::Exiting,
                    Event::End {
                        status: 3,
                        cwd: b"/tmp/a b".to_vec()
                    },
                    Event::Output(b"prompt".to_vec()),
                ],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn foreign_nonce_is_output() {
        let fake = "\x1b]633;D;ffffffffffffffffffffffffffffffff;0;/\x1b]633;E;ffffffffffffffffffffffffffffffff\x07";
        let events = run(&[fake.as_bytes()]);
        assert_eq!(events, vec![Event::Output(fake.as_bytes().to_vec())]);
    }

    #[test]
    fn the_scans_find_what_a_plain_search_finds() {
        let hay: Vec<u8> = (0..64u8)
            .map(|i| if i % 13 == 5 { 0x1b } else { b'a' + i % 20 })
            .collect();
        for from in 0..hay.len() {
            for to in from..=hay.len() {
                let part = &hay[from..to];
                assert_eq!(find_byte(part, 0x1b), part.iter().position(|b| *b == 0x1b));
                for needle in [&b"\x1b"[..], b"\x1bd", b"\x1bde", b"mn", b"zz"] {
                    let plain = part.windows(needle.len()).position(|w| w == needle);
                    assert_eq!(find(part, needle), plain, "{part:?} {needle:?}");
                }
            }
        }
    }
}
