//! The adapter protocol's request loop (docs/ADAPTERS.md), the one every bundled Rust adapter
//! runs.
//!
//! An adapter says how its crate starts a session, runs one op and stops ([`Adapter`]), each
//! on the adapter's own runtime; [`serve`] does the rest over stdin and stdout: one JSON request
//! per line, exactly one JSON reply line per request, carrying the request's `seq`, flushed at
//! once. Logs go to stderr only.
//!
//! - `start` stops the open session, if any, and starts one. The reply names the crate
//!   ([`Adapter::NAME`], [`Adapter::VERSION`], language `rust`) and the adapter protocol
//!   version ([`Adapter::PROTOCOL`], left out for version 1). A start that fails ends the
//!   process with [`START_FAILED`], its reason the last line on stderr, which the suite shows.
//! - `op` runs on the session: its result, or a `skipped` or `errored` reply ([`Failure`]). An
//!   op before any start is errored.
//! - `stop` stops the session, replies `{"seq", "stopped": true}`, and the process exits 0.
//! - A request of any other type is errored. A line that is not JSON is logged and left
//!   unanswered: it has no `seq` to answer with.
//! - The end of stdin stops the session and exits 0; a reply that cannot be written (nobody
//!   reads stdout any more) exits 0 at once.
//!
//! The process exits without running destructors, so an adapter's runtime, and any task of the
//! crate still blocked on Redis, never holds the exit up.

use std::fmt::{Debug, Display};
use std::io::{BufRead, Write};

use serde_json::{json, Value};

/// The exit code of a process whose `start` failed (docs/ADAPTERS.md asks only for non-zero).
pub const START_FAILED: i32 = 3;

/// Why an op gives no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The crate cannot express this op or these arguments: a `skipped` reply, with the reason.
    Skip(String),
    /// The crate (or the adapter) failed: an `errored` reply.
    Error { message: String, traceback: String },
}

impl Failure {
    /// A `skipped` reply's failure.
    pub fn skip(reason: impl Into<String>) -> Self {
        Failure::Skip(reason.into())
    }

    /// An `errored` reply's failure with no more to show than its message.
    pub fn error(message: impl Into<String>) -> Self {
        let message = message.into();
        Failure::Error {
            traceback: message.clone(),
            message,
        }
    }

    /// An error the crate raised in `context` (the call that failed): the message from its
    /// `Display`, the traceback from its `Debug`.
    pub fn raised(context: &str, err: impl Display + Debug) -> Self {
        Failure::Error {
            message: format!("{context}: {err}"),
            traceback: format!("{err:?}"),
        }
    }
}

/// The crate under test, as the loop drives it. Each method runs to completion before the
/// next request is read (an async crate's adapter calls its runtime's `block_on` inside).
pub trait Adapter {
    /// `implementation.name` in the start reply: the crate under test.
    const NAME: &'static str;
    /// `implementation.version` in the start reply.
    const VERSION: &'static str;
    /// `protocol` in the start reply; `None` leaves the field out, which the suite reads as
    /// version 1 (it then never sends the worker half's ops).
    const PROTOCOL: Option<u64>;

    /// What a start opens: the connection, the key profile, the current queue.
    type Session;

    /// Opens a session for a `start` request (`redis`, `profile`), or says why it cannot: the
    /// reason is logged last and the process exits with [`START_FAILED`].
    fn start(&mut self, request: &Value) -> Result<Self::Session, String>;

    /// Runs an `op` request (`queue`, `base`, `bullmq`, `op`) on the session.
    fn op(&mut self, session: &mut Self::Session, request: &Value) -> Result<Value, Failure>;

    /// Closes the session: before the next start, on `stop`, and at the end of stdin.
    fn stop(&mut self, session: Self::Session);
}

/// How [`run`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// A `stop` was answered (or could no longer be, stdout being closed).
    Stopped,
    /// stdin ended, or could not be read, before any `stop`.
    InputEnded,
    /// A reply could not be written: nobody reads stdout any more.
    OutputClosed,
    /// A `start` failed, for this reason.
    StartFailed(String),
}

impl Ending {
    /// The process's exit code for this ending.
    pub fn exit_code(&self) -> i32 {
        match self {
            Ending::StartFailed(_) => START_FAILED,
            Ending::Stopped | Ending::InputEnded | Ending::OutputClosed => 0,
        }
    }
}

/// Serves the protocol on stdin and stdout until `stop`, the end of stdin, a closed stdout or
/// a failed start, then exits the process. Log lines start `[log_name]`.
pub fn serve(mut adapter: impl Adapter, log_name: &str) -> ! {
    let ending = run(
        &mut adapter,
        std::io::stdin().lock(),
        std::io::stdout().lock(),
        log_name,
    );
    if let Ending::StartFailed(reason) = &ending {
        // Last on stderr: the suite shows this line when the start fails.
        log(log_name, reason);
    }
    std::process::exit(ending.exit_code())
}

/// The loop of [`serve`] over any input and output, returning how it ended (a failed start's
/// reason is not logged here).
pub fn run<A: Adapter>(
    adapter: &mut A,
    input: impl BufRead,
    mut output: impl Write,
    log_name: &str,
) -> Ending {
    let mut session: Option<A::Session> = None;
    for line in input.lines() {
        let line = match line {
            Ok(line) => line,
            Err(err) => {
                log(log_name, &format!("cannot read stdin: {err}"));
                break;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let request: Value = match serde_json::from_str(&line) {
            Ok(request) => request,
            Err(err) => {
                log(log_name, &format!("unparseable request ({err}): {line}"));
                continue;
            }
        };
        let seq = request.get("seq").cloned().unwrap_or(Value::Null);
        let kind = request.get("type").and_then(Value::as_str).unwrap_or("");
        let reply = match kind {
            "start" => {
                if let Some(old) = session.take() {
                    adapter.stop(old);
                }
                match adapter.start(&request) {
                    Ok(started) => {
                        session = Some(started);
                        start_reply::<A>(seq)
                    }
                    Err(reason) => return Ending::StartFailed(reason),
                }
            }
            "op" => {
                let result = match session.as_mut() {
                    Some(session) => adapter.op(session, &request),
                    None => Err(Failure::error("op before start")),
                };
                op_reply(seq, result)
            }
            "stop" => {
                if let Some(old) = session.take() {
                    adapter.stop(old);
                }
                let _ = write_reply(&mut output, &json!({"seq": seq, "stopped": true}), log_name);
                return Ending::Stopped;
            }
            other => op_reply(
                seq,
                Err(Failure::error(format!("unknown request type {other:?}"))),
            ),
        };
        if write_reply(&mut output, &reply, log_name).is_err() {
            return Ending::OutputClosed;
        }
    }
    if let Some(old) = session.take() {
        adapter.stop(old);
    }
    Ending::InputEnded
}

/// The reply to a start that succeeded.
fn start_reply<A: Adapter>(seq: Value) -> Value {
    let mut reply = json!({
        "seq": seq,
        "implementation": {"name": A::NAME, "version": A::VERSION, "language": "rust"},
    });
    if let Some(protocol) = A::PROTOCOL {
        reply["protocol"] = json!(protocol);
    }
    reply
}

/// The reply to an op (or to a request the loop refuses).
fn op_reply(seq: Value, result: Result<Value, Failure>) -> Value {
    match result {
        Ok(result) => json!({"seq": seq, "result": result}),
        Err(Failure::Skip(reason)) => json!({"seq": seq, "skipped": true, "reason": reason}),
        Err(Failure::Error { message, traceback }) => json!({
            "seq": seq, "errored": true, "message": message, "traceback": traceback,
        }),
    }
}

/// Writes one reply line and flushes it: the suite waits for each reply.
fn write_reply(output: &mut impl Write, reply: &Value, log_name: &str) -> std::io::Result<()> {
    let written = writeln!(output, "{reply}").and_then(|()| output.flush());
    if let Err(err) = &written {
        log(log_name, &format!("cannot write a reply, exiting: {err}"));
    }
    written
}

/// One log line on stderr. A stderr that cannot be written is ignored (`eprintln!` would panic,
/// and the loop may be ending because the suite is gone).
fn log(log_name: &str, message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "[{log_name}] {message}");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An adapter whose ops answer from the op's `answer` field, recording what it was asked.
    #[derive(Default)]
    struct Fake {
        calls: Vec<String>,
        started: u32,
    }

    impl Adapter for Fake {
        const NAME: &'static str = "fake";
        const VERSION: &'static str = "0.0.1";
        const PROTOCOL: Option<u64> = Some(2);
        type Session = u32;

        fn start(&mut self, request: &Value) -> Result<u32, String> {
            if request["redis"] == "refuse" {
                return Err("cannot reach refuse".into());
            }
            self.started += 1;
            self.calls.push(format!("start {}", self.started));
            Ok(self.started)
        }

        fn op(&mut self, session: &mut u32, request: &Value) -> Result<Value, Failure> {
            self.calls.push(format!("op {session}"));
            match request["op"]["answer"].as_str() {
                Some("skip") => Err(Failure::skip("no such API")),
                Some("error") => Err(Failure::raised("Queue::add", "boom")),
                _ => Ok(json!("1")),
            }
        }

        fn stop(&mut self, session: u32) {
            self.calls.push(format!("stop {session}"));
        }
    }

    /// A version 1 adapter: its start reply has no `protocol`.
    struct Old;

    impl Adapter for Old {
        const NAME: &'static str = "old";
        const VERSION: &'static str = "1.0.0";
        const PROTOCOL: Option<u64> = None;
        type Session = ();

        fn start(&mut self, _: &Value) -> Result<(), String> {
            Ok(())
        }

        fn op(&mut self, _: &mut (), _: &Value) -> Result<Value, Failure> {
            Ok(Value::Null)
        }

        fn stop(&mut self, _: ()) {}
    }

    /// Runs the loop over `input`, returning its ending and the reply lines, parsed.
    fn drive<A: Adapter>(adapter: &mut A, input: &str) -> (Ending, Vec<Value>) {
        let mut output = Vec::new();
        let ending = run(adapter, input.as_bytes(), &mut output, "test adapter");
        let replies = String::from_utf8(output)
            .expect("UTF-8")
            .lines()
            .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
            .collect();
        (ending, replies)
    }

    #[test]
    fn answers_each_request_with_its_seq_until_stop() {
        let mut fake = Fake::default();
        let input = concat!(
            "{\"seq\": 0, \"type\": \"op\", \"queue\": \"q\", \"op\": {\"op\": \"add\"}}\n",
            "\n",
            "not json\n",
            "{\"seq\": 1, \"type\": \"start\", \"redis\": \"redis://x\", \"profile\": {}}\n",
            "{\"seq\": 2, \"type\": \"op\", \"op\": {\"op\": \"add\"}}\n",
            "{\"seq\": 3, \"type\": \"op\", \"op\": {\"op\": \"add\", \"answer\": \"skip\"}}\n",
            "{\"seq\": 4, \"type\": \"op\", \"op\": {\"op\": \"add\", \"answer\": \"error\"}}\n",
            "{\"seq\": 5, \"type\": \"ping\"}\n",
            "{\"seq\": 6, \"type\": \"start\", \"redis\": \"redis://x\", \"profile\": {}}\n",
            "{\"seq\": 7, \"type\": \"stop\"}\n",
            "{\"seq\": 8, \"type\": \"op\", \"op\": {\"op\": \"add\"}}\n",
        );
        let (ending, replies) = drive(&mut fake, input);
        assert_eq!(ending, Ending::Stopped);
        assert_eq!(ending.exit_code(), 0);
        let started = json!({
            "implementation": {"name": "fake", "version": "0.0.1", "language": "rust"},
            "protocol": 2,
        });
        let with_seq = |seq: u64, mut reply: Value| {
            reply["seq"] = json!(seq);
            reply
        };
        assert_eq!(
            replies,
            vec![
                json!({"seq": 0, "errored": true, "message": "op before start",
                       "traceback": "op before start"}),
                with_seq(1, started.clone()),
                json!({"seq": 2, "result": "1"}),
                json!({"seq": 3, "skipped": true, "reason": "no such API"}),
                json!({"seq": 4, "errored": true, "message": "Queue::add: boom",
                       "traceback": "\"boom\""}),
                json!({"seq": 5, "errored": true, "message": "unknown request type \"ping\"",
                       "traceback": "unknown request type \"ping\""}),
                with_seq(6, started),
                json!({"seq": 7, "stopped": true}),
            ]
        );
        assert_eq!(
            fake.calls,
            ["start 1", "op 1", "op 1", "op 1", "stop 1", "start 2", "stop 2"]
        );
    }

    #[test]
    fn a_version_1_start_reply_has_no_protocol() {
        let (ending, replies) = drive(&mut Old, "{\"seq\": 0, \"type\": \"start\"}\n");
        assert_eq!(ending, Ending::InputEnded);
        assert_eq!(
            replies,
            [json!({
                "seq": 0,
                "implementation": {"name": "old", "version": "1.0.0", "language": "rust"},
            })]
        );
    }

    #[test]
    fn a_failed_start_ends_the_loop_unanswered() {
        let mut fake = Fake::default();
        let input = concat!(
            "{\"seq\": 0, \"type\": \"start\", \"redis\": \"redis://x\"}\n",
            "{\"seq\": 1, \"type\": \"start\", \"redis\": \"refuse\"}\n",
            "{\"seq\": 2, \"type\": \"stop\"}\n",
        );
        let (ending, replies) = drive(&mut fake, input);
        assert_eq!(ending, Ending::StartFailed("cannot reach refuse".into()));
        assert_eq!(ending.exit_code(), START_FAILED);
        assert_eq!(replies.len(), 1);
        // The open session is stopped before the new start is tried.
        assert_eq!(fake.calls, ["start 1", "stop 1"]);
    }

    #[test]
    fn the_end_of_input_stops_the_session() {
        let mut fake = Fake::default();
        let (ending, replies) = drive(&mut fake, "{\"seq\": 0, \"type\": \"start\"}");
        assert_eq!(ending, Ending::InputEnded);
        assert_eq!(replies.len(), 1);
        assert_eq!(fake.calls, ["start 1", "stop 1"]);
    }

    /// A stdout whose reader is gone.
    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_output_ends_the_loop_with_exit_0() {
        let mut fake = Fake::default();
        let input = "{\"seq\": 0, \"type\": \"start\"}\n{\"seq\": 1, \"type\": \"stop\"}\n";
        let ending = run(&mut fake, input.as_bytes(), Closed, "test adapter");
        assert_eq!(ending, Ending::OutputClosed);
        assert_eq!(ending.exit_code(), 0);
        assert_eq!(fake.calls, ["start 1"]);
    }
}
