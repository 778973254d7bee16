//! The fab simulator (`[adapter] simulator = "fab"`): seed 000's equipment as in-memory state,
//! with the fab's own preconditions, standing in for tool controllers Bridle does not own.
//!
//! Each `[[adapter.memory]]` resource is a piece of equipment keyed by its id:
//!
//! ```toml
//! [[adapter.memory]]
//! tenant = "fab-1"
//! key = "etch-01"
//! state = { class = "etch", status = "running", recipe = "ETCH-OX-12", temp_celsius = 380,
//!           gases = { CF4 = 120, O2 = 20 }, parts = ["gas_valve", "vacuum_pump"], resource_version = 1 }
//! ```
//!
//! Tools: `get_recipe {equipment}` (the running recipe's setpoints), `get_equipment {equipment}`
//! (status, parts, changes applied), `set_temperature {equipment, temp_celsius}`,
//! `adjust_gas_flow {equipment, gas, flow_sccm}`, `replace_part {equipment, part}`. The fab
//! refuses on its own, whatever the gate decided: unknown equipment, gas or part; equipment
//! `down`; a setpoint outside the heater's 150–500 °C or a step of more than
//! [`INTERLOCK_DELTA_C`] (the scrap interlock); a flow outside the controller's 0–500 sccm.
//! A job id applied once is answered from memory, never applied twice.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use bridle_core::config::Config;
use bridle_core::contract::Mode;
use bridle_core::job::Job;
use bridle_core::ports::{Adapter, AdapterCall, AdapterError, Outcome};
use serde_json::{Value, json};

/// The heater's own limits (°C).
pub const HEATER_RANGE_C: (f64, f64) = (150.0, 500.0);
/// The scrap interlock: a setpoint step larger than this is refused by the tool itself.
pub const INTERLOCK_DELTA_C: f64 = 5.0;
/// The mass-flow controllers' range (sccm).
pub const MFC_RANGE_SCCM: (f64, f64) = (0.0, 500.0);

#[derive(Default)]
struct State {
    equipment: HashMap<(String, String), Value>,
    applied: HashMap<String, Value>,
    log: Vec<Value>,
}

/// Seed 000's fab, in memory.
pub struct FabAdapter {
    read_identities: BTreeSet<String>,
    change_identities: BTreeSet<String>,
    state: Mutex<State>,
}

fn refuse(why: impl Into<String>) -> AdapterError {
    AdapterError::Failed(format!("fab refused: {}", why.into()))
}

fn arg<'a>(call: &'a AdapterCall, name: &str) -> Result<&'a Value, AdapterError> {
    call.arguments.get(name).ok_or_else(|| refuse(format!("`{name}` is missing")))
}

fn number(call: &AdapterCall, name: &str) -> Result<f64, AdapterError> {
    arg(call, name)?.as_f64().ok_or_else(|| refuse(format!("`{name}` is not a number")))
}

fn text<'a>(call: &'a AdapterCall, name: &str) -> Result<&'a str, AdapterError> {
    arg(call, name)?.as_str().ok_or_else(|| refuse(format!("`{name}` is not a string")))
}

impl FabAdapter {
    /// The fab of `config`'s `[[adapter.memory]]` resources and executor identities.
    pub fn from_config(config: &Config) -> Self {
        let ids = |mode| config.executors.values().filter(|e| e.mode == mode).map(|e| e.name.clone()).collect();
        let equipment =
            config.memory_adapter.iter().map(|r| ((r.tenant.clone(), r.key.clone()), r.state.clone())).collect();
        Self {
            read_identities: ids(Mode::Read),
            change_identities: ids(Mode::Change),
            state: Mutex::new(State { equipment, ..State::default() }),
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>, AdapterError> {
        self.state.lock().map_err(|_| AdapterError::Failed("fab state poisoned".to_owned()))
    }

    /// The current state of a piece of equipment.
    pub fn equipment(&self, tenant: &str, id: &str) -> Option<Value> {
        self.state.lock().ok()?.equipment.get(&(tenant.to_owned(), id.to_owned())).cloned()
    }

    /// Every change applied, in order (`{job_id, tool, equipment, arguments}`).
    pub fn applied(&self) -> Vec<Value> {
        self.state.lock().map(|s| s.log.clone()).unwrap_or_default()
    }

    fn identity(&self, call: &AdapterCall, mode: Mode) -> Result<(), AdapterError> {
        let allowed = match mode {
            Mode::Read => &self.read_identities,
            Mode::Change => &self.change_identities,
        };
        if allowed.contains(&call.identity) {
            Ok(())
        } else {
            Err(AdapterError::IdentityRejected(call.identity.clone()))
        }
    }
}

/// Applies `call` to `eq` after the fab's preconditions; the result returned to the gate.
fn apply(call: &AdapterCall, eq: &mut Value) -> Result<Value, AdapterError> {
    if eq.get("status").and_then(Value::as_str) == Some("down") {
        return Err(refuse("the equipment is down"));
    }
    let Value::Object(fields) = eq else { return Err(refuse("the equipment record is not an object")) };
    match call.tool.as_str() {
        "set_temperature" => {
            let target = number(call, "temp_celsius")?;
            if !(HEATER_RANGE_C.0..=HEATER_RANGE_C.1).contains(&target) {
                return Err(refuse(format!("{target} °C is outside the heater's range")));
            }
            let current = fields.get("temp_celsius").and_then(Value::as_f64).unwrap_or(target);
            if (target - current).abs() > INTERLOCK_DELTA_C {
                return Err(refuse(format!("a step from {current} to {target} °C trips the scrap interlock")));
            }
            fields.insert("temp_celsius".to_owned(), arg(call, "temp_celsius")?.clone());
        }
        "adjust_gas_flow" => {
            let gas = text(call, "gas")?;
            let flow = number(call, "flow_sccm")?;
            if !(MFC_RANGE_SCCM.0..=MFC_RANGE_SCCM.1).contains(&flow) {
                return Err(refuse(format!("{flow} sccm is outside the flow controller's range")));
            }
            let gases = fields.get_mut("gases").and_then(Value::as_object_mut).ok_or_else(|| refuse("no gas lines"))?;
            let line = gases.get_mut(gas).ok_or_else(|| refuse(format!("no `{gas}` line on this equipment")))?;
            *line = arg(call, "flow_sccm")?.clone();
        }
        "replace_part" => {
            let part = text(call, "part")?;
            let known = fields
                .get("parts")
                .and_then(Value::as_array)
                .is_some_and(|parts| parts.iter().any(|p| p.as_str() == Some(part)));
            if !known {
                return Err(refuse(format!("no part `{part}` on this equipment")));
            }
            let replaced = fields.entry("replaced").or_insert_with(|| json!([]));
            if let Value::Array(list) = replaced {
                list.push(json!(part));
            }
            fields.insert("status".to_owned(), json!("maintenance"));
        }
        other => return Err(refuse(format!("no change tool `{other}`"))),
    }
    let version = fields.get("resource_version").and_then(Value::as_i64).unwrap_or(0);
    fields.insert("resource_version".to_owned(), json!(version.saturating_add(1)));
    Ok(eq.clone())
}

fn recipe_view(id: &str, eq: &Value) -> Value {
    json!({
        "equipment": id,
        "recipe": eq.get("recipe"),
        "temp_celsius": eq.get("temp_celsius"),
        "gases": eq.get("gases"),
        "resource_version": eq.get("resource_version"),
    })
}

#[async_trait]
impl Adapter for FabAdapter {
    async fn read(&self, call: &AdapterCall) -> Result<Value, AdapterError> {
        self.identity(call, Mode::Read)?;
        let id = text(call, "equipment")?;
        let state = self.lock()?;
        let eq = state
            .equipment
            .get(&(call.tenant.clone(), id.to_owned()))
            .ok_or_else(|| refuse(format!("no equipment `{id}`")))?;
        match call.tool.as_str() {
            "get_recipe" => Ok(recipe_view(id, eq)),
            "get_equipment" => {
                let mut view = eq.clone();
                if let Value::Object(m) = &mut view {
                    m.insert("equipment".to_owned(), json!(id));
                }
                Ok(view)
            }
            other => Err(refuse(format!("no read tool `{other}`"))),
        }
    }

    async fn change(&self, call: &AdapterCall) -> Result<Value, AdapterError> {
        self.identity(call, Mode::Change)?;
        let id = text(call, "equipment")?.to_owned();
        let mut state = self.lock()?;
        if let Some(done) = call.job_id.as_ref().and_then(|j| state.applied.get(j)) {
            return Ok(done.clone());
        }
        let eq = state
            .equipment
            .get_mut(&(call.tenant.clone(), id.clone()))
            .ok_or_else(|| refuse(format!("no equipment `{id}`")))?;
        let result = apply(call, eq)?;
        state.log.push(json!({
            "job_id": call.job_id,
            "tool": call.tool,
            "equipment": id,
            "arguments": call.arguments,
        }));
        if let Some(job) = &call.job_id {
            state.applied.insert(job.clone(), result.clone());
        }
        Ok(result)
    }

    async fn outcome(&self, job: &Job) -> Result<Outcome, AdapterError> {
        let state = self.lock()?;
        Ok(state.applied.get(&job.id).map_or(Outcome::NotApplied, |r| Outcome::Applied(r.clone())))
    }
}
