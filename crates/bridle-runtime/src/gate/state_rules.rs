//! Gate step 6: rules that need current state (`max_delta`), read with the read tool's own
//! identity. Runs only after policy allowed the call.

use std::time::Instant;

use bridle_core::contract::{ToolContract, read_field};
use bridle_core::plan::Plan;
use bridle_core::ports::{Adapter, AdapterCall};
use bridle_core::{Code, Rejection};
use serde_json::{Map, Value, json};

use super::trace::Trace;
use super::{Gate, Stop, elapsed_us};

pub(super) async fn check(
    gate: &Gate,
    plan: &Plan,
    tool: &ToolContract,
    args: &Value,
    t: &mut Trace,
) -> Result<(), Stop> {
    for (param, rule) in &tool.params {
        let (Some(delta), Some(new)) = (&rule.max_delta, args.get(param).and_then(Value::as_f64)) else { continue };
        let unavailable = |why: String| Rejection::new(Code::StateUnavailable, why);
        let reader = gate
            .config
            .registry
            .get(&delta.read_tool)
            .ok_or_else(|| unavailable(format!("read tool `{}` is not registered", delta.read_tool)))?;
        let started = Instant::now();
        let read = read_state(gate.adapter.as_ref(), plan, reader, args).await;
        t.adapter_us += elapsed_us(started);
        let state = match read {
            Ok(state) => state,
            Err(ReadFailure::Adapter(e)) => {
                return Err(unavailable(format!("cannot read the current `{param}`: {e}")).into());
            }
            Err(ReadFailure::Timeout) => {
                return Err(unavailable(format!("reading the current `{param}` timed out")).into());
            }
        };
        let Some(current) = read_field(&state, &delta.field) else {
            return Err(unavailable(format!("the current state has no numeric `{}`", delta.field)).into());
        };
        if (new - current).abs() > delta.value {
            return Err(Rejection::new(
                Code::DeltaTooLarge,
                format!("`{param}` would move from {current} to {new}; at most {} at a time", delta.value),
            )
            .with_detail(json!({"param": param, "current": current, "proposed": new, "max_delta": delta.value}))
            .into());
        }
    }
    Ok(())
}

/// Why a state read failed.
pub(crate) enum ReadFailure {
    /// The adapter answered with an error.
    Adapter(bridle_core::ports::AdapterError),
    /// No answer within the read tool's timeout.
    Timeout,
}

/// Reads the current state with read tool `reader` under its own executor identity, in
/// the plan's tenant and run. The read call takes the change call's values for the read tool's
/// own parameters.
pub(crate) async fn read_state(
    adapter: &dyn Adapter,
    plan: &Plan,
    reader: &ToolContract,
    args: &Value,
) -> Result<Value, ReadFailure> {
    let props = reader.schema.source().get("properties").and_then(Value::as_object);
    let read_args: Map<String, Value> = args
        .as_object()
        .map(|a| {
            a.iter()
                .filter(|(k, _)| props.is_some_and(|p| p.contains_key(*k)))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    let call = AdapterCall {
        tool: reader.name.clone(),
        tenant: plan.tenant.clone(),
        subject: plan.subject.clone(),
        run_id: plan.run_id.clone(),
        incident: plan.incident.clone(),
        arguments: Value::Object(read_args),
        identity: reader.executor.clone(),
        job_id: None,
    };
    match tokio::time::timeout(reader.timeout, adapter.read(&call)).await {
        Ok(Ok(state)) => Ok(state),
        Ok(Err(e)) => Err(ReadFailure::Adapter(e)),
        Err(_) => Err(ReadFailure::Timeout),
    }
}
