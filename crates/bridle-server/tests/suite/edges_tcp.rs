//! The edges hyper sees first, over a real TCP connection to `serve::serve`: the request-head
//! limits (414, 431) in the error shape, and the rate limiter's 429s, which always answer, carry
//! `Retry-After` and leave the connection usable even when the body arrives after the refusal.

use std::net::SocketAddr;
use std::time::Duration;

use bridle_server::limits::Limits;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::support::{app_with, token};

/// `bridle serve`'s serving loop on a loopback port, with `limits`.
async fn served(limits: Limits) -> SocketAddr {
    let app = app_with(limits).await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(bridle_server::serve::serve(listener, app, std::future::pending()));
    addr
}

/// One answer read off the wire.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// Asserts the error shape with `code`, served as JSON.
    #[track_caller]
    fn assert_shape(&self, status: u16, code: &str) {
        let text = String::from_utf8_lossy(&self.body);
        assert_eq!(self.status, status, "{text}");
        assert!(self.header("content-type").is_some_and(|t| t.starts_with("application/json")), "{self:?}");
        let body: Value = serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
        assert_eq!(body["error"]["code"], code, "{body}");
        assert!(body["error"]["message"].is_string(), "{body}");
    }
}

/// Reads one answer with a `Content-Length` body; an error when the connection ends first.
async fn read_answer(stream: &mut TcpStream) -> std::io::Result<Answer> {
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 16 * 1024];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> =
        lines.filter_map(|l| l.split_once(':')).map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned())).collect();
    let length: usize =
        headers.iter().find(|(n, _)| n.eq_ignore_ascii_case("content-length")).map_or(0, |(_, v)| v.parse().unwrap());
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Ok(Answer { status, headers, body: buf[head_end..head_end + length].to_vec() })
}

fn get_head(target: &str, extra: &str) -> String {
    format!("GET {target} HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer {}\r\n{extra}\r\n", token("viewer-4"))
}

#[tokio::test]
async fn a_uri_past_the_limit_is_414_in_the_error_shape_over_tcp() {
    let addr = served(Limits::default()).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    // 9 KB and 60 KB: both past Bridle's 8 KiB and below hyper's own fixed bound.
    for pad in [9_000, 60_000] {
        let target = format!("/v1/tools?pad={}", "a".repeat(pad));
        stream.write_all(get_head(&target, "").as_bytes()).await.unwrap();
        read_answer(&mut stream).await.unwrap().assert_shape(414, "uri_too_long");
    }
    // The same connection still serves.
    stream.write_all(get_head("/v1/tools", "").as_bytes()).await.unwrap();
    assert_eq!(read_answer(&mut stream).await.unwrap().status, 200);
}

#[tokio::test]
async fn too_many_or_too_large_headers_are_431_in_the_error_shape_over_tcp() {
    let addr = served(Limits::default()).await;
    // 150 header lines: hyper's default (100) answered an empty 431 before any middleware.
    let many: String = (0..150).map(|i| format!("x-pad-{i}: 1\r\n")).collect();
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(get_head("/v1/tools", &many).as_bytes()).await.unwrap();
    read_answer(&mut stream).await.unwrap().assert_shape(431, "headers_too_large");
    // 70 KB in one header.
    let large = format!("x-pad: {}\r\n", "a".repeat(70_000));
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(get_head("/v1/tools", &large).as_bytes()).await.unwrap();
    read_answer(&mut stream).await.unwrap().assert_shape(431, "headers_too_large");
    // Without a token, too.
    let head = format!("GET /healthz HTTP/1.1\r\nhost: localhost\r\n{many}\r\n");
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    read_answer(&mut stream).await.unwrap().assert_shape(431, "headers_too_large");
}

fn scan_request(body: &str) -> (String, String) {
    let head = format!(
        "POST /v1/guard/scan HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer {}\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n",
        token("viewer-4"),
        body.len()
    );
    (head, body.to_owned())
}

#[tokio::test]
async fn a_429_whose_body_arrives_after_it_still_answers_and_keeps_the_connection() {
    let limits = Limits { rate_per_second: 0.001, burst: 1, ..Limits::default() };
    let addr = served(limits).await;
    let body = format!("{{\"text\": \"{}\"}}", "a".repeat(20_000));
    let (head, body) = scan_request(&body);
    let mut stream = TcpStream::connect(addr).await.unwrap();
    for round in 0..3 {
        // The head first, the body a moment later: the refusal is decided before the body is there.
        stream.write_all(head.as_bytes()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        stream.write_all(body.as_bytes()).await.unwrap();
        let answer = read_answer(&mut stream).await.unwrap_or_else(|e| panic!("round {round}: no answer: {e}"));
        if round == 0 {
            assert_eq!(answer.status, 200);
            continue;
        }
        answer.assert_shape(429, "rate_limited");
        assert_eq!(answer.header("retry-after"), Some("1"));
        assert_ne!(answer.header("connection"), Some("close"), "round {round}");
    }
}

#[tokio::test]
async fn a_burst_past_the_rate_limit_answers_every_request_and_every_429_has_retry_after() {
    let limits = Limits { rate_per_second: 5.0, burst: 10, ..Limits::default() };
    let addr = served(limits).await;
    let (clients, per_client) = (32, 8);
    let body = format!("{{\"text\": \"{}\"}}", "checkout p99 is 900 ms ".repeat(200));
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (head, body) = scan_request(&body);
        tasks.push(tokio::spawn(async move {
            let mut stream = TcpStream::connect(addr).await.unwrap();
            let mut statuses = Vec::new();
            for _ in 0..per_client {
                stream.write_all(head.as_bytes()).await.unwrap();
                tokio::task::yield_now().await;
                stream.write_all(body.as_bytes()).await.unwrap();
                let answer = read_answer(&mut stream).await.expect("every request gets an answer");
                if answer.status == 429 {
                    answer.assert_shape(429, "rate_limited");
                    assert_eq!(answer.header("retry-after"), Some("1"));
                }
                statuses.push(answer.status);
            }
            statuses
        }));
    }
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.extend(task.await.unwrap());
    }
    assert_eq!(statuses.len(), clients * per_client);
    let limited = statuses.iter().filter(|s| **s == 429).count();
    assert!(statuses.iter().all(|s| *s == 200 || *s == 429), "{statuses:?}");
    assert!(limited > clients * per_client / 2, "the burst passed the limit: {limited} of {}", statuses.len());
}

#[tokio::test]
async fn a_route_without_a_body_reads_the_one_sent_and_keeps_the_connection() {
    let addr = served(Limits::default()).await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /v1/approvals/no-such-approval/approve HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer {}\r\n\
         content-type: application/json\r\ncontent-length: 2\r\n\r\n",
        token("operator-2")
    );
    for round in 0..3 {
        // The body a moment after the head, as a client's second write: the route takes no body
        // and must still read it, or the two bytes are left where the next request head should be.
        stream.write_all(head.as_bytes()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        stream.write_all(b"{}").await.unwrap();
        let answer = read_answer(&mut stream).await.unwrap_or_else(|e| panic!("round {round}: no answer: {e}"));
        answer.assert_shape(404, "not_found");
        assert_ne!(answer.header("connection"), Some("close"), "round {round}");
        stream.write_all(get_head("/v1/approvals", "").as_bytes()).await.unwrap();
        let listed = read_answer(&mut stream).await.unwrap_or_else(|e| panic!("round {round}: GET after POST: {e}"));
        assert_eq!(listed.status, 403, "viewer-4 lists no approvals, but the connection answers");
    }
}
