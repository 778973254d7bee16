//! `bridle audit export --jsonl | verify --file | prune`: an export verifies offline and names
//! the line and seq of a tampered event; retention drops evidence and every chain still verifies;
//! `[audit] evidence = "metadata_only"` stores no reasons.

use super::support::{bridle, bridle_env, copy_example, text};

/// A demo run's audit log in an SQLite file of `dir`; returns the store URL.
fn demo_db(dir: &std::path::Path, args: &[&str]) -> String {
    let db = format!("sqlite://{}", dir.join("d.db").display());
    let mut all = vec!["demo", "--db", &db];
    all.extend_from_slice(args);
    let out = bridle(&all, dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    db
}

fn export(dir: &std::path::Path, db: &str) -> String {
    let out = bridle(&["audit", "export", "--jsonl", "--db", db], dir);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn an_export_verifies_offline_and_a_tampered_line_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let db = demo_db(dir.path(), &[]);
    let jsonl = export(dir.path(), &db);
    assert!(jsonl.lines().count() >= 12);
    let file = dir.path().join("audit.jsonl");
    std::fs::write(&file, &jsonl).unwrap();
    let ok = bridle(&["audit", "verify", "--file", file.to_str().unwrap()], dir.path());
    assert!(ok.status.success(), "{}{}", text(&ok.stdout), text(&ok.stderr));
    assert!(text(&ok.stdout).starts_with("tenant-a: ok ("), "{}", text(&ok.stdout));

    // Change one field of line 5 (seq 5 of tenant-a's chain) and nothing else.
    let mut lines: Vec<String> = jsonl.lines().map(str::to_owned).collect();
    let mut event: serde_json::Value = serde_json::from_str(&lines[4]).unwrap();
    assert_eq!(event["seq"], 5);
    event["subject"] = "someone-else".into();
    lines[4] = event.to_string();
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let bad = bridle(&["audit", "verify", "--file", file.to_str().unwrap(), "--json"], dir.path());
    assert!(!bad.status.success());
    let report: serde_json::Value = serde_json::from_slice(&bad.stdout).unwrap();
    let broken = &report["broken"][0];
    assert_eq!((broken["line"].as_u64(), broken["seq"].as_u64()), (Some(5), Some(5)), "{report}");
    assert_eq!(broken["tenant"], "tenant-a");
    let text_out = bridle(&["audit", "verify", "--file", file.to_str().unwrap()], dir.path());
    assert!(text(&text_out.stdout).contains("line 5: tenant-a: broken at seq 5"), "{}", text(&text_out.stdout));

    // A dropped line is named too (the next one's seq does not follow); so is a line that is
    // not an event at all.
    lines.remove(4);
    lines.insert(2, "{not json".to_owned());
    let raw = serde_json::from_str::<serde_json::Value>(jsonl.lines().nth(4).unwrap()).unwrap();
    assert_eq!(raw["seq"], 5);
    std::fs::write(&file, lines.join("\n")).unwrap();
    let bad = bridle(&["audit", "verify", "--file", file.to_str().unwrap(), "--json"], dir.path());
    let report: serde_json::Value = serde_json::from_slice(&bad.stdout).unwrap();
    assert_eq!(report["broken"][0]["line"], 3, "{report}");
    assert!(report["broken"][0]["seq"].is_null());
    assert_eq!((report["broken"][1]["line"].as_u64(), report["broken"][1]["seq"].as_u64()), (Some(6), Some(5)));
}

#[test]
fn prune_drops_evidence_and_every_chain_still_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let db = demo_db(dir.path(), &[]);
    let before = export(dir.path(), &db);
    let with_reason = before.lines().filter(|l| l.contains("\"reason\":\"")).count();
    assert!(with_reason > 0);
    assert!(before.lines().filter(|l| l.contains("\"reason\":\"")).all(|l| l.contains("\"evidence_digest\":")));

    let none = bridle(&["audit", "prune", "--db", &db], dir.path());
    assert!(!none.status.success());
    assert!(text(&none.stderr).contains("--before"), "{}", text(&none.stderr));

    let out = bridle(&["audit", "prune", "--before", "2999-01-01", "--db", &db, "--json"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["pruned"].as_u64(), Some(with_reason as u64), "{report}");
    assert_eq!(report["before"], "2999-01-01T00:00:00Z");

    let verify = bridle(&["audit", "verify", "--db", &db], dir.path());
    assert!(verify.status.success(), "{}", text(&verify.stdout));
    let after = export(dir.path(), &db);
    assert_eq!(after.lines().count(), before.lines().count());
    assert!(!after.contains("\"reason\":\""));
    let file = dir.path().join("pruned.jsonl");
    std::fs::write(&file, &after).unwrap();
    let ok = bridle(&["audit", "verify", "--file", file.to_str().unwrap()], dir.path());
    assert!(ok.status.success(), "{}", text(&ok.stdout));
    assert!(text(&ok.stdout).contains(&format!("{with_reason} with evidence pruned")), "{}", text(&ok.stdout));
}

#[test]
fn metadata_only_stores_no_reasons_and_bad_audit_settings_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    let toml = copy_example(dir.path());
    std::fs::write(dir.path().join("bridle.toml"), format!("{toml}\n[audit]\nevidence = \"metadata_only\"\n")).unwrap();
    let db = demo_db(dir.path(), &["--config", "bridle.toml"]);
    let jsonl = export(dir.path(), &db);
    assert!(jsonl.lines().count() >= 12);
    assert!(!jsonl.contains("\"reason\":\"") && !jsonl.contains("evidence_digest"), "{jsonl}");
    assert!(jsonl.contains("\"code\":\"policy_denied\""));

    std::fs::write(
        dir.path().join("bridle.toml"),
        format!("{toml}\n[audit]\nretention_days = 0\nevidence = \"some\"\n"),
    )
    .unwrap();
    let out = bridle(&["validate", "--config", "bridle.toml"], dir.path());
    assert!(!out.status.success());
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(all.contains("audit.evidence") || all.contains("unknown variant `some`"), "{all}");
    std::fs::write(dir.path().join("bridle.toml"), format!("{toml}\n[audit]\nretention_days = 0\n")).unwrap();
    let out = bridle(&["validate", "--config", "bridle.toml"], dir.path());
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!out.status.success() && all.contains("audit.retention_days"), "{all}");
}

/// The SIEM forms: CEF and RFC 5424 lines, one per event, each with its seq and hashes; a time
/// window; and a syslog collector over TCP getting octet-counted frames.
#[test]
fn an_export_speaks_cef_and_syslog_within_a_window_and_to_a_tcp_collector() {
    let dir = tempfile::tempdir().unwrap();
    let db = demo_db(dir.path(), &[]);
    let jsonl = export(dir.path(), &db);
    let events = jsonl.lines().count();
    let ats: Vec<String> = jsonl
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["at"].as_str().unwrap_or_default().to_owned())
        .collect();
    let (first_at, last_at) = (ats.iter().min().cloned().unwrap(), ats.iter().max().cloned().unwrap());
    let run = |args: &[&str]| {
        let mut all = vec!["audit", "export", "--db", &db];
        all.extend_from_slice(args);
        let out = bridle(&all, dir.path());
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let cef = run(&["--format", "cef"]);
    assert_eq!(cef.lines().count(), events);
    assert!(cef.lines().all(|l| l.starts_with("CEF:0|Bridle|bridle|") && l.contains(" cs4Label=hash cs4=")), "{cef}");
    assert!(cef.contains("externalId=1 "), "{cef}");
    let syslog = run(&["--format", "syslog", "--tenant", "tenant-a"]);
    let first = syslog.lines().next().unwrap_or_default();
    assert!(
        first.starts_with('<') && first.contains(">1 ") && first.contains("[bridle@32473 seq=\"1\" hash=\""),
        "{first}"
    );
    let json = first.split_once("] ").map(|(_, m)| m).unwrap_or_default();
    assert_eq!(serde_json::from_str::<serde_json::Value>(json).unwrap()["seq"], 1);
    // A window: up to the first event holds nothing (`until` is exclusive), from it everything,
    // and from the last one at least that one.
    assert_eq!(run(&["--until", &first_at]).lines().count(), 0);
    assert_eq!(run(&["--since", &first_at]).lines().count(), events);
    let tail = run(&["--since", &last_at]).lines().count();
    assert!((1..events).contains(&tail), "{tail} of {events} ({first_at} .. {last_at})");
    let bad = bridle(&["audit", "export", "--db", &db, "--since", "last tuesday"], dir.path());
    assert!(!bad.status.success() && text(&bad.stderr).contains("--since"), "{}", text(&bad.stderr));

    // A collector: every event arrives as `LEN SP MSG`.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let collector = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut got = String::new();
        std::io::Read::read_to_string(&mut stream, &mut got).unwrap();
        got
    });
    assert!(run(&["--format", "syslog", "--syslog-tcp", &addr]).is_empty(), "nothing on stdout");
    let got = collector.join().unwrap();
    let mut frames = 0;
    let mut rest = got.as_str();
    while let Some((len, tail)) = rest.split_once(' ') {
        let len: usize = len.parse().unwrap();
        assert!(tail[..len].starts_with('<'), "{}", &tail[..len]);
        rest = &tail[len..];
        frames += 1;
    }
    assert_eq!((frames, rest), (events, ""));
}

/// `--format otlp`: every event arrives at an OTLP/HTTP collector as a log record carrying the
/// chain; a collector that refuses stops the export with an error naming where it stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_otlp_export_sends_every_event_as_a_log_record_with_its_chain() {
    use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    use prost::Message;

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let refuse = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let collector =
        axum::Router::new().route(
            "/v1/logs",
            axum::routing::post({
                let refuse = refuse.clone();
                move |body: axum::body::Bytes| {
                    let refused = refuse.load(std::sync::atomic::Ordering::SeqCst);
                    if !refused {
                        let _ = tx.send(body.to_vec());
                    }
                    async move {
                        if refused { axum::http::StatusCode::SERVICE_UNAVAILABLE } else { axum::http::StatusCode::OK }
                    }
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, collector).await });

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    let (jsonl, out) = tokio::task::spawn_blocking({
        let endpoint = endpoint.clone();
        move || {
            let db = demo_db(&path, &[]);
            let jsonl = export(&path, &db);
            let args = ["audit", "export", "--db", &db, "--format", "otlp", "--otlp-endpoint", &endpoint];
            (jsonl, bridle_env(&args, &path, b"", &[("OTEL_SERVICE_NAME", "bridle-audit-fab")]))
        }
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "nothing on stdout");
    let stored: Vec<serde_json::Value> = jsonl.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut records = Vec::new();
    while let Ok(body) = rx.try_recv() {
        let request = ExportLogsServiceRequest::decode(body.as_slice()).unwrap();
        for resource in request.resource_logs {
            let service = resource.resource.unwrap().attributes.into_iter().find(|kv| kv.key == "service.name");
            assert_eq!(service.and_then(|kv| kv.value?.value), Some(Any::StringValue("bridle-audit-fab".into())));
            records.extend(resource.scope_logs.into_iter().flat_map(|s| s.log_records));
        }
    }
    assert_eq!(records.len(), stored.len(), "one record per stored event");
    let attr = |r: &opentelemetry_proto::tonic::logs::v1::LogRecord, key: &str| {
        r.attributes.iter().find(|kv| kv.key == key).and_then(|kv| kv.value.clone()?.value)
    };
    for (record, event) in records.iter().zip(&stored) {
        assert_eq!(attr(record, "bridle.hash"), Some(Any::StringValue(event["hash"].as_str().unwrap().into())));
        assert_eq!(
            attr(record, "bridle.prev_hash"),
            Some(Any::StringValue(event["prev_hash"].as_str().unwrap().into()))
        );
        assert_eq!(attr(record, "bridle.seq"), Some(Any::IntValue(event["seq"].as_i64().unwrap())));
        assert_eq!(record.event_name, format!("bridle.audit.{}", event["kind"].as_str().unwrap()));
        assert!(record.time_unix_nano > 0 && record.severity_number > 0);
        let Some(Any::StringValue(body)) = record.body.clone().and_then(|b| b.value) else { panic!("no body") };
        assert_eq!(&serde_json::from_str::<serde_json::Value>(&body).unwrap(), event, "the body is the stored event");
    }

    // A collector that refuses: exit 1, naming the first seq not delivered.
    refuse.store(true, std::sync::atomic::Ordering::SeqCst);
    let out = tokio::task::spawn_blocking(move || {
        let db = format!("sqlite://{}", dir.path().join("d.db").display());
        bridle(&["audit", "export", "--db", &db, "--format", "otlp", "--otlp-endpoint", &endpoint], dir.path())
    })
    .await
    .unwrap();
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("failed at tenant-a seq 1") && err.contains("503"), "{err}");
}
