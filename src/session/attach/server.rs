//! The per-server socket: accepts same-user connections and serves each on
//! a thread of its own (list the sessions, or attach to one).

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Weak;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;

use serde_json::{Value, json};

use super::wire::{self, read_frame, write_frame};
use crate::dirfd::Dir;
use crate::session::{Inner, TerminalEvent};

/// Pieces of output queued for one slow client before it is dropped.
const QUEUE: usize = 4096;

pub(crate) struct AttachServer {
    path: PathBuf,
    /// The socket's directory, held open: the socket is bound and removed
    /// through it, never by its path.
    dir: Dir,
    name: OsString,
    stop: OwnedFd,
    thread: Option<JoinHandle<()>>,
}

impl AttachServer {
    /// Listens on this process's socket in the private directory.
    pub fn start(sessions: Weak<Inner>) -> io::Result<Self> {
        let path = crate::process::ids::attach_socket_path();
        let (listener, dir, name) = bind(&path)
            .map_err(|e| io::Error::new(e.kind(), format!("could not listen on {}: {e}", path.display())))?;
        use rustix::event::EventfdFlags;
        let stop = match rustix::event::eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK) {
            Ok(stop) => stop,
            Err(e) => {
                let _ = dir.remove(&name);
                return Err(e.into());
            }
        };
        // The thread's own handle on the same eventfd.
        let woken = match stop.try_clone() {
            Ok(woken) => woken,
            Err(e) => {
                let _ = dir.remove(&name);
                return Err(e);
            }
        };
        let thread = std::thread::Builder::new()
            .name("bash-mcp-attach".into())
            .spawn(move || accept_loop(&listener, &woken, &sessions));
        match thread {
            Ok(thread) => Ok(Self {
                path,
                dir,
                name,
                stop,
                thread: Some(thread),
            }),
            Err(e) => {
                let _ = dir.remove(&name);
                Err(e)
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for AttachServer {
    fn drop(&mut self) {
        let _ = rustix::io::write(&self.stop, &1u64.to_ne_bytes());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        // The directory stays (empty, as tmux leaves its own): a sandbox that
        // hides it by a mount over it would lose that mount if it went, and
        // a directory made again in its place would be visible there.
        let _ = self.dir.remove(&self.name);
    }
}

/// Binds `path` in its private directory, made if needed: the directory is
/// opened without following a link and checked on its descriptor, and the
/// socket is bound through that descriptor, so nothing that replaces the
/// directory (or plants a link at the socket's name) meanwhile redirects
/// it.
fn bind(path: &Path) -> io::Result<(UnixListener, Dir, OsString)> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the socket path has no directory",
        ));
    };
    super::dir::make_private(parent)?;
    let dir = Dir::open(parent)?;
    dir.check_private()?;
    let _ = dir.remove(name);
    let listener = UnixListener::bind(dir.fd_path(name)?)?;
    Ok((listener, dir, name.to_owned()))
}

fn accept_loop(listener: &UnixListener, stop: &OwnedFd, sessions: &Weak<Inner>) {
    use rustix::event::{PollFd, PollFlags};
    loop {
        let mut fds = [PollFd::new(stop, PollFlags::IN), PollFd::new(listener, PollFlags::IN)];
        match rustix::event::poll(&mut fds, None) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        }
        if !fds[0].revents().is_empty() {
            return;
        }
        let Ok((stream, _)) = listener.accept() else { continue };
        // Only people: this user, and no process inside a sandbox (see `peer`).
        if let Err(why) = super::peer::check(&stream) {
            tracing::warn!("refused an attach connection: {why}");
            let _ = write_frame(&mut &stream, wire::ERROR, format!("refused: {why}").as_bytes());
            continue;
        }
        let sessions = sessions.clone();
        let _ = std::thread::Builder::new()
            .name("bash-mcp-attached".into())
            .spawn(move || serve(stream, &sessions));
    }
}

fn serve(stream: UnixStream, sessions: &Weak<Inner>) {
    let mut reader = &stream;
    while let Ok(Some((kind, payload))) = read_frame(&mut reader) {
        let Some(inner) = sessions.upgrade() else { return };
        match kind {
            wire::LIST => {
                let list = session_list(&inner);
                drop(inner);
                if write_frame(&mut &stream, wire::SESSIONS, list.to_string().as_bytes()).is_err() {
                    return;
                }
            }
            wire::ATTACH => {
                drop(inner);
                let request: Value = serde_json::from_slice(&payload).unwrap_or(Value::Null);
                return attach(&stream, sessions, &request);
            }
            _ => {
                let _ = write_frame(&mut &stream, wire::ERROR, b"expected a list or attach request first");
                return;
            }
        }
    }
}

fn session_list(inner: &Inner) -> Value {
    let sessions: Vec<Value> = inner
        .list()
        .iter()
        .map(|s| {
            json!({
                "session_id": s.id,
                "name": s.handle,
                "title": s.title(),
                "label": s.name,
                "shell": s.shell.as_str(),
                "cwd": s.cwd.display().to_string(),
                "state": s.state,
                "watchers": s.watchers,
            })
        })
        .collect();
    json!({"server_pid": std::process::id(), "sessions": sessions})
}

enum Piece {
    Output(Vec<u8>),
    Closed,
}

/// Attaches the connection to the session the request names, then relays
/// until the client leaves or the session ends.
fn attach(stream: &UnixStream, sessions: &Weak<Inner>, request: &Value) {
    let Some(inner) = sessions.upgrade() else { return };
    let key = request["session"].as_str().unwrap_or_default();
    let read_only = request["read_only"].as_bool().unwrap_or(false);
    let id = match inner.resolve(key) {
        Ok(id) => id,
        Err(e) => {
            let _ = write_frame(
                &mut &*stream,
                wire::ERROR,
                format!("{} ({})", e.message, e.hint).as_bytes(),
            );
            return;
        }
    };
    let info = inner.list().into_iter().find(|s| s.id == id);
    let hello = json!({
        "session_id": id,
        "name": info.as_ref().map(|i| i.handle.clone()),
        "title": info.as_ref().map(|i| i.title()),
    });
    let (Ok(writer), Ok(cutter)) = (stream.try_clone(), stream.try_clone()) else {
        return;
    };
    if write_frame(&mut &*stream, wire::ATTACHED, hello.to_string().as_bytes()).is_err() {
        return;
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
    let Ok(writer) = std::thread::Builder::new()
        .name("bash-mcp-attach-out".into())
        .spawn(move || relay_out(writer, &rx))
    else {
        return;
    };
    let subscription = inner.subscribe(&id, Box::new(move |event| forward(&tx, &cutter, event)));
    let Ok(subscription) = subscription else {
        let _ = stream.shutdown(std::net::Shutdown::Both);
        let _ = writer.join();
        return;
    };
    drop(inner);
    relay_in(stream, sessions, &id, read_only);
    drop(subscription);
    let _ = stream.shutdown(std::net::Shutdown::Both);
    let _ = writer.join();
}

/// Queues a piece for the client; a client too slow to keep up is cut off.
fn forward(tx: &SyncSender<Piece>, cutter: &UnixStream, event: TerminalEvent<'_>) {
    let piece = match event {
        TerminalEvent::Output(bytes) => Piece::Output(bytes.to_vec()),
        TerminalEvent::Closed => Piece::Closed,
    };
    if let Err(TrySendError::Full(_)) = tx.try_send(piece) {
        let _ = cutter.shutdown(std::net::Shutdown::Both);
    }
}

fn relay_out(mut out: UnixStream, rx: &Receiver<Piece>) {
    while let Ok(piece) = rx.recv() {
        let written = match piece {
            Piece::Output(bytes) => write_frame(&mut out, wire::OUTPUT, &bytes),
            Piece::Closed => {
                let _ = write_frame(&mut out, wire::CLOSED, b"the session ended");
                let _ = out.flush();
                let _ = out.shutdown(std::net::Shutdown::Both);
                return;
            }
        };
        if written.is_err() {
            return;
        }
    }
}

/// The client's keystrokes and window sizes, until it leaves. A read-only
/// client's keystrokes are dropped here, whatever the client sends.
fn relay_in(stream: &UnixStream, sessions: &Weak<Inner>, id: &str, read_only: bool) {
    let mut reader = stream;
    while let Ok(Some((kind, payload))) = read_frame(&mut reader) {
        let Some(inner) = sessions.upgrade() else { return };
        let applied = match kind {
            wire::INPUT if read_only => Ok(()),
            wire::INPUT => inner.type_input(id, &payload),
            wire::RESIZE => match wire::parse_size(&payload) {
                Some((rows, cols)) => inner.resize(id, rows, cols),
                None => Ok(()),
            },
            _ => Ok(()),
        };
        if applied.is_err() {
            return;
        }
    }
}
