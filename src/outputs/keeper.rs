//! Writing one stream into the store. A command's pipe gives its output in
//! pieces of a few KiB; each write to a file costs its locking, block
//! reservation and timestamp update again whatever its size, so the pieces
//! are gathered into batches and the file takes one write per batch. The
//! capture reads the pipe straight into the batch ([`Keeper::room`]), so
//! keeping adds no copy in memory: each byte is copied once more only into
//! the page cache.
//!
//! A stream longer than the budget writes its head as it comes, then keeps
//! only its last bytes, in memory: a window of batches in which the oldest
//! is reused for the newest. The window reaches the file when the stream
//! ends. A ring on disk instead would copy every byte into the page cache,
//! once per pass around the ring, to keep only the last pass; and a window
//! larger than the processor's cache slows the capture itself, which is why
//! the default window is small (`output_store.tail_bytes`).

use std::collections::VecDeque;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use super::{Entry, NewFile, OutputStore};
use crate::process::capture::{Keeper, Kept};

/// The bytes gathered for one write: the memory one kept stream adds.
const BATCH: usize = 256 * 1024;

/// The least room a read into the batch is given; a batch with less left
/// is closed first, so batches reach the file at 192 KiB or more.
const MIN_ROOM: usize = 64 * 1024;

/// One batch of a stream: bytes gathered for one write, or kept in the
/// tail window. The buffer is allocated whole, so a read can fill it in place.
struct Batch {
    buf: Vec<u8>,
    filled: usize,
    /// Where the bytes past the head begin (a batch can straddle the head's end).
    tail_from: usize,
}

impl Batch {
    fn new() -> Self {
        Self {
            buf: vec![0; BATCH],
            filled: 0,
            tail_from: 0,
        }
    }

    fn tail(&self) -> &[u8] {
        &self.buf[self.tail_from..self.filled]
    }
}

/// Writes one stream into the store; over the budget, its head and then its
/// last bytes.
pub(super) struct FileKeeper {
    store: Arc<OutputStore>,
    file: Option<NewFile>,
    /// The batch being filled, and the stream offset of its first byte.
    batch: Option<Batch>,
    batch_start: u64,
    /// Closed batches past the head, oldest first, holding at least the
    /// last `tail_cap` bytes before the open batch.
    tail: VecDeque<Batch>,
    tail_bytes: u64,
    problem: Option<String>,
    /// Bytes of the stream appended.
    total: u64,
    /// Bytes of the head (written in order as they come) and of the tail
    /// window after it.
    head_cap: u64,
    tail_cap: u64,
}

impl FileKeeper {
    pub(super) fn open(store: Arc<OutputStore>) -> Self {
        let budget = store.budget();
        let tail_cap = (budget / 2).min(store.tail_bytes());
        let head_cap = budget - tail_cap;
        let mut keeper = Self {
            store,
            file: None,
            batch: None,
            batch_start: 0,
            tail: VecDeque::new(),
            tail_bytes: 0,
            problem: None,
            total: 0,
            head_cap,
            tail_cap,
        };
        match keeper.store.new_file() {
            Ok(file) => keeper.file = Some(file),
            Err(e) => keeper.problem = Some(format!("the whole output could not be kept: {e}")),
        }
        keeper
    }

    /// The open batch, closing it first when it has less than `need` left.
    fn open_batch(&mut self, need: usize) -> io::Result<&mut Batch> {
        if self.batch.as_ref().is_some_and(|b| BATCH - b.filled < need) {
            self.close_batch()?;
        }
        Ok(self.batch.get_or_insert_with(Batch::new))
    }

    /// Writes the open batch's head bytes where they belong and moves its
    /// other bytes into the tail window, reusing the window's oldest batch
    /// once the rest still hold the window.
    fn close_batch(&mut self) -> io::Result<()> {
        let Some(mut batch) = self.batch.take() else {
            return Ok(());
        };
        let start = self.batch_start;
        self.batch_start += batch.filled as u64;
        let head_part = (self.head_cap.saturating_sub(start) as usize).min(batch.filled);
        if head_part > 0
            && let Some(new) = self.file.as_ref()
        {
            new.file.write_all_at(&batch.buf[..head_part], start)?;
        }
        if head_part == batch.filled {
            batch.filled = 0;
            self.batch = Some(batch);
            return Ok(());
        }
        batch.tail_from = head_part;
        self.tail_bytes += batch.tail().len() as u64;
        self.tail.push_back(batch);
        if let Some(oldest) = self.tail.front()
            && self.tail_bytes - oldest.tail().len() as u64 >= self.tail_cap
        {
            let mut oldest = self.tail.pop_front().expect("a batch");
            self.tail_bytes -= oldest.tail().len() as u64;
            oldest.filled = 0;
            oldest.tail_from = 0;
            self.batch = Some(oldest);
        }
        Ok(())
    }

    fn gather(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            let batch = self.open_batch(1)?;
            let take = data.len().min(BATCH - batch.filled);
            batch.buf[batch.filled..batch.filled + take].copy_from_slice(&data[..take]);
            batch.filled += take;
            self.total += take as u64;
            data = &data[take..];
        }
        Ok(())
    }

    /// Writes what is still in memory: the open batch's head bytes, then the
    /// last `tail_cap` bytes past the head, in order. Returns the file's length.
    fn write_end(&mut self) -> io::Result<u64> {
        self.close_batch()?;
        let window = self.total.saturating_sub(self.head_cap).min(self.tail_cap);
        let mut skip = self.tail_bytes - window;
        let mut at = self.head_cap.min(self.total);
        if let Some(NewFile { file, .. }) = self.file.as_ref() {
            for batch in &self.tail {
                let bytes = batch.tail();
                let from = (skip as usize).min(bytes.len());
                skip -= from as u64;
                file.write_all_at(&bytes[from..], at)?;
                at += (bytes.len() - from) as u64;
            }
            // A reused file may be longer than this output.
            file.set_len(at)?;
        }
        Ok(at)
    }

    /// Gives up keeping after a write error: the file goes, and with it any
    /// claim that the output was kept; the result says why.
    fn fail(&mut self, e: &io::Error) {
        self.problem = Some(format!("the whole output could not be kept: {e}"));
        self.batch = None;
        self.tail.clear();
        if let Some(new) = self.file.take() {
            self.store.remove_file(&new.id);
        }
    }
}

impl Keeper for FileKeeper {
    fn append(&mut self, data: &[u8]) {
        if self.file.is_some()
            && let Err(e) = self.gather(data)
        {
            self.fail(&e);
        }
    }

    fn room(&mut self) -> Option<&mut [u8]> {
        self.file.as_ref()?;
        if let Err(e) = self.open_batch(MIN_ROOM) {
            self.fail(&e);
            return None;
        }
        let batch = self.batch.as_mut().expect("opened");
        Some(&mut batch.buf[batch.filled..])
    }

    fn commit(&mut self, n: usize) -> &[u8] {
        let batch = self.batch.as_mut().expect("room() opened a batch");
        let from = batch.filled;
        batch.filled += n;
        self.total += n as u64;
        &batch.buf[from..batch.filled]
    }

    fn finish(mut self: Box<Self>) -> Kept {
        let file_len = match self.write_end() {
            Ok(len) => len,
            Err(e) => {
                self.fail(&e);
                0
            }
        };
        let Some(NewFile { id, identity, .. }) = self.file.take() else {
            return Kept {
                output_id: None,
                problem: self.problem.take(),
            };
        };
        let entry = Entry {
            id: id.clone(),
            identity,
            total: self.total,
            head: self.head_cap.min(self.total),
            tail: self.tail_cap,
            file_len,
        };
        let problem = entry
            .cut()
            .map(|(from, to)| format!("bytes {from} to {to} were over the store's budget and are not kept"));
        self.store.add(entry);
        Kept {
            output_id: Some(id),
            problem,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;

    #[test]
    fn a_write_error_at_the_last_batch_keeps_nothing_and_says_why() {
        let store = OutputStore::new(1 << 20, 8);
        let mut keeper = FileKeeper::open(store.clone());
        keeper.append(b"gathered, not yet written");
        let path = file_path(&store, &keeper);
        // Read only from here on: the write is refused, as a full disk would.
        keeper.file.as_mut().expect("a file").file = File::open(&path).unwrap();
        let kept = Box::new(keeper).finish();
        assert_eq!(kept.output_id, None, "no id for bytes that were not written");
        let problem = kept.problem.unwrap();
        assert!(problem.contains("could not be kept"), "{problem}");
        assert!(!path.exists(), "the partial file was removed");
        assert!(store.ids().is_empty());
    }

    /// Where the keeper's file is.
    fn file_path(store: &OutputStore, keeper: &FileKeeper) -> std::path::PathBuf {
        store.path().unwrap().join(&keeper.file.as_ref().expect("a file").id)
    }

    /// Feeds `text` in pieces, alternating reads in place and copies.
    fn feed(keeper: &mut FileKeeper, text: &[u8]) {
        let mut sizes = [4096, 1, BATCH, 70_000, BATCH - 1, 333].iter().cycle();
        let mut rest = text;
        let mut in_place = false;
        while !rest.is_empty() {
            let take = rest.len().min(*sizes.next().unwrap());
            in_place = !in_place;
            match keeper.room().filter(|_| in_place) {
                Some(room) => {
                    let n = take.min(room.len());
                    room[..n].copy_from_slice(&rest[..n]);
                    assert_eq!(keeper.commit(n), &rest[..n], "commit returns the bytes read");
                    rest = &rest[n..];
                }
                None => {
                    keeper.append(&rest[..take]);
                    rest = &rest[take..];
                }
            }
        }
    }

    #[test]
    fn a_stream_over_the_budget_keeps_its_head_and_its_last_tail_bytes() {
        let budget = 10 * BATCH as u64 + 12_345;
        let store = OutputStore::new(budget, 8);
        store.set_tail_bytes(3 * BATCH as u64 + 17);
        let text: Vec<u8> = (0..40 * BATCH as u32 + 999).map(|i| (i % 253) as u8).collect();
        let mut keeper = FileKeeper::open(store.clone());
        feed(&mut keeper, &text);
        assert!(
            keeper.tail.len() <= 3 + 2,
            "the window holds the tail bytes in batches and no more: {}",
            keeper.tail.len()
        );
        let path = file_path(&store, &keeper);
        let kept = Box::new(keeper).finish();
        let tail = 3 * BATCH + 17;
        let head = budget as usize - tail;
        let cut = kept.problem.expect("a cut");
        assert!(cut.contains(&format!("bytes {head} to {}", text.len() - tail)), "{cut}");
        let file = std::fs::read(path).unwrap();
        assert_eq!(file.len(), budget as usize, "head and tail fill the budget");
        assert!(file[..head] == text[..head], "the head is the stream's first bytes");
        assert!(
            file[head..] == text[text.len() - tail..],
            "the tail is the stream's last bytes"
        );
    }

    #[test]
    fn a_stream_that_ends_inside_the_tail_window_is_kept_whole() {
        let store = OutputStore::new(4 * BATCH as u64, 8);
        store.set_tail_bytes(2 * BATCH as u64);
        let text: Vec<u8> = (0..3 * BATCH as u32 + 5).map(|i| (i % 241) as u8).collect();
        let mut keeper = FileKeeper::open(store.clone());
        feed(&mut keeper, &text);
        let path = file_path(&store, &keeper);
        let kept = Box::new(keeper).finish();
        assert_eq!(kept.problem, None, "nothing was cut");
        assert!(std::fs::read(path).unwrap() == text);
    }

    #[test]
    fn appended_pieces_reach_the_file_in_order_across_batches() {
        let store = OutputStore::new(4 * BATCH as u64, 8);
        let text: Vec<u8> = (0..3 * BATCH as u32 + 123).map(|i| (i % 251) as u8).collect();
        let mut keeper = FileKeeper::open(store.clone());
        let mut sizes = [4096, 1, BATCH, 70_000, BATCH - 1].iter().cycle();
        let mut rest = &text[..];
        while !rest.is_empty() {
            let take = rest.len().min(*sizes.next().unwrap());
            keeper.append(&rest[..take]);
            rest = &rest[take..];
            assert!(
                keeper.batch.as_ref().is_none_or(|b| b.filled <= BATCH),
                "a batch stays bounded"
            );
        }
        let path = file_path(&store, &keeper);
        let kept = Box::new(keeper).finish();
        assert!(kept.output_id.is_some(), "{kept:?}");
        assert_eq!(std::fs::read(path).unwrap(), text);
    }
}
