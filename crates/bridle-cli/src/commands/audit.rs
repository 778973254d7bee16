//! `bridle audit verify|export`.

use std::path::Path;
use std::process::ExitCode;

pub async fn verify(config: Option<&Path>, db: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let config = super::config(config)?;
    let stores = super::stores(&config, db).await?;
    let report = bridle_runtime::audit::verify(stores.audit.as_ref()).await?;
    if json {
        super::out::line(&serde_json::to_string(&report)?)?;
    } else {
        for (tenant, n) in &report.tenants {
            super::out::line(&format!("{tenant}: ok ({n} events)"))?;
        }
        for b in &report.broken {
            super::out::line(&format!("{}: broken at seq {}: {}", b.tenant, b.seq, b.problem))?;
        }
    }
    Ok(if report.ok() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

pub async fn export(config: Option<&Path>, db: Option<&str>, tenant: Option<&str>) -> anyhow::Result<ExitCode> {
    let config = super::config(config)?;
    let stores = super::stores(&config, db).await?;
    for event in bridle_runtime::audit::export(stores.audit.as_ref(), tenant).await? {
        super::out::line(&serde_json::to_string(&event)?)?;
    }
    Ok(ExitCode::SUCCESS)
}
