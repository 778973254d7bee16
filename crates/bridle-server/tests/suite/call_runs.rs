//! `POST /v1/calls` and the runs the server keeps: a call without a run id gets one minted (the
//! calls of one answer share it), and a run is its first subject's.

use serde_json::json;

use super::support::{app, post, token, token_for};

#[tokio::test]
async fn a_call_without_a_run_gets_one_and_the_calls_of_one_answer_share_it() {
    let app = app().await;
    let me = token("requester-1");
    let read = json!({"tool": "get_service_snapshot", "arguments": {"service": "checkout"}});
    let (status, first) = post(&app, "/v1/calls", Some(&me), &read).await;
    assert_eq!(status, 200);
    let minted = first["run_id"].as_str().unwrap().to_owned();
    assert!(minted.starts_with("run-"), "{first}");
    let (_, second) = post(&app, "/v1/calls", Some(&me), &read).await;
    assert_ne!(second["run_id"], first["run_id"], "each request without a run id opens its own");

    let call = r#"{"tool": "get_service_snapshot", "arguments": {"service": "checkout"}}"#;
    let answer = json!({"answer": format!("[{call}, {call}]")});
    let (_, both) = post(&app, "/v1/calls", Some(&me), &answer).await;
    let runs: Vec<_> = both["calls"].as_array().unwrap().iter().map(|c| c["run_id"].clone()).collect();
    assert_eq!(runs.len(), 2, "{both}");
    assert_eq!(runs[0], runs[1], "one answer, one run");

    // The minted run is the requester's: a colleague naming it is refused.
    let colleague = token_for("requester-9", "tenant-a", &["checkout"], &["service:read"]);
    let mut theirs = read.clone();
    theirs["run_id"] = json!(minted);
    let (_, refused) = post(&app, "/v1/calls", Some(&colleague), &theirs).await;
    assert_eq!(refused["rejection"]["code"], "run_not_owned", "{refused}");
}
