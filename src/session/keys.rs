//! Named keys for `session_write`.

pub(super) const KEY_NAMES: &[&str] = &[
    "Enter",
    "Tab",
    "Escape",
    "Backspace",
    "Up",
    "Down",
    "Right",
    "Left",
    "Home",
    "End",
    "Space",
    "C-c",
    "C-d",
    "C-z",
];

pub(super) fn key_bytes(name: &str) -> Option<Vec<u8>> {
    let bytes: &[u8] = match name {
        "Enter" | "Return" => b"\r",
        "Tab" => b"\t",
        "Escape" | "Esc" => b"\x1b",
        "Backspace" => b"\x7f",
        "Up" => b"\x1b[A",
        "Down" => b"\x1b[B",
        "Right" => b"\x1b[C",
        "Left" => b"\x1b[D",
        "Home" => b"\x1b[H",
        "End" => b"\x1b[F",
        "Space" => b" ",
        _ => {
            let letter = name.strip_prefix("C-").or_else(|| name.strip_prefix("Ctrl-"))?;
            let mut chars = letter.chars();
            let c = chars.next()?.to_ascii_lowercase();
            if chars.next().is_some() || !c.is_ascii_lowercase() {
                return None;
            }
            return Some(vec![c as u8 - b'a' + 1]);
        }
    };
    Some(bytes.to_vec())
}
