//! Bridle's HTTP surface. For now only the health route that every deployment probes; the
//! API, authentication and the MCP server arrive on top of this router.

use axum::{Json, Router, routing::get};
use serde_json::{Value, json};

/// The router served by `bridle serve`.
pub fn router() -> Router {
    Router::new().route("/healthz", get(healthz))
}

async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")}))
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    #[tokio::test]
    async fn healthz_answers_without_a_token() -> Result<(), Box<dyn std::error::Error>> {
        let response = super::router().oneshot(Request::get("/healthz").body(Body::empty())?).await?;
        assert_eq!(response.status(), StatusCode::OK);
        let missing = super::router().oneshot(Request::get("/v1/nothing").body(Body::empty())?).await?;
        assert_eq!(missing.status(), StatusCode::NOT_FOUND);
        Ok(())
    }
}
