//! A manual clock for the demo and tests: time moves only when told.

use std::sync::Mutex;

use bridle_core::ports::Clock;
use time::OffsetDateTime;

/// A clock set by hand.
#[derive(Debug)]
pub struct ManualClock(Mutex<OffsetDateTime>);

impl ManualClock {
    /// A clock at `at`.
    pub fn new(at: OffsetDateTime) -> Self {
        Self(Mutex::new(at))
    }

    /// Moves the clock to `at`.
    pub fn set(&self, at: OffsetDateTime) {
        if let Ok(mut now) = self.0.lock() {
            *now = at;
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> OffsetDateTime {
        self.0.lock().map_or(OffsetDateTime::UNIX_EPOCH, |n| *n)
    }
}
