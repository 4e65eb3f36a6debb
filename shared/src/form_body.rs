//! A form post's body as the JSON object a sender's parser reads: each
//! field's name to its text, a name sent more than once (a group of
//! checkboxes) to the list of its texts, in the order sent. Two encodings
//! are taken, as browsers and form builders send them:
//! `application/x-www-form-urlencoded` (the WHATWG URL standard's
//! `application/x-www-form-urlencoded` parser) and `multipart/form-data`
//! (RFC 7578: parts separated by `--<boundary>` lines, each with a
//! `Content-Disposition: form-data; name="…"` header). A part with a
//! `filename` is a file: refused, as no destination keeps files. Pure:
//! ingest decides before it converts, and stores only what this returns.

use serde_json::{Map, Value};

/// How a sender's webhooks carry a submission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFormat {
    /// A JSON document.
    Json,
    /// A form post, urlencoded or multipart, made a JSON object here.
    Form,
}

/// The most fields a form body may have.
pub const MAX_FIELDS: usize = 1_000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormBodyError {
    #[error("Content-Type must be application/x-www-form-urlencoded or multipart/form-data")]
    NotAForm,
    #[error("a multipart/form-data Content-Type needs its boundary parameter")]
    NoBoundary,
    #[error("the multipart body is malformed ({0})")]
    Malformed(&'static str),
    #[error("a file was uploaded (field `{0}`); files are not taken: remove the file input")]
    FileUpload(String),
    #[error("a field's name or value is not UTF-8 text")]
    NotText,
    #[error("the form has more than {MAX_FIELDS} fields")]
    TooManyFields,
}

/// `body`, sent as `content_type`, as a JSON object's bytes.
pub fn as_json(content_type: &str, body: &[u8]) -> Result<Vec<u8>, FormBodyError> {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let fields = match essence.as_str() {
        "application/x-www-form-urlencoded" => urlencoded(body)?,
        "multipart/form-data" => {
            let boundary = boundary(content_type).ok_or(FormBodyError::NoBoundary)?;
            multipart(body, &boundary)?
        }
        _ => return Err(FormBodyError::NotAForm),
    };
    if fields.len() > MAX_FIELDS {
        return Err(FormBodyError::TooManyFields);
    }
    Ok(Value::Object(object_of(fields)).to_string().into_bytes())
}

/// A JSON object of fields (as `as_json` makes one) as a urlencoded form
/// body, the way a browser sends it: a list is its name repeated; a value
/// that is not text is sent as its JSON.
pub fn urlencoded_of(fields: &Value) -> String {
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    for (name, value) in fields.as_object().into_iter().flatten() {
        let values = match value {
            Value::Array(values) => values.iter().collect(),
            value => vec![value],
        };
        for value in values {
            match value {
                Value::String(text) => form.append_pair(name, text),
                other => form.append_pair(name, &other.to_string()),
            };
        }
    }
    form.finish()
}

/// Fields in order, a repeated name gathered into a list where it first
/// came.
fn object_of(fields: Vec<(String, String)>) -> Map<String, Value> {
    let mut object = Map::new();
    for (name, value) in fields {
        match object.get_mut(&name) {
            Some(Value::Array(values)) => values.push(Value::String(value)),
            Some(first) => {
                let first = first.take();
                object.insert(name, Value::Array(vec![first, Value::String(value)]));
            }
            None => {
                object.insert(name, Value::String(value));
            }
        }
    }
    object
}

fn urlencoded(body: &[u8]) -> Result<Vec<(String, String)>, FormBodyError> {
    // The parser replaces invalid UTF-8; a body that is not text is refused
    // before, so nothing is silently changed.
    if std::str::from_utf8(body).is_err() {
        return Err(FormBodyError::NotText);
    }
    let mut fields = Vec::new();
    for (name, value) in url::form_urlencoded::parse(body) {
        if fields.len() == MAX_FIELDS {
            return Err(FormBodyError::TooManyFields);
        }
        if name.contains('\u{FFFD}') || value.contains('\u{FFFD}') {
            return Err(FormBodyError::NotText);
        }
        fields.push((name.into_owned(), value.into_owned()));
    }
    Ok(fields)
}

/// The `boundary` parameter of a multipart Content-Type, quoted or not
/// (RFC 2046: 1 to 70 characters).
fn boundary(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|parameter| {
        let (name, value) = parameter.split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("boundary") {
            return None;
        }
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        (1..=70).contains(&value.len()).then(|| value.to_owned())
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn multipart(body: &[u8], boundary: &str) -> Result<Vec<(String, String)>, FormBodyError> {
    let delimiter = format!("--{boundary}");
    let start = find(body, delimiter.as_bytes()).ok_or(FormBodyError::Malformed("no boundary"))?;
    let mut rest = &body[start + delimiter.len()..];
    // Lines end in CRLF, as RFC 7578 says; a body written with bare LFs
    // (a captured delivery saved by an editor) is read the same way.
    let newline: &[u8] = if rest.starts_with(b"\r\n") {
        b"\r\n"
    } else {
        b"\n"
    };
    let blank_line = [newline, newline].concat();
    let next_part = [newline, delimiter.as_bytes()].concat();
    let mut fields = Vec::new();
    loop {
        if rest.starts_with(b"--") {
            return Ok(fields);
        }
        rest = rest
            .strip_prefix(newline)
            .ok_or(FormBodyError::Malformed("a boundary line"))?;
        let headers_end =
            find(rest, &blank_line).ok_or(FormBodyError::Malformed("a part's headers"))?;
        let headers =
            std::str::from_utf8(&rest[..headers_end]).map_err(|_| FormBodyError::NotText)?;
        rest = &rest[headers_end + blank_line.len()..];
        let content_end =
            find(rest, &next_part).ok_or(FormBodyError::Malformed("the last boundary"))?;
        let content = &rest[..content_end];
        rest = &rest[content_end + next_part.len()..];
        let (name, filename) = disposition(headers)?;
        match filename {
            // A file input left empty: no file, nothing to keep.
            Some(file) if file.is_empty() && content.is_empty() => continue,
            Some(_) => return Err(FormBodyError::FileUpload(name)),
            None => {}
        }
        if fields.len() == MAX_FIELDS {
            return Err(FormBodyError::TooManyFields);
        }
        let value = String::from_utf8(content.to_vec()).map_err(|_| FormBodyError::NotText)?;
        fields.push((name, value));
    }
}

/// A part's field name and its file name, if it is a file.
fn disposition(headers: &str) -> Result<(String, Option<String>), FormBodyError> {
    let line = headers
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.trim()
                .eq_ignore_ascii_case("content-disposition")
                .then_some(value)
        })
        .ok_or(FormBodyError::Malformed(
            "a part without Content-Disposition",
        ))?;
    let mut parts = line.split(';');
    if !parts
        .next()
        .is_some_and(|kind| kind.trim().eq_ignore_ascii_case("form-data"))
    {
        return Err(FormBodyError::Malformed("a part that is not form-data"));
    }
    let mut name = None;
    let mut filename = None;
    for parameter in parts {
        let Some((key, value)) = parameter.split_once('=') else {
            continue;
        };
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value)
            .to_owned();
        match key.trim().to_ascii_lowercase().as_str() {
            "name" => name = Some(value),
            "filename" => filename = Some(value),
            _ => {}
        }
    }
    let name = name.ok_or(FormBodyError::Malformed("a part without a name"))?;
    Ok((name, filename))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(content_type: &str, body: &str) -> Result<Value, FormBodyError> {
        as_json(content_type, body.as_bytes()).map(|bytes| serde_json::from_slice(&bytes).unwrap())
    }

    #[test]
    fn urlencoded_fields_become_an_object_and_a_repeated_name_a_list() {
        let rows = [
            (
                "name=Ada+Lovelace&email=ada%40example.com&topics=a&topics=b&empty=",
                json!({"name": "Ada Lovelace", "email": "ada@example.com", "topics": ["a", "b"], "empty": ""}),
            ),
            ("", json!({})),
            ("m=%C3%A9t%C3%A9", json!({"m": "été"})),
            ("a=1&a=2&a=3", json!({"a": ["1", "2", "3"]})),
        ];
        for (body, expected) in rows {
            assert_eq!(
                parsed("application/x-www-form-urlencoded; charset=UTF-8", body),
                Ok(expected),
                "{body}"
            );
        }
        assert_eq!(
            parsed("application/x-www-form-urlencoded", "m=%FF"),
            Err(FormBodyError::NotText)
        );
        assert_eq!(
            as_json("application/x-www-form-urlencoded", &[b'a', b'=', 0xff]),
            Err(FormBodyError::NotText)
        );
    }

    const MULTIPART: &str = "multipart/form-data; boundary=----WebKitFormBoundary7MA4YWxkTrZu0gW";

    fn part(name: &str, extra: &str, value: &str) -> String {
        format!(
            "------WebKitFormBoundary7MA4YWxkTrZu0gW\r\nContent-Disposition: form-data; name=\"{name}\"{extra}\r\n\r\n{value}\r\n"
        )
    }

    const END: &str = "------WebKitFormBoundary7MA4YWxkTrZu0gW--\r\n";

    #[test]
    fn multipart_fields_become_an_object() {
        let body = format!(
            "preamble\r\n{}{}{}{}{END}",
            part("formID", "", "241234567890"),
            part("rawRequest", "", "{\"q3_email\":\"ada@example.com\"}"),
            part("message", "", "line one\r\nline two"),
            part("upload", "; filename=\"\"", ""),
        );
        assert_eq!(
            parsed(MULTIPART, &body),
            Ok(json!({
                "formID": "241234567890",
                "rawRequest": "{\"q3_email\":\"ada@example.com\"}",
                "message": "line one\r\nline two"
            }))
        );
        // Bare LFs, as a delivery saved by an editor has them.
        assert_eq!(
            parsed(MULTIPART, &body.replace("\r\n", "\n")),
            parsed(MULTIPART, &body).map(|mut fields| {
                fields["message"] = json!("line one\nline two");
                fields
            })
        );
        let quoted = "multipart/form-data; charset=utf-8; boundary=\"----WebKitFormBoundary7MA4YWxkTrZu0gW\"";
        assert_eq!(
            parsed(quoted, &format!("{}{END}", part("a", "", "1"))),
            Ok(json!({"a": "1"}))
        );
    }

    #[test]
    fn every_bad_body_is_refused_with_its_reason() {
        let file = format!(
            "{}{}{END}",
            part("name", "", "Ada"),
            part("cv", "; filename=\"cv.pdf\"", "%PDF-1.4")
        );
        let rows: Vec<(&str, String, FormBodyError)> = vec![
            ("application/json", "{}".into(), FormBodyError::NotAForm),
            ("text/plain", "a=1".into(), FormBodyError::NotAForm),
            ("multipart/form-data", "x".into(), FormBodyError::NoBoundary),
            (MULTIPART, file, FormBodyError::FileUpload("cv".into())),
            (
                MULTIPART,
                "no boundary here".into(),
                FormBodyError::Malformed("no boundary"),
            ),
            (
                MULTIPART,
                part("a", "", "1"),
                FormBodyError::Malformed("the last boundary"),
            ),
            (
                MULTIPART,
                "------WebKitFormBoundary7MA4YWxkTrZu0gW\r\nContent-Type: text/plain\r\n\r\nx\r\n------WebKitFormBoundary7MA4YWxkTrZu0gW--".into(),
                FormBodyError::Malformed("a part without Content-Disposition"),
            ),
            (
                MULTIPART,
                "------WebKitFormBoundary7MA4YWxkTrZu0gW\r\nContent-Disposition: form-data\r\n\r\nx\r\n------WebKitFormBoundary7MA4YWxkTrZu0gW--".into(),
                FormBodyError::Malformed("a part without a name"),
            ),
            (
                MULTIPART,
                "------WebKitFormBoundary7MA4YWxkTrZu0gWgarbage".into(),
                FormBodyError::Malformed("a boundary line"),
            ),
        ];
        for (content_type, body, expected) in rows {
            assert_eq!(parsed(content_type, &body), Err(expected), "{body:?}");
        }
        let many = vec!["a=1"; MAX_FIELDS + 1].join("&");
        assert_eq!(
            parsed("application/x-www-form-urlencoded", &many),
            Err(FormBodyError::TooManyFields)
        );
    }

    #[test]
    fn a_urlencoded_body_reads_back_as_its_fields() {
        let fields = json!({"formID": "2412", "rawRequest": "{\"q3_email\":\"a+b@example.com\"}",
                            "topics": ["a b", "c&d"], "empty": ""});
        let body = urlencoded_of(&fields);
        assert_eq!(
            parsed("application/x-www-form-urlencoded", &body),
            Ok(fields)
        );
    }

    /// No input panics: every prefix of a valid body is an answer.
    #[test]
    fn no_body_panics() {
        let body = format!("{}{}{END}", part("a", "", "1"), part("b", "", "2"));
        for end in 0..body.len() {
            let _ = as_json(MULTIPART, &body.as_bytes()[..end]);
            let _ = as_json("application/x-www-form-urlencoded", &body.as_bytes()[..end]);
        }
    }
}
