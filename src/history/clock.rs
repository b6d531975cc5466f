//! The history clock: `CLOCK_MONOTONIC`, read by a raw system call.
//!
//! A history's timestamps must mean the same thing in every process of a run
//! and must not move with the faults a lab injects into the processes' own
//! clocks. Two facts decide how it is read:
//!
//! * `CLOCK_MONOTONIC` is one clock per machine (per time namespace): every
//!   process reading it at the same moment reads the same value; it counts
//!   while a process is stopped (`SIGSTOP`), and `settimeofday` does not move
//!   it.
//! * libfaketime, the usual way to fake a process's clocks, is an
//!   `LD_PRELOAD` library that replaces libc's `clock_gettime` (and with it
//!   `std::time::Instant`, `SystemTime` and tokio's clock), `CLOCK_MONOTONIC`
//!   included unless told not to. Some builds also replace libc's
//!   `syscall()` wrapper. Neither can reach a `syscall` *instruction* in this
//!   crate's own code, and the kernel's answer to it is the true clock.
//!
//! So the clock is read with the `clock_gettime` system call issued by inline
//! assembly (x86_64: `syscall`, number 228; aarch64: `svc 0`, number 113),
//! not through libc nor the vDSO. Verified against libfaketime 0.9.10 under
//! `faketime -f +100s`: libc's `CLOCK_MONOTONIC` and `CLOCK_REALTIME` (and
//! Rust's `Instant` and `SystemTime`) moved, this clock did not
//! (`tests/history_clock.rs`).
//!
//! A raw system call costs about 50–100 ns more than the vDSO; one is made
//! per recorded line, never when recording is off.

use std::fmt;

/// The name a history header gives this clock.
pub const CLOCK_NAME: &str = "linux-monotonic-raw-syscall";

/// Why the history clock could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClockError {
    /// Not Linux on x86_64 or aarch64: there is no raw clock to read here.
    Unsupported,
    /// The kernel refused the call (its negative error number).
    Kernel(i64),
}

impl fmt::Display for ClockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClockError::Unsupported => f.write_str(
                "histories need Linux on x86_64 or aarch64 (a raw CLOCK_MONOTONIC system call)",
            ),
            ClockError::Kernel(errno) => {
                write!(f, "clock_gettime(CLOCK_MONOTONIC) failed: errno {}", -errno)
            }
        }
    }
}

impl std::error::Error for ClockError {}

/// `CLOCK_MONOTONIC` in the Linux ABI.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
const CLOCK_MONOTONIC: i64 = 1;

/// The history clock now, in nanoseconds since the machine booted (time
/// spent suspended excluded), the same in every process of the machine.
///
/// # Errors
/// [`ClockError::Unsupported`] off Linux x86_64/aarch64;
/// [`ClockError::Kernel`] if the kernel refuses (it never does for this
/// clock).
pub fn now_ns() -> Result<u64, ClockError> {
    let (seconds, nanos) = raw_monotonic()?;
    let seconds = u64::try_from(seconds).map_err(|_| ClockError::Kernel(0))?;
    let nanos = u64::try_from(nanos).map_err(|_| ClockError::Kernel(0))?;
    Ok(seconds.saturating_mul(1_000_000_000).saturating_add(nanos))
}

/// `(tv_sec, tv_nsec)` of `CLOCK_MONOTONIC`, by the `clock_gettime` system
/// call issued directly (see the module documentation for why).
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[allow(unsafe_code)]
fn raw_monotonic() -> Result<(i64, i64), ClockError> {
    const SYS_CLOCK_GETTIME: i64 = 228;
    // `struct timespec` on x86_64 Linux: two 64-bit fields.
    let mut timespec = [0_i64; 2];
    let result: i64;
    // SAFETY: `clock_gettime(CLOCK_MONOTONIC, &timespec)` writes exactly 16
    // bytes to the valid, aligned, exclusively borrowed array and touches no
    // other memory; the `syscall` instruction clobbers rcx and r11 (declared)
    // and returns in rax. No stack is used.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") SYS_CLOCK_GETTIME => result,
            in("rdi") CLOCK_MONOTONIC,
            in("rsi") timespec.as_mut_ptr(),
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    if result < 0 {
        return Err(ClockError::Kernel(result));
    }
    Ok((timespec[0], timespec[1]))
}

/// `(tv_sec, tv_nsec)` of `CLOCK_MONOTONIC`, by the `clock_gettime` system
/// call issued directly (see the module documentation for why).
#[cfg(all(target_os = "linux", target_arch = "aarch64"))]
#[allow(unsafe_code)]
fn raw_monotonic() -> Result<(i64, i64), ClockError> {
    const SYS_CLOCK_GETTIME: u64 = 113;
    let mut timespec = [0_i64; 2];
    let result: i64;
    // SAFETY: as on x86_64: the kernel writes 16 bytes to the valid, aligned,
    // exclusively borrowed array; `svc 0` returns in x0 and clobbers nothing
    // else the compiler relies on.
    unsafe {
        std::arch::asm!(
            "svc 0",
            in("x8") SYS_CLOCK_GETTIME,
            inlateout("x0") CLOCK_MONOTONIC => result,
            in("x1") timespec.as_mut_ptr(),
            options(nostack),
        );
    }
    if result < 0 {
        return Err(ClockError::Kernel(result));
    }
    Ok((timespec[0], timespec[1]))
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
fn raw_monotonic() -> Result<(i64, i64), ClockError> {
    Err(ClockError::Unsupported)
}

#[cfg(all(
    test,
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod tests {
    use super::*;

    #[test]
    fn the_raw_clock_runs_forward_with_real_time() {
        // Proves the clock reads a sane, advancing value: two readings 20 ms
        // of sleep apart differ by at least that much and by far less than a
        // second.
        let before = now_ns().expect("the raw clock reads on Linux");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let after = now_ns().expect("the raw clock reads on Linux");
        assert!(after >= before + 20_000_000, "{before} → {after}");
        assert!(after < before + 5_000_000_000, "{before} → {after}");
    }
}
