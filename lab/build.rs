//! Builds the wall-clock shim (`shim/wall_clock.c`) that `fenced-lab`
//! carries inside itself and preloads into a server whose wall clock a run
//! steps (`src/servers/wall_clock.rs` says why not libfaketime). It is
//! compiled with the C compiler that links Rust programs on this platform
//! (`$CC`, else `cc`).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let source = "shim/wall_clock.c";
    println!("cargo:rerun-if-changed={source}");
    println!("cargo:rerun-if-env-changed=CC");
    let Some(out_dir) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        panic!("cargo sets OUT_DIR for build scripts");
    };
    let output = out_dir.join("libfenced_wall_clock.so");
    let compiler = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let status = Command::new(&compiler)
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-o"])
        .arg(&output)
        .arg(source)
        .status();
    match status {
        Ok(status) if status.success() => {}
        Ok(status) => panic!(
            "{} could not build {source} ({status}); the lab needs a C compiler (apt-get install gcc)",
            compiler.to_string_lossy()
        ),
        Err(error) => panic!(
            "cannot run {} to build {source}: {error}; the lab needs a C compiler (apt-get install gcc)",
            compiler.to_string_lossy()
        ),
    }
}
