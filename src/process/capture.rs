//! Output capture with bounded memory: the head and the tail are kept, the
//! middle is counted, and the result says exactly how much was left out.
//! A [`Keeper`] given to the buffer receives the whole stream once it no
//! longer fits (the output store keeps it on disk under an id), so what the
//! memory leaves out can still be read.

/// Receives the whole of a stream that outgrew its [`BoundedOutput`]: first
/// every byte so far, then each new chunk. It must not fail the capture: a
/// keeper that cannot write says so in [`Kept::problem`].
pub trait Keeper: Send {
    /// Appends bytes of the stream.
    fn append(&mut self, data: &[u8]);
    /// Memory the next read may fill in place, saving the copy `append`
    /// makes; `None` when the keeper has none (then `append` is used).
    fn room(&mut self) -> Option<&mut [u8]> {
        None
    }
    /// Appends the first `n` bytes of the room the last [`Keeper::room`]
    /// gave, and returns them. Called only after `room` returned memory, so
    /// a keeper that gives room implements this too.
    fn commit(&mut self, n: usize) -> &[u8] {
        unreachable!("commit({n}) without room: this keeper gives no room")
    }
    /// The stream ended: what was kept.
    fn finish(self: Box<Self>) -> Kept;
}

/// Makes a [`Keeper`] when a stream first outgrows its buffer.
pub type KeeperFactory = Box<dyn FnOnce() -> Box<dyn Keeper> + Send>;

/// What a [`Keeper`] kept of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The id the whole output can be read under, when it was kept.
    pub output_id: Option<String>,
    /// Why the output was not kept, or was kept only in part; for the result.
    pub problem: Option<String>,
}

enum Keeping {
    /// No keeper: the middle of a long stream is lost.
    Off,
    /// A keeper is made when the stream first outgrows the buffer.
    Ready(KeeperFactory),
    Active(Box<dyn Keeper>),
    Finished(Kept),
}

impl std::fmt::Debug for Keeping {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Keeping::Off => f.write_str("Off"),
            Keeping::Ready(_) => f.write_str("Ready"),
            Keeping::Active(_) => f.write_str("Active"),
            Keeping::Finished(kept) => write!(f, "Finished({kept:?})"),
        }
    }
}

/// Keeps the first and last bytes of a stream, and counts the rest.
///
/// Memory is bounded by the limit whatever the stream's length: the head is
/// filled once, the tail is a ring that only ever holds its capacity.
#[derive(Debug)]
pub struct BoundedOutput {
    window: Window,
    keeping: Keeping,
}

/// The bytes a [`BoundedOutput`] holds in memory.
#[derive(Debug)]
struct Window {
    head: Vec<u8>,
    head_cap: usize,
    ring: Vec<u8>,
    ring_cap: usize,
    /// Index in `ring` of the oldest byte once the ring is full.
    ring_start: usize,
    total: u64,
}

impl BoundedOutput {
    /// A buffer that keeps at most `limit` bytes (half head, half tail).
    pub fn new(limit: usize) -> Self {
        let head_cap = limit / 2;
        let ring_cap = limit - head_cap;
        Self {
            window: Window {
                head: Vec::new(),
                head_cap,
                ring: Vec::new(),
                ring_cap,
                ring_start: 0,
                total: 0,
            },
            keeping: Keeping::Off,
        }
    }

    /// A buffer like [`BoundedOutput::new`] that hands the whole stream to
    /// the keeper `make` returns, once the stream outgrows `limit`.
    pub fn keeping(limit: usize, make: KeeperFactory) -> Self {
        let mut out = Self::new(limit);
        out.keeping = Keeping::Ready(make);
        out
    }

    /// Ends keeping: the keeper's result, once the stream outgrew the buffer
    /// (later calls return the same). `None` when nothing needed keeping.
    pub fn finish_keeping(&mut self) -> Option<Kept> {
        match std::mem::replace(&mut self.keeping, Keeping::Off) {
            Keeping::Active(keeper) => {
                let kept = keeper.finish();
                self.keeping = Keeping::Finished(kept.clone());
                Some(kept)
            }
            Keeping::Finished(kept) => {
                self.keeping = Keeping::Finished(kept.clone());
                Some(kept)
            }
            other => {
                self.keeping = other;
                None
            }
        }
    }

    /// Appends a chunk of output.
    pub fn push(&mut self, data: &[u8]) {
        self.keep(data);
        self.window.push(data);
    }

    /// Memory the next read of this stream may fill in place: the keeper's,
    /// once the stream outgrew the buffer. Then [`BoundedOutput::push_in_place`]
    /// takes the bytes read.
    pub fn read_room(&mut self) -> Option<&mut [u8]> {
        match &mut self.keeping {
            Keeping::Active(keeper) => keeper.room(),
            _ => None,
        }
    }

    /// Takes the `n` bytes a read put into [`BoundedOutput::read_room`]'s
    /// memory, and returns them.
    pub fn push_in_place(&mut self, n: usize) -> &[u8] {
        let Keeping::Active(keeper) = &mut self.keeping else {
            unreachable!("read_room gave memory only to an active keeper")
        };
        let data = keeper.commit(n);
        self.window.push(data);
        data
    }

    /// Hands `data` to the keeper, starting one (with every byte so far) when
    /// `data` is the first chunk that does not fit.
    fn keep(&mut self, data: &[u8]) {
        match &mut self.keeping {
            Keeping::Active(keeper) => keeper.append(data),
            Keeping::Ready(_)
                if self.window.total + data.len() as u64 > (self.window.head_cap + self.window.ring_cap) as u64 =>
            {
                let Keeping::Ready(make) = std::mem::replace(&mut self.keeping, Keeping::Off) else {
                    unreachable!("matched Ready above")
                };
                let mut keeper = make();
                // Nothing was dropped yet: head and ring hold every byte, in order.
                keeper.append(&self.window.head);
                keeper.append(&self.window.ring[self.window.ring_start..]);
                keeper.append(&self.window.ring[..self.window.ring_start]);
                keeper.append(data);
                self.keeping = Keeping::Active(keeper);
            }
            _ => {}
        }
    }

    /// Total bytes pushed so far.
    pub fn total(&self) -> u64 {
        self.window.total
    }

    /// Whether some bytes were left out.
    pub fn is_truncated(&self) -> bool {
        self.window.total > (self.window.head.len() + self.window.ring.len()) as u64
    }

    /// The output from byte `offset` on, as far as it is still kept, and
    /// the offset it reaches (a cursor for the next look: it stops before
    /// an incomplete UTF-8 sequence at the end). Bytes between `offset` and
    /// the kept tail that were dropped are named by one marker line.
    pub(crate) fn render_since(&self, offset: u64) -> (String, u64) {
        let head_len = self.window.head.len() as u64;
        let ring_from = self.window.total - self.window.ring.len() as u64;
        let mut text = String::new();
        let mut bytes = Vec::new();
        if offset < head_len {
            bytes.extend_from_slice(&self.window.head[offset as usize..]);
        }
        let tail = self.tail_bytes();
        let resume = offset.max(head_len);
        if resume < self.window.total {
            if resume < ring_from {
                text.push_str(&String::from_utf8_lossy(&bytes));
                bytes.clear();
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(&format!(
                    "[... {} bytes not shown: they were printed since the last look and are no longer kept ...]\n",
                    ring_from - resume
                ));
                bytes.extend_from_slice(&tail);
            } else {
                bytes.extend_from_slice(&tail[(resume - ring_from) as usize..]);
            }
        }
        let whole = utf8_prefix_end(&bytes);
        let cursor = self.window.total - (bytes.len() - whole) as u64;
        text.push_str(&String::from_utf8_lossy(&bytes[..whole]));
        (text, cursor.max(offset.min(self.window.total)))
    }

    /// The kept bytes, in order (head then tail), without any marker.
    fn tail_bytes(&self) -> Vec<u8> {
        let mut tail = Vec::with_capacity(self.window.ring.len());
        tail.extend_from_slice(&self.window.ring[self.window.ring_start..]);
        tail.extend_from_slice(&self.window.ring[..self.window.ring_start]);
        tail
    }

    /// The output as text: everything when it fit, else head, one marker
    /// line naming how many bytes were left out, and tail. Invalid UTF-8 is
    /// replaced with U+FFFD; NUL bytes are kept.
    pub fn render(&self) -> String {
        let tail = self.tail_bytes();
        if !self.is_truncated() {
            let mut all = self.window.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        // Cut at line ends when one is near, else at character boundaries, so
        // the seams add neither half lines nor replacement characters.
        let head = &self.window.head
            [..line_prefix_end(&self.window.head).unwrap_or_else(|| utf8_prefix_end(&self.window.head))];
        let tail = &tail[line_suffix_start(&tail).unwrap_or_else(|| utf8_suffix_start(&tail))..];
        let omitted = self.window.total - (head.len() + tail.len()) as u64;
        let mut text = String::from_utf8_lossy(head).into_owned();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        let kept = match &self.keeping {
            Keeping::Finished(Kept {
                output_id: Some(id),
                problem,
            }) => format!(
                "; the whole output is kept: output_read {{\"output_id\": \"{id}\"}} reads any part (offset and length, head_lines, tail_lines, grep){}",
                problem.as_deref().map(|p| format!(" ({p})")).unwrap_or_default()
            ),
            Keeping::Finished(Kept { problem: Some(p), .. }) => format!("; {p}"),
            _ => String::new(),
        };
        text.push_str(&format!(
            "[... {omitted} bytes omitted: output was {} bytes, showing the first {} and the last {}{kept} ...]\n",
            self.window.total,
            head.len(),
            tail.len()
        ));
        text.push_str(&String::from_utf8_lossy(tail));
        text
    }
}

impl Window {
    /// Keeps `data` in the head and the ring.
    fn push(&mut self, mut data: &[u8]) {
        self.total += data.len() as u64;
        if self.head.len() < self.head_cap {
            let take = data.len().min(self.head_cap - self.head.len());
            self.head.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        if data.is_empty() || self.ring_cap == 0 {
            return;
        }
        if data.len() >= self.ring_cap {
            // Only the last ring_cap bytes can survive.
            self.ring.clear();
            self.ring.extend_from_slice(&data[data.len() - self.ring_cap..]);
            self.ring_start = 0;
            return;
        }
        let room = self.ring_cap - self.ring.len();
        if room > 0 {
            let take = room.min(data.len());
            self.ring.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        // The ring is full: overwrite the oldest bytes, wrapping around.
        while !data.is_empty() {
            let run = data.len().min(self.ring_cap - self.ring_start);
            self.ring[self.ring_start..self.ring_start + run].copy_from_slice(&data[..run]);
            self.ring_start = (self.ring_start + run) % self.ring_cap;
            data = &data[run..];
        }
    }
}

/// End of the last whole line, if it lies in the last quarter of `bytes`.
fn line_prefix_end(bytes: &[u8]) -> Option<usize> {
    let window = bytes.len() / 4;
    let pos = bytes[bytes.len() - window..].iter().rposition(|b| *b == b'\n')?;
    Some(bytes.len() - window + pos + 1)
}

/// Start of the first whole line, if it lies in the first quarter of `bytes`.
fn line_suffix_start(bytes: &[u8]) -> Option<usize> {
    let window = bytes.len() / 4;
    bytes[..window].iter().position(|b| *b == b'\n').map(|pos| pos + 1)
}

/// Length of the longest prefix that does not end inside a UTF-8 sequence.
fn utf8_prefix_end(bytes: &[u8]) -> usize {
    // Look back at most 3 bytes for the start of an incomplete sequence.
    for back in 1..=bytes.len().min(3) {
        let i = bytes.len() - back;
        let b = bytes[i];
        if b & 0xC0 != 0x80 {
            let need = match b {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                0xF0..=0xF7 => 4,
                _ => 1,
            };
            return if need > back { i } else { bytes.len() };
        }
    }
    bytes.len()
}

/// Index of the first byte that is not a UTF-8 continuation byte (at most 3 skipped).
fn utf8_suffix_start(bytes: &[u8]) -> usize {
    bytes.iter().take(3).take_while(|b| *b & 0xC0 == 0x80).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A keeper that collects into shared memory.
    struct Collect(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl Keeper for Collect {
        fn append(&mut self, data: &[u8]) {
            self.0.lock().unwrap().extend_from_slice(data);
        }
        fn finish(self: Box<Self>) -> Kept {
            Kept {
                output_id: Some("o-1".into()),
                problem: None,
            }
        }
    }

    #[test]
    fn a_keeper_gets_every_byte_once_the_stream_outgrows_the_buffer() {
        let all = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let shared = all.clone();
        let mut out = BoundedOutput::keeping(8, Box::new(move || Box::new(Collect(shared))));
        let mut written = Vec::new();
        for i in 0..100u8 {
            let chunk = [b'a' + i % 26; 3];
            written.extend_from_slice(&chunk[..1 + usize::from(i) % 3]);
            out.push(&chunk[..1 + usize::from(i) % 3]);
        }
        assert_eq!(out.finish_keeping().unwrap().output_id.as_deref(), Some("o-1"));
        assert_eq!(*all.lock().unwrap(), written, "the keeper saw the stream exactly");
        assert!(
            out.render().contains("output_read {\"output_id\": \"o-1\"}"),
            "{}",
            out.render()
        );
    }

    #[test]
    fn no_keeper_is_made_for_output_that_fits() {
        let mut out = BoundedOutput::keeping(8, Box::new(|| panic!("no keeper needed")));
        out.push(b"12345678");
        assert_eq!(out.finish_keeping(), None);
        assert_eq!(out.render(), "12345678");
    }

    #[test]
    fn small_output_is_whole() {
        let mut out = BoundedOutput::new(16);
        out.push(b"hello ");
        out.push(b"world");
        assert_eq!(out.render(), "hello world");
        assert!(!out.is_truncated());
        assert_eq!(out.total(), 11);
    }

    #[test]
    fn exactly_at_limit_is_whole() {
        let mut out = BoundedOutput::new(8);
        out.push(b"0123");
        out.push(b"4567");
        assert_eq!(out.render(), "01234567");
    }

    #[test]
    fn long_output_keeps_head_and_tail_in_any_chunking() {
        let data: Vec<u8> = (0..10_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        for chunk in [1, 3, 7, 64, 999, 10_000] {
            let mut out = BoundedOutput::new(100);
            for c in data.chunks(chunk) {
                out.push(c);
            }
            let text = out.render();
            let head = std::str::from_utf8(&data[..50]).unwrap();
            let tail = std::str::from_utf8(&data[data.len() - 50..]).unwrap();
            assert!(text.starts_with(head), "chunk {chunk}");
            assert!(text.ends_with(tail), "chunk {chunk}");
            assert!(text.contains("[... 9900 bytes omitted"), "chunk {chunk}: {text}");
            assert!(out.is_truncated());
        }
    }

    #[test]
    fn cut_respects_utf8_boundaries() {
        let mut out = BoundedOutput::new(10);
        out.push("ééééééééééééééé".as_bytes()); // 30 bytes
        let text = out.render();
        assert!(!text.contains('\u{FFFD}'), "{text}");
        assert!(text.starts_with("éé"));
        assert!(text.ends_with("éé"));
    }

    #[test]
    fn cut_prefers_line_ends_nearby() {
        let data: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let mut out = BoundedOutput::new(200);
        out.push(data.as_bytes());
        let text = out.render();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines.iter().all(|l| l.starts_with("line ") || l.starts_with("[... ")),
            "{text}"
        );
        assert!(text.ends_with("line 999\n"));
        let kept = text.len() - lines.iter().find(|l| l.starts_with("[...")).unwrap().len() - 1;
        assert!(
            text.contains(&format!("[... {} bytes omitted", data.len() - kept)),
            "{text}"
        );
    }

    #[test]
    fn render_since_returns_what_came_after_the_cursor() {
        let mut out = BoundedOutput::new(16);
        out.push(b"abc");
        let (text, cursor) = out.render_since(0);
        assert_eq!((text.as_str(), cursor), ("abc", 3));
        out.push(b"def");
        assert_eq!(out.render_since(cursor), ("def".to_owned(), 6));
        assert_eq!(out.render_since(6), (String::new(), 6));
    }

    #[test]
    fn render_since_names_bytes_no_longer_kept() {
        let mut out = BoundedOutput::new(8);
        out.push(b"0123456789abcdefghij");
        let (text, cursor) = out.render_since(6);
        assert_eq!(cursor, 20);
        assert!(text.starts_with("[... 10 bytes not shown"), "{text}");
        assert!(text.ends_with("ghij"), "{text}");
    }

    #[test]
    fn render_since_stops_before_a_split_character() {
        let mut out = BoundedOutput::new(64);
        out.push(&"aé".as_bytes()[..2]);
        assert_eq!(out.render_since(0), ("a".to_owned(), 1));
        out.push(&"aé".as_bytes()[2..]);
        assert_eq!(out.render_since(1), ("é".to_owned(), 3));
    }

    #[test]
    fn invalid_utf8_and_nul_survive() {
        let mut out = BoundedOutput::new(64);
        out.push(b"a\0b\xffc");
        assert_eq!(out.render(), "a\0b\u{FFFD}c");
    }
}
