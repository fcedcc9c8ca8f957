//! `bash-mcp attach [SESSION] [--read-only]`: this terminal shows a running
//! session (a replay of recent output, then everything live) and sends it
//! the keystrokes; the window size follows this terminal's. `Ctrl-]` then
//! `d` detaches (the session keeps running); `Ctrl-]` twice sends one.
//! When the session or its server ends by itself, the person may be in the
//! middle of typing for it (a password): keys are discarded up to Enter,
//! and whatever is still queued when the terminal is restored, so none of
//! them reaches the shell this terminal returns to.

use std::io::{IsTerminal, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

use bash_mcp::session::attach::{peer, sockets, wire};
use serde_json::{Value, json};

/// The detach prefix (Ctrl-]); `d` after it detaches.
const PREFIX: u8 = 0x1d;

/// One session some server offers.
struct Offer {
    socket: PathBuf,
    session: Value,
}

impl Offer {
    fn field(&self, key: &str) -> &str {
        self.session[key].as_str().unwrap_or("")
    }

    fn matches(&self, key: &str) -> bool {
        let number = key.trim_start_matches('#');
        key == self.field("session_id")
            || key == self.field("name")
            || key == self.field("title")
            || self.field("title").split_whitespace().next() == Some(&format!("#{number}"))
    }

    fn line(&self) -> String {
        format!(
            "{:<14} {:<8} {:<5} {:<8} {}",
            self.field("title"),
            self.field("state"),
            self.field("shell"),
            format!("{} watching", self.session["watchers"].as_u64().unwrap_or(0)),
            self.field("cwd")
        )
    }
}

pub fn run(session: Option<&str>, read_only: bool) -> Result<(), String> {
    let offers = discover()?;
    let offer = match session {
        Some(key) => pick(&offers, key)?,
        None => match offers.as_slice() {
            [] => return Err(no_sessions()),
            [only] => only,
            many => {
                let mut out = String::from("Sessions you can attach to (bash-mcp attach NAME):\n");
                for offer in many {
                    out.push_str(&format!("  {}\n", offer.line()));
                }
                let _ = std::io::stdout().write_all(out.as_bytes());
                return Ok(());
            }
        },
    };
    Attached::connect(offer, read_only)?.relay()
}

fn no_sessions() -> String {
    let [runtime, shared] = bash_mcp::session::attach::socket_dirs();
    format!(
        "no session is open to attach to (looked for servers in {} and {}); the agent starts one with session_start",
        runtime.display(),
        shared.display()
    )
}

/// Every session of every live server of this user. A server that refused
/// this process, or that this process refuses (one inside a sandbox, which
/// could be a fake planted to catch a password), is left out; when nothing
/// is left, the error says why.
fn discover() -> Result<Vec<Offer>, String> {
    let paths = match sockets() {
        Ok(paths) => paths,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(no_sessions()),
        Err(e) => return Err(format!("cannot look for sessions: {e}")),
    };
    let mut offers = Vec::new();
    let mut refused = Vec::new();
    for socket in paths {
        // A server that ended without removing its socket refuses connections: skip it.
        let Ok(mut stream) = UnixStream::connect(&socket) else {
            continue;
        };
        if let Err(why) = peer::check(&stream) {
            refused.push(format!("{}: its server is not trusted: {why}", socket.display()));
            continue;
        }
        if wire::write_frame(&mut stream, wire::LIST, b"").is_err() {
            continue;
        }
        let list: Value = match wire::read_frame(&mut stream) {
            Ok(Some((wire::SESSIONS, payload))) => serde_json::from_slice(&payload).unwrap_or(Value::Null),
            Ok(Some((wire::ERROR, payload))) => {
                refused.push(format!("{}: {}", socket.display(), String::from_utf8_lossy(&payload)));
                continue;
            }
            _ => continue,
        };
        for session in list["sessions"].as_array().into_iter().flatten() {
            offers.push(Offer {
                socket: socket.clone(),
                session: session.clone(),
            });
        }
    }
    if offers.is_empty() && !refused.is_empty() {
        return Err(format!(
            "{}; servers refused:\n  {}",
            no_sessions(),
            refused.join("\n  ")
        ));
    }
    Ok(offers)
}

fn pick<'a>(offers: &'a [Offer], key: &str) -> Result<&'a Offer, String> {
    let found: Vec<&Offer> = offers.iter().filter(|o| o.matches(key.trim())).collect();
    match found.as_slice() {
        [one] => Ok(one),
        [] if offers.is_empty() => Err(no_sessions()),
        [] => Err(format!(
            "no session is called {key:?}; open sessions: {}",
            offers.iter().map(|o| o.field("title")).collect::<Vec<_>>().join(", ")
        )),
        many => Err(format!(
            "{key:?} names {} sessions of different servers; attach by id: {}",
            many.len(),
            many.iter()
                .map(|o| format!("{} ({})", o.field("session_id"), o.field("title")))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

struct Attached {
    stream: UnixStream,
    title: String,
    read_only: bool,
}

impl Attached {
    fn connect(offer: &Offer, read_only: bool) -> Result<Self, String> {
        let mut stream = UnixStream::connect(&offer.socket)
            .map_err(|e| format!("cannot reach the session's server ({}): {e}", offer.socket.display()))?;
        peer::check(&stream).map_err(|why| {
            format!(
                "not attaching: the server behind {} is not trusted: {why}",
                offer.socket.display()
            )
        })?;
        let request = json!({"session": offer.field("session_id"), "read_only": read_only});
        wire::write_frame(&mut stream, wire::ATTACH, request.to_string().as_bytes())
            .map_err(|e| format!("cannot talk to the session's server: {e}"))?;
        match wire::read_frame(&mut stream) {
            Ok(Some((wire::ATTACHED, payload))) => {
                let hello: Value = serde_json::from_slice(&payload).unwrap_or(Value::Null);
                let title = hello["title"].as_str().unwrap_or("session").to_owned();
                Ok(Self {
                    stream,
                    title,
                    read_only,
                })
            }
            Ok(Some((wire::ERROR, payload))) => Err(String::from_utf8_lossy(&payload).into_owned()),
            Ok(_) => Err("the session's server ended the connection".into()),
            Err(e) => Err(format!("cannot talk to the session's server: {e}")),
        }
    }

    fn relay(mut self) -> Result<(), String> {
        let winch = winch_pipe()?;
        let raw = RawMode::enter();
        let mode = if self.read_only { ", read-only" } else { "" };
        say(&format!(
            "\x1b]0;bash-mcp: {}\x07[attached to {}{mode}; detach: Ctrl-] then d]\r\n",
            self.title, self.title
        ));
        self.send_size();
        let end = self.pump(&winch);
        say(&format!("\r\n{}\r\n", end.message(&self.title)));
        // The person may be in the middle of typing for the session (a
        // password, say): nothing of it may reach the shell this terminal
        // returns to. Keys are thrown away up to the end of that line.
        if end.cuts_typing() && raw.is_terminal() && !self.read_only {
            say("[keys typed now are discarded; press Enter to return to your shell]\r\n");
            discard_line();
        }
        // Restoring the terminal discards whatever is still queued.
        drop(raw);
        Ok(())
    }

    /// Relays until the session ends, the person detaches or the server goes.
    fn pump(&mut self, winch: &UnixStream) -> End {
        let stdin = std::io::stdin();
        let mut prefix = false;
        let mut stdin_open = true;
        let mut buf = [0u8; 4096];
        loop {
            use rustix::event::{PollFd, PollFlags};
            // The server, the window size, then stdin while it is open.
            let mut fds = [
                PollFd::new(&self.stream, PollFlags::IN),
                PollFd::new(winch, PollFlags::IN),
                PollFd::new(&stdin, PollFlags::IN),
            ];
            let count = if stdin_open { 3 } else { 2 };
            if rustix::event::poll(&mut fds[..count], None).is_err() {
                continue;
            }
            let ready: [bool; 3] = std::array::from_fn(|i| i < count && !fds[i].revents().is_empty());
            if ready[1] {
                let _ = (&*winch).read(&mut buf);
                self.send_size();
            }
            if ready[0] {
                match wire::read_frame(&mut self.stream) {
                    Ok(Some((wire::OUTPUT, bytes))) => {
                        let mut out = std::io::stdout().lock();
                        let _ = out.write_all(&bytes).and_then(|()| out.flush());
                    }
                    Ok(Some((wire::CLOSED, _))) => return End::SessionEnded,
                    Ok(Some(_)) => {}
                    Ok(None) | Err(_) => return End::ServerGone,
                }
            }
            if ready[2] {
                let n = stdin.lock().read(&mut buf).unwrap_or(0);
                if n == 0 {
                    stdin_open = false;
                    continue;
                }
                let (keys, detach) = filter_keys(&buf[..n], &mut prefix);
                if detach {
                    return End::Detached;
                }
                if !self.read_only
                    && !keys.is_empty()
                    && let Err(e) = wire::write_frame(&mut self.stream, wire::INPUT, &keys)
                {
                    return End::LostServer(e.to_string());
                }
            }
        }
    }

    fn send_size(&mut self) {
        if let Some((rows, cols)) = window_size() {
            let _ = wire::write_frame(&mut self.stream, wire::RESIZE, &wire::size_payload(rows, cols));
        }
    }
}

/// Why a view ended.
enum End {
    Detached,
    SessionEnded,
    ServerGone,
    LostServer(String),
}

impl End {
    fn message(&self, title: &str) -> String {
        match self {
            Self::Detached => format!("[detached from {title}; it keeps running]"),
            Self::SessionEnded => format!("[session {title} ended]"),
            Self::ServerGone => format!("[the server of session {title} ended]"),
            Self::LostServer(why) => format!("[lost the server of session {title}: {why}]"),
        }
    }

    /// Whether the view ended by itself, so the person may still be typing
    /// for the session (a detach is the person's own choice).
    fn cuts_typing(&self) -> bool {
        !matches!(self, Self::Detached)
    }
}

/// Reads and drops keys until the end of the line being typed (Enter,
/// Ctrl-C or Ctrl-D), or until the terminal closes.
fn discard_line() {
    let mut buf = [0u8; 4096];
    loop {
        match std::io::stdin().lock().read(&mut buf) {
            Ok(0) => return,
            Ok(n) if buf[..n].iter().any(|b| matches!(b, b'\r' | b'\n' | 0x03 | 0x04)) => return,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Keystrokes to send, and whether the person asked to detach.
fn filter_keys(input: &[u8], prefix: &mut bool) -> (Vec<u8>, bool) {
    let mut keys = Vec::with_capacity(input.len());
    for &b in input {
        if std::mem::take(prefix) {
            match b {
                b'd' => return (keys, true),
                PREFIX => keys.push(PREFIX),
                other => keys.extend_from_slice(&[PREFIX, other]),
            }
        } else if b == PREFIX {
            *prefix = true;
        } else {
            keys.push(b);
        }
    }
    (keys, false)
}

fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// A socket that becomes readable on each SIGWINCH.
fn winch_pipe() -> Result<UnixStream, String> {
    let (read, write) = UnixStream::pair().map_err(|e| format!("cannot watch the window size: {e}"))?;
    read.set_nonblocking(true).map_err(|e| e.to_string())?;
    signal_hook::low_level::pipe::register(signal_hook::consts::SIGWINCH, write)
        .map_err(|e| format!("cannot watch the window size: {e}"))?;
    Ok(read)
}

/// This terminal's rows and columns.
fn window_size() -> Option<(u16, u16)> {
    let size = rustix::termios::tcgetwinsize(std::io::stdout()).ok()?;
    (size.ws_row > 0 && size.ws_col > 0).then_some((size.ws_row, size.ws_col))
}

/// The terminal in raw mode (keys pass through as typed, Ctrl-C included)
/// until dropped; nothing when stdin is not a terminal.
struct RawMode(Option<rustix::termios::Termios>);

impl RawMode {
    fn is_terminal(&self) -> bool {
        self.0.is_some()
    }

    fn enter() -> Self {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return Self(None);
        }
        let Ok(saved) = rustix::termios::tcgetattr(&stdin) else {
            return Self(None);
        };
        let mut raw = saved.clone();
        raw.make_raw();
        let _ = rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &raw);
        Self(Some(saved))
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        if let Some(saved) = &self.0 {
            // TCSAFLUSH: keys still queued were typed for the session; the
            // shell this terminal returns to must not read them.
            let _ = rustix::termios::tcsetattr(std::io::stdin(), rustix::termios::OptionalActions::Flush, saved);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_detach_key_and_its_escape() {
        let mut prefix = false;
        assert_eq!(filter_keys(b"ls\r", &mut prefix), (b"ls\r".to_vec(), false));
        assert_eq!(filter_keys(b"x\x1dd", &mut prefix), (b"x".to_vec(), true));
        assert_eq!(filter_keys(b"\x1d\x1d", &mut prefix), (vec![PREFIX], false));
        assert_eq!(filter_keys(b"\x1d", &mut prefix), (vec![], false));
        assert!(prefix);
        assert_eq!(filter_keys(b"q", &mut prefix), (vec![PREFIX, b'q'], false));
    }
}
