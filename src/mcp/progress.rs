//! Progress notifications for long calls: a ticker thread per call that has
//! a `progressToken`, and the tail of the output it reports from.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Longest `message` excerpt of the last output line, in characters.
pub const PROGRESS_LINE_CHARS: usize = 200;
/// Bytes of recent output kept to find the last line.
const TAIL_BYTES: usize = 4096;

/// The last bytes a command wrote, shared between its output callback and
/// the ticker.
#[derive(Default)]
pub(crate) struct OutputTail {
    bytes: Mutex<Vec<u8>>,
}

impl OutputTail {
    /// Records a chunk of output.
    pub(crate) fn observe(&self, chunk: &[u8]) {
        let mut bytes = self.bytes.lock().unwrap_or_else(PoisonError::into_inner);
        if chunk.len() >= TAIL_BYTES {
            bytes.clear();
            bytes.extend_from_slice(&chunk[chunk.len() - TAIL_BYTES..]);
        } else {
            let overflow = (bytes.len() + chunk.len()).saturating_sub(TAIL_BYTES);
            bytes.drain(..overflow);
            bytes.extend_from_slice(chunk);
        }
    }

    /// The last non-empty line, control characters removed, cut to
    /// [`PROGRESS_LINE_CHARS`] characters (with `…` when cut).
    pub(crate) fn last_line(&self) -> Option<String> {
        let bytes = self.bytes.lock().unwrap_or_else(PoisonError::into_inner);
        let text = String::from_utf8_lossy(&bytes);
        let line = text.split(['\n', '\r']).map(clean).rfind(|l| !l.trim().is_empty())?;
        let line = line.trim();
        let mut chars = line.chars();
        let short: String = chars.by_ref().take(PROGRESS_LINE_CHARS).collect();
        Some(if chars.next().is_some() {
            format!("{short}…")
        } else {
            short
        })
    }
}

/// Drops ANSI escape sequences and other control characters.
fn clean(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ params final-byte; other escapes: drop ESC and one char.
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            } else {
                chars.next();
            }
        } else if c == '\t' {
            out.push(' ');
        } else if !c.is_control() {
            out.push(c);
        }
    }
    out
}

/// The text of a progress `message`.
pub(crate) fn progress_message(elapsed: Duration, last_line: Option<String>) -> String {
    let secs = elapsed.as_secs();
    match last_line {
        Some(line) => format!("running for {secs} s; last output: {line}"),
        None => format!("running for {secs} s; no output yet"),
    }
}

/// A thread that calls `tick(n, elapsed)` every `interval` (n = 1, 2, …)
/// until stopped. [`Ticker::stop`] returns only after the thread has ended,
/// so no tick can happen after it.
pub(crate) struct Ticker {
    stop: Arc<(Mutex<bool>, Condvar)>,
    handle: Option<JoinHandle<()>>,
}

impl Ticker {
    pub(crate) fn start(interval: Duration, mut tick: impl FnMut(u64, Duration) + Send + 'static) -> Self {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("mcp-progress".into())
            .spawn(move || {
                let start = Instant::now();
                let (lock, cvar) = &*flag;
                let mut n = 0;
                let mut stopped = lock.lock().unwrap_or_else(PoisonError::into_inner);
                loop {
                    let next = start + interval * (n as u32 + 1);
                    let now = Instant::now();
                    if *stopped {
                        return;
                    }
                    if now < next {
                        stopped = cvar
                            .wait_timeout(stopped, next - now)
                            .unwrap_or_else(PoisonError::into_inner)
                            .0;
                        continue;
                    }
                    n += 1;
                    drop(stopped);
                    tick(n, start.elapsed());
                    stopped = lock.lock().unwrap_or_else(PoisonError::into_inner);
                }
            })
            .ok();
        if handle.is_none() {
            tracing::warn!("could not start a progress thread; the call runs without progress notifications");
        }
        Self { stop, handle }
    }

    /// Stops the ticker and waits for its thread.
    pub(crate) fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        let (lock, cvar) = &*self.stop;
        *lock.lock().unwrap_or_else(PoisonError::into_inner) = true;
        cvar.notify_all();
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.halt();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_line_is_clean_and_short() {
        let tail = OutputTail::default();
        assert_eq!(tail.last_line(), None);
        tail.observe(b"first\nsec");
        assert_eq!(tail.last_line().as_deref(), Some("sec"));
        tail.observe(b"ond\n\n");
        assert_eq!(tail.last_line().as_deref(), Some("second"));
        tail.observe(b"\x1b[31mred\x1b[0m\tdone\r\n");
        assert_eq!(tail.last_line().as_deref(), Some("red done"));
        tail.observe("é".repeat(300).as_bytes());
        let line = tail.last_line().unwrap();
        assert_eq!(line.chars().count(), PROGRESS_LINE_CHARS + 1);
        assert!(line.ends_with('…'));
        tail.observe(&vec![b'x'; 10_000]);
        assert!(tail.last_line().unwrap().starts_with("xxx"));
    }

    #[test]
    fn ticker_counts_up_and_stops_for_good() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let ticker = Ticker::start(Duration::from_millis(20), move |n, _| sink.lock().unwrap().push(n));
        // Wait for three ticks, however slowly a loaded machine runs them
        // (a hang guard of a minute, not a speed test).
        for _ in 0..6000 {
            if seen.lock().unwrap().len() >= 3 {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        ticker.stop();
        let after_stop = seen.lock().unwrap().clone();
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(*seen.lock().unwrap(), after_stop, "no tick after stop");
        assert!(after_stop.len() >= 3, "{after_stop:?}");
        assert!(after_stop.windows(2).all(|w| w[1] == w[0] + 1), "{after_stop:?}");
    }
}
