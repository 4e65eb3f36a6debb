//! API Gateway HTTP API (payload 2.0) in front of a local function: an HTTP
//! request becomes the event API Gateway would send, and the function's
//! response becomes the HTTP answer.

use base64::Engine;
use serde_json::{json, Map, Value};

/// The route the template gives the ingest function.
pub const WEBHOOK_ROUTE: (&str, &str) = ("POST", "/webhooks/staticforms");

/// The payload-2.0 event for one request. Header names are lower-cased and
/// repeated headers joined with commas, as API Gateway does; a body that is
/// not UTF-8 is base64-encoded.
pub fn event_for(
    method: &str,
    path: &str,
    query: &str,
    headers: &[(String, String)],
    body: &[u8],
    request_id: &str,
) -> Value {
    let mut joined: Map<String, Value> = Map::new();
    for (name, value) in headers {
        let name = name.to_ascii_lowercase();
        let merged = match joined.get(&name).and_then(Value::as_str) {
            Some(existing) => format!("{existing},{value}"),
            None => value.clone(),
        };
        joined.insert(name, Value::String(merged));
    }
    let (body, is_base64) = match std::str::from_utf8(body) {
        Ok(text) => (text.to_owned(), false),
        Err(_) => (base64::engine::general_purpose::STANDARD.encode(body), true),
    };
    let route_key = format!("{method} {path}");
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    json!({
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": query,
        "headers": joined,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": "127.0.0.1",
            "domainPrefix": "local",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "127.0.0.1",
                "userAgent": joined.get("user-agent").cloned().unwrap_or(Value::Null),
            },
            "requestId": request_id,
            "routeKey": route_key,
            "stage": "$default",
            "timeEpoch": now_ms,
        },
        "body": body,
        "isBase64Encoded": is_base64,
    })
}

/// A function's HTTP response: status, headers and body bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpAnswer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Reads the `{statusCode, headers, body, isBase64Encoded}` that lambda_http
/// returns for API Gateway.
pub fn answer_from(response: &Value) -> Result<HttpAnswer, String> {
    let status = response["statusCode"]
        .as_u64()
        .ok_or("the function's response has no statusCode")? as u16;
    let mut headers = Vec::new();
    if let Some(map) = response["headers"].as_object() {
        for (name, value) in map {
            if let Some(value) = value.as_str() {
                headers.push((name.clone(), value.to_owned()));
            }
        }
    }
    let text = response["body"].as_str().unwrap_or_default();
    let body = if response["isBase64Encoded"].as_bool() == Some(true) {
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| e.to_string())?
    } else {
        text.as_bytes().to_vec()
    };
    Ok(HttpAnswer {
        status,
        headers,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_become_payload_2_events() {
        let headers = vec![
            ("Authorization".to_owned(), "Bearer t".to_owned()),
            ("X-Dup".to_owned(), "a".to_owned()),
            ("x-dup".to_owned(), "b".to_owned()),
        ];
        let event = event_for(
            "POST",
            "/webhooks/staticforms",
            "",
            &headers,
            b"{\"a\":1}",
            "req-1",
        );
        assert_eq!(event["headers"]["authorization"], "Bearer t");
        assert_eq!(event["headers"]["x-dup"], "a,b");
        assert_eq!(event["body"], "{\"a\":1}");
        assert_eq!(event["isBase64Encoded"], false);
        assert_eq!(event["requestContext"]["http"]["method"], "POST");
        // lambda_http reads it as an HTTP API request.
        let request = lambda_http::request::from_str(&event.to_string()).unwrap();
        assert_eq!(request.headers()["authorization"], "Bearer t");

        let binary = event_for("POST", "/", "", &[], &[0xff, 0xfe], "req-2");
        assert_eq!(binary["isBase64Encoded"], true);
        assert_eq!(binary["body"], "//4=");
    }

    #[test]
    fn function_responses_become_http_answers() {
        let answer = answer_from(&json!({"statusCode": 202, "headers": {"content-type": "application/json"}, "body": "{}", "isBase64Encoded": false})).unwrap();
        assert_eq!(answer.status, 202);
        assert_eq!(
            answer.headers,
            vec![("content-type".to_owned(), "application/json".to_owned())]
        );
        assert_eq!(answer.body, b"{}");
        assert!(answer_from(&json!({"body": ""})).is_err());
    }
}
