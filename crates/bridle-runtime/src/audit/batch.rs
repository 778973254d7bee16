//! Group commit for the audit log: concurrent appends are gathered into one store transaction.
//!
//! Each caller still waits until its own events are committed, so a gate call never answers
//! before its audit event is durable; under load, many calls share one commit.

use std::sync::Arc;

use async_trait::async_trait;
use bridle_core::audit::{AuditEvent, AuditRecord};
use bridle_core::ports::{AuditLog, StoreError, StoreResult};
use tokio::sync::{mpsc, oneshot};

type Reply = oneshot::Sender<StoreResult<Vec<AuditEvent>>>;

/// Requests waiting for the writer before callers are held back.
const QUEUE: usize = 4096;

/// An [`AuditLog`] that batches appends from many tasks into single commits of `inner`.
pub struct BatchingAuditLog {
    inner: Arc<dyn AuditLog>,
    tx: mpsc::Sender<(Vec<AuditRecord>, Reply)>,
}

impl BatchingAuditLog {
    /// Starts the writer task on the current tokio runtime; at most `max_batch` records per commit.
    pub fn start(inner: Arc<dyn AuditLog>, max_batch: usize) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(writer(inner.clone(), rx, max_batch.max(1)));
        Self { inner, tx }
    }
}

async fn writer(inner: Arc<dyn AuditLog>, mut rx: mpsc::Receiver<(Vec<AuditRecord>, Reply)>, max_batch: usize) {
    while let Some(first) = rx.recv().await {
        let mut waiting = vec![first];
        let mut size = waiting.iter().map(|(r, _)| r.len()).sum::<usize>();
        while size < max_batch {
            match rx.try_recv() {
                Ok(next) => {
                    size += next.0.len();
                    waiting.push(next);
                }
                Err(_) => break,
            }
        }
        let counts: Vec<usize> = waiting.iter().map(|(r, _)| r.len()).collect();
        let (records, replies): (Vec<Vec<AuditRecord>>, Vec<Reply>) = waiting.into_iter().unzip();
        let result = inner.append(records.into_iter().flatten().collect()).await;
        match result {
            Ok(events) => {
                let mut events = events.into_iter();
                for (n, reply) in counts.into_iter().zip(replies) {
                    let _ = reply.send(Ok(events.by_ref().take(n).collect()));
                }
            }
            Err(e) => {
                for reply in replies {
                    let _ = reply.send(Err(e.clone()));
                }
            }
        }
    }
}

#[async_trait]
impl AuditLog for BatchingAuditLog {
    async fn append(&self, records: Vec<AuditRecord>) -> StoreResult<Vec<AuditEvent>> {
        let (reply, answer) = oneshot::channel();
        let gone = || StoreError::Unavailable("the audit writer stopped".to_owned());
        self.tx.send((records, reply)).await.map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }

    async fn tenants(&self) -> StoreResult<Vec<String>> {
        self.inner.tenants().await
    }

    async fn events(&self, tenant: &str, after: u64, limit: u32) -> StoreResult<Vec<AuditEvent>> {
        self.inner.events(tenant, after, limit).await
    }

    async fn prune_evidence(&self, before: time::OffsetDateTime) -> StoreResult<u64> {
        self.inner.prune_evidence(before).await
    }
    async fn heads(&self) -> StoreResult<Vec<bridle_core::audit::head::ChainHead>> {
        self.inner.heads().await
    }
}
