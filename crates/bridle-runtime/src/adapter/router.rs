//! The router adapter: sends each call to the adapter that serves its tool — the in-process
//! tools to the built-in adapter, every other tool to the fallback (the memory adapter in the
//! demo, `bridle check` and tests).

use std::sync::Arc;

use async_trait::async_trait;
use bridle_core::job::Job;
use bridle_core::ports::{Adapter, AdapterCall, AdapterError, Outcome};
use serde_json::Value;

use super::BuiltinAdapter;

/// Routes in-process tools to the built-in adapter and everything else to another.
#[derive(Clone)]
pub struct RouterAdapter {
    builtin: Arc<BuiltinAdapter>,
    fallback: Arc<dyn Adapter>,
}

impl RouterAdapter {
    /// The tools `builtin` serves go to it, the rest to `fallback`.
    pub fn new(builtin: Arc<BuiltinAdapter>, fallback: Arc<dyn Adapter>) -> Self {
        Self { builtin, fallback }
    }

    fn pick(&self, tool: &str) -> &dyn Adapter {
        if self.builtin.serves(tool) { self.builtin.as_ref() } else { self.fallback.as_ref() }
    }
}

#[async_trait]
impl Adapter for RouterAdapter {
    async fn read(&self, call: &AdapterCall) -> Result<Value, AdapterError> {
        self.pick(&call.tool).read(call).await
    }

    async fn change(&self, call: &AdapterCall) -> Result<Value, AdapterError> {
        self.pick(&call.tool).change(call).await
    }

    async fn outcome(&self, job: &Job) -> Result<Outcome, AdapterError> {
        self.pick(&job.plan.tool).outcome(job).await
    }
}
