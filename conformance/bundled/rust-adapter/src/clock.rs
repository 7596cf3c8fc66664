//! The op's explicit time, injected under the crate an adapter drives.
//!
//! Vectors give every time explicitly, but the Rust crates under test read the wall clock
//! themselves (`SystemTime::now()`, `chrono::Utc::now()`) and take no clock parameter. On Linux
//! both end in the C function `clock_gettime(CLOCK_REALTIME, …)`. Each adapter defines that
//! symbol in its own executable ([`override_clock_gettime!`]); the static link resolves std's
//! reference to that definition before glibc's, so while an op's time is pinned the crate reads
//! exactly that time. Every other clock (CLOCK_MONOTONIC: tokio's timers, `Instant`) and the
//! unpinned wall clock go to the kernel through the raw syscall, unchanged.
//!
//! Each op runs inside a [`Scope`]: [`pinned`] to the op's time when it has one, [`unpinned`]
//! otherwise. A scope counts the wall-clock reads made during it, so an adapter can log a crate
//! that reads the clock for an op that carries no time. The state is process-wide, which is
//! what the override needs (std calls it with no context) and what the adapters do: one op at
//! a time.

use std::future::Future;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

// The macro's expansion names libc's types through this module, so an adapter needs no libc of
// its own.
#[doc(hidden)]
pub use libc;

const UNPINNED: i64 = i64::MIN;

/// The pinned time in milliseconds since the epoch, or UNPINNED.
static PINNED_MS: AtomicI64 = AtomicI64::new(UNPINNED);
/// CLOCK_REALTIME reads since the process started.
static REALTIME_READS: AtomicU64 = AtomicU64::new(0);

/// Defines the executable's `clock_gettime`, answered by this crate. Invoke it once, at the root
/// of the adapter's `main.rs`: `bullmq_conformance_adapter::override_clock_gettime!();`.
///
/// Why a macro: a `#[no_mangle]` function inside this rlib would be linked only if its object
/// file were pulled in for another reason (the linker takes an archive member only to resolve a
/// symbol it still lacks), so whether it shadowed glibc's would hang on how rustc splits the
/// code. The binary crate's own objects are always linked, so a definition expanded there always
/// takes effect.
#[macro_export]
macro_rules! override_clock_gettime {
    () => {
        /// The C library's `clock_gettime`, as seen by std and chrono inside this executable
        /// (see the `clock` module of the `bullmq_conformance_adapter` crate).
        ///
        /// # Safety
        /// Same contract as POSIX `clock_gettime`: `tp` must be valid for a write of one
        /// `timespec`.
        #[no_mangle]
        pub unsafe extern "C" fn clock_gettime(
            clk: $crate::clock::libc::clockid_t,
            tp: *mut $crate::clock::libc::timespec,
        ) -> $crate::clock::libc::c_int {
            $crate::clock::answer(clk, tp)
        }
    };
}

/// The body of the `clock_gettime` that [`override_clock_gettime!`] defines.
///
/// It only answers, never logs or allocates: it runs inside std and tokio, where taking the
/// stderr lock could re-enter.
///
/// # Safety
/// Same contract as POSIX `clock_gettime`: `tp` must be valid for a write of one `timespec`.
#[doc(hidden)]
pub unsafe fn answer(clk: libc::clockid_t, tp: *mut libc::timespec) -> libc::c_int {
    if clk == libc::CLOCK_REALTIME || clk == libc::CLOCK_REALTIME_COARSE {
        REALTIME_READS.fetch_add(1, Ordering::SeqCst);
        let ms = PINNED_MS.load(Ordering::SeqCst);
        if ms != UNPINNED && !tp.is_null() {
            (*tp).tv_sec = ms.div_euclid(1000) as libc::time_t;
            (*tp).tv_nsec = (ms.rem_euclid(1000) * 1_000_000) as libc::c_long;
            return 0;
        }
    }
    // The kernel's answer, bypassing glibc (whose symbol the override shadows). The syscall
    // wrapper returns -1 and sets errno as clock_gettime itself does.
    libc::syscall(libc::SYS_clock_gettime, clk as libc::c_long, tp) as libc::c_int
}

/// The clock as seen during one op; dropping it restores the real clock, even when the op
/// failed or returned early.
#[must_use = "the clock is restored as soon as the scope is dropped"]
pub struct Scope {
    reads_before: u64,
}

impl Scope {
    /// Wall-clock reads made since the scope began.
    pub fn reads(&self) -> u64 {
        REALTIME_READS.load(Ordering::SeqCst) - self.reads_before
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        PINNED_MS.store(UNPINNED, Ordering::SeqCst);
    }
}

/// CLOCK_REALTIME answers `ms` (milliseconds since the epoch) until the scope is dropped.
pub fn pinned(ms: i64) -> Scope {
    let reads_before = REALTIME_READS.load(Ordering::SeqCst);
    PINNED_MS.store(ms, Ordering::SeqCst);
    Scope { reads_before }
}

/// The real clock, with its reads counted.
pub fn unpinned() -> Scope {
    let reads_before = REALTIME_READS.load(Ordering::SeqCst);
    PINNED_MS.store(UNPINNED, Ordering::SeqCst);
    Scope { reads_before }
}

/// Runs `fut` with the wall clock pinned to `ms` (milliseconds since the epoch).
pub async fn at<T>(ms: u64, fut: impl Future<Output = T>) -> T {
    // Op times are at most 2^53: the saturation never happens.
    let _scope = pinned(i64::try_from(ms).unwrap_or(i64::MAX));
    fut.await
}

/// Runs `fut` for an op that carries no time (so the crate should not read the clock) on the
/// real clock; a read is logged to stderr with the op's name. Worded for the official SDK's
/// adapter, its user.
pub async fn without<T>(op: &str, fut: impl Future<Output = T>) -> T {
    let scope = unpinned();
    let value = fut.await;
    let reads = scope.reads();
    drop(scope);
    if reads > 0 {
        eprintln!(
            "[rust-bullmq adapter] warning: the SDK read the wall clock {reads} time(s) during \
             {op}, which has no explicit time"
        );
    }
    value
}

/// Milliseconds since the epoch by std's `SystemTime::now()`, negative before it.
fn std_now_ms() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_millis() as i64,
        Err(e) => -(e.duration().as_millis() as i64),
    }
}

/// Proves the override is the `clock_gettime` std calls. Run it once at start, so an adapter
/// whose link did not pick up the override fails loudly instead of leaking the wall clock.
pub fn self_check() -> Result<(), String> {
    check("SystemTime::now()", std_now_ms)
}

/// Checks another way the crate under test reads the wall clock (`read_ms`, in milliseconds
/// since the epoch, e.g. chrono's `Utc::now()`): pinned, it must give the pinned time;
/// unpinned again, a plausible real time.
pub fn check(reader: &str, read_ms: impl Fn() -> i64) -> Result<(), String> {
    // Before the real-time floor below, so a scope that did not restore the clock shows.
    const PROBE_MS: i64 = 1_234_567_890_123;
    const REAL_FLOOR_MS: i64 = 1_600_000_000_000;
    let seen = {
        let _scope = pinned(PROBE_MS);
        read_ms()
    };
    if seen != PROBE_MS {
        return Err(format!(
            "the clock_gettime override is not in effect: {reader} gave {seen} ms with the \
             clock pinned to {PROBE_MS} ms"
        ));
    }
    let real = read_ms();
    if real < REAL_FLOOR_MS {
        return Err(format!(
            "unpinned, {reader} gave {real} ms: the fallthrough to the kernel is broken"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::{Context, Poll, Waker};

    crate::override_clock_gettime!();

    /// The futures here never wait, so one poll finishes them (and no runtime is needed).
    fn block_on<T>(fut: impl Future<Output = T>) -> T {
        let mut fut = std::pin::pin!(fut);
        match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(value) => value,
            Poll::Pending => panic!("a test future waited"),
        }
    }

    // One test: the clock is process-wide, so the cases must not run in parallel.
    #[test]
    fn pins_counts_and_restores_the_wall_clock() {
        self_check().expect("the override is linked");
        assert_eq!(
            block_on(at(1_700_000_000_123, async { std_now_ms() })),
            1_700_000_000_123
        );
        // Past the op, std reads the kernel's clock again (this test runs after 2001).
        assert!(std_now_ms() > 1_000_000_000_000);
        {
            let _scope = pinned(-1);
            assert_eq!(std_now_ms(), -1);
        }
        {
            let scope = unpinned();
            let _ = std_now_ms();
            let _ = std_now_ms();
            assert_eq!(scope.reads(), 2);
        }
        assert!(block_on(without("probe", async { std_now_ms() > 0 })));
        // Monotonic time is never pinned.
        block_on(at(5, async {
            let start = std::time::Instant::now();
            std::thread::sleep(std::time::Duration::from_millis(2));
            assert!(start.elapsed().as_millis() >= 2);
        }));
    }
}
