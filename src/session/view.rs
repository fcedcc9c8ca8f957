//! What a person watching a session sees: the terminal's output as it comes,
//! with the marker plumbing left out, each command of the agent shown after
//! a `$ ` prompt as if typed, and line ends a terminal can draw (the
//! session's terminal has no output newline translation).
//!
//! A [`View`] keeps a bounded replay of what it showed, so a watcher who
//! arrives late starts with a meaningful screen, and hands every new piece
//! to each subscriber's callback.

use std::collections::VecDeque;

/// How much of the shown stream is kept for replay.
const REPLAY_BYTES: usize = 64 * 1024;

/// The prompt drawn where the shell (whose own prompt is empty) waits.
const PROMPT: &[u8] = b"$ ";

/// What a subscriber is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TerminalEvent<'a> {
    /// Bytes for the subscriber's terminal (the replay first, then live output).
    Output(&'a [u8]),
    /// The session ended (closed, or its shell exited); nothing follows.
    Closed,
}

/// A subscriber's callback. It runs on the session's reader thread, so it
/// must return quickly and must not call back into the session's manager.
pub type TerminalCallback = Box<dyn FnMut(TerminalEvent<'_>) + Send>;

pub(super) struct View {
    replay: VecDeque<u8>,
    subscribers: Vec<(u64, TerminalCallback)>,
    next_id: u64,
    /// The last byte shown (to turn a lone `\n` into `\r\n`).
    last: u8,
    /// Between typing our command line and the command's start marker:
    /// what the terminal shows then is our plumbing line.
    hiding: bool,
    /// The agent's command, shown once the shell starts it.
    command: Option<String>,
    closed: bool,
    /// The buffer `show` converts into, kept between calls.
    scratch: Vec<u8>,
}

impl View {
    pub fn new() -> Self {
        Self {
            replay: VecDeque::new(),
            subscribers: Vec::new(),
            next_id: 1,
            last: b'\n',
            hiding: false,
            command: None,
            closed: false,
            scratch: Vec::new(),
        }
    }

    /// How many subscribers watch.
    pub fn watchers(&self) -> usize {
        self.subscribers.len()
    }

    /// Adds a subscriber and gives it the replay; a closed view says so at once.
    pub fn subscribe(&mut self, mut callback: TerminalCallback) -> Option<u64> {
        let (a, b) = self.replay.as_slices();
        let mut replay = Vec::with_capacity(a.len() + b.len());
        replay.extend_from_slice(a);
        replay.extend_from_slice(b);
        if !replay.is_empty() {
            callback(TerminalEvent::Output(&replay));
        }
        if self.closed {
            callback(TerminalEvent::Closed);
            return None;
        }
        let id = self.next_id;
        self.next_id += 1;
        self.subscribers.push((id, callback));
        Some(id)
    }

    pub fn unsubscribe(&mut self, id: u64) {
        self.subscribers.retain(|(sid, _)| *sid != id);
    }

    /// The agent is about to type `command`'s plumbing line.
    pub fn command_typed(&mut self, command: &str) {
        self.hiding = true;
        self.command = Some(command.to_owned());
    }

    /// The shell started the command: show it as typed at the prompt.
    pub fn command_started(&mut self) {
        self.hiding = false;
        if let Some(command) = self.command.take() {
            let mut line = command.into_bytes();
            line.push(b'\n');
            self.show(&line);
        }
    }

    /// The shell is back at its prompt.
    pub fn prompt(&mut self) {
        self.hiding = false;
        self.command = None;
        if self.last != b'\n' {
            self.show(b"\n");
        }
        self.show(PROMPT);
    }

    /// Output of the terminal.
    pub fn output(&mut self, bytes: &[u8]) {
        if !self.hiding {
            self.show(bytes);
        }
    }

    /// Tells every subscriber the session ended, and forgets them.
    pub fn close(&mut self) {
        if std::mem::replace(&mut self.closed, true) {
            return;
        }
        for (_, callback) in &mut self.subscribers {
            callback(TerminalEvent::Closed);
        }
        self.subscribers.clear();
    }

    fn show(&mut self, bytes: &[u8]) {
        let Some(&last) = bytes.last() else {
            return;
        };
        // Copied a line at a time (a chatty command's output passes here
        // whole), with `\r` added before each `\n` that lacks one.
        let mut out = std::mem::take(&mut self.scratch);
        out.clear();
        out.reserve(bytes.len() + 16);
        let mut before = self.last;
        let mut rest = bytes;
        while let Some(at) = super::marker::find_byte(rest, b'\n') {
            if at > 0 {
                before = rest[at - 1];
            }
            out.extend_from_slice(&rest[..at]);
            if before != b'\r' {
                out.push(b'\r');
            }
            out.push(b'\n');
            before = b'\n';
            rest = &rest[at + 1..];
        }
        out.extend_from_slice(rest);
        self.last = last;
        self.replay.extend(&out);
        if self.replay.len() > REPLAY_BYTES {
            let drop = self.replay.len() - REPLAY_BYTES;
            self.replay.drain(..drop);
        }
        for (_, callback) in &mut self.subscribers {
            callback(TerminalEvent::Output(&out));
        }
        self.scratch = out;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    fn recorder() -> (Arc<Mutex<Vec<u8>>>, TerminalCallback) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let callback = Box::new(move |event: TerminalEvent<'_>| match event {
            TerminalEvent::Output(bytes) => sink.lock().unwrap().extend_from_slice(bytes),
            TerminalEvent::Closed => sink.lock().unwrap().extend_from_slice(b"<closed>"),
        });
        (seen, callback)
    }

    #[test]
    fn commands_show_as_typed_and_plumbing_stays_hidden() {
        let mut view = View::new();
        view.prompt();
        view.command_typed("echo hi");
        view.output(b" . \"$__bm_d/c\" && __bm_rc=0\n");
        view.command_started();
        view.output(b"hi\n");
        view.prompt();
        let (seen, callback) = recorder();
        view.subscribe(callback);
        assert_eq!(&*seen.lock().unwrap(), b"$ echo hi\r\nhi\r\n$ ");
        view.close();
        assert!(seen.lock().unwrap().ends_with(b"<closed>"));
    }

    #[test]
    fn the_replay_is_bounded_and_late_subscribers_of_a_closed_view_are_told() {
        let mut view = View::new();
        view.output(&vec![b'x'; REPLAY_BYTES * 2]);
        view.close();
        let (seen, callback) = recorder();
        assert_eq!(view.subscribe(callback), None);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), REPLAY_BYTES + b"<closed>".len());
    }

    #[test]
    fn line_ends_are_drawable_across_reads() {
        let mut view = View::new();
        for piece in [&b"a\nb\r"[..], b"\nc\n\n", b"", b"d\r\n"] {
            view.output(piece);
        }
        let (seen, callback) = recorder();
        view.subscribe(callback);
        assert_eq!(&*seen.lock().unwrap(), b"a\r\nb\r\nc\r\n\r\nd\r\n");
    }
}
