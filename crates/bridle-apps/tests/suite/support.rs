//! Shared fixtures: a gate over a configuration with a manual clock and the in-memory adapter.

use std::sync::Arc;

use bridle_core::Principal;
use bridle_core::config::Config;
use bridle_runtime::adapter::MemoryAdapter;
use bridle_runtime::clock::ManualClock;
use bridle_runtime::engine::Engine;
use bridle_runtime::gate::Gate;
use bridle_runtime::store::Stores;
use time::{Duration, OffsetDateTime, macros::datetime};

pub const T0: OffsetDateTime = datetime!(2026-01-01 00:00 UTC);

pub struct H {
    pub gate: Gate,
    pub clock: Arc<ManualClock>,
    pub config: Arc<Config>,
}

impl H {
    pub fn new(config: Config, stores: Stores) -> H {
        let config = Arc::new(config);
        let clock = Arc::new(ManualClock::new(T0 + Duration::seconds(10)));
        let adapter = Arc::new(MemoryAdapter::from_config(&config));
        let gate = Engine::builder(config.clone(), stores, adapter).clock(clock.clone()).build().unwrap().gate;
        H { gate, clock, config }
    }

    pub fn who(&self, name: &str) -> Principal {
        self.config.principals[name].clone()
    }
}
