//! The attach protocol: frames of one kind byte, a 4-byte big-endian
//! length and the payload.
//!
//! The client sends [`LIST`] (the server answers [`SESSIONS`], JSON) or
//! [`ATTACH`] (JSON `{"session", "read_only"}`; the server answers
//! [`ATTACHED`], JSON `{"session_id", "name", "title"}`, or [`ERROR`]),
//! then [`INPUT`] (keystrokes) and [`RESIZE`] (rows, columns: two
//! big-endian u16). The server sends [`OUTPUT`] (bytes for the terminal:
//! a replay, then live output) and [`CLOSED`] when the session ends.

use std::io::{self, Read, Write};

pub const LIST: u8 = b'L';
pub const ATTACH: u8 = b'A';
pub const INPUT: u8 = b'I';
pub const RESIZE: u8 = b'R';
pub const SESSIONS: u8 = b'S';
pub const ATTACHED: u8 = b'H';
pub const OUTPUT: u8 = b'O';
pub const CLOSED: u8 = b'C';
pub const ERROR: u8 = b'E';

/// The largest frame either side accepts.
pub const MAX_FRAME: usize = 1 << 20;

/// Writes one frame.
pub fn write_frame(out: &mut impl Write, kind: u8, payload: &[u8]) -> io::Result<()> {
    let mut frame = Vec::with_capacity(payload.len() + 5);
    frame.push(kind);
    frame.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    frame.extend_from_slice(payload);
    out.write_all(&frame)
}

/// Reads one frame; `None` at a clean end of the stream.
pub fn read_frame(input: &mut impl Read) -> io::Result<Option<(u8, Vec<u8>)>> {
    let mut head = [0u8; 5];
    match input.read_exact(&mut head[..1]) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    input.read_exact(&mut head[1..])?;
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes is over the limit of {MAX_FRAME}"),
        ));
    }
    let mut payload = vec![0u8; len];
    input.read_exact(&mut payload)?;
    Ok(Some((head[0], payload)))
}

/// A [`RESIZE`] payload.
pub fn size_payload(rows: u16, cols: u16) -> [u8; 4] {
    let [r0, r1] = rows.to_be_bytes();
    let [c0, c1] = cols.to_be_bytes();
    [r0, r1, c0, c1]
}

/// Rows and columns from a [`RESIZE`] payload.
pub fn parse_size(payload: &[u8]) -> Option<(u16, u16)> {
    match payload {
        [r0, r1, c0, c1] => Some((u16::from_be_bytes([*r0, *r1]), u16::from_be_bytes([*c0, *c1]))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let mut buf = Vec::new();
        write_frame(&mut buf, INPUT, b"ls\r").unwrap();
        write_frame(&mut buf, RESIZE, &size_payload(40, 120)).unwrap();
        let mut input = buf.as_slice();
        assert_eq!(read_frame(&mut input).unwrap(), Some((INPUT, b"ls\r".to_vec())));
        let (kind, payload) = read_frame(&mut input).unwrap().unwrap();
        assert_eq!((kind, parse_size(&payload)), (RESIZE, Some((40, 120))));
        assert_eq!(read_frame(&mut input).unwrap(), None);
        let huge = [INPUT, 0xff, 0xff, 0xff, 0xff];
        assert!(read_frame(&mut huge.as_slice()).is_err());
    }
}
