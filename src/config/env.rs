//! The environment of a command, built once and reused while neither the
//! host's environment nor the configuration has changed.
//!
//! Building it means copying the host's variables, applying the
//! non-interactive profile, `set` and `remove`, and making one C string per
//! entry: tens of microseconds for a few dozen variables, on every call.
//! Reading the host's variables (the one sound way: `std::env::vars_os`,
//! under the standard library's lock) and comparing them with the copy the
//! cached environment was built from costs a fraction of that, so a host
//! that changes its environment between calls is still seen at once.

use std::ffi::{CString, OsString};
use std::sync::{Arc, Mutex, PoisonError};

use super::{Config, Inherit};

/// The last environment built for commands without variables of their own.
#[derive(Default)]
pub(crate) struct EnvCache(Mutex<Option<Entry>>);

struct Entry {
    /// The configuration it was built for (compared by identity: a new
    /// configuration is a new `Arc`).
    config: Arc<Config>,
    /// The host's variables it was built from.
    host: Vec<(OsString, OsString)>,
    env: Arc<[CString]>,
}

impl EnvCache {
    /// `config.build_env(overrides)`, from the cache when the call has no
    /// variables of its own and nothing it depends on has changed.
    pub(crate) fn env(&self, config: &Arc<Config>, overrides: &[(String, String)]) -> Arc<[CString]> {
        if !overrides.is_empty() {
            return config.build_env(overrides).into();
        }
        let host = match config.env.inherit {
            Inherit::None => Vec::new(),
            Inherit::All | Inherit::Matching(_) => std::env::vars_os().collect(),
        };
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = slot.as_ref()
            && Arc::ptr_eq(&entry.config, config)
            && entry.host == host
        {
            return entry.env.clone();
        }
        let env: Arc<[CString]> = config.env_from(host.clone(), overrides).into();
        *slot = Some(Entry {
            config: config.clone(),
            host,
            env: env.clone(),
        });
        env
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn config(set: &[(&str, &str)]) -> Arc<Config> {
        let mut config = Config::with_timeout(Duration::from_secs(1));
        config.env.inherit = Inherit::None;
        config.env.set = set.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect();
        Arc::new(config)
    }

    fn names(env: &[CString]) -> Vec<String> {
        env.iter().map(|e| e.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn the_cached_environment_is_the_built_one() {
        let cache = EnvCache::default();
        let config = config(&[("A", "1")]);
        let first = cache.env(&config, &[]);
        assert_eq!(names(&first), names(&config.build_env(&[])));
        assert!(Arc::ptr_eq(&first, &cache.env(&config, &[])), "built once");
    }

    #[test]
    fn a_new_configuration_or_a_call_of_its_own_rebuilds_it() {
        let cache = EnvCache::default();
        let old = config(&[("A", "1")]);
        cache.env(&old, &[]);
        let new = config(&[("A", "2")]);
        assert!(names(&cache.env(&new, &[])).contains(&"A=2".to_owned()));
        let own = cache.env(&new, &[("A".into(), "3".into())]);
        assert!(names(&own).contains(&"A=3".to_owned()));
        assert!(names(&cache.env(&new, &[])).contains(&"A=2".to_owned()));
    }
}
