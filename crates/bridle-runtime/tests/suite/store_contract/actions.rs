//! The automatic-change ledger (`[levels] auto_limit`): a sliding window per tenant and
//! resource, and admissions that never pass the limit, also when many race.

use anyhow::ensure;
use bridle_runtime::store::Stores;
use std::time::Duration as StdDuration;

use super::secs;

const HOUR: StdDuration = StdDuration::from_secs(3600);

pub async fn auto_window_slides_per_tenant_and_resource(stores: Stores) -> anyhow::Result<()> {
    let l = &stores.actions;
    for n in 0..3 {
        ensure!(l.admit_auto("fab-1", "equipment:etch-01", secs(n * 60), HOUR, 3).await?, "admission {n}");
    }
    ensure!(!l.admit_auto("fab-1", "equipment:etch-01", secs(600), HOUR, 3).await?, "a fourth within the hour");
    // Other resources and tenants have windows of their own.
    ensure!(l.admit_auto("fab-1", "equipment:cvd-02", secs(600), HOUR, 3).await?);
    ensure!(l.admit_auto("fab-2", "equipment:etch-01", secs(600), HOUR, 3).await?);
    ensure!(l.count_auto("fab-1", "equipment:etch-01", secs(600), HOUR).await? == 3);
    // An hour after the first, it has left the window: one slot is free again, and only one.
    ensure!(l.count_auto("fab-1", "equipment:etch-01", secs(3600), HOUR).await? == 2);
    ensure!(l.admit_auto("fab-1", "equipment:etch-01", secs(3600), HOUR, 3).await?);
    ensure!(!l.admit_auto("fab-1", "equipment:etch-01", secs(3601), HOUR, 3).await?);
    Ok(())
}

pub async fn concurrent_auto_admissions_never_pass_the_limit(stores: Stores) -> anyhow::Result<()> {
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..32 {
        let l = stores.actions.clone();
        tasks.spawn(async move { l.admit_auto("fab-1", "equipment:etch-01", secs(5), HOUR, 3).await });
    }
    let mut admitted = 0;
    while let Some(r) = tasks.join_next().await {
        admitted += usize::from(r??);
    }
    ensure!(admitted == 3, "{admitted} of 32 racing admissions passed a limit of 3");
    Ok(())
}
