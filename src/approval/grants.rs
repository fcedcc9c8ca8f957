//! What the person decided, remembered for the server's life.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use serde::Serialize;

use super::approver::ask_bounded;
use super::{AnsweredBy, ApprovalAnswer, ApprovalOutcome, ApprovalRequest, Approver, GrantItem};

/// One "allow for this server" grant: exactly one item of what was asked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Grant {
    /// Its id, for revoking it alone (`grant-1`, `grant-2`, ...).
    pub id: String,
    /// What it allows.
    #[serde(flatten)]
    pub item: GrantItem,
}

/// What was remembered about a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remembered {
    /// Everything it asks for was granted for this server.
    Granted,
    /// The person denied this same request, and no grant changed since.
    Denied,
}

#[derive(Default)]
struct State {
    grants: Vec<Grant>,
    /// Denied requests by identity, with the generation of the grant list
    /// they were denied under: a denial stands until the grants change.
    denied: HashMap<String, u64>,
    generation: u64,
    next_id: u64,
}

/// The grants and denials of one server, and the host's approver.
///
/// ```
/// use bash_mcp::approval::{ApprovalAnswer, Approvals, Remembered};
/// # let request = bash_mcp::approval::ApprovalRequest {
/// #     kind: bash_mcp::approval::ApprovalKind::Command, tool: "bash.execute".into(),
/// #     command: "make".into(), working_dir: "/w".into(), env: Default::default(), stdin: None,
/// #     widens: Default::default(), reason: None, why: "no rule".into(), suggested_rule: None,
/// #     grants: vec![bash_mcp::approval::GrantItem::Part { tool: "bash.execute".into(), part: "make".into() }],
/// # };
/// let approvals = Approvals::default();
/// assert_eq!(approvals.remembered(&request), None);
/// approvals.record(&request, ApprovalAnswer::AllowForServer);
/// assert_eq!(approvals.remembered(&request), Some(Remembered::Granted));
/// assert_eq!(approvals.revoke(None).len(), 1);
/// assert_eq!(approvals.remembered(&request), None);
/// ```
#[derive(Default)]
pub struct Approvals {
    state: Mutex<State>,
    approver: RwLock<Option<(Arc<dyn Approver>, Duration)>>,
}

impl Approvals {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What is known about `request` without asking: granted (every item it
    /// would grant is granted), denied (the same request was denied under
    /// the same grants), or nothing.
    pub fn remembered(&self, request: &ApprovalRequest) -> Option<Remembered> {
        let state = self.state();
        if !request.grants.is_empty()
            && request
                .grants
                .iter()
                .all(|item| state.grants.iter().any(|g| &g.item == item))
        {
            return Some(Remembered::Granted);
        }
        (state.denied.get(&request.identity()) == Some(&state.generation)).then_some(Remembered::Denied)
    }

    /// Remembers the person's `answer` to `request`: a grant of exactly its
    /// items for [`ApprovalAnswer::AllowForServer`], the denial for
    /// [`ApprovalAnswer::Deny`], nothing for [`ApprovalAnswer::AllowOnce`].
    /// Returns the grants added.
    pub fn record(&self, request: &ApprovalRequest, answer: ApprovalAnswer) -> Vec<Grant> {
        let mut state = self.state();
        let mut added = Vec::new();
        match answer {
            ApprovalAnswer::AllowOnce => {}
            ApprovalAnswer::Deny => {
                let generation = state.generation;
                state.denied.insert(request.identity(), generation);
            }
            ApprovalAnswer::AllowForServer => {
                for item in &request.grants {
                    if state.grants.iter().any(|g| &g.item == item) {
                        continue;
                    }
                    state.next_id += 1;
                    let grant = Grant {
                        id: format!("grant-{}", state.next_id),
                        item: item.clone(),
                    };
                    added.push(grant.clone());
                    state.grants.push(grant);
                }
                if !added.is_empty() {
                    state.generation += 1;
                }
            }
        }
        added
    }

    /// The grants in force, oldest first.
    pub fn grants(&self) -> Vec<Grant> {
        self.state().grants.clone()
    }

    /// Revokes the grant `id`, or every grant when `None`; returns those
    /// revoked (empty when `id` names none).
    pub fn revoke(&self, id: Option<&str>) -> Vec<Grant> {
        let mut state = self.state();
        let (gone, kept): (Vec<Grant>, Vec<Grant>) = std::mem::take(&mut state.grants)
            .into_iter()
            .partition(|g| id.is_none_or(|id| g.id == id));
        state.grants = kept;
        if !gone.is_empty() {
            state.generation += 1;
        }
        gone
    }

    /// Sets (or with `None` removes) the host's approver, which is asked
    /// when the protocol cannot ask the person itself; an approver that
    /// does not answer within `bound` counts as deny.
    pub fn set_approver(&self, approver: Option<Arc<dyn Approver>>, bound: Duration) {
        *self.approver.write().unwrap_or_else(PoisonError::into_inner) = approver.map(|a| (a, bound));
    }

    /// Whether a host approver is set.
    pub fn has_approver(&self) -> bool {
        self.approver.read().unwrap_or_else(PoisonError::into_inner).is_some()
    }

    /// The host approver's answer, `None` when no approver is set; an
    /// approver that fails or stays silent past its bound gives
    /// `Some(Err(why))`, which counts as deny.
    pub fn ask_host(&self, request: &ApprovalRequest) -> Option<Result<ApprovalAnswer, String>> {
        let (approver, bound) = self.approver.read().unwrap_or_else(PoisonError::into_inner).clone()?;
        Some(ask_bounded(&approver, request, bound))
    }

    /// [`ask_host`](Approvals::ask_host), waiting at most `wait` (or the
    /// approver's bound, when shorter).
    pub fn ask_host_within(&self, request: &ApprovalRequest, wait: Duration) -> Option<Result<ApprovalAnswer, String>> {
        let (approver, bound) = self.approver.read().unwrap_or_else(PoisonError::into_inner).clone()?;
        Some(ask_bounded(&approver, request, bound.min(wait)))
    }

    /// Settles `request`: a grant or an earlier denial answers without
    /// asking; otherwise the host's approver is asked (within `wait`, when
    /// given), then `ask_client`. A real answer is remembered; a failed
    /// asking (no answer in time, a decline) is not the person's denial, so
    /// the next call may ask again.
    pub fn settle(
        &self,
        request: &ApprovalRequest,
        wait: Option<Duration>,
        ask_client: impl FnOnce(&ApprovalRequest) -> Option<Result<ApprovalAnswer, String>>,
    ) -> ApprovalOutcome {
        let outcome = |answer, by, note| ApprovalOutcome { answer, by, note };
        match self.remembered(request) {
            Some(Remembered::Granted) => return outcome(Some(ApprovalAnswer::AllowForServer), AnsweredBy::Grant, None),
            Some(Remembered::Denied) => return outcome(Some(ApprovalAnswer::Deny), AnsweredBy::EarlierDenial, None),
            None => {}
        }
        let from_host = match wait {
            Some(wait) => self.ask_host_within(request, wait),
            None => self.ask_host(request),
        };
        let asked = from_host
            .map(|a| (a, AnsweredBy::Host))
            .or_else(|| ask_client(request).map(|a| (a, AnsweredBy::Client)));
        match asked {
            Some((Ok(answer), by)) => {
                self.record(request, answer);
                outcome(Some(answer), by, None)
            }
            Some((Err(why), by)) => outcome(Some(ApprovalAnswer::Deny), by, Some(why)),
            None => outcome(None, AnsweredBy::Nobody, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ApprovalKind, Widening};
    use super::*;

    fn request(command: &str, grants: Vec<GrantItem>) -> ApprovalRequest {
        ApprovalRequest {
            kind: ApprovalKind::Command,
            tool: "bash.execute".into(),
            command: command.into(),
            working_dir: "/w".into(),
            env: Default::default(),
            stdin: None,
            widens: Widening::default(),
            reason: None,
            why: "no rule".into(),
            suggested_rule: None,
            grants,
        }
    }

    fn part(p: &str) -> GrantItem {
        GrantItem::Part {
            tool: "bash.execute".into(),
            part: p.into(),
        }
    }

    #[test]
    fn a_grant_covers_exactly_what_was_asked() {
        let a = Approvals::default();
        a.record(&request("make", vec![part("make")]), ApprovalAnswer::AllowForServer);
        assert_eq!(
            a.remembered(&request("make", vec![part("make")])),
            Some(Remembered::Granted)
        );
        assert_eq!(a.remembered(&request("make install", vec![part("make install")])), None);
        assert_eq!(a.remembered(&request("make; ls", vec![part("make"), part("ls")])), None);
        // A request that names nothing to grant is never covered.
        assert_eq!(a.remembered(&request("eval x", vec![])), None);
        a.record(&request("eval x", vec![]), ApprovalAnswer::AllowForServer);
        assert!(a.grants().len() == 1);
    }

    #[test]
    fn a_denial_stands_until_the_grants_change() {
        let a = Approvals::default();
        let denied = request("rm -r build", vec![part("rm -r build")]);
        a.record(&denied, ApprovalAnswer::Deny);
        assert_eq!(a.remembered(&denied), Some(Remembered::Denied));
        a.record(&denied, ApprovalAnswer::AllowOnce);
        assert_eq!(a.remembered(&denied), Some(Remembered::Denied));
        a.record(&request("ls", vec![part("ls")]), ApprovalAnswer::AllowForServer);
        assert_eq!(a.remembered(&denied), None);
    }

    #[test]
    fn revoking_one_grant_keeps_the_others() {
        let a = Approvals::default();
        a.record(
            &request("ls", vec![part("ls"), part("pwd")]),
            ApprovalAnswer::AllowForServer,
        );
        assert_eq!(a.revoke(Some("grant-9")), vec![]);
        let gone = a.revoke(Some("grant-1"));
        assert_eq!(gone.len(), 1);
        assert_eq!(a.grants()[0].id, "grant-2");
    }

    #[test]
    fn a_silent_or_panicking_approver_denies_after_its_bound() {
        let a = Approvals::default();
        assert_eq!(a.ask_host(&request("ls", vec![])), None);
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let wait = Mutex::new(wait);
        a.set_approver(
            Some(Arc::new(move |_: &ApprovalRequest| {
                let _ = wait.lock().unwrap().recv();
                ApprovalAnswer::AllowOnce
            })),
            Duration::from_millis(50),
        );
        let why = a.ask_host(&request("ls", vec![])).unwrap().unwrap_err();
        assert!(why.contains("did not answer"), "{why}");
        release.send(()).unwrap();
        a.set_approver(
            Some(Arc::new(|_: &ApprovalRequest| -> ApprovalAnswer {
                panic!("approver bug")
            })),
            Duration::from_secs(600),
        );
        let why = a.ask_host(&request("ls", vec![])).unwrap().unwrap_err();
        assert!(why.contains("panicked"), "{why}");
        a.set_approver(
            Some(Arc::new(|r: &ApprovalRequest| {
                if r.command == "ls" {
                    ApprovalAnswer::AllowForServer
                } else {
                    ApprovalAnswer::Deny
                }
            })),
            Duration::from_secs(60),
        );
        assert_eq!(
            a.ask_host(&request("ls", vec![])).unwrap(),
            Ok(ApprovalAnswer::AllowForServer)
        );
    }
}
