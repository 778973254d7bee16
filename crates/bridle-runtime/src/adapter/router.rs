//! The router adapter: sends each call to the adapter that serves its tool — the built-in
//! workbench tools to the built-in adapter, every other tool to the fallback (the memory
//! adapter in the demo, `bridle check` and tests).

use std::sync::Arc;

use async_trait::async_trait;
use bridle_core::job::Job;
use bridle_core::ports::{Adapter, AdapterCall, AdapterError, Outcome};
use bridle_core::tools;
use serde_json::Value;

/// Routes built-in tools to one adapter and everything else to another.
#[derive(Clone)]
pub struct RouterAdapter {
    builtin: Arc<dyn Adapter>,
    fallback: Arc<dyn Adapter>,
}

impl RouterAdapter {
    /// Built-in tools go to `builtin`, the rest to `fallback`.
    pub fn new(builtin: Arc<dyn Adapter>, fallback: Arc<dyn Adapter>) -> Self {
        Self { builtin, fallback }
    }

    fn pick(&self, tool: &str) -> &Arc<dyn Adapter> {
        if tools::is_builtin(tool) { &self.builtin } else { &self.fallback }
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
