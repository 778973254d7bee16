//! The engine builder: the one way to get a [`Gate`] (outside the gate's own unit tests). It
//! assembles the gate and, over the same parts, the services beside it — the approval desk, the
//! reconciler and the kill switch service — so that each owns exactly what it needs and the gate
//! stays the call path.
//!
//! Every gate gets the guard facade as its step-4 scanner ([`crate::guard::Guard`], limits from
//! `[guard]`), step 11's output guard from the same section, and the kill-switch cache bound of
//! `[kill_switch] cache`; a notifier, when given, is told of the requests the gate and the desk
//! create.

use std::sync::Arc;

use bridle_core::config::Config;
use bridle_core::guard::GuardError;
use bridle_core::ports::{Adapter, ArgumentScanner, Clock, SystemClock};

use crate::approvals::ApprovalDesk;
use crate::gate::output::OutputGuard;
use crate::gate::run_state::KillCache;
use crate::gate::{Gate, GateParts};
use crate::guard::Guard;
use crate::jobs::Reconciler;
use crate::kill::KillService;
use crate::notify::ApprovalNotifier;
use crate::store::Stores;

/// The gate and the services beside it, over one configuration, store set, adapter and clock.
#[derive(Clone)]
pub struct Engine {
    /// Decides and runs calls.
    pub gate: Gate,
    /// Grants and rejects approval requests.
    pub desk: ApprovalDesk,
    /// Settles jobs whose outcome is unknown.
    pub reconciler: Reconciler,
    /// Sets and lifts kill switches.
    pub kills: KillService,
}

impl Engine {
    /// A builder over `config`, `stores` and `adapter` (system clock, the guard's scanner, no
    /// notifier until set).
    pub fn builder(config: Arc<Config>, stores: Stores, adapter: Arc<dyn Adapter>) -> EngineBuilder {
        EngineBuilder { config, stores, adapter, clock: Arc::new(SystemClock), scanner: None, notifier: None }
    }
}

/// Assembles an [`Engine`].
#[must_use]
pub struct EngineBuilder {
    config: Arc<Config>,
    stores: Stores,
    adapter: Arc<dyn Adapter>,
    clock: Arc<dyn Clock>,
    scanner: Option<Arc<dyn ArgumentScanner>>,
    notifier: Option<Arc<dyn ApprovalNotifier>>,
}

impl EngineBuilder {
    /// Uses this clock (default: the system's).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Tells `notifier` of every pending approval request the gate or the desk creates (in the
    /// background: it never blocks or fails the call).
    pub fn notifier(mut self, notifier: Arc<dyn ApprovalNotifier>) -> Self {
        self.notifier = Some(notifier);
        self
    }

    /// Replaces the guard as the step-4 scanner (a test's probe).
    pub fn scanner(mut self, scanner: Arc<dyn ArgumentScanner>) -> Self {
        self.scanner = Some(scanner);
        self
    }

    /// The engine. Fails only when the guard's built-in rules do not compile.
    pub fn build(self) -> Result<Engine, GuardError> {
        let Self { config, stores, adapter, clock, scanner, notifier } = self;
        let scanner = match scanner {
            Some(s) => s,
            None => Arc::new(Guard::from_settings(&config.guard)?),
        };
        let output = Arc::new(OutputGuard::new(&config.guard));
        let kill_cache = Arc::new(KillCache::new(config.kill_switch.cache));
        let desk = ApprovalDesk::new(config.clone(), stores.clone(), clock.clone(), adapter.clone(), notifier.clone());
        let reconciler =
            Reconciler::new(config.clone(), stores.clone(), clock.clone(), adapter.clone(), output.clone());
        let kills = KillService::new(config.clone(), stores.clone(), clock.clone(), kill_cache.clone());
        let gate = Gate::assemble(GateParts { config, stores, adapter, clock, scanner, output, notifier, kill_cache });
        Ok(Engine { gate, desk, reconciler, kills })
    }

    /// The engine's gate alone (a caller that grants, reconciles and kills nothing).
    pub fn gate(self) -> Result<Gate, GuardError> {
        Ok(self.build()?.gate)
    }
}
