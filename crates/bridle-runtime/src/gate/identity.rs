//! Who acts: the call's agent as its credential establishes it (`AgentRegistry::acting`), before
//! step 2 reads the kill switch and the run. The request's own `agent` field can restate the
//! credential's agent, never change it; it only speaks for a credential that names no agent.

use bridle_core::agents::{AgentMismatch, AgentSource};
use bridle_core::contract::{Mode, ToolContract};
use bridle_core::{Code, Principal, Rejection};
use serde_json::json;

use super::{CallRequest, Gate};

/// The agent of one call and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Who {
    /// The agent the call is made for (the credential's, even when the request named another).
    pub agent: Option<String>,
    /// Where that agent came from.
    pub source: Option<AgentSource>,
    /// The request named an agent other than its credential's: refused at step 2.
    pub mismatch: Option<AgentMismatch>,
}

impl Who {
    /// Resolves the call's agent from the credential, then the request.
    pub fn of(gate: &Gate, principal: &Principal, req: &CallRequest) -> Self {
        match gate.config.agents.acting(principal, req.agent.as_deref()) {
            Ok(Some(acting)) => Self { agent: Some(acting.agent), source: Some(acting.source), mismatch: None },
            Ok(None) => Self::default(),
            Err(mismatch) => Self {
                agent: Some(mismatch.credential.clone()),
                source: Some(mismatch.source),
                mismatch: Some(mismatch),
            },
        }
    }

    /// Whether the credential itself names the agent (claim or binding).
    pub fn by_credential(&self) -> bool {
        self.source.is_some_and(AgentSource::by_credential)
    }

    /// Whom taint follows beyond the run: the credential's agent, else the subject (an agent
    /// only the request named is the caller's word, so it never decides whose taint this is).
    pub fn actor(&self, principal: &Principal) -> String {
        match (&self.agent, self.by_credential()) {
            (Some(agent), true) => format!("agent:{agent}"),
            _ => format!("subject:{}", principal.subject),
        }
    }

    /// Step 2's refusal of a request naming another agent than its credential's.
    pub fn mismatch(&self) -> Result<(), Rejection> {
        match &self.mismatch {
            None => Ok(()),
            Some(m) => Err(Rejection::new(Code::AgentMismatch, m.message()).with_detail(json!({
                "agent": m.credential,
                "agent_source": m.source.as_str(),
            }))),
        }
    }

    /// `[identity] require_agent`: a change needs a credential that names its agent.
    pub fn required_for(&self, gate: &Gate, tool: &ToolContract) -> Result<(), Rejection> {
        if gate.config.identity.require_agent && tool.mode == Mode::Change && !self.by_credential() {
            return Err(Rejection::new(
                Code::AgentRequired,
                format!(
                    "`{}` changes a system and this server requires the credential to name its agent: use a token \
                     with an `agent` claim, or bind the subject in [[agents]] principals",
                    tool.name
                ),
            ));
        }
        Ok(())
    }
}

impl Gate {
    /// Whom taint recorded for `principal` outside a gate call follows (a node that read a
    /// document): its credential's agent, else its subject; `None` with a zero `[taint] window`.
    pub fn taint_actor(&self, principal: &Principal) -> Option<String> {
        if self.config.taint.window.is_zero() {
            return None;
        }
        let who = Who::of(self, principal, &CallRequest::default());
        Some(who.actor(principal))
    }
}
