//! Log records to a host callback, through a small `tracing` subscriber.
//!
//! The library logs with `tracing`. This module installs, once and only when
//! asked, a process-wide subscriber that formats each event and hands it to
//! the callback set with `bash_mcp_set_log_callback` (or, for the plugin, to
//! stderr when no callback is set). It is hand-written rather than built on
//! `tracing-subscriber`: it needs events only (spans are never enabled), no
//! span storage, no formatting layers and no filters beyond one level, so a
//! hundred lines keep the shared library free of another dependency tree.

use std::cell::Cell;
use std::ffi::{CString, c_char, c_void};
use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{OnceLock, PoisonError, RwLock};

use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};

use crate::ffi::panic;
use crate::ffi::result::{Failure, bash_mcp_result, to_code};

/// The severity of a log record, from least to most verbose.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum bash_mcp_log_level {
    /// No records (only as a maximum level: turns the callback off).
    Off = 0,
    /// Failures the host should know about.
    Error = 1,
    /// Something unexpected that the library worked around.
    Warn = 2,
    /// Notable events.
    Info = 3,
    /// Each command run, with its working directory and timeout.
    Debug = 4,
    /// Fine-grained detail.
    Trace = 5,
}

impl bash_mcp_log_level {
    fn from_raw(raw: i32) -> Option<Self> {
        [Self::Off, Self::Error, Self::Warn, Self::Info, Self::Debug, Self::Trace]
            .into_iter()
            .find(|l| *l as i32 == raw)
    }

    fn of(level: &Level) -> Self {
        match *level {
            Level::ERROR => Self::Error,
            Level::WARN => Self::Warn,
            Level::INFO => Self::Info,
            Level::DEBUG => Self::Debug,
            Level::TRACE => Self::Trace,
        }
    }

    fn filter(self) -> LevelFilter {
        match self {
            Self::Off => LevelFilter::OFF,
            Self::Error => LevelFilter::ERROR,
            Self::Warn => LevelFilter::WARN,
            Self::Info => LevelFilter::INFO,
            Self::Debug => LevelFilter::DEBUG,
            Self::Trace => LevelFilter::TRACE,
        }
    }
}

/// A log level as C passes it in: any `int` value, checked before use. The
/// header spells it `bash_mcp_log_level`.
#[repr(transparent)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawLevel(pub i32);

impl From<bash_mcp_log_level> for RawLevel {
    fn from(level: bash_mcp_log_level) -> Self {
        Self(level as i32)
    }
}

/// Receives one log record of the library.
///
/// Called on whichever thread emitted the record: a thread of the host that
/// called into the library, or one of the library's own threads (the worker
/// running a background job, a session's reader and the idle-session
/// sweeper, the MCP handler's call and progress workers). Records can
/// arrive on several threads at once, and after the call that caused them
/// has returned, so the callback must be thread-safe.
///
/// @param level The record's severity (never ::BASH_MCP_LOG_LEVEL_OFF).
/// @param target Where it comes from, e.g. `"bash_mcp::bash"`. Borrowed for
///        the duration of the call.
/// @param message The message followed by its fields (`key=value`).
///        Borrowed for the duration of the call.
/// @param user_data The pointer given to bash_mcp_set_log_callback().
/// @warning The callback must return normally (no C++ exception, no longjmp)
///          and must not call bash_mcp_set_log_callback(). Records the
///          library emits while the callback runs on the same thread are
///          dropped.
pub type bash_mcp_log_callback = Option<
    unsafe extern "C" fn(
        level: bash_mcp_log_level,
        target: *const c_char,
        message: *const c_char,
        user_data: *mut c_void,
    ),
>;

/// Routes the library's log records to @p callback.
///
/// By default the library logs nowhere. After this call, every record at
/// @p max_level or more severe goes to @p callback, on the thread that
/// emitted it, which may be one of the library's own threads (see
/// ::bash_mcp_log_callback). A second call replaces the callback; it waits for callbacks
/// running on other threads to return, so once it returns the previous
/// callback is never called again and its @p user_data may be released.
///
/// @param callback The callback, or NULL to stop delivering records.
/// @param user_data Passed to @p callback unchanged; may be NULL. Must stay
///        valid until the callback is replaced or removed.
/// @param max_level The most verbose level delivered;
///        ::BASH_MCP_LOG_LEVEL_OFF stops delivering records.
/// @return ::BASH_MCP_RESULT_OK, or ::BASH_MCP_RESULT_INVALID_ARGUMENT (a
///         level that names no ::bash_mcp_log_level),
///         ::BASH_MCP_RESULT_CALLED_FROM_CALLBACK (called from inside a log
///         callback), ::BASH_MCP_RESULT_LOG_UNAVAILABLE (another `tracing`
///         subscriber owns this process's log records; only possible when the
///         library is linked into a Rust program that installed one),
///         ::BASH_MCP_RESULT_PANIC.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bash_mcp_set_log_callback(
    callback: bash_mcp_log_callback,
    user_data: *mut c_void,
    max_level: RawLevel,
) -> bash_mcp_result {
    panic::guard_code(|| {
        to_code((|| {
            if IN_CALLBACK.try_with(Cell::get).unwrap_or(false) {
                return Err(Failure::new(
                    bash_mcp_result::CalledFromCallback,
                    "bash_mcp_set_log_callback() was called from inside a log callback",
                ));
            }
            let level = bash_mcp_log_level::from_raw(max_level.0).ok_or_else(|| {
                Failure::new(
                    bash_mcp_result::InvalidArgument,
                    format!("`max_level` {} is not a bash_mcp_log_level (0 to 5)", max_level.0),
                )
            })?;
            let sink = match callback {
                Some(callback) if level != bash_mcp_log_level::Off => Some(Sink {
                    callback,
                    user_data,
                    level,
                }),
                _ => None,
            };
            set_sink(sink)
        })())
    })
}

/// Makes warnings and errors go to stderr while no callback is set (the
/// plugin's default: the engine gives it no way to log).
#[cfg_attr(not(feature = "entropic-plugin"), allow(dead_code))]
pub(crate) fn enable_stderr_fallback(level: bash_mcp_log_level) {
    if install().is_ok() {
        FALLBACK.store(level as u8, Ordering::SeqCst);
        tracing::callsite::rebuild_interest_cache();
    }
}

struct Sink {
    callback: unsafe extern "C" fn(bash_mcp_log_level, *const c_char, *const c_char, *mut c_void),
    user_data: *mut c_void,
    level: bash_mcp_log_level,
}

// SAFETY: the documented contract requires the callback and its user_data to
// be usable from any thread.
unsafe impl Send for Sink {}
// SAFETY: as for Send: the same contract allows calls from several threads at
// once, and the struct holds nothing else.
unsafe impl Sync for Sink {}

static SINK: RwLock<Option<Sink>> = RwLock::new(None);
/// Level of the callback (0 when none), read without the lock.
static CALLBACK_LEVEL: AtomicU8 = AtomicU8::new(0);
/// Level written to stderr while no callback is set.
static FALLBACK: AtomicU8 = AtomicU8::new(0);
static INSTALLED: OnceLock<bool> = OnceLock::new();

thread_local! {
    static IN_CALLBACK: Cell<bool> = const { Cell::new(false) };
}

fn install() -> Result<(), Failure> {
    let installed = *INSTALLED.get_or_init(|| tracing::subscriber::set_global_default(Forward).is_ok());
    if installed {
        Ok(())
    } else {
        Err(Failure::new(
            bash_mcp_result::LogUnavailable,
            "another tracing subscriber is installed in this process; log records go to it",
        ))
    }
}

fn set_sink(sink: Option<Sink>) -> Result<(), Failure> {
    install()?;
    let level = sink.as_ref().map_or(0, |s| s.level as u8);
    // Taking the write lock waits for callbacks running on other threads.
    *SINK.write().unwrap_or_else(PoisonError::into_inner) = sink;
    CALLBACK_LEVEL.store(level, Ordering::SeqCst);
    tracing::callsite::rebuild_interest_cache();
    Ok(())
}

/// The most verbose level anyone currently wants.
fn wanted() -> u8 {
    let callback = CALLBACK_LEVEL.load(Ordering::SeqCst);
    if callback > 0 {
        callback
    } else {
        FALLBACK.load(Ordering::SeqCst)
    }
}

/// The subscriber: events only, forwarded to the sink.
struct Forward;

impl Subscriber for Forward {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        // The level can change at run time: ask `enabled` every time.
        Interest::sometimes()
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.is_event() && (bash_mcp_log_level::of(metadata.level()) as u8) <= wanted()
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        bash_mcp_log_level::from_raw(i32::from(wanted())).map(bash_mcp_log_level::filter)
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        // Never called: `enabled` refuses every span.
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        if IN_CALLBACK.try_with(Cell::get).unwrap_or(true) {
            return;
        }
        let metadata = event.metadata();
        let level = bash_mcp_log_level::of(metadata.level());
        let mut text = Message::default();
        event.record(&mut text);
        let sink = SINK.read().unwrap_or_else(PoisonError::into_inner);
        match sink.as_ref() {
            Some(sink) if level <= sink.level => {
                let target = c_text(metadata.target());
                let message = c_text(&text.0);
                let _ = IN_CALLBACK.try_with(|flag| flag.set(true));
                // SAFETY: the callback and user_data are the host's, used as
                // documented; the strings live until the call returns.
                unsafe { (sink.callback)(level, target.as_ptr(), message.as_ptr(), sink.user_data) };
                let _ = IN_CALLBACK.try_with(|flag| flag.set(false));
            }
            Some(_) => {}
            None if level as u8 <= FALLBACK.load(Ordering::SeqCst) => {
                eprintln!("bash-mcp: {} {}: {}", metadata.level(), metadata.target(), text.0);
            }
            None => {}
        }
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// The message of an event, then its other fields as ` key=value`.
#[derive(Default)]
struct Message(String);

impl Visit for Message {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.push(field, format_args!("{value}"));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.push(field, format_args!("{value:?}"));
    }
}

impl Message {
    fn push(&mut self, field: &Field, value: fmt::Arguments<'_>) {
        if field.name() == "message" {
            let rest = std::mem::take(&mut self.0);
            let _ = write!(self.0, "{value}{rest}");
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }
}

fn c_text(text: &str) -> CString {
    CString::new(text.replace('\0', "\u{fffd}")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;
    use std::sync::Mutex;

    static SEEN: Mutex<Vec<(bash_mcp_log_level, String, String)>> = Mutex::new(Vec::new());

    unsafe extern "C" fn collect(
        level: bash_mcp_log_level,
        target: *const c_char,
        message: *const c_char,
        user_data: *mut c_void,
    ) {
        assert_eq!(user_data as usize, 7);
        // SAFETY: the library passes NUL-terminated strings valid for the call.
        let target = unsafe { CStr::from_ptr(target) }.to_string_lossy().into_owned();
        // SAFETY: as for `target`.
        let message = unsafe { CStr::from_ptr(message) }.to_string_lossy().into_owned();
        if target == "bash_mcp::ffi::log::tests" {
            // Re-entering must be refused, and the record it emits dropped.
            // SAFETY: no callback and NULL user data are always valid.
            let nested = unsafe { bash_mcp_set_log_callback(None, std::ptr::null_mut(), RawLevel(0)) };
            assert_eq!(nested, bash_mcp_result::CalledFromCallback);
            tracing::error!("emitted inside the callback");
            SEEN.lock().unwrap().push((level, target, message));
        }
    }

    #[test]
    fn records_reach_the_callback_filtered_by_level() {
        // SAFETY: `collect` may be called from any thread and ignores its user data
        // but for checking it.
        let set = |level: bash_mcp_log_level| unsafe {
            bash_mcp_set_log_callback(Some(collect), 7 as *mut c_void, level.into())
        };
        assert_eq!(set(bash_mcp_log_level::Info), bash_mcp_result::Ok);
        tracing::info!(answer = 42, path = "a b", "hello {}", "world");
        tracing::debug!("too verbose");
        assert_eq!(set(bash_mcp_log_level::Debug), bash_mcp_result::Ok);
        tracing::debug!("now shown");
        assert_eq!(set(bash_mcp_log_level::Off), bash_mcp_result::Ok);
        tracing::error!("after off");
        // SAFETY: as for `set`; the level is refused before the callback is kept.
        let bad = unsafe { bash_mcp_set_log_callback(Some(collect), std::ptr::null_mut(), RawLevel(6)) };
        assert_eq!(bad, bash_mcp_result::InvalidArgument);

        let seen = SEEN.lock().unwrap().clone();
        let messages: Vec<&str> = seen.iter().map(|(_, _, m)| m.as_str()).collect();
        assert_eq!(messages, ["hello world answer=42 path=a b", "now shown"]);
        assert_eq!(seen[0].0, bash_mcp_log_level::Info);
        assert_eq!(seen[1].0, bash_mcp_log_level::Debug);
    }
}
