//! The audit log: one JSON object per line for every tool call, rotated by
//! size, with secrets redacted.
//!
//! One mutex serializes this process's writers; a lock file (`<path>.lock`,
//! `flock`) orders them with other processes writing the same path, so lines
//! never interleave and a rotation loses none. Write errors are logged
//! through `tracing` and never fail the call being recorded.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use regex::Regex;
use serde_json::{Map, Value};

use crate::error::{ErrorCode, ToolError};

/// Default size at which the live file is rotated: 25 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 25 * 1024 * 1024;
/// Default number of rotated files kept.
pub const DEFAULT_BACKUPS: usize = 5;

/// Patterns masked in recorded commands unless configured otherwise.
///
/// How a match is masked: every capture group whose name starts with
/// `secret` (`secret`, `secret_dq`, …) is replaced by `[REDACTED]` and the
/// rest of the match is kept; a pattern without such groups keeps its first
/// capture group, when present (the name of the secret, not its value), and
/// masks the rest of the match.
///
/// Covered, besides well-known token formats and PEM private keys:
/// `NAME=value` / `NAME: value` / `"name": "value"` for names containing
/// password, passwd, passphrase, secret, token, api key, access key, private
/// key, credential, or ending in `_pass` / `_pwd` (quoted values whole,
/// spaces included); flags such as `--password x`, `--token="x"`,
/// `--oauth2-bearer x`; `-p` values of mysql, mariadb and sshpass and of
/// `docker login` (only a value attached to `-p` or following it: a bare
/// `-p` prompts); `redis-cli -a x`; `curl -u user:x`; `Authorization:` and
/// `Cookie:` headers; passwords in URLs (`https://bob:[REDACTED]@host`, up to
/// the last `@` before the host).
pub const DEFAULT_REDACTIONS: &[&str] = &[
    // NAME=value, NAME: value (unquoted value; the name may follow a quote, as in -e "TOKEN=x").
    r#"(?i)(?:^|[^\w.\\-])[\w.-]*(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential|sshpass|_pass\b|_pwd\b)[\w.-]*\s*[=:]\s*(?P<secret>[^\s'"`;&|<>()\\]+)"#,
    // NAME="value", NAME='value' (the name not inside quotes: `grep "TOKEN=" f` stays readable).
    r#"(?i)(?:^|[^\w.'"\\-])[\w.-]*(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential|sshpass|_pass\b|_pwd\b)[\w.-]*\s*[=:]\s*(?:"(?P<secret_dq>[^"]*)"?|'(?P<secret_sq>[^']*)'?)"#,
    // 'NAME = "value"' and "NAME='value'": the name opens a quoted text, the value uses the other quote.
    r#"(?i)(?:'[\w.-]*(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential|sshpass|_pass\b|_pwd\b)[\w.-]*\s*[=:]\s*"(?P<secret_dq>[^"]*)"?|"[\w.-]*(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential|sshpass|_pass\b|_pwd\b)[\w.-]*\s*[=:]\s*'(?P<secret_sq>[^']*)'?)"#,
    // "name": "value" and 'name': 'value' (JSON, Python, YAML), also with escaped quotes.
    r#"(?i)(?:\\?"|')[\w.-]*(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential|_pass|_pwd)[\w.-]*(?:\\?"|')\s*[=:]\s*(?:\\"(?P<secret_edq>(?:[^"\\]|\\[^"])*)(?:\\")?|"(?P<secret_dq>[^"]*)"?|'(?P<secret_sq>[^']*)'?|(?P<secret>[^\s'"`;&|<>(),}\]\\]+))"#,
    // --password x, --token="x", --oauth2-bearer x, -passin pass:x (not --no-password, --password-stdin).
    r#"(?i)(?:^|[\s'"])--?(?:(?:[a-mo-z0-9_]\w*|n[a-np-z0-9_]\w*|no\w+|n)-)*(?:password|passwd|passphrase|pass|passin|passout|secret|token|api-?key|access-?key|private-?key|secret-?(?:access-?)?key|bearer|credentials?)(?:=(?:"(?P<secret_dq>[^"]*)"?|'(?P<secret_sq>[^']*)'?|(?P<secret>[^\s'"`;&|<>()]+))|\s+(?:"(?P<secret_sdq>[^"]*)"?|'(?P<secret_ssq>[^']*)'?|(?P<secret_s>[^\s'"`;&|<>()-][^\s'"`;&|<>()]*)))"#,
    // mysql -pSEKRIT, mysql -p SEKRIT, sshpass -p x, docker login -p x (a bare -p prompts and stays).
    r#"(?:\b(?:mysql|mariadb|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mysqlpump|sshpass)|\b(?:docker|podman|nerdctl|buildah|skopeo)\s[^\n;&|]*?\blogin)\b[^\n;&|]*?\s-p(?:"(?P<secret_dq>[^"]*)"?|'(?P<secret_sq>[^']*)'?|(?P<secret>[^\s'"`;&|<>()]+)|\s+(?:"(?P<secret_sdq>[^"]*)"?|'(?P<secret_ssq>[^']*)'?|(?P<secret_s>[^\s'"`;&|<>()-][^\s'"`;&|<>()]*)))"#,
    // redis-cli -a x
    r#"\bredis-cli\b[^\n;&|]*?\s-a\s+(?:"(?P<secret_dq>[^"]*)"?|'(?P<secret_sq>[^']*)'?|(?P<secret>[^\s'"`;&|<>()-][^\s'"`;&|<>()]*))"#,
    // curl -u user:x, --user=user:x, --proxy-user user:x (a user without ':' prompts and stays).
    r#"\bcurl\b[^\n;&|]*?\s(?:-u|-U|--user|--proxy-user)(?:\s+|=)?(?:"[^":]*:(?P<secret_dq>[^"]*)"?|'[^':]*:(?P<secret_sq>[^']*)'?|[^\s'":-][^\s'":]*:(?P<secret>[^\s'"`;&|<>()]+))"#,
    // Authorization: Bearer x, Proxy-Authorization: Basic x
    r#"(?i)\b(?:proxy-)?authorization\s*:\s*(?:(?:bearer|basic|token|digest|negotiate)\s+)?(?P<secret>[^\s'"\\]+)"#,
    // Cookie: a=b; c=d
    r#"(?i)\b(?:set-)?cookie\s*:\s*(?P<secret>[^'"\n\\]+)"#,
    // scheme://user:password@host: the password runs to the last '@' before the host.
    r"://[^/\s:@]*:(?P<secret>[^\s/]*)@",
    r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}",
    r"\bgithub_pat_[A-Za-z0-9_]{20,}",
    r"\bsk-[A-Za-z0-9_-]{16,}",
    r"\bAKIA[0-9A-Z]{16}\b",
    r"\bxox[abeprs]-[A-Za-z0-9-]{10,}",
    r"\bglpat-[A-Za-z0-9_-]{20,}",
    r"\bnpm_[A-Za-z0-9]{36}\b",
    r"\bAIza[0-9A-Za-z_-]{35}\b",
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+",
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
];

const MASK: &str = "[REDACTED]";
/// Secrets at least this long are also masked where they appear verbatim in
/// text quoting the command (see [`AuditLog::redact_related`]).
const MIN_VERBATIM_SECRET: usize = 4;

/// Audit settings (configuration key `audit`).
#[derive(Debug, Clone, PartialEq)]
pub struct AuditSettings {
    /// The live file; backups are `<path>.1` … `<path>.N` (`.gz` when compressed).
    pub path: PathBuf,
    /// Rotate when the live file reaches this size.
    pub max_bytes: u64,
    /// Rotated files kept (0: the live file is simply restarted).
    pub backups: usize,
    /// Compress rotated files of at least this size (`None`: never).
    pub gzip_min_bytes: Option<u64>,
    /// Regular expressions masked in recorded commands and in text quoting
    /// them (see [`DEFAULT_REDACTIONS`] for how a match is masked).
    pub redact: Vec<String>,
    /// Whether `audit_read` returns every entry of the file, also those other
    /// servers wrote (`audit.read_all`); by default each server reads back
    /// only its own.
    pub read_all: bool,
}

impl AuditSettings {
    /// Settings for `path` with every other value at its default.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            max_bytes: DEFAULT_MAX_BYTES,
            backups: DEFAULT_BACKUPS,
            gzip_min_bytes: None,
            redact: DEFAULT_REDACTIONS.iter().map(|s| (*s).to_owned()).collect(),
            read_all: false,
        }
    }
}

/// An open audit log.
#[derive(Debug)]
pub struct AuditLog {
    settings: AuditSettings,
    redactors: Vec<Regex>,
    writer: Mutex<Writer>,
}

#[derive(Debug)]
struct Writer {
    /// The live file as this process opened it (`O_APPEND`).
    file: Option<File>,
    /// `<path>.lock`, locked shared around each write and exclusively around
    /// a rotation, so that several processes can share one log; `None` when
    /// it cannot be created (then only this process's writers are ordered).
    lock: Option<File>,
}

/// What `audit_read` selects.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditQuery {
    /// 0 (default) for the live file, N for backup N.
    pub backup_index: usize,
    /// Newest entries returned, at most (default 100).
    pub max_entries: Option<usize>,
    /// Only entries of this tool.
    pub tool: Option<String>,
    /// Only entries stamped at or after this instant: an RFC 3339 time with
    /// any fraction and `Z` or a `±hh:mm` offset (`2026-11-30T09:33:42.5+01:00`),
    /// or a date (`2026-11-30`, midnight UTC). Anything else is an
    /// `invalid_arguments` error.
    pub since: Option<String>,
    /// Only entries written by this server instance (their `instance` field).
    pub instance: Option<String>,
}

impl AuditLog {
    /// Opens (creating folders and the file) for appending; an unwritable
    /// path or an invalid redaction pattern is an `invalid_config` error.
    pub fn open(settings: AuditSettings) -> Result<Self, ToolError> {
        let redactors = settings
            .redact
            .iter()
            .map(|p| {
                Regex::new(p).map_err(|e| {
                    ToolError::new(
                        ErrorCode::InvalidConfig,
                        format!("`audit.redact` pattern {p:?} is not a valid regular expression: {e}"),
                        "fix or remove the pattern",
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let file = open_append(&settings.path).map_err(|e| {
            ToolError::new(
                ErrorCode::InvalidConfig,
                format!(
                    "`audit.path` {} cannot be opened for writing: {e}",
                    settings.path.display()
                ),
                "choose a writable location, or set `audit` to null to turn the audit log off",
            )
        })?;
        let lock = match OpenOptions::new()
            .create(true)
            .append(true)
            .open(lock_path(&settings.path))
        {
            Ok(lock) => Some(lock),
            Err(e) => {
                tracing::warn!(
                    path = %settings.path.display(), error = %e,
                    "audit lock file cannot be created; only this process's writes are ordered across rotations"
                );
                None
            }
        };
        Ok(Self {
            settings,
            redactors,
            writer: Mutex::new(Writer { file: Some(file), lock }),
        })
    }

    /// The settings in force.
    pub fn settings(&self) -> &AuditSettings {
        &self.settings
    }

    /// Masks every configured secret pattern in `text`.
    pub fn redact(&self, text: &str) -> String {
        self.redact_collecting(text).0
    }

    /// Masks secrets in free text that may quote `command` (a refusal reason,
    /// an error message): the configured patterns, and also every secret those
    /// patterns found in `command` wherever it appears verbatim, so that a
    /// reworded or unquoted copy of the command leaks nothing either.
    pub fn redact_related(&self, text: &str, command: Option<&str>) -> String {
        // Verbatim copies first: the patterns could mask a part of one and
        // hide the rest from this pass.
        let mut out = text.to_owned();
        if let Some(command) = command {
            let (_, mut secrets) = self.redact_collecting(command);
            // Longest first, so that a secret containing another is masked whole.
            secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
            for secret in secrets {
                // Very short values ("1", "x") would mask ordinary words.
                if secret.chars().count() >= MIN_VERBATIM_SECRET && out.contains(secret.as_str()) {
                    out = out.replace(secret.as_str(), MASK);
                }
            }
        }
        self.redact(&out)
    }

    /// `text` with the configured patterns masked, and the masked values.
    fn redact_collecting(&self, text: &str) -> (String, Vec<String>) {
        let mut out = text.to_owned();
        let mut secrets = Vec::new();
        for re in &self.redactors {
            if !re.is_match(&out) {
                continue;
            }
            let secret_groups: Vec<usize> = re
                .capture_names()
                .enumerate()
                .filter(|(_, name)| name.is_some_and(|n| n.starts_with("secret")))
                .map(|(i, _)| i)
                .collect();
            let keep_first = re.captures_len() > 1;
            out = re
                .replace_all(&out, |caps: &regex::Captures<'_>| {
                    let whole = caps.get(0).expect("group 0 always matches");
                    if secret_groups.is_empty() {
                        let kept = caps.get(1).filter(|_| keep_first).map_or("", |g| g.as_str());
                        let secret = &whole.as_str()[kept.len().min(whole.len())..];
                        if secret != MASK {
                            secrets.push(secret.to_owned());
                        }
                        return format!("{kept}{MASK}");
                    }
                    // Mask the secret groups that took part, keep the rest.
                    let mut spans: Vec<(usize, usize)> = secret_groups
                        .iter()
                        .filter_map(|&i| caps.get(i))
                        .map(|g| (g.start(), g.end()))
                        .collect();
                    spans.sort_unstable();
                    let mut masked = String::with_capacity(whole.len());
                    let mut at = whole.start();
                    for (start, end) in spans {
                        if start < at {
                            continue;
                        }
                        masked.push_str(&out[at..start]);
                        let secret = &out[start..end];
                        if secret != MASK {
                            secrets.push(secret.to_owned());
                        }
                        masked.push_str(MASK);
                        at = end;
                    }
                    masked.push_str(&out[at..whole.end()]);
                    masked
                })
                .into_owned();
        }
        (out, secrets)
    }

    /// Appends one record (adding `timestamp` if missing). Never fails: a disk
    /// error is logged and the call goes on.
    ///
    /// Safe with other processes writing the same path: each line is one
    /// `write` to a file opened with `O_APPEND` while holding a shared lock on
    /// `<path>.lock`; a file that another process rotated away is noticed
    /// (its device and inode no longer match the path) and reopened; and a
    /// rotation holds the lock exclusively and re-checks the size first.
    pub fn record(&self, mut entry: Map<String, Value>) {
        entry.entry("timestamp").or_insert_with(|| Value::from(rfc3339_now()));
        let mut line = Value::Object(entry).to_string();
        line.push('\n');
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let writer = &mut *writer;
        let size = {
            let _shared = Flock::new(writer.lock.as_ref(), libc::LOCK_SH);
            self.reopen_if_moved(&mut writer.file);
            let Some(file) = writer.file.as_mut() else {
                tracing::error!(path = %self.settings.path.display(), "audit log unavailable; record dropped");
                return;
            };
            if let Err(e) = file.write_all(line.as_bytes()) {
                tracing::error!(path = %self.settings.path.display(), error = %e, "audit log write failed");
                return;
            }
            file.metadata().map(|m| m.len()).unwrap_or(0)
        };
        if size >= self.settings.max_bytes {
            let _exclusive = Flock::new(writer.lock.as_ref(), libc::LOCK_EX);
            // Another process may have rotated while this one waited.
            let live = std::fs::metadata(&self.settings.path).ok();
            let still_ours = match (&live, writer.file.as_ref().and_then(|f| f.metadata().ok())) {
                (Some(live), Some(open)) => same_file(live, &open),
                _ => false,
            };
            if still_ours && live.is_some_and(|m| m.len() >= self.settings.max_bytes) {
                writer.file = None;
                self.rotate();
            }
            self.reopen_if_moved(&mut writer.file);
        }
    }

    /// Reopens the live file when `file` is missing or no longer what the
    /// path names (another process rotated it away).
    fn reopen_if_moved(&self, file: &mut Option<File>) {
        let path = &self.settings.path;
        if let Some(open) = file.as_ref() {
            let current = match (std::fs::metadata(path), open.metadata()) {
                (Ok(live), Ok(open)) => same_file(&live, &open),
                _ => false,
            };
            if current {
                return;
            }
        }
        *file = match open_append(path) {
            Ok(reopened) => Some(reopened),
            Err(e) => {
                tracing::error!(path = %path.display(), error = %e, "audit log cannot be reopened");
                None
            }
        };
    }

    /// Path of backup `index` (1-based), compressed or not, if it exists.
    pub fn backup_path(&self, index: usize) -> Option<PathBuf> {
        [
            numbered(&self.settings.path, index, true),
            numbered(&self.settings.path, index, false),
        ]
        .into_iter()
        .find(|p| p.exists())
    }

    /// Size of the live file in bytes (written by any process).
    pub fn size(&self) -> u64 {
        std::fs::metadata(&self.settings.path).map(|m| m.len()).unwrap_or(0)
    }

    /// Shifts the backups and moves the live file to backup 1 (under the
    /// exclusive lock; the caller reopens).
    fn rotate(&self) {
        let path = &self.settings.path;
        let result = (|| -> std::io::Result<()> {
            let n = self.settings.backups;
            if n == 0 {
                std::fs::remove_file(path)?;
                return Ok(());
            }
            for gz in [false, true] {
                remove_if_exists(&numbered(path, n, gz))?;
            }
            for i in (1..n).rev() {
                for gz in [false, true] {
                    let from = numbered(path, i, gz);
                    if from.exists() {
                        std::fs::rename(&from, numbered(path, i + 1, gz))?;
                    }
                }
            }
            let first = numbered(path, 1, false);
            std::fs::rename(path, &first)?;
            if let Some(min) = self.settings.gzip_min_bytes
                && std::fs::metadata(&first).map(|m| m.len() >= min).unwrap_or(false)
            {
                gzip_file(&first, &numbered(path, 1, true))?;
                std::fs::remove_file(&first)?;
            }
            Ok(())
        })();
        if let Err(e) = result {
            tracing::error!(path = %path.display(), error = %e, "audit log rotation failed");
        }
    }

    /// Reads entries, newest first, from the live file or a backup (plain or gzip).
    pub fn read(&self, query: &AuditQuery) -> Result<Vec<Value>, ToolError> {
        let since = match &query.since {
            None => None,
            Some(text) => Some(parse_instant(text).ok_or_else(|| {
                ToolError::new(
                    ErrorCode::InvalidArguments,
                    format!("`since` {text:?} is not an RFC 3339 time or a date"),
                    "pass a time such as \"2026-11-30T08:33:42Z\" (any fraction; Z or an offset such as +01:00) or a date such as \"2026-11-30\" (midnight UTC)",
                )
            })?),
        };
        let path = if query.backup_index == 0 {
            self.settings.path.clone()
        } else {
            self.backup_path(query.backup_index).ok_or_else(|| {
                ToolError::new(
                    ErrorCode::InvalidArguments,
                    format!("audit backup {} does not exist", query.backup_index),
                    format!(
                        "backups are numbered 1 to {} (1 is the most recent)",
                        self.settings.backups
                    ),
                )
            })?
        };
        let file = File::open(&path).map_err(|e| {
            ToolError::new(
                ErrorCode::Internal,
                format!("audit file {} cannot be read: {e}", path.display()),
                "check the file's permissions",
            )
        })?;
        let reader: Box<dyn Read> = if path.extension().is_some_and(|e| e == "gz") {
            Box::new(flate2::read::GzDecoder::new(file))
        } else {
            Box::new(file)
        };
        let max = query.max_entries.unwrap_or(100);
        let mut entries: Vec<Value> = Vec::new();
        for line in BufReader::new(reader).lines() {
            let line = line.map_err(|e| {
                ToolError::new(
                    ErrorCode::Internal,
                    format!("audit file {} is unreadable: {e}", path.display()),
                    "the file may be corrupt; read another backup",
                )
            })?;
            let Ok(entry) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if query.tool.as_deref().is_some_and(|t| entry["tool"] != t) {
                continue;
            }
            if query.instance.as_deref().is_some_and(|i| entry["instance"] != i) {
                continue;
            }
            if let Some(since) = since
                && entry["timestamp"]
                    .as_str()
                    .and_then(parse_instant)
                    .is_none_or(|at| at < since)
            {
                continue;
            }
            entries.push(entry);
        }
        entries.reverse();
        entries.truncate(max);
        Ok(entries)
    }
}

fn open_append(path: &Path) -> std::io::Result<File> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    OpenOptions::new().create(true).append(true).open(path)
}

/// `<path>.lock`: the file whose `flock` orders writers and rotations of
/// `path` across processes.
fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Whether two metadata describe the same file (device and inode).
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// An `flock` held until dropped; nothing when there is no lock file or the
/// lock cannot be taken (logged: the write goes on unordered rather than lost).
struct Flock<'a>(Option<&'a File>);

impl<'a> Flock<'a> {
    fn new(file: Option<&'a File>, operation: libc::c_int) -> Self {
        use std::os::fd::AsRawFd;
        let Some(file) = file else { return Self(None) };
        loop {
            // SAFETY: `file` is an open descriptor for the duration of the call.
            if unsafe { libc::flock(file.as_raw_fd(), operation) } == 0 {
                return Self(Some(file));
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                tracing::error!(error = %e, "audit lock failed");
                return Self(None);
            }
        }
    }
}

impl Drop for Flock<'_> {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        if let Some(file) = self.0 {
            // SAFETY: as above; unlocking a descriptor this process locked.
            unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
        }
    }
}

fn numbered(path: &Path, index: usize, gz: bool) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{index}"));
    if gz {
        name.push(".gz");
    }
    PathBuf::from(name)
}

fn remove_if_exists(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn gzip_file(from: &Path, to: &Path) -> std::io::Result<()> {
    let mut input = File::open(from)?;
    let output = File::create(to)?;
    let mut encoder = flate2::write::GzEncoder::new(output, flate2::Compression::default());
    std::io::copy(&mut input, &mut encoder)?;
    encoder.finish()?.sync_all()
}

/// The current time as RFC 3339 UTC with milliseconds: `2026-11-29T18:45:03.123Z`.
pub fn rfc3339_now() -> String {
    rfc3339(SystemTime::now())
}

/// Formats a time as RFC 3339 UTC with milliseconds.
pub fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// An instant as (seconds since 1970-01-01 UTC, nanoseconds), from an RFC 3339
/// time (`2026-11-30T08:33:42Z`, any fraction, `Z` or `±hh:mm`; `T`, `t` or a
/// space between date and time) or a date (`2026-11-30`, midnight UTC).
pub fn parse_instant(text: &str) -> Option<(i64, u32)> {
    fn number(text: &str, digits: usize) -> Option<i64> {
        (text.len() == digits && text.bytes().all(|b| b.is_ascii_digit()))
            .then(|| text.parse().ok())
            .flatten()
    }
    let text = text.trim();
    let date = text.get(..10)?;
    let (year, month, day) = (
        number(date.get(..4)?, 4)?,
        number(date.get(5..7)?, 2)?,
        number(date.get(8..10)?, 2)?,
    );
    if date.as_bytes()[4] != b'-' || date.as_bytes()[7] != b'-' {
        return None;
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let days = days_from_civil(year, month as u32, day as u32);
    // A day past the month's end (Feb 30) lands in the next month.
    if civil_from_days(days) != (year, month as u32, day as u32) {
        return None;
    }
    let rest = &text[10..];
    if rest.is_empty() {
        return Some((days * 86_400, 0));
    }
    let rest = rest.strip_prefix(['T', 't', ' '])?;
    let (hour, minute, second) = (
        number(rest.get(..2)?, 2)?,
        number(rest.get(3..5)?, 2)?,
        number(rest.get(6..8)?, 2)?,
    );
    if rest.as_bytes()[2] != b':' || rest.as_bytes()[5] != b':' || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &rest[8..];
    let mut nanos = 0u32;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        for (i, b) in fraction.bytes().take(digits.min(9)).enumerate() {
            nanos += u32::from(b - b'0') * 10u32.pow(8 - i as u32);
        }
        rest = &fraction[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (oh, om) = (number(rest.get(1..3)?, 2)?, number(rest.get(4..6)?, 2)?);
            if rest.len() != 6 || rest.as_bytes()[3] != b':' || oh > 23 || om > 59 {
                return None;
            }
            sign * (oh * 3600 + om * 60)
        }
    };
    Some((days * 86_400 + hour * 3600 + minute * 60 + second - offset, nanos))
}

/// (year, month, day), proleptic Gregorian, to days since 1970-01-01.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from((month + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::random_id;
    use std::time::Duration;

    #[test]
    fn timestamps_are_rfc3339_utc_with_millis() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_795_977_903_123);
        assert_eq!(rfc3339(t), "2026-11-29T18:45:03.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn default_redactions_mask_common_secrets() {
        let dir = std::env::temp_dir().join(format!("bash-mcp-redact-{}", random_id()));
        let log = AuditLog::open(AuditSettings::new(dir.join("a.jsonl"))).unwrap();
        for (input, secret) in [
            ("curl -H 'Authorization: Bearer abc.def.ghi' x", "abc.def.ghi"),
            (
                "export GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ",
                "ghp_0123456789",
            ),
            ("mysql --password=hunter2 db", "hunter2"),
            ("git clone https://bob:s3cr3t@example.com/r.git", "s3cr3t"),
            ("API_KEY=sk-abcdefghijklmnop1234 run", "sk-abcdefghijklmnop1234"),
            (
                "aws configure set aws_access_key_id AKIAABCDEFGHIJKLMNOP",
                "AKIAABCDEFGHIJKLMNOP",
            ),
            ("DB_PASSWORD: pa55 ./x", "pa55"),
        ] {
            let out = log.redact(input);
            assert!(!out.contains(secret), "{input} -> {out}");
            assert!(out.contains(MASK), "{input} -> {out}");
        }
        assert_eq!(log.redact("ls -la /tmp"), "ls -la /tmp");
        assert_eq!(log.redact("export GITHUB_TOKEN=x"), "export GITHUB_TOKEN=[REDACTED]");
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn default_log() -> (AuditLog, PathBuf) {
        let dir = std::env::temp_dir().join(format!("bash-mcp-redact-{}", random_id()));
        (AuditLog::open(AuditSettings::new(dir.join("a.jsonl"))).unwrap(), dir)
    }

    #[test]
    fn default_redactions_mask_quoted_and_tool_specific_secrets() {
        let (log, dir) = default_log();
        for (input, expected) in [
            ("mysql -uroot -pSEKRIT db", "mysql -uroot -p[REDACTED] db"),
            ("mysql -u root -p SEKRIT", "mysql -u root -p [REDACTED]"),
            ("mysqldump -h db -p'se cret' x", "mysqldump -h db -p'[REDACTED]' x"),
            (
                "mariadb --user=a --password=SEKRIT",
                "mariadb --user=a --password=[REDACTED]",
            ),
            ("sshpass -p SEKRIT ssh host", "sshpass -p [REDACTED] ssh host"),
            ("sshpass -pSEKRIT ssh host", "sshpass -p[REDACTED] ssh host"),
            (
                "docker login -u bob -p SEKRIT ghcr.io",
                "docker login -u bob -p [REDACTED] ghcr.io",
            ),
            ("redis-cli -h r -a SEKRIT ping", "redis-cli -h r -a [REDACTED] ping"),
            (
                "AWS_SECRET_ACCESS_KEY=\"x y z\" aws s3 ls",
                "AWS_SECRET_ACCESS_KEY=\"[REDACTED]\" aws s3 ls",
            ),
            ("export TOKEN='a b c'", "export TOKEN='[REDACTED]'"),
            ("export GITHUB_TOKEN=abc123", "export GITHUB_TOKEN=[REDACTED]"),
            ("tool --token=\"two words\" run", "tool --token=\"[REDACTED]\" run"),
            ("tool --token 'two words' run", "tool --token '[REDACTED]' run"),
            ("tool --api-key=abc run", "tool --api-key=[REDACTED] run"),
            (
                "printf 'password = \"hunter 2\"\\n' > cfg",
                "printf 'password = \"[REDACTED]\"\\n' > cfg",
            ),
            (
                "curl -d '{\"password\": \"hun ter2\", \"user\": \"bob\"}' x",
                "curl -d '{\"password\": \"[REDACTED]\", \"user\": \"bob\"}' x",
            ),
            (
                "curl -d \"{\\\"api_key\\\": \\\"k e y\\\"}\" x",
                "curl -d \"{\\\"api_key\\\": \\\"[REDACTED]\\\"}\" x",
            ),
            (
                "python -c \"cfg = {'token': 'abc'}\"",
                "python -c \"cfg = {'token': '[REDACTED]'}\"",
            ),
            ("MYSQL_PWD=SEKRIT mysql db", "MYSQL_PWD=[REDACTED] mysql db"),
            ("DB_PASS=SEKRIT ./run", "DB_PASS=[REDACTED] ./run"),
            (
                "docker run -e \"API_TOKEN=SEKRIT\" img",
                "docker run -e \"API_TOKEN=[REDACTED]\" img",
            ),
            ("curl -u bob:SEKRIT https://x", "curl -u bob:[REDACTED] https://x"),
            (
                "curl --user 'bob:se cret' https://x",
                "curl --user 'bob:[REDACTED]' https://x",
            ),
            (
                "curl --oauth2-bearer SEKRIT https://x",
                "curl --oauth2-bearer [REDACTED] https://x",
            ),
            (
                "curl -H 'Authorization: Bearer abc.def' x",
                "curl -H 'Authorization: Bearer [REDACTED]' x",
            ),
            ("curl -H 'Cookie: sid=abc; x=y' u", "curl -H 'Cookie: [REDACTED]' u"),
            (
                "git clone https://bob:p@ss@host/r.git",
                "git clone https://bob:[REDACTED]@host/r.git",
            ),
            (
                "psql postgres://u:pw@db:5432/x",
                "psql postgres://u:[REDACTED]@db:5432/x",
            ),
            ("openssl enc -pass pass:SEKRIT", "openssl enc -pass [REDACTED]"),
        ] {
            assert_eq!(log.redact(input), expected, "input: {input}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn ordinary_commands_are_not_masked() {
        let (log, dir) = default_log();
        for input in [
            "ls -p /tmp",
            "git push origin main",
            "git push --force-with-lease",
            "mysql -u root -p",
            "mysql -u root -p -e 'show databases'",
            "mysql -h db -P 3306 -u root",
            "docker run -u 1000:1000 -p 8080:80 img",
            "docker login --password-stdin -u bob ghcr.io",
            "psql --no-password -h db app",
            "curl -u bob https://example.com",
            "curl https://example.com/@user",
            "grep -rn \"TOKEN=\" .",
            "grep -n 'password:' config.yml",
            "echo $PWD:/bin",
            "cd $(pwd)/src",
            "cat ~/.ssh/id_ed25519.pub",
            "kubectl get secrets -o name",
            "tar -cpf out.tar dir",
            "cargo test --test audit",
            "ssh -p 2222 host",
        ] {
            assert_eq!(log.redact(input), input);
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn named_secret_groups_mask_only_themselves() {
        let dir = std::env::temp_dir().join(format!("bash-mcp-redact-{}", random_id()));
        let mut settings = AuditSettings::new(dir.join("a.jsonl"));
        settings.redact = vec![
            r"pin (?P<secret>\d+) and (?P<secret_2>\d+)!".into(),
            r"(code=)\w+".into(),
            r"XYZ\d+".into(),
        ];
        let log = AuditLog::open(settings).unwrap();
        assert_eq!(log.redact("pin 12 and 34!"), "pin [REDACTED] and [REDACTED]!");
        assert_eq!(log.redact("a code=abc b"), "a code=[REDACTED] b");
        assert_eq!(log.redact("a XYZ99 b"), "a [REDACTED] b");
        assert_eq!(
            log.redact_related("`run code=abcdef` and abcdef again", Some("run code=abcdef")),
            "`run code=[REDACTED]` and [REDACTED] again"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn instants_parse_from_rfc3339_and_dates() {
        let base = 1_795_977_903; // 2026-11-29T18:45:03Z
        assert_eq!(parse_instant("2026-11-29T18:45:03Z"), Some((base, 0)));
        assert_eq!(parse_instant("2026-11-29T18:45:03.123Z"), Some((base, 123_000_000)));
        assert_eq!(
            parse_instant("2026-11-29t18:45:03.123456789z"),
            Some((base, 123_456_789))
        );
        assert_eq!(
            parse_instant("2026-11-29 18:45:03.1234567891Z"),
            Some((base, 123_456_789))
        );
        assert_eq!(parse_instant("2026-11-29T19:45:03+01:00"), Some((base, 0)));
        assert_eq!(parse_instant("2026-11-29T13:15:03-05:30"), Some((base, 0)));
        assert_eq!(parse_instant("2026-11-29"), Some((base - (18 * 3600 + 45 * 60 + 3), 0)));
        assert_eq!(parse_instant("1970-01-01T00:00:00Z"), Some((0, 0)));
        assert_eq!(parse_instant("2000-02-29"), Some((951_782_400, 0)));
        for t in [
            "1795977903",
            "2026-11-29T18:45:03",
            "2026-11-29T18:45Z",
            "2026-11-29T18:45:03.Z",
            "2026-11-29T24:00:00Z",
            "2026-11-29T18:45:03+1:00",
            "2026-11-29T18:45:03+01:00x",
            "2026-02-29",
            "2026-00-10",
            "2026-1-10",
            "last week",
            "",
        ] {
            assert_eq!(parse_instant(t), None, "{t}");
        }
        // Round trip with the formatter.
        let t = UNIX_EPOCH + Duration::from_millis(1_795_977_903_123);
        assert_eq!(parse_instant(&rfc3339(t)), Some((base, 123_000_000)));
    }
}
