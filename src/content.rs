//! What a tool can show its MCP client beside a result document: content
//! blocks (text, an image, audio, an embedded resource) and the severity of
//! a log message, typed until the protocol layer writes them.

use serde_json::{Value, json};

/// One block of a `tools/call` result's `content`.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// Text for the model.
    Text(String),
    /// An image: base64 data and its MIME type (`image/png`).
    Image {
        /// The bytes, base64-encoded.
        data: String,
        /// Its MIME type.
        mime_type: String,
    },
    /// Audio: base64 data and its MIME type (`audio/wav`).
    Audio {
        /// The bytes, base64-encoded.
        data: String,
        /// Its MIME type.
        mime_type: String,
    },
    /// A resource embedded whole, by its URI.
    Resource {
        /// The resource's URI.
        uri: String,
        /// Its MIME type.
        mime_type: String,
        /// Its contents.
        body: ResourceBody,
    },
}

/// The contents of an embedded resource.
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceBody {
    /// Text.
    Text(String),
    /// Bytes, base64-encoded.
    Blob(String),
}

impl ContentBlock {
    /// The block as MCP writes it (`{"type": "image", "data", "mimeType"}`, ...).
    pub fn to_value(&self) -> Value {
        match self {
            ContentBlock::Text(text) => json!({"type": "text", "text": text}),
            ContentBlock::Image { data, mime_type } => json!({"type": "image", "data": data, "mimeType": mime_type}),
            ContentBlock::Audio { data, mime_type } => json!({"type": "audio", "data": data, "mimeType": mime_type}),
            ContentBlock::Resource { uri, mime_type, body } => {
                let mut resource = json!({"uri": uri, "mimeType": mime_type});
                match body {
                    ResourceBody::Text(text) => resource["text"] = text.clone().into(),
                    ResourceBody::Blob(blob) => resource["blob"] = blob.clone().into(),
                }
                json!({"type": "resource", "resource": resource})
            }
        }
    }

    /// The block for a reader of text only (the C API's envelope): text as
    /// it is, anything else as a line naming what it is.
    pub fn text(&self) -> String {
        match self {
            ContentBlock::Text(text) => text.clone(),
            ContentBlock::Image { data, mime_type } => format!("[image {mime_type}, {} base64 bytes]", data.len()),
            ContentBlock::Audio { data, mime_type } => format!("[audio {mime_type}, {} base64 bytes]", data.len()),
            ContentBlock::Resource { uri, body, .. } => match body {
                ResourceBody::Text(text) => format!("[resource {uri}]\n{text}"),
                ResourceBody::Blob(blob) => format!("[resource {uri}, {} base64 bytes]", blob.len()),
            },
        }
    }
}

/// The severity of a log message sent to the client
/// (`notifications/message`), as MCP names them (syslog's levels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// `debug`
    Debug,
    /// `info`
    Info,
    /// `notice`
    Notice,
    /// `warning`
    Warning,
    /// `error`
    Error,
    /// `critical`
    Critical,
    /// `alert`
    Alert,
    /// `emergency`
    Emergency,
}

/// Every level with its name, lowest first.
const LEVELS: [(LogLevel, &str); 8] = [
    (LogLevel::Debug, "debug"),
    (LogLevel::Info, "info"),
    (LogLevel::Notice, "notice"),
    (LogLevel::Warning, "warning"),
    (LogLevel::Error, "error"),
    (LogLevel::Critical, "critical"),
    (LogLevel::Alert, "alert"),
    (LogLevel::Emergency, "emergency"),
];

impl LogLevel {
    /// Its name on the wire (`warning`).
    pub fn as_str(self) -> &'static str {
        LEVELS.iter().find(|(l, _)| *l == self).map_or("info", |(_, name)| name)
    }

    /// The level of a name on the wire; `None` for any other string.
    pub fn parse(name: &str) -> Option<LogLevel> {
        LEVELS.iter().find(|(_, n)| *n == name).map(|(l, _)| *l)
    }

    /// Every name, lowest first (for error messages).
    pub fn names() -> impl Iterator<Item = &'static str> {
        LEVELS.iter().map(|(_, name)| *name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_written_as_mcp_has_them() {
        let image = ContentBlock::Image {
            data: "iVBO".into(),
            mime_type: "image/png".into(),
        };
        assert_eq!(
            image.to_value(),
            json!({"type": "image", "data": "iVBO", "mimeType": "image/png"})
        );
        let resource = ContentBlock::Resource {
            uri: "test://r".into(),
            mime_type: "text/plain".into(),
            body: ResourceBody::Text("hello".into()),
        };
        assert_eq!(
            resource.to_value(),
            json!({"type": "resource", "resource": {"uri": "test://r", "mimeType": "text/plain", "text": "hello"}})
        );
        assert_eq!(resource.text(), "[resource test://r]\nhello");
        assert_eq!(image.text(), "[image image/png, 4 base64 bytes]");
    }

    #[test]
    fn levels_round_trip_and_order() {
        for name in LogLevel::names() {
            assert_eq!(LogLevel::parse(name).unwrap().as_str(), name);
        }
        assert!(LogLevel::Debug < LogLevel::Info && LogLevel::Alert < LogLevel::Emergency);
        assert_eq!(LogLevel::parse("verbose"), None);
    }
}
