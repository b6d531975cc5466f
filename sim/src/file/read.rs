//! File access for [`super::load`]: a regular file of bounded size, in UTF-8.

use std::fmt;
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
/// A [`ReadError`]: one sentence saying why the file cannot be used.
pub(super) fn read_scenario_text(path: &Path) -> Result<String, ReadError> {
    use std::io::Read as _;
    let kind = std::fs::metadata(path)
        .map_err(ReadError::cannot_read)?
        .file_type();
    if !kind.is_file() {
        return Err(ReadError::NotRegular(file_kind(&kind)));
    }
    let file = std::fs::File::open(path).map_err(ReadError::cannot_read)?;
    // The path may have been swapped between the check and the open: check
    // what was opened too.
    let opened = file.metadata().map_err(ReadError::cannot_read)?;
    if !opened.is_file() {
        return Err(ReadError::NotRegular(file_kind(&opened.file_type())));
    }
    if opened.len() > MAX_SCENARIO_FILE_BYTES {
        return Err(ReadError::TooBig);
    }
    let mut bytes = Vec::new();
    file.take(MAX_SCENARIO_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(ReadError::cannot_read)?;
    if bytes.len() as u64 > MAX_SCENARIO_FILE_BYTES {
        return Err(ReadError::TooBig);
    }
    String::from_utf8(bytes).map_err(|e| ReadError::NotUtf8(e.utf8_error()))
}

/// Why [`read_scenario_text`] cannot use a file.
#[derive(Debug)]
pub(super) enum ReadError {
    /// Nothing is at the path.
    Missing(std::io::Error),
    /// The file is there but cannot be read.
    Unreadable(std::io::Error),
    /// A directory, FIFO, device or socket ([`file_kind`]'s words).
    NotRegular(&'static str),
    /// Over [`MAX_SCENARIO_FILE_BYTES`].
    TooBig,
    /// Not UTF-8; the error says at which byte.
    NotUtf8(std::str::Utf8Error),
}

impl ReadError {
    /// [`ReadError::Missing`] or [`ReadError::Unreadable`], by the error's kind.
    fn cannot_read(err: std::io::Error) -> Self {
        match err.kind() {
            std::io::ErrorKind::NotFound => ReadError::Missing(err),
            _ => ReadError::Unreadable(err),
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Missing(_) => f.write_str("no such file"),
            ReadError::Unreadable(err) => write!(f, "cannot read the file: {err}"),
            ReadError::NotRegular(kind) => {
                write!(f, "not a regular file ({kind}); a scenario is a TOML file")
            }
            ReadError::TooBig => write!(
                f,
                "the file is larger than {} KiB, the most a scenario file may be; \
                 use `count` on a [[node]] for large fleets and recurring faults (`every`) \
                 for long schedules",
                MAX_SCENARIO_FILE_BYTES / 1024
            ),
            ReadError::NotUtf8(e) => write!(
                f,
                "the file is not UTF-8 text (invalid byte at offset {}); save it as UTF-8",
                e.valid_up_to()
            ),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadError::Missing(e) | ReadError::Unreadable(e) => Some(e),
            ReadError::NotUtf8(e) => Some(e),
            ReadError::NotRegular(_) | ReadError::TooBig => None,
        }
    }
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
