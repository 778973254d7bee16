//! The operator console: plain HTML, CSS and JavaScript modules embedded in the binary and served
//! at `/` (the page) and `/console/*` (its assets) without a token. Only these static files are
//! open; every piece of data the page shows comes from the `/v1` API with the bearer token the
//! operator pastes in. It holds no domain rule and no data of its own.
//!
//! Every answer carries a strict Content-Security-Policy (scripts, styles and connections from
//! this origin only, no inline script), `nosniff`, no referrer, and an `ETag` that is the asset's
//! content hash with `Cache-Control: no-cache`, so a browser revalidates and gets `304` until a
//! new binary serves other bytes.

use std::sync::LazyLock;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::AppState;
use crate::error::ApiError;

/// The policy sent with every console answer.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'; object-src 'none'";

/// One embedded file: its path under `/console/` (`""` for the page), type and bytes (text
/// files and the vendored KaTeX fonts alike).
struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($path:expr, $type:expr) => {
        Asset { path: $path, content_type: $type, body: include_bytes!(concat!("../console/", $path)) }
    };
}

/// A KaTeX font (`console/vendor/katex/fonts/`, woff2 only).
macro_rules! font {
    ($name:literal) => {
        asset!(concat!("vendor/katex/fonts/KaTeX_", $name, ".woff2"), WOFF2)
    };
}

const JS: &str = "text/javascript; charset=utf-8";
const WOFF2: &str = "font/woff2";

/// Every file the console consists of.
static ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("app.css", "text/css; charset=utf-8"),
    asset!("icon.svg", "image/svg+xml"),
    asset!("app.js", JS),
    asset!("api.js", JS),
    asset!("i18n.js", JS),
    asset!("ui.js", JS),
    asset!("chart.js", JS),
    asset!("approvals.js", JS),
    asset!("runs.js", JS),
    asset!("decisions.js", JS),
    asset!("drift.js", JS),
    asset!("workbench.js", JS),
    asset!("kill.js", JS),
    asset!("chat.js", JS),
    asset!("replay.js", JS),
    // KaTeX 0.16.9 (MIT; `console/vendor/katex/README.md`), for the workbench's formulas.
    asset!("vendor/katex/katex.min.js", JS),
    asset!("vendor/katex/katex.min.css", "text/css; charset=utf-8"),
    font!("AMS-Regular"),
    font!("Caligraphic-Bold"),
    font!("Caligraphic-Regular"),
    font!("Fraktur-Bold"),
    font!("Fraktur-Regular"),
    font!("Main-Bold"),
    font!("Main-BoldItalic"),
    font!("Main-Italic"),
    font!("Main-Regular"),
    font!("Math-BoldItalic"),
    font!("Math-Italic"),
    font!("SansSerif-Bold"),
    font!("SansSerif-Italic"),
    font!("SansSerif-Regular"),
    font!("Script-Regular"),
    font!("Size1-Regular"),
    font!("Size2-Regular"),
    font!("Size3-Regular"),
    font!("Size4-Regular"),
    font!("Typewriter-Regular"),
];

/// Each asset's `ETag` (a quoted 64-bit FNV-1a hash of its bytes), in [`ASSETS`] order.
static ETAGS: LazyLock<Vec<String>> =
    LazyLock::new(|| ASSETS.iter().map(|a| format!("\"{:016x}\"", fnv1a(a.body))).collect());

/// 64-bit FNV-1a: enough to tell two builds' bytes apart for caching, not a security hash.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// The console's routes (no authentication). `/approvals/{id}` is the page too: it is the
/// `approval_url` an MCP client is given (`mcp/result.rs`), and the page opens that request.
pub fn routes() -> Router<AppState> {
    Router::new().route("/", get(index)).route("/approvals/{id}", get(index)).route("/console/{*path}", get(file))
}

async fn index(headers: HeaderMap) -> Response {
    serve("index.html", &headers)
}

async fn file(Path(path): Path<String>, headers: HeaderMap) -> Response {
    serve(&path, &headers)
}

fn serve(path: &str, headers: &HeaderMap) -> Response {
    let Some((i, asset)) = ASSETS.iter().enumerate().find(|(_, a)| a.path == path) else {
        return ApiError::not_found(format!("no console file `{path}`")).into_response();
    };
    let etag = ETAGS.get(i).cloned().unwrap_or_default();
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut response = if fresh { StatusCode::NOT_MODIFIED.into_response() } else { asset.body.into_response() };
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    response
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_has_a_distinct_path_and_a_hash() {
        let mut paths: Vec<_> = ASSETS.iter().map(|a| a.path).collect();
        paths.sort_unstable();
        paths.dedup();
        assert_eq!(paths.len(), ASSETS.len());
        assert_eq!(ETAGS.len(), ASSETS.len());
        assert!(ETAGS.iter().all(|e| e.len() == 18 && e.starts_with('"')));
    }

    #[test]
    fn fnv1a_matches_its_reference_values() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn no_page_carries_an_inline_script_or_an_outside_address() {
        for a in ASSETS.iter().filter(|a| a.content_type != WOFF2) {
            let body = std::str::from_utf8(a.body).unwrap();
            if a.path.ends_with(".html") {
                for (i, _) in body.match_indices("<script") {
                    let tag = &body[i..body[i..].find('>').map_or(body.len(), |e| i + e)];
                    assert!(tag.contains("src="), "{}: inline script {tag}", a.path);
                }
            }
            // XML namespace names (SVG, MathML) are names, not addresses anything loads.
            let body = body.replace("http://www.w3.org/", "");
            assert!(!body.contains("http://") && !body.contains("https://"), "{}: outside address", a.path);
        }
    }

    #[test]
    fn katex_stylesheet_finds_every_woff2_font_it_names() {
        let css = ASSETS.iter().find(|a| a.path == "vendor/katex/katex.min.css").map(|a| a.body).unwrap();
        let css = std::str::from_utf8(css).unwrap();
        let named: Vec<&str> =
            css.split("url(").skip(1).filter_map(|u| u.split(')').next()).filter(|u| u.ends_with(".woff2")).collect();
        assert_eq!(named.len(), 20);
        for url in named {
            let path = format!("vendor/katex/{url}");
            let font = ASSETS.iter().find(|a| a.path == path).unwrap_or_else(|| panic!("{path} is not embedded"));
            assert!(font.body.starts_with(b"wOF2"), "{path} is not a woff2 file");
        }
    }
}
