//! A server's wall clock, stepped while it runs: what a Redis instance's
//! `clock-jump` is (Redis expires keys by its wall clock, `mstime()`).
//!
//! # Why not libfaketime
//!
//! The lab steps node clocks with libfaketime ([`crate::faketime`]), and the
//! same variables would do for a server — but Debian's `redis-server` is
//! linked with jemalloc, and libfaketime 0.9.10 cannot initialise in a
//! jemalloc process: its `dlsym` allocates, jemalloc's initialisation reads
//! `clock_gettime`, which calls back into the uninitialised libfaketime; it
//! prints "Unexpected recursive calls to clock_gettime() without proper
//! initialization" and the server dies at start (upstream
//! wolfcw/libfaketime#130, open, no fix). Checked on Debian 12 with
//! `FAKETIME="+100"` alone and with the timestamp-file variables.
//!
//! # The shim
//!
//! So the lab carries a shim of its own, `lab/shim/wall_clock.c` (built by
//! `lab/build.rs`, embedded in the binary, written into the run's directory
//! and preloaded with `LD_PRELOAD`): it offsets `clock_gettime` of
//! `CLOCK_REALTIME`/`CLOCK_REALTIME_COARSE`/`CLOCK_TAI`, `gettimeofday` and
//! `time` by the offset in a file it re-reads on every call
//! (`FENCED_WALL_CLOCK_FILE`, libfaketime's timestamp-file format, written
//! by [`crate::faketime::set_wall_offset`]: a write then a rename), and
//! leaves `CLOCK_MONOTONIC` and every other clock alone — an NTP step. It
//! allocates nothing and resolves nothing (it reads the real clocks by
//! system call), so jemalloc does not matter.
//!
//! A preload the dynamic linker cannot map (a run directory on a `noexec`
//! mount) is skipped with only a warning on the server's stderr, so a
//! server started with a stepped clock is checked to have the shim mapped
//! ([`SteppedClock::check_loaded`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The shim, as built for this binary.
pub const SHIM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libfenced_wall_clock.so"));
/// The shim's file name in the run's directory.
pub const SHIM_FILE: &str = "libfenced_wall_clock.so";
/// The variable naming the offset file.
pub const FILE_VAR: &str = "FENCED_WALL_CLOCK_FILE";

/// One server's steppable wall clock: the shim and the server's offset file.
#[derive(Clone, Debug)]
pub struct SteppedClock {
    library: PathBuf,
    file: PathBuf,
}

impl SteppedClock {
    /// Writes the shim into `base` (once per directory) and makes the offset
    /// file `<base>/<name>.wall-clock` reading `+0`.
    ///
    /// # Errors
    /// A file cannot be written.
    pub fn prepare(base: &Path, name: &str) -> std::io::Result<SteppedClock> {
        let library = install_shim(base)?;
        let file = base.join(format!("{name}.wall-clock"));
        crate::faketime::set_wall_offset(&file, 0)?;
        Ok(SteppedClock { library, file })
    }

    /// The environment a server with this clock gets.
    pub fn environment(&self) -> Vec<(OsString, OsString)> {
        vec![
            ("LD_PRELOAD".into(), self.library.clone().into_os_string()),
            (FILE_VAR.into(), self.file.clone().into_os_string()),
        ]
    }

    /// Sets the server's wall clock to the machine's plus `offset_nanos`
    /// (negative: behind), from its next clock read on.
    ///
    /// # Errors
    /// The offset file cannot be written.
    pub fn set_offset(&self, offset_nanos: i64) -> std::io::Result<()> {
        crate::faketime::set_wall_offset(&self.file, offset_nanos)
    }

    /// The offset file.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Whether process `pid` has the shim mapped (the dynamic linker skips a
    /// preload it cannot map, with only a warning).
    pub fn check_loaded(&self, pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/maps"))
            .is_ok_and(|maps| maps.contains(&*self.library.to_string_lossy()))
    }
}

/// Writes [`SHIM`] to `<base>/`[`SHIM_FILE`] unless it is there already
/// (written beside it, then renamed: a concurrent reader never maps half a
/// file).
///
/// # Errors
/// It cannot be written.
pub fn install_shim(base: &Path) -> std::io::Result<PathBuf> {
    let path = base.join(SHIM_FILE);
    if std::fs::read(&path).is_ok_and(|bytes| bytes == SHIM) {
        return Ok(path);
    }
    let staged = base.join(format!("{SHIM_FILE}.{}.new", std::process::id()));
    std::fs::write(&staged, SHIM)?;
    std::fs::rename(&staged, &path)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `date +%s.%N` under the shim with the offset file at `offset`.
    fn date_under(clock: &SteppedClock) -> f64 {
        let output = std::process::Command::new("date")
            .arg("+%s.%N")
            .envs(clock.environment())
            .output()
            .expect("runs date");
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .expect("seconds")
    }

    #[allow(clippy::disallowed_methods)] // Comparing with the real clock is the point.
    fn now() -> f64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
    }

    #[test]
    fn the_shim_steps_a_programs_wall_clock_by_the_file_both_ways() {
        let base = tempfile::tempdir().expect("tempdir");
        let clock = SteppedClock::prepare(base.path(), "date").expect("prepares");
        assert!((date_under(&clock) - now()).abs() < 5.0, "+0 reads true");
        clock.set_offset(1_000_000_000_000).expect("steps");
        assert!((date_under(&clock) - now() - 1_000.0).abs() < 5.0);
        clock.set_offset(-2_500_000_000).expect("steps");
        assert!((date_under(&clock) - now() + 2.5).abs() < 1.0);
        // Installed once per directory, and a second clock shares it.
        let other = SteppedClock::prepare(base.path(), "other").expect("prepares");
        assert!((date_under(&other) - now()).abs() < 5.0);
        assert!(base.path().join(SHIM_FILE).is_file());
    }
}
