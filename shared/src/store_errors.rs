//! Which errors from a DynamoDB-style store pass with time. Both functions
//! read the SDK's error code and HTTP status and ask this one rule, so a
//! throttled write is treated the same everywhere.

/// Error codes that mean "try again later": throttling, server trouble and
/// write conflicts. Anything else (a missing table, a validation error,
/// denied access) needs a person or a different request.
const TRANSIENT_CODES: &[&str] = &[
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "ThrottlingException",
    "InternalServerError",
    "InternalFailure",
    "ServiceUnavailable",
    "TransactionConflictException",
    "ReplicatedWriteConflictException",
];

pub fn is_transient(code: Option<&str>, http_status: u16) -> bool {
    http_status >= 500 || code.is_some_and(|code| TRANSIENT_CODES.contains(&code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_errors() {
        let rows = [
            (Some("ProvisionedThroughputExceededException"), 400, true),
            (Some("ThrottlingException"), 400, true),
            (Some("RequestLimitExceeded"), 400, true),
            (Some("TransactionConflictException"), 400, true),
            (Some("InternalServerError"), 500, true),
            (None, 503, true),
            (Some("ResourceNotFoundException"), 400, false),
            (Some("ValidationException"), 400, false),
            (Some("AccessDeniedException"), 400, false),
            (Some("ConditionalCheckFailedException"), 400, false),
            (None, 400, false),
        ];
        for (code, status, transient) in rows {
            assert_eq!(is_transient(code, status), transient, "{code:?} {status}");
        }
    }
}
