//! The in-memory adapter (seed 004's fake, done properly): resources as JSON objects keyed by
//! tenant and resource name, compare-and-set on `resource_version` under one lock, identities
//! checked per operation, and injectable faults (a lost response, a timeout) for tests.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use bridle_core::config::Config;
use bridle_core::contract::Mode;
use bridle_core::job::Job;
use bridle_core::ports::{Adapter, AdapterCall, AdapterError, Outcome};
use serde_json::Value;

/// The field compared and bumped on every change.
pub const VERSION_FIELD: &str = "resource_version";

/// A fault to inject into the next change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Apply the change, then lose the response.
    LoseResponse,
    /// Do not answer within this long (the gate's timeout fires first).
    Stall(Duration),
    /// Refuse the change.
    Fail,
}

#[derive(Default)]
struct State {
    resources: HashMap<(String, String), Value>,
    applied: HashMap<String, Value>,
    faults: Vec<Fault>,
    changes: u64,
}

/// In-memory resources with per-identity access.
pub struct MemoryAdapter {
    /// tool → (mode, resource parameter)
    tools: HashMap<String, (Mode, Option<String>)>,
    read_identities: BTreeSet<String>,
    change_identities: BTreeSet<String>,
    state: Mutex<State>,
}

impl MemoryAdapter {
    /// An adapter for the config's tools, seeded with its `[[adapter.memory]]` resources.
    pub fn from_config(config: &Config) -> Self {
        let tools = config
            .registry
            .iter()
            .map(|t| (t.name.clone(), (t.mode, t.resource.as_ref().map(|r| r.param.clone()))))
            .collect();
        let ids = |mode| config.executors.values().filter(|e| e.mode == mode).map(|e| e.name.clone()).collect();
        let resources =
            config.memory_adapter.iter().map(|r| ((r.tenant.clone(), r.key.clone()), r.state.clone())).collect();
        Self {
            tools,
            read_identities: ids(Mode::Read),
            change_identities: ids(Mode::Change),
            state: Mutex::new(State { resources, ..State::default() }),
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>, AdapterError> {
        self.state.lock().map_err(|_| AdapterError::Failed("adapter state poisoned".to_owned()))
    }

    /// Queues a fault for a coming change (first in, first out).
    pub fn inject(&self, fault: Fault) {
        if let Ok(mut s) = self.state.lock() {
            s.faults.push(fault);
        }
    }

    /// Current state of a resource.
    pub fn snapshot(&self, tenant: &str, key: &str) -> Option<Value> {
        self.state.lock().ok()?.resources.get(&(tenant.to_owned(), key.to_owned())).cloned()
    }

    /// How many changes were applied.
    pub fn changes_applied(&self) -> u64 {
        self.state.lock().map(|s| s.changes).unwrap_or(0)
    }

    fn resource_key(&self, call: &AdapterCall, mode: Mode) -> Result<(String, String), AdapterError> {
        let (tool_mode, param) =
            self.tools.get(&call.tool).ok_or_else(|| AdapterError::Failed(format!("no tool `{}`", call.tool)))?;
        if *tool_mode != mode {
            return Err(AdapterError::Failed(format!("`{}` is not a {} tool", call.tool, mode.as_str())));
        }
        let allowed = match mode {
            Mode::Read => &self.read_identities,
            Mode::Change => &self.change_identities,
        };
        if !allowed.contains(&call.identity) {
            return Err(AdapterError::IdentityRejected(call.identity.clone()));
        }
        let name = param.as_ref().and_then(|p| call.arguments.get(p)).and_then(Value::as_str).unwrap_or(&call.tenant);
        Ok((call.tenant.clone(), name.to_owned()))
    }
}

#[async_trait]
impl Adapter for MemoryAdapter {
    async fn read(&self, call: &AdapterCall) -> Result<Value, AdapterError> {
        let key = self.resource_key(call, Mode::Read)?;
        let state = self.lock()?;
        state.resources.get(&key).cloned().ok_or_else(|| AdapterError::Failed(format!("no resource `{}`", key.1)))
    }

    async fn change(&self, call: &AdapterCall) -> Result<Value, AdapterError> {
        let key = self.resource_key(call, Mode::Change)?;
        let param = self.tools.get(&call.tool).and_then(|(_, p)| p.clone());
        let (result, fault) = {
            let mut state = self.lock()?;
            let fault = if state.faults.is_empty() { None } else { Some(state.faults.remove(0)) };
            if fault == Some(Fault::Fail) {
                return Err(AdapterError::Failed("injected failure".to_owned()));
            }
            let current = state
                .resources
                .get_mut(&key)
                .ok_or_else(|| AdapterError::Failed(format!("no resource `{}`", key.1)))?;
            // INVARIANT: the version comparison and the update happen under one lock.
            if let Some(expected) = call.arguments.get(VERSION_FIELD) {
                let actual = current.get(VERSION_FIELD).cloned().unwrap_or(Value::Null);
                if &actual != expected {
                    return Err(AdapterError::VersionChanged {
                        expected: expected.to_string(),
                        actual: actual.to_string(),
                    });
                }
            }
            if let (Value::Object(target), Value::Object(args)) = (&mut *current, &call.arguments) {
                for (k, v) in args {
                    if k != VERSION_FIELD && Some(k) != param.as_ref() {
                        target.insert(k.clone(), v.clone());
                    }
                }
                if let Some(v) = target.get(VERSION_FIELD).and_then(Value::as_i64) {
                    target.insert(VERSION_FIELD.to_owned(), Value::from(v.saturating_add(1)));
                }
            }
            let result = current.clone();
            state.changes += 1;
            if let Some(job) = &call.job_id {
                state.applied.insert(job.clone(), result.clone());
            }
            (result, fault)
        };
        match fault {
            Some(Fault::LoseResponse) => {
                Err(AdapterError::Lost("connection reset after the request was sent".to_owned()))
            }
            Some(Fault::Stall(d)) => {
                tokio::time::sleep(d).await;
                Ok(result)
            }
            _ => Ok(result),
        }
    }

    async fn outcome(&self, job: &Job) -> Result<Outcome, AdapterError> {
        let state = self.lock()?;
        Ok(state.applied.get(&job.id).map_or(Outcome::NotApplied, |r| Outcome::Applied(r.clone())))
    }
}
