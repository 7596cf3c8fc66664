//! What every bundled Rust adapter of bullmq-conformance shares, built from by path:
//!
//! - [`clock`]: the op's explicit time, injected under the crate an adapter drives (with the
//!   [`override_clock_gettime!`] macro, exported here at the crate root);
//! - [`serve`]: the adapter protocol's request loop over stdin and stdout (docs/ADAPTERS.md),
//!   which an adapter runs with the start, op and stop of its own crate ([`serve::Adapter`]).

pub mod clock;
pub mod serve;
