//! Serving the router on a socket until Ctrl-C or SIGTERM, then draining open requests. The
//! caller (`bridle serve`) shuts the runtime down once this returns.
//!
//! Connections are served by hyper's HTTP/1.1 server with its own limits set far above Bridle's
//! (`limits.rs` checks the request head and answers in the error shape): hyper answers a request
//! head it cannot parse with an empty body, so its limits must only ever be reached by heads
//! that are not requests at all or are past [`HYPER_MAX_HEAD_BYTES`], [`HYPER_MAX_HEADERS`] or its
//! fixed 65,534-byte URI bound.

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Default listen address of `bridle serve`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// hyper's read buffer, which bounds a request head: far above `limits.rs`'s URI and header
/// limits (8 KiB + 64 KiB), so those answer first, in the error shape; a little above hyper's own
/// default (408 KiB), as it is also the most a connection buffers.
pub const HYPER_MAX_HEAD_BYTES: usize = 512 * 1024;

/// Header lines hyper parses before it refuses on its own (its default, 100, is Bridle's limit).
pub const HYPER_MAX_HEADERS: usize = 1024;

/// Serves `router` on `listener` until `shutdown` resolves, then lets open requests finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.max_buf_size(HYPER_MAX_HEAD_BYTES).max_headers(HYPER_MAX_HEADERS);
    // Told to stop accepting: connections finish their request in flight, then close.
    let (stop_tx, stop_rx) = watch::channel(());
    // Every connection task holds a receiver; all dropped means all connections are done.
    let (done_tx, done_rx) = watch::channel(());
    let mut shutdown = pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    accept_failed(&e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let connection = builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(router.clone()));
        let mut stop = stop_rx.clone();
        let done = done_rx.clone();
        tokio::spawn(async move {
            let mut connection = pin!(connection);
            tokio::select! {
                result = connection.as_mut() => log_end(result),
                _ = stop.changed() => {
                    connection.as_mut().graceful_shutdown();
                    log_end(connection.await);
                }
            }
            drop(done);
        });
    }
    drop(listener);
    // Receivers still exist (each connection's and ours), so this only fails if none do.
    let _ = stop_tx.send(());
    drop((stop_rx, done_rx));
    done_tx.closed().await;
    Ok(())
}

fn log_end(result: Result<(), hyper::Error>) {
    if let Err(e) = result {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}

/// A failed `accept`: a connection that went away before it was accepted is skipped; anything
/// else (out of file descriptors) is logged and waited out, as accepting at once would fail again.
async fn accept_failed(e: &std::io::Error) {
    use std::io::ErrorKind as K;
    if matches!(e.kind(), K::ConnectionAborted | K::ConnectionReset | K::ConnectionRefused | K::Interrupted) {
        return;
    }
    tracing::warn!(error = %e, "accepting a connection failed; retrying in 1 s");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// Resolves on Ctrl-C, or SIGTERM on Unix.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}
