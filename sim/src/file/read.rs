//! File access for [`super::load`]: a regular file of bounded size, in UTF-8.

use std::path::Path;

/// The largest scenario file [`load`](super::load) reads: 1 MiB. The biggest shipped
/// scenario is a few kilobytes, and a fleet of thousands of nodes takes one
/// `[[node]]` with `count`; a bigger file is a mistake (or `/dev/zero`), not
/// a scenario.
pub const MAX_SCENARIO_FILE_BYTES: u64 = 1024 * 1024;

/// Reads the text of the scenario file at `path`: a regular file (after
/// symbolic links) of at most [`MAX_SCENARIO_FILE_BYTES`], in UTF-8.
///
/// Devices, FIFOs, sockets and directories are refused *before* they are
/// opened (opening a FIFO for reading blocks until a writer comes), and the
/// read stops one byte past the cap, so neither `/dev/zero` nor a file that
/// grows while it is read can exhaust memory.
///
/// # Errors
/// One sentence saying why the file cannot be used.
pub(super) fn read_scenario_text(path: &Path) -> Result<String, String> {
    use std::io::Read as _;
    let cannot_read = |err: std::io::Error| match err.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        _ => format!("cannot read the file: {err}"),
    };
    let kind = std::fs::metadata(path).map_err(cannot_read)?.file_type();
    if !kind.is_file() {
        return Err(format!(
            "not a regular file ({}); a scenario is a TOML file",
            file_kind(&kind)
        ));
    }
    let file = std::fs::File::open(path).map_err(cannot_read)?;
    // The path may have been swapped between the check and the open: check
    // what was opened too.
    let opened = file.metadata().map_err(cannot_read)?;
    if !opened.is_file() {
        return Err(format!(
            "not a regular file ({}); a scenario is a TOML file",
            file_kind(&opened.file_type())
        ));
    }
    let too_big = || {
        format!(
            "the file is larger than {} KiB, the most a scenario file may be; \
             use `count` on a [[node]] for large fleets and recurring faults (`every`) \
             for long schedules",
            MAX_SCENARIO_FILE_BYTES / 1024
        )
    };
    if opened.len() > MAX_SCENARIO_FILE_BYTES {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    file.take(MAX_SCENARIO_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot_read)?;
    if bytes.len() as u64 > MAX_SCENARIO_FILE_BYTES {
        return Err(too_big());
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "the file is not UTF-8 text (invalid byte at offset {}); save it as UTF-8",
            e.utf8_error().valid_up_to()
        )
    })
}

/// What a non-regular file is, in words.
pub(super) fn file_kind(kind: &std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if kind.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    "not a plain file"
}
