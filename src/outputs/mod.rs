//! The output store: the whole output of a command whose result had to be
//! cut, kept on disk under an id so that `output_read` can return any part
//! of it (byte ranges, lines from either end, a search).
//!
//! Files live in one directory per store, `bash-mcp-output-<process tag>-<random>`
//! in the temp dir, mode 0700, each file mode 0600 under a random name: another
//! user cannot list or read them, another server cannot guess them. The temp
//! dir may be writable by sandboxed commands, so the directory is held open
//! and every file in it is reached through it ([`Dir`]): created exclusively,
//! never through a link, and read back only while it is still the file
//! written (same device and inode). The store
//! holds at most `budget` bytes and `max_count` outputs; finishing one evicts
//! the oldest until both fit. The largest file evicted last stays as a
//! spare for the next output to write over (at most the budget more on
//! disk, the same peak as while an output is written), because making new
//! page-cache pages is most of what keeping costs. One output larger than
//! the budget keeps its head and its last `tail_bytes` (held in memory until
//! the command ends), and says where it was cut. Dropping the store removes the directory; the guard removes it
//! when the host dies without dropping it. A disk error never fails the
//! command: the result says the output could not be kept.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use regex::Regex;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::dirfd::{self, Dir, Identity};
use crate::error::{ErrorCode, ToolError};
use crate::process::capture::KeeperFactory;

mod keeper;

use keeper::FileKeeper;

/// The bytes of an output's end kept after its head when the output is
/// larger than the budget, unless set otherwise: 2 MiB. A larger window
/// costs its memory per stream and, once it no longer stays in the
/// processor's cache, capture speed (docs/benchmarks.md, "Keeping the whole output").
pub const DEFAULT_TAIL_BYTES: u64 = 2 * 1024 * 1024;

/// The most bytes one `output_read` returns, whatever it asks for.
pub const MAX_READ_BYTES: usize = 64 * 1024;
/// The most matches one search returns.
pub const MAX_MATCHES: usize = 200;
/// The most context lines around a match.
pub const MAX_CONTEXT: usize = 20;
/// The most bytes of one line a search or line range looks at; the rest of a
/// longer line is skipped (and still counted in offsets).
const MAX_LINE_BYTES: usize = 64 * 1024;

/// Reads one line (through its `\n`) into `line`, keeping at most `cap`
/// bytes of it; returns the bytes consumed, 0 at the end. Memory stays
/// bounded whatever the line's length.
fn read_line_bounded(reader: &mut impl BufRead, line: &mut Vec<u8>, cap: usize) -> io::Result<usize> {
    let mut consumed = 0;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(consumed);
        }
        let (take, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let room = cap.saturating_sub(line.len());
        line.extend_from_slice(&buf[..take.min(room)]);
        reader.consume(take);
        consumed += take;
        if done {
            return Ok(consumed);
        }
    }
}

/// Kept outputs of one server.
pub struct OutputStore {
    budget: AtomicU64,
    max_count: AtomicUsize,
    tail_bytes: AtomicU64,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Created with the first kept output.
    dir: Option<Arc<Dir>>,
    /// Finished outputs, oldest first.
    entries: VecDeque<Entry>,
    bytes: u64,
    /// The file of the output evicted last, for the next output to write
    /// over: its pages already exist, and making new ones is most of what
    /// keeping an output costs.
    spare: Option<Spare>,
}

/// An evicted output's file, kept to be written over: its name, length,
/// and the file it was (a name a command replaced is not reused).
#[derive(Debug)]
struct Spare {
    name: String,
    len: u64,
    identity: Identity,
}

/// A file for a new output, open for writing.
pub(super) struct NewFile {
    /// The output's id, which is also the file's name.
    pub id: String,
    pub identity: Identity,
    pub file: File,
}

#[derive(Debug, Clone)]
struct Entry {
    /// The output's id, also its file's name in the store's directory.
    id: String,
    /// The file as it was written: a name that no longer leads to it is not read.
    identity: Identity,
    /// Bytes the command wrote to the stream.
    total: u64,
    /// The file's layout: the stream's first `head` bytes, then at most its
    /// last `tail` bytes, in order.
    head: u64,
    tail: u64,
    /// Bytes on disk.
    file_len: u64,
}

impl Entry {
    /// Logical bytes `[from, to)` that were not kept (the output outgrew
    /// head and tail).
    fn cut(&self) -> Option<(u64, u64)> {
        (self.total > self.head + self.tail).then(|| (self.head, self.total - self.tail))
    }

    /// The file offset of logical byte `at`, and how many bytes from there
    /// are contiguous in the file; `None` for a byte that was not kept.
    fn locate(&self, at: u64) -> Option<(u64, u64)> {
        if at >= self.total {
            return None;
        }
        if at < self.head {
            return Some((at, self.head - at));
        }
        let tail_from = self.total.saturating_sub(self.tail).max(self.head);
        if at < tail_from {
            return None;
        }
        Some((self.head + (at - tail_from), self.total - at))
    }
}

impl OutputStore {
    /// A store of at most `budget` bytes and `max_count` outputs; nothing is
    /// created on disk until the first output is kept.
    pub fn new(budget: u64, max_count: usize) -> Arc<Self> {
        Arc::new(Self {
            budget: AtomicU64::new(budget.max(2)),
            max_count: AtomicUsize::new(max_count.max(1)),
            tail_bytes: AtomicU64::new(DEFAULT_TAIL_BYTES),
            state: Mutex::new(State::default()),
        })
    }

    /// New limits, for outputs kept from now on; the oldest are evicted
    /// when the next output is kept.
    pub fn set_limits(&self, budget: u64, max_count: usize) {
        self.budget.store(budget.max(2), Ordering::Relaxed);
        self.max_count.store(max_count.max(1), Ordering::Relaxed);
    }

    /// The bytes of an output's end kept after its head when the output is
    /// larger than the budget (at most half the budget); they are held in
    /// memory until the command ends. For outputs kept from now on.
    pub fn set_tail_bytes(&self, bytes: u64) {
        self.tail_bytes.store(bytes.max(1), Ordering::Relaxed);
    }

    fn tail_bytes(&self) -> u64 {
        self.tail_bytes.load(Ordering::Relaxed)
    }

    fn budget(&self) -> u64 {
        self.budget.load(Ordering::Relaxed)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A factory for the capture: the keeper it makes writes one stream here.
    pub fn keeper(self: &Arc<Self>) -> KeeperFactory {
        let store = Arc::clone(self);
        Box::new(move || Box::new(FileKeeper::open(store)))
    }

    /// The store's directory, created on first use (mode 0700).
    fn dir(&self) -> io::Result<Arc<Dir>> {
        let mut state = self.state();
        if let Some(dir) = &state.dir {
            return Ok(dir.clone());
        }
        let prefix = crate::process::ids::output_dir_prefix();
        let (Some(parent), Some(start)) = (prefix.parent(), prefix.file_name()) else {
            return Err(io::Error::other("the temp dir has no usable path"));
        };
        let mut name = start.to_owned();
        name.push(crate::process::ids::random_hex()?);
        let dir = Arc::new(Dir::create_private(parent, &name)?);
        state.dir = Some(dir.clone());
        Ok(dir)
    }

    /// Removes an output's file (a name a command replaced goes the same way).
    fn remove_file(&self, name: &str) {
        if let Some(dir) = self.state().dir.clone() {
            let _ = dir.remove(OsStr::new(name));
        }
    }

    /// Records a finished output and evicts the oldest until the store fits.
    fn add(&self, entry: Entry) {
        let mut state = self.state();
        state.bytes += entry.file_len;
        state.entries.push_back(entry);
        let (budget, max_count) = (self.budget(), self.max_count.load(Ordering::Relaxed));
        while state.entries.len() > 1 && (state.bytes > budget || state.entries.len() > max_count) {
            let old = state.entries.pop_front().expect("more than one entry");
            state.bytes -= old.file_len;
            // The largest evicted file stays as the spare, at most the budget.
            let dir = state.dir.clone();
            let remove = |name: &str| {
                if let Some(dir) = &dir {
                    let _ = dir.remove(OsStr::new(name));
                }
            };
            match &state.spare {
                Some(spare) if spare.len >= old.file_len => remove(&old.id),
                _ => {
                    let spare = Spare {
                        name: old.id,
                        len: old.file_len,
                        identity: old.identity,
                    };
                    if let Some(previous) = state.spare.replace(spare) {
                        remove(&previous.name);
                    }
                }
            }
        }
    }

    /// A file for a new output under a fresh random id: the spare renamed,
    /// when it is still the file it was, or a new file (mode 0600).
    fn new_file(&self) -> io::Result<NewFile> {
        let dir = self.dir()?;
        let id = format!("out-{}", crate::process::ids::random_hex()?);
        let spare = self.state().spare.take();
        if let Some(spare) = spare {
            let name = OsStr::new(&spare.name);
            let reused = dir
                .rename(name, OsStr::new(&id))
                .and_then(|()| dir.open_write(OsStr::new(&id)))
                .and_then(|file| Ok((dirfd::stat_file(&file)?.identity, file)));
            match reused {
                Ok((identity, file)) if identity == spare.identity => return Ok(NewFile { id, identity, file }),
                // Gone, or replaced by something else: whatever has the
                // name now goes, and the output gets a new file.
                _ => {
                    let _ = dir.remove(name);
                    let _ = dir.remove(OsStr::new(&id));
                }
            }
        }
        let file = dir.create_file(OsStr::new(&id), 0o600)?;
        let identity = dirfd::stat_file(&file)?.identity;
        Ok(NewFile { id, identity, file })
    }

    /// The ids kept now, oldest first.
    pub fn ids(&self) -> Vec<String> {
        self.state().entries.iter().map(|e| e.id.clone()).collect()
    }

    /// Bytes on disk now.
    pub fn bytes(&self) -> u64 {
        self.state().bytes
    }

    /// The store's directory, once something was kept.
    pub fn path(&self) -> Option<PathBuf> {
        self.state().dir.as_ref().map(|d| d.path().to_path_buf())
    }

    fn entry(&self, id: &str) -> Result<Entry, ToolError> {
        let state = self.state();
        state.entries.iter().find(|e| e.id == id).cloned().ok_or_else(|| {
            ToolError::new(
                ErrorCode::OutputNotFound,
                format!("no kept output has the id {id:?}: it was never kept, or was evicted to make room for newer ones"),
                "use an output_id from a recent result; run the command again if its output is gone (the store keeps the newest outputs up to its budget)",
            )
        })
    }

    /// Answers an `output_read` query.
    pub fn read(&self, query: &ReadQuery) -> Result<Value, ToolError> {
        let entry = self.entry(&query.output_id)?;
        let file = self.open_kept(&entry)?;
        let view = View { entry: &entry, file };
        let mut doc = match &query.what {
            ReadWhat::Bytes { offset, length } => view.bytes(*offset, *length),
            ReadWhat::Head(lines) => view.head_lines(*lines),
            ReadWhat::Tail(lines) => view.tail_lines(*lines),
            ReadWhat::Grep { pattern, context } => view.grep(pattern, *context),
        }
        .map_err(|e| {
            ToolError::new(
                ErrorCode::Internal,
                format!("reading the kept output failed: {e}"),
                "retry",
            )
        })?;
        let map = doc.as_object_mut().expect("an object");
        map.insert("output_id".into(), entry.id.as_str().into());
        map.insert("total_bytes".into(), entry.total.into());
        if let Some((from, to)) = entry.cut() {
            map.insert(
                "not_kept".into(),
                json!({"from": from, "to": to, "why": "the output was larger than the store's budget: its head and its last bytes are kept"}),
            );
        }
        Ok(doc)
    }
}

impl OutputStore {
    /// The file of a kept output, opened through the store's directory and
    /// only while it is still the file that was written: a name a command
    /// replaced (with a link to another file, a fifo, another file) is not read.
    fn open_kept(&self, entry: &Entry) -> Result<File, ToolError> {
        let gone = |why: String| {
            ToolError::new(
                ErrorCode::OutputNotFound,
                format!("the kept output {} cannot be read: {why}", entry.id),
                "run the command again",
            )
        };
        let dir = self
            .state()
            .dir
            .clone()
            .ok_or_else(|| gone("the store has no directory".into()))?;
        let file = dir.open_read(OsStr::new(&entry.id)).map_err(|e| gone(e.to_string()))?;
        let identity = dirfd::stat_file(&file).map_err(|e| gone(e.to_string()))?.identity;
        if identity != entry.identity {
            return Err(gone(format!(
                "{} is no longer the file it was kept in (something replaced it, such as a command that can write the temp dir), so it is not read",
                dir.path().join(&entry.id).display()
            )));
        }
        Ok(file)
    }
}

impl Drop for OutputStore {
    fn drop(&mut self) {
        if let Some(dir) = self.state().dir.take() {
            let _ = dir.remove_all();
        }
    }
}

/// What `output_read` asks for.
#[derive(Debug, Clone)]
pub struct ReadQuery {
    /// The id from a result.
    pub output_id: String,
    /// Which part.
    pub what: ReadWhat,
}

/// The part of an output `output_read` returns.
#[derive(Debug, Clone)]
pub enum ReadWhat {
    /// Bytes from `offset` (counted over the whole output), at most `length`.
    Bytes {
        /// The first byte.
        offset: u64,
        /// How many bytes, at most [`MAX_READ_BYTES`].
        length: usize,
    },
    /// The first lines.
    Head(usize),
    /// The last lines.
    Tail(usize),
    /// Lines matching a regular expression, with line numbers and context.
    Grep {
        /// The expression.
        pattern: Regex,
        /// Lines of context before and after each match.
        context: usize,
    },
}

impl ReadQuery {
    /// Parses the `output_read` tool's arguments.
    pub fn from_args(args: &serde_json::Map<String, Value>) -> Result<Self, ToolError> {
        let args: ReadArgs = crate::tool_args::read("output_read", READ_ARGUMENTS, args, wrong_read_argument)?;
        let ReadArgs {
            output_id,
            offset,
            length,
            head_lines: head,
            tail_lines: tail,
            context,
            grep,
        } = args;
        let grep = grep.map(|g| g.0);
        let chosen = [
            offset.is_some() || length.is_some(),
            head.is_some(),
            tail.is_some(),
            grep.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count();
        if chosen > 1 {
            return Err(bad_read(
                "give one of offset/length, head_lines, tail_lines or grep, not several".into(),
                "make one call per part you want",
            ));
        }
        if context.is_some() && grep.is_none() {
            return Err(bad_read(
                "context only goes with grep".into(),
                "add grep, or drop context",
            ));
        }
        let what = if let Some(pattern) = grep {
            ReadWhat::Grep {
                pattern,
                context: (context.unwrap_or(2) as usize).min(MAX_CONTEXT),
            }
        } else if let Some(n) = head {
            ReadWhat::Head(n as usize)
        } else if let Some(n) = tail {
            ReadWhat::Tail(n as usize)
        } else {
            ReadWhat::Bytes {
                offset: offset.unwrap_or(0),
                length: length.map_or(MAX_READ_BYTES, |l| (l as usize).min(MAX_READ_BYTES)),
            }
        };
        Ok(Self { output_id, what })
    }
}

/// Arguments `output_read` accepts.
const READ_ARGUMENTS: &[&str] = &[
    "output_id",
    "offset",
    "length",
    "head_lines",
    "tail_lines",
    "grep",
    "context",
];

/// The `output_read` arguments, in the order they are checked.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    output_id: String,
    offset: Option<u64>,
    length: Option<u64>,
    head_lines: Option<u64>,
    tail_lines: Option<u64>,
    context: Option<u64>,
    grep: Option<Pattern>,
}

/// `grep`: a regular expression.
#[derive(Deserialize)]
#[serde(try_from = "String")]
struct Pattern(Regex);

impl TryFrom<String> for Pattern {
    type Error = regex::Error;

    fn try_from(pattern: String) -> Result<Self, regex::Error> {
        Regex::new(&pattern).map(Self)
    }
}

fn bad_read(message: String, hint: &str) -> ToolError {
    ToolError::new(ErrorCode::InvalidArguments, message, hint.to_owned())
}

/// The error of the first `output_read` argument that did not read (`got`:
/// its value, `None` when it is absent).
fn wrong_read_argument(key: &str, got: Option<&Value>) -> ToolError {
    match (key, got) {
        ("output_id", _) => bad_read(
            "output_id is required: the id a cut result gave".into(),
            "pass {\"output_id\": \"...\"} from the result's output_id",
        ),
        ("grep", Some(Value::String(pattern))) => match Regex::new(pattern) {
            Err(e) => bad_read(
                format!("grep is not a valid regular expression: {e}"),
                "use the regex crate's syntax (like Perl's, without look-around and backreferences)",
            ),
            Ok(_) => bad_read(
                crate::tool_args::must_be("grep", "a string", got),
                "pass a regular expression as a string",
            ),
        },
        ("grep", _) => bad_read(
            crate::tool_args::must_be("grep", "a string", got),
            "pass a regular expression as a string",
        ),
        (key, _) => bad_read(
            crate::tool_args::must_be(key, "a whole number ≥ 0", got),
            "pass a whole number",
        ),
    }
}

/// Reads logical bytes `[at, end)` of a kept output in order.
struct Logical<'v, 'e> {
    view: &'v View<'e>,
    at: u64,
    end: u64,
}

impl Read for Logical<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some((_, run)) = self.view.entry.locate(self.at).filter(|_| self.at < self.end) else {
            return Ok(0);
        };
        let n = buf.len().min(run as usize).min((self.end - self.at) as usize);
        self.view.read_logical(self.at, &mut buf[..n])?;
        self.at += n as u64;
        Ok(n)
    }
}

/// One line of a kept output: its number (`None` after a cut, where the
/// count is unknown), the logical offset of its first byte, and its bytes.
type Line = (Option<u64>, u64, Vec<u8>);

/// An open kept output, read through its layout.
struct View<'a> {
    entry: &'a Entry,
    file: File,
}

impl View<'_> {
    /// Fills `buf` with the logical bytes from `at`, which must all be kept.
    fn read_logical(&self, mut at: u64, mut buf: &mut [u8]) -> io::Result<()> {
        while !buf.is_empty() {
            let (file_at, run) = self
                .entry
                .locate(at)
                .ok_or_else(|| io::Error::other(format!("byte {at} of the output was not kept")))?;
            let n = buf.len().min(run as usize);
            self.file.read_exact_at(&mut buf[..n], file_at)?;
            at += n as u64;
            buf = &mut buf[n..];
        }
        Ok(())
    }

    fn bytes(&self, offset: u64, length: usize) -> io::Result<Value> {
        let total = self.entry.total;
        let mut start = offset.min(total);
        let mut skipped = None;
        if let Some((from, to)) = self.entry.cut()
            && (from..to).contains(&start)
        {
            skipped = Some(json!({"from": start, "to": to}));
            start = to;
        }
        let mut end = (start + length as u64).min(total);
        if let Some((from, _)) = self.entry.cut()
            && start < from
        {
            end = end.min(from);
        }
        let mut buf = vec![0; (end - start) as usize];
        self.read_logical(start, &mut buf)?;
        let mut doc = json!({
            "offset": start,
            "length": buf.len(),
            "next_offset": end,
            "text": String::from_utf8_lossy(&buf),
        });
        if end >= total {
            doc["next_offset"] = Value::Null;
        }
        if let Some(skipped) = skipped {
            doc["skipped_not_kept"] = skipped;
        }
        Ok(doc)
    }

    /// The kept bytes as lines, in order: the head, then (after a cut) the
    /// tail, each read on its own so that no line joins the two sides.
    fn lines(&self) -> io::Result<impl Iterator<Item = io::Result<Line>> + '_> {
        // (logical start, end, numbered)
        let regions = match self.entry.cut() {
            None => vec![(0, self.entry.total, true)],
            Some((from, to)) => vec![(0, from, true), (to, self.entry.total, false)],
        };
        let mut regions = regions.into_iter();
        let mut current: Option<(BufReader<Logical<'_, '_>>, u64, bool)> = None;
        let mut number = 0u64;
        Ok(std::iter::from_fn(move || {
            loop {
                if current.is_none() {
                    let (start, end, numbered) = regions.next()?;
                    let reader = Logical {
                        view: self,
                        at: start,
                        end,
                    };
                    current = Some((BufReader::with_capacity(256 * 1024, reader), start, numbered));
                }
                let (reader, logical, numbered) = current.as_mut().expect("set above");
                let mut line = Vec::new();
                match read_line_bounded(reader, &mut line, MAX_LINE_BYTES) {
                    Err(e) => return Some(Err(e)),
                    Ok(0) => current = None,
                    Ok(n) => {
                        let at = *logical;
                        *logical += n as u64;
                        // After a cut the count of lines before is unknown.
                        let shown = numbered.then(|| {
                            number += 1;
                            number
                        });
                        return Some(Ok((shown, at, line)));
                    }
                }
            }
        }))
    }

    fn head_lines(&self, count: usize) -> io::Result<Value> {
        let mut text = Vec::new();
        let mut taken = 0;
        let mut more = false;
        for line in self.lines()? {
            let (_, _, line) = line?;
            if taken == count || text.len() + line.len() > MAX_READ_BYTES {
                more = true;
                break;
            }
            text.extend_from_slice(&line);
            taken += 1;
        }
        Ok(json!({"lines": taken, "more": more, "text": String::from_utf8_lossy(&text)}))
    }

    fn tail_lines(&self, count: usize) -> io::Result<Value> {
        // Read backwards in blocks until enough line ends are seen.
        let len = self.entry.total;
        let floor = self.entry.cut().map_or(0, |(_, to)| to);
        let mut start = len;
        let mut buf: Vec<u8> = Vec::new();
        loop {
            let ends = buf.iter().filter(|b| **b == b'\n').count();
            let body_ends = if buf.last() == Some(&b'\n') { ends - 1 } else { ends };
            if body_ends >= count || start == floor || buf.len() > MAX_READ_BYTES {
                break;
            }
            let step = (start - floor).min(64 * 1024);
            start -= step;
            let mut block = vec![0; step as usize];
            self.read_logical(start, &mut block)?;
            block.extend_from_slice(&buf);
            buf = block;
        }
        // Keep the last `count` lines that fit the bound.
        let body = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let mut cut_at = 0;
        let mut seen = 0;
        for (i, b) in body.iter().enumerate().rev() {
            if *b == b'\n' {
                seen += 1;
                if seen == count {
                    cut_at = i + 1;
                    break;
                }
            }
        }
        if count == 0 {
            cut_at = buf.len();
        }
        let mut from = cut_at;
        while buf.len() - from > MAX_READ_BYTES {
            from = buf[from..]
                .iter()
                .position(|b| *b == b'\n')
                .map_or(buf.len(), |p| from + p + 1);
        }
        let text = &buf[from..];
        let lines =
            text.iter().filter(|b| **b == b'\n').count() + usize::from(!text.is_empty() && !text.ends_with(b"\n"));
        let more = from > 0 || start > floor || floor > 0;
        Ok(json!({"lines": lines, "more": more, "text": String::from_utf8_lossy(text)}))
    }

    fn grep(&self, pattern: &Regex, context: usize) -> io::Result<Value> {
        let mut matches = Vec::new();
        let mut before: VecDeque<(Option<u64>, Vec<u8>)> = VecDeque::new();
        // Matches still collecting their after-context: (index in matches, lines left).
        let mut open: Vec<(usize, usize)> = Vec::new();
        let mut bytes = 0usize;
        let mut truncated = false;
        let mut total_matches = 0u64;
        let show = |line: &[u8]| {
            let text = String::from_utf8_lossy(line.strip_suffix(b"\n").unwrap_or(line)).into_owned();
            if text.len() > 2048 {
                let mut end = 2048;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                format!("{}…", &text[..end])
            } else {
                text
            }
        };
        for line in self.lines()? {
            let (number, offset, line) = line?;
            for (index, left) in open.iter_mut() {
                let m: &mut Value = &mut matches[*index];
                m["after"].as_array_mut().expect("array").push(show(&line).into());
                *left -= 1;
            }
            open.retain(|(_, left)| *left > 0);
            let text = String::from_utf8_lossy(&line);
            if pattern.is_match(text.trim_end_matches('\n')) {
                total_matches += 1;
                if matches.len() < MAX_MATCHES && bytes < MAX_READ_BYTES {
                    let shown = show(&line);
                    bytes += shown.len();
                    matches.push(json!({
                        "line": number,
                        "offset": offset,
                        "text": shown,
                        "before": before.iter().map(|(_, l)| show(l)).collect::<Vec<_>>(),
                        "after": [],
                    }));
                    if context > 0 {
                        open.push((matches.len() - 1, context));
                    }
                } else {
                    truncated = true;
                }
            }
            if context > 0 {
                before.push_back((number, line));
                if before.len() > context {
                    before.pop_front();
                }
            }
        }
        Ok(json!({
            "matches": matches,
            "match_count": total_matches,
            "more": truncated,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::capture::Kept;

    fn keep(store: &Arc<OutputStore>, chunks: &[&[u8]]) -> Kept {
        let mut keeper = (store.keeper())();
        for c in chunks {
            keeper.append(c);
        }
        keeper.finish()
    }

    fn read(store: &OutputStore, id: &str, args: Value) -> Value {
        let mut args = args;
        args["output_id"] = id.into();
        store
            .read(&ReadQuery::from_args(args.as_object().unwrap()).unwrap())
            .unwrap()
    }

    #[test]
    fn bytes_lines_and_search_read_what_was_written() {
        let store = OutputStore::new(1 << 20, 8);
        let text: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
        let kept = keep(&store, &[text.as_bytes()]);
        let id = kept.output_id.unwrap();
        let doc = read(&store, &id, json!({"offset": 7, "length": 14}));
        assert_eq!(doc["text"], &text[7..21]);
        assert_eq!(read(&store, &id, json!({"head_lines": 2}))["text"], "line 1\nline 2\n");
        assert_eq!(
            read(&store, &id, json!({"tail_lines": 2}))["text"],
            "line 999\nline 1000\n"
        );
        let found = read(&store, &id, json!({"grep": "^line 50[05]$", "context": 1}));
        assert_eq!(found["match_count"], 2);
        assert_eq!(found["matches"][0]["line"], 500);
        assert_eq!(found["matches"][0]["before"][0], "line 499");
        assert_eq!(found["matches"][1]["after"][0], "line 506");
        assert_eq!(found["matches"][1]["offset"], text.find("line 505\n").unwrap());
        let path = store.path().unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o700);
        let file = path.join(&id);
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        drop(store);
        assert!(!path.exists(), "a dropped store leaves its directory behind");
    }

    #[test]
    fn the_oldest_output_is_evicted_first() {
        let store = OutputStore::new(250, 8);
        let ids: Vec<String> = (0..4)
            .map(|_| keep(&store, &[&[b'x'; 100]]).output_id.unwrap())
            .collect();
        assert_eq!(store.ids(), ids[2..], "two of 100 bytes fit a budget of 250");
        let err = store
            .read(&ReadQuery::from_args(json!({"output_id": ids[0]}).as_object().unwrap()).unwrap())
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::OutputNotFound);
        assert!(err.message.contains("evicted"), "{}", err.message);
        let small = OutputStore::new(1 << 20, 2);
        let ids: Vec<String> = (0..3).map(|_| keep(&small, &[b"a"]).output_id.unwrap()).collect();
        assert_eq!(small.ids(), ids[1..], "the count limit evicts too");
    }

    #[test]
    fn the_next_output_writes_over_the_evicted_file_and_keeps_only_its_own_bytes() {
        let store = OutputStore::new(150, 8);
        let first = keep(&store, &[&[b'a'; 100]]).output_id.unwrap();
        keep(&store, &[&[b'b'; 100]]);
        assert!(!store.ids().contains(&first), "the first was evicted");
        let dir = store.path().unwrap();
        let files = || std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(files(), 2, "the evicted file stays as the spare");
        let third = keep(&store, &[&[b'c'; 30]]).output_id.unwrap();
        assert_eq!(files(), 2, "the third output took the spare instead of a new file");
        assert_eq!(
            std::fs::metadata(dir.join(&third)).unwrap().len(),
            30,
            "the spare was cut to the new output"
        );
        let doc = read(&store, &third, json!({"offset": 0, "length": 1000}));
        assert_eq!(doc["text"], "c".repeat(30));
        assert_eq!(store.bytes(), 130);
    }

    #[test]
    fn a_name_replaced_in_the_store_is_neither_read_nor_written_through() {
        let scratch = std::env::temp_dir().join(format!("bash-mcp-store-target-{}", crate::process::ids::random_id()));
        std::fs::create_dir(&scratch).unwrap();
        let (secret, target) = (scratch.join("secret"), scratch.join("target"));
        std::fs::write(&secret, "secret text").unwrap();
        std::fs::write(&target, "untouched").unwrap();
        let store = OutputStore::new(150, 8);
        let first = keep(&store, &[&[b'a'; 100]]).output_id.unwrap();
        let dir = store.path().unwrap();
        // A kept output's name now leads to another file: not read. (The
        // file itself stays, so that no file made below gets its inode.)
        std::fs::rename(dir.join(&first), scratch.join("kept")).unwrap();
        std::os::unix::fs::symlink(&secret, dir.join(&first)).unwrap();
        let err = store
            .read(&ReadQuery::from_args(json!({"output_id": first}).as_object().unwrap()).unwrap())
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::OutputNotFound);
        assert!(err.message.contains("symbolic link"), "{}", err.message);
        // The same name as a plain file of someone else's: not read either.
        std::fs::write(dir.join("planted"), "planted").unwrap();
        std::fs::rename(dir.join("planted"), dir.join(&first)).unwrap();
        let err = store
            .read(&ReadQuery::from_args(json!({"output_id": first}).as_object().unwrap()).unwrap())
            .unwrap_err();
        assert!(err.message.contains("no longer the file"), "{}", err.message);
        // The spare replaced by a link: the next output gets a file of its own.
        keep(&store, &[&[b'b'; 100]]);
        keep(&store, &[&[b'c'; 100]]);
        let spare = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .find(|name| !store.ids().contains(name))
            .expect("a spare");
        std::fs::remove_file(dir.join(&spare)).unwrap();
        std::os::unix::fs::symlink(&target, dir.join(&spare)).unwrap();
        let next = keep(&store, &[&[b'd'; 40]]).output_id.unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "untouched");
        assert_eq!(read(&store, &next, json!({}))["text"], "d".repeat(40));
        assert!(!dir.join(&spare).exists(), "the planted link is gone");
        std::fs::remove_dir_all(scratch).unwrap();
    }

    #[test]
    fn an_output_over_the_budget_keeps_its_head_and_tail() {
        let store = OutputStore::new(100, 8);
        let text: Vec<u8> = (0..1000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let chunks: Vec<&[u8]> = text.chunks(7).collect();
        let kept = keep(&store, &chunks);
        assert!(kept.problem.unwrap().contains("bytes 50 to 950"));
        let id = kept.output_id.unwrap();
        assert_eq!(
            read(&store, &id, json!({"offset": 0, "length": 50}))["text"],
            std::str::from_utf8(&text[..50]).unwrap()
        );
        let tail = read(&store, &id, json!({"offset": 950}));
        assert_eq!(tail["text"], std::str::from_utf8(&text[950..]).unwrap());
        let skipped = read(&store, &id, json!({"offset": 100, "length": 10}));
        assert_eq!(skipped["offset"], 950, "{skipped}");
        assert_eq!(skipped["skipped_not_kept"]["to"], 950);
        assert_eq!(read(&store, &id, json!({}))["not_kept"]["from"], 50);
        assert_eq!(store.bytes(), 100);
    }

    #[test]
    fn a_cut_tail_reads_back_in_order() {
        let store = OutputStore::new(100, 8);
        let text: String = (0..1000).map(|i| format!("{i}\n")).collect();
        let chunks: Vec<&[u8]> = text.as_bytes().chunks(13).collect();
        let id = keep(&store, &chunks).output_id.unwrap();
        assert_eq!(read(&store, &id, json!({"tail_lines": 3}))["text"], "997\n998\n999\n");
        let last = read(&store, &id, json!({"grep": "^99[89]$", "context": 0}));
        assert_eq!(last["match_count"], 2, "{last}");
        assert_eq!(last["matches"][1]["offset"], text.find("999\n").unwrap());
        let tail_from = text.len() - 50;
        assert_eq!(
            read(&store, &id, json!({"offset": tail_from}))["text"],
            &text[tail_from..],
            "the tail is read from its first kept byte"
        );
    }

    #[test]
    fn no_line_joins_the_head_and_tail_of_a_cut_output() {
        let store = OutputStore::new(100, 8);
        let text = format!("{}\n{}\n{}\n", "a".repeat(60), "b".repeat(900), "c".repeat(30));
        let id = keep(&store, &[text.as_bytes()]).output_id.unwrap();
        let joined = read(&store, &id, json!({"grep": "ab"}));
        assert_eq!(joined["match_count"], 0, "{joined}");
        let c = read(&store, &id, json!({"grep": "^c+$", "context": 0}));
        assert_eq!(
            c["matches"][0]["line"],
            Value::Null,
            "line numbers after a cut are unknown"
        );
        assert_eq!(c["matches"][0]["offset"], text.find('c').unwrap());
        assert_eq!(read(&store, &id, json!({"head_lines": 1}))["text"], "a".repeat(50));
    }

    #[test]
    fn a_line_longer_than_the_cap_is_clipped_and_the_lines_after_it_are_found() {
        let store = OutputStore::new(8 << 20, 8);
        let text = format!("x{}\nneedle\n", "y".repeat(4 << 20));
        let id = keep(&store, &[text.as_bytes()]).output_id.unwrap();
        let found = read(&store, &id, json!({"grep": "needle"}));
        assert_eq!(found["matches"][0]["line"], 2);
        assert_eq!(found["matches"][0]["offset"], text.find("needle").unwrap());
        let head = read(&store, &id, json!({"head_lines": 1}));
        assert_eq!(
            head["text"].as_str().unwrap().len(),
            MAX_LINE_BYTES,
            "the first line is its first MAX_LINE_BYTES bytes"
        );
        let first = read(&store, &id, json!({"grep": "^xy"}));
        assert!(
            first["matches"][0]["text"].as_str().unwrap().len() <= 2049 + 3,
            "a match shows at most 2 KiB"
        );
    }

    /// The arguments read are the ones the tool's definition lists.
    #[test]
    fn the_arguments_read_are_the_ones_listed() {
        // Read as plain JSON: the tool's object model sits above this layer.
        let definition: serde_json::Value =
            serde_json::from_str(include_str!("../../data/tools/bash/output_read.json")).unwrap();
        let mut listed: Vec<&str> = definition["inputSchema"]["properties"]
            .as_object()
            .expect("output_read.json lists its arguments under inputSchema.properties")
            .keys()
            .map(String::as_str)
            .collect();
        listed.sort_unstable();
        let mut read = crate::tool_args::fields_of::<ReadArgs>().to_vec();
        read.sort_unstable();
        let mut accepted = READ_ARGUMENTS.to_vec();
        accepted.sort_unstable();
        assert_eq!((&read, &accepted), (&listed, &listed));
    }

    #[test]
    fn bad_queries_say_what_to_change() {
        for (args, needle) in [
            (json!({}), "output_id is required"),
            (json!({"output_id": "x", "grep": "("}), "not a valid regular expression"),
            (
                json!({"output_id": "x", "head_lines": 1, "tail_lines": 1}),
                "not several",
            ),
            (json!({"output_id": "x", "offset": -1}), "whole number"),
            (json!({"output_id": "x", "context": 1}), "only goes with grep"),
        ] {
            let err = ReadQuery::from_args(args.as_object().unwrap()).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidArguments);
            assert!(err.message.contains(needle), "{args}: {}", err.message);
        }
    }
}
