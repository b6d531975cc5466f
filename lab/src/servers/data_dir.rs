//! A server instance's data directory: made new for it, removed with it.

use std::path::{Path, PathBuf};

/// A directory this instance made and owns; removed (with everything in
/// it) when dropped, unless [kept](DataDir::keep). Drop it only after the
/// process writing to it is dead, or the process may write into it again.
#[derive(Debug)]
pub struct DataDir {
    path: PathBuf,
    kept: bool,
}

impl DataDir {
    /// Makes `path`, which must not exist yet (a leftover is never reused:
    /// an instance starts with exactly the data the lab gave it).
    ///
    /// # Errors
    /// It exists already, or cannot be made.
    pub fn create(path: &Path) -> std::io::Result<DataDir> {
        std::fs::create_dir(path)?;
        Ok(DataDir {
            path: path.to_path_buf(),
            kept: false,
        })
    }

    /// Leaves it in place when dropped: a run kept with `--keep DIR` keeps
    /// its servers' data, whose logs say in which order the server took
    /// the clients' writes (ZooKeeper's transaction log, read with
    /// `java -cp /usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar
    /// org.apache.zookeeper.server.persistence.TxnLogToolkit FILE`).
    pub fn keep(&mut self) {
        self.kept = true;
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Empties it: a restart "without its data".
    ///
    /// # Errors
    /// It cannot be removed or made again.
    pub fn wipe(&self) -> std::io::Result<()> {
        std::fs::remove_dir_all(&self.path)?;
        std::fs::create_dir(&self.path)
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        // Best effort: a failure here has no one to report to, and the run's
        // directory (a temporary one unless --keep) is removed after it.
        if !self.kept {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}
