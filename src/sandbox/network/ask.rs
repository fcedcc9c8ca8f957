//! Asking the person about a connection the policy does not allow, while
//! the command waits: the proxy holds the connection, asks (through the
//! [`ConnectAsker`] its command was given), and then relays it or answers
//! `403` with the reason. The wait is bounded, as is the number of
//! connections waiting at once (past it a connection is refused at once,
//! saying so), and a command asks about one host and port once: its later
//! connections there get the same answer.
//!
//! Only a host that no allow entry names is asked about: a deny entry and
//! a special-purpose address stay refused, unasked.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, mpsc};
use std::time::{Duration, Instant};

use super::policy::{Host, Refusal};
use crate::approval::{AnsweredBy, ApprovalAnswer, ApprovalOutcome};

/// Who decides on a connection its policy refused: made for each command
/// by the server, which knows whom to ask (the host's approver, the call's
/// client) and remembers grants.
pub trait ConnectAsker: Send + Sync {
    /// The person's decision on a connection to `host:port` that the
    /// policy refused by `rule`, within `wait`. An outcome without an
    /// answer means nobody could be asked: the connection is refused as
    /// the policy says.
    fn ask(&self, host: &Host, port: u16, rule: &str, wait: Duration) -> ApprovalOutcome;
}

/// How many connections may wait for the person at once, across a server's
/// commands, and how many do.
#[derive(Debug)]
pub struct WaitSlots {
    max: usize,
    taken: AtomicUsize,
}

impl WaitSlots {
    pub fn new(max: usize) -> Arc<WaitSlots> {
        Arc::new(WaitSlots {
            max,
            taken: AtomicUsize::new(0),
        })
    }

    /// The most connections that may wait at once.
    pub fn max(&self) -> usize {
        self.max
    }

    /// How many connections wait now.
    pub fn waiting(&self) -> usize {
        self.taken.load(Ordering::SeqCst)
    }

    fn take(self: &Arc<Self>) -> Option<Slot> {
        let taken = self
            .taken
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < self.max).then_some(n + 1));
        taken.ok().map(|_| Slot(self.clone()))
    }
}

/// One waiting connection's place, given back when dropped.
struct Slot(Arc<WaitSlots>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.taken.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How a command's refused connections are put to the person.
#[derive(Clone)]
pub struct Asking {
    pub asker: Arc<dyn ConnectAsker>,
    /// How long a connection waits for the answer before it is refused.
    pub wait: Duration,
    /// The server's count of waiting connections.
    pub slots: Arc<WaitSlots>,
}

impl std::fmt::Debug for Asking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Asking")
            .field("wait", &self.wait)
            .field("slots", &self.slots)
            .finish()
    }
}

/// What becomes of a connection the policy refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The person allowed it: relay it.
    Allow,
    /// Refused, by this rule (as the denial names it), with the code of
    /// the `X-Proxy-Error` header.
    Refuse { rule: String, code: &'static str },
}

#[derive(Debug, Clone)]
enum State {
    /// Being asked now; connections to the same place wait for the answer.
    Pending,
    Decided(Verdict),
}

/// One command's questions about connections, by host and port.
#[derive(Debug)]
pub(super) struct Asked {
    asking: Asking,
    states: Mutex<HashMap<(Host, u16), State>>,
    changed: Condvar,
}

impl Asked {
    pub(super) fn new(asking: Asking) -> Asked {
        Asked {
            asking,
            states: Mutex::new(HashMap::new()),
            changed: Condvar::new(),
        }
    }

    fn states(&self) -> MutexGuard<'_, HashMap<(Host, u16), State>> {
        self.states.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What becomes of a connection to `host:port` that the policy refused
    /// with `refusal`: only a host no allow entry names is put to the person.
    pub(super) fn decide(&self, host: &Host, port: u16, refusal: &Refusal) -> Verdict {
        let rule = refusal.rule();
        if *refusal != Refusal::NotAllowed {
            return Verdict::Refuse {
                rule,
                code: refusal.code(),
            };
        }
        let key = (host.clone(), port);
        // A place this command already has an answer for is not asked
        // about again, and so takes no place among the waiting.
        if let Some(State::Decided(verdict)) = self.states().get(&key) {
            return verdict.clone();
        }
        let wait = self.asking.wait;
        let Some(slot) = self.asking.slots.take() else {
            return Verdict::Refuse {
                rule: format!(
                    "{rule}; not asked: the {} connections that may wait for the person's answer at once (network_ask.max_waiting) already do",
                    self.asking.slots.max()
                ),
                code: "ask-limit",
            };
        };
        let deadline = Instant::now() + wait;
        let mut states = self.states();
        loop {
            match states.get(&key) {
                Some(State::Decided(verdict)) => return verdict.clone(),
                Some(State::Pending) => {
                    // Another connection asks: this one gets its answer.
                    let now = Instant::now();
                    if now >= deadline {
                        return timed_out(&rule, wait);
                    }
                    states = self
                        .changed
                        .wait_timeout(states, deadline - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
                None => break,
            }
        }
        states.insert(key.clone(), State::Pending);
        drop(states);
        let verdict = self.ask(host, port, &rule);
        drop(slot);
        self.states().insert(key, State::Decided(verdict.clone()));
        self.changed.notify_all();
        verdict
    }

    /// Asks on a thread of its own, so that the wait holds whatever the
    /// asker does: past it, the connection is refused.
    fn ask(&self, host: &Host, port: u16, rule: &str) -> Verdict {
        let wait = self.asking.wait;
        let (tx, rx) = mpsc::sync_channel(1);
        let asker = self.asking.asker.clone();
        let (h, r) = (host.clone(), rule.to_owned());
        let spawned = std::thread::Builder::new()
            .name("sandbox-proxy-ask".into())
            .stack_size(256 * 1024)
            .spawn(move || {
                let _ = tx.send(asker.ask(&h, port, &r, wait));
            });
        if let Err(e) = spawned {
            return Verdict::Refuse {
                rule: format!("{rule}; the person could not be asked ({e})"),
                code: "ask-failed",
            };
        }
        let outcome = match rx.recv_timeout(wait) {
            Ok(outcome) => outcome,
            Err(mpsc::RecvTimeoutError::Timeout) => return timed_out(rule, wait),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Verdict::Refuse {
                    rule: format!("{rule}; asking the person failed"),
                    code: "ask-failed",
                };
            }
        };
        let verdict = verdict_of(rule, &outcome, wait);
        tracing::info!(%host, port, answer = outcome.answer.map_or("none", ApprovalAnswer::as_str), "the person was asked about a connection");
        verdict
    }
}

fn timed_out(rule: &str, wait: Duration) -> Verdict {
    Verdict::Refuse {
        rule: format!("{rule}; no answer from the person within {} s", wait.as_secs_f64()),
        code: "ask-timeout",
    }
}

/// The verdict an outcome gives a connection the policy refused by `rule`.
fn verdict_of(rule: &str, outcome: &ApprovalOutcome, wait: Duration) -> Verdict {
    match (outcome.answer, &outcome.note, outcome.by) {
        (Some(answer), _, _) if answer.allows() => Verdict::Allow,
        // Nobody could be asked: refused as the policy says.
        (None, _, _) => Verdict::Refuse {
            rule: rule.to_owned(),
            code: "blocked-by-allowlist",
        },
        (Some(_), _, AnsweredBy::EarlierDenial) => Verdict::Refuse {
            rule: format!("{rule}; the person denied it before"),
            code: "blocked-by-person",
        },
        (Some(_), Some(note), _) if note.contains("no answer within") || note.contains("did not answer") => {
            timed_out(rule, wait)
        }
        (Some(_), Some(note), _) => Verdict::Refuse {
            rule: format!("{rule}; asking the person failed ({note})"),
            code: "ask-failed",
        },
        (Some(_), None, _) => Verdict::Refuse {
            rule: format!("{rule}; the person denied it"),
            code: "blocked-by-person",
        },
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Condvar;

    use super::*;

    /// An asker that answers `answer` once the test releases it, counting
    /// the questions.
    struct Person {
        answer: Option<ApprovalAnswer>,
        /// How many times it was asked, and a signal each time.
        asked: Mutex<usize>,
        was_asked: Condvar,
        release: Mutex<mpsc::Receiver<()>>,
    }

    impl Person {
        fn times_asked(&self) -> usize {
            *self.asked.lock().unwrap()
        }

        /// Waits until it was asked `times` times: woken by each question,
        /// bounded only by a hang guard (asking takes microseconds).
        fn wait_until_asked(&self, times: usize) {
            const HANG_GUARD: Duration = Duration::from_secs(60);
            let asked = self.asked.lock().unwrap();
            let (_asked, waited) = self
                .was_asked
                .wait_timeout_while(asked, HANG_GUARD, |asked| *asked < times)
                .unwrap();
            assert!(!waited.timed_out(), "the person was never asked");
        }
    }

    impl ConnectAsker for Person {
        fn ask(&self, _host: &Host, _port: u16, _rule: &str, _wait: Duration) -> ApprovalOutcome {
            *self.asked.lock().unwrap() += 1;
            self.was_asked.notify_all();
            let _ = self.release.lock().unwrap().recv();
            ApprovalOutcome {
                answer: self.answer,
                by: AnsweredBy::Host,
                note: None,
            }
        }
    }

    fn asked(
        answer: Option<ApprovalAnswer>,
        wait: Duration,
        max: usize,
    ) -> (Arc<Asked>, Arc<Person>, mpsc::Sender<()>) {
        let (tx, rx) = mpsc::channel();
        let person = Arc::new(Person {
            answer,
            asked: Mutex::new(0),
            was_asked: Condvar::new(),
            release: Mutex::new(rx),
        });
        let asking = Asking {
            asker: person.clone(),
            wait,
            slots: WaitSlots::new(max),
        };
        (Arc::new(Asked::new(asking)), person, tx)
    }

    fn host(name: &str) -> Host {
        Host::Name(name.into())
    }

    #[test]
    fn an_allowed_host_is_asked_once_per_command_and_its_later_connections_pass() {
        let (a, person, release) = asked(Some(ApprovalAnswer::AllowOnce), Duration::from_secs(600), 4);
        release.send(()).unwrap();
        assert_eq!(a.decide(&host("a.example"), 443, &Refusal::NotAllowed), Verdict::Allow);
        assert_eq!(a.decide(&host("a.example"), 443, &Refusal::NotAllowed), Verdict::Allow);
        assert_eq!(person.times_asked(), 1);
        // Another port is another question.
        release.send(()).unwrap();
        assert_eq!(a.decide(&host("a.example"), 80, &Refusal::NotAllowed), Verdict::Allow);
        assert_eq!(person.times_asked(), 2);
        assert_eq!(a.asking.slots.waiting(), 0);
    }

    #[test]
    fn a_deny_entry_or_a_special_address_is_never_asked() {
        let (a, person, _release) = asked(Some(ApprovalAnswer::AllowOnce), Duration::from_secs(600), 4);
        let denied = a.decide(&host("x.invalid"), 443, &Refusal::Denied("*.invalid".into()));
        assert_eq!(
            denied,
            Verdict::Refuse {
                rule: "network.deny: *.invalid".into(),
                code: "blocked-by-denylist"
            }
        );
        let special = Refusal::SpecialAddress {
            ip: "10.0.0.1".parse().unwrap(),
            kind: "private",
        };
        assert!(matches!(a.decide(&host("x"), 443, &special), Verdict::Refuse { .. }));
        assert_eq!(person.times_asked(), 0);
    }

    #[test]
    fn a_denial_or_silence_refuses_naming_why() {
        let (a, _person, release) = asked(Some(ApprovalAnswer::Deny), Duration::from_secs(600), 4);
        release.send(()).unwrap();
        let Verdict::Refuse { rule, code } = a.decide(&host("d.example"), 443, &Refusal::NotAllowed) else {
            panic!("allowed")
        };
        assert_eq!(rule, "not in network.allow; the person denied it");
        assert_eq!(code, "blocked-by-person");
        // Nobody answers within the wait: refused, and the slot is free again.
        let (a, _person, _release) = asked(Some(ApprovalAnswer::AllowOnce), Duration::from_millis(20), 4);
        let Verdict::Refuse { rule, code } = a.decide(&host("s.example"), 443, &Refusal::NotAllowed) else {
            panic!("allowed")
        };
        assert!(rule.contains("no answer from the person within 0.02 s"), "{rule}");
        assert_eq!(code, "ask-timeout");
        assert_eq!(a.asking.slots.waiting(), 0);
    }

    #[test]
    fn a_place_already_answered_passes_while_the_cap_is_full() {
        let (a, person, release) = asked(Some(ApprovalAnswer::AllowOnce), Duration::from_secs(600), 1);
        release.send(()).unwrap();
        assert_eq!(
            a.decide(&host("known.example"), 443, &Refusal::NotAllowed),
            Verdict::Allow
        );
        let waiting = {
            let a = a.clone();
            std::thread::spawn(move || a.decide(&host("new.example"), 443, &Refusal::NotAllowed))
        };
        person.wait_until_asked(2);
        // The one waiting place is taken; the answered place needs none.
        assert_eq!(
            a.decide(&host("known.example"), 443, &Refusal::NotAllowed),
            Verdict::Allow
        );
        release.send(()).unwrap();
        assert_eq!(waiting.join().unwrap(), Verdict::Allow);
        assert_eq!(person.times_asked(), 2);
    }

    #[test]
    fn past_the_cap_a_connection_is_refused_at_once_saying_so() {
        let (a, person, release) = asked(Some(ApprovalAnswer::AllowOnce), Duration::from_secs(600), 1);
        let first = {
            let a = a.clone();
            std::thread::spawn(move || a.decide(&host("one.example"), 443, &Refusal::NotAllowed))
        };
        person.wait_until_asked(1);
        let Verdict::Refuse { rule, code } = a.decide(&host("two.example"), 443, &Refusal::NotAllowed) else {
            panic!("allowed past the cap")
        };
        assert_eq!(code, "ask-limit");
        assert!(
            rule.contains("the 1 connections that may wait") && rule.contains("network_ask.max_waiting"),
            "{rule}"
        );
        release.send(()).unwrap();
        assert_eq!(first.join().unwrap(), Verdict::Allow);
        assert_eq!(person.times_asked(), 1);
    }
}
