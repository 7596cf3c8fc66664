//! From the SDK's results back to the protocol's integer codes.
//!
//! Where the SDK turns a negative script code into an error value, the code is read back
//! from that value (as the Node adapter reads `err.code`). Where the SDK drops the code, the
//! op is answered `errored` with the SDK's own message: no code is made up.

use bullmq::Error;
use serde_json::{json, Value};

use crate::protocol::{OpResult, Outcome};

/// The negative script code an SDK error carries, if it carries one.
pub fn script_code(err: &Error) -> Option<i64> {
    match err {
        Error::Script { code, .. } if *code < 0 => Some(*code),
        // Job::update_data (job.rs:697) keeps the code only in its message.
        Error::InvalidConfig(message) => message
            .strip_prefix("updateData failed with code ")
            .and_then(|code| code.parse::<i64>().ok())
            .filter(|code| *code < 0),
        _ => None,
    }
}

/// `0` for an SDK call that returned `()`, the script code for one that failed with it.
pub fn code_of(result: Result<(), Error>) -> OpResult {
    match result {
        Ok(()) => Ok(json!(0)),
        Err(err) => match script_code(&err) {
            Some(code) => Ok(json!(code)),
            None => Err(Outcome::from(err)),
        },
    }
}

/// An SDK value as the op's result, or the script code it failed with.
pub fn value_or_code<T: Into<Value>>(result: Result<T, Error>) -> OpResult {
    match result {
        Ok(value) => Ok(value.into()),
        Err(err) => match script_code(&err) {
            Some(code) => Ok(json!(code)),
            None => Err(Outcome::from(err)),
        },
    }
}
