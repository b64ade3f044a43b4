//! `shoal --restore-from=DIR --datadir=NEW`: turns a `BACKUP TO 'DIR'` directory into a data
//! directory, in the spirit of `mariabackup --copy-back`.
//!
//! A backup directory holds a RocksDB checkpoint (`rocksdb/`: SST files, manifest, options,
//! already consistent, nothing to replay or prepare) and `shoal-backup.info`. Restoring copies
//! both into the new datadir, which must be absent or empty (never overwritten: restoring over
//! live data is how backups destroy data). Files are copied, not linked, so the backup stays
//! intact and reusable whatever the restored server does; each file and directory is synced
//! before the command reports success. The server is not started: run `shoal --datadir=NEW`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use shoal_exec::BACKUP_INFO;

/// What a restore copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restored {
    /// Files copied.
    pub files: u64,
    /// Bytes copied.
    pub bytes: u64,
}

/// Why a restore was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// The source has no `shoal-backup.info` or no `rocksdb/`.
    #[error("'{0}' is not a shoal backup (no {BACKUP_INFO} and rocksdb/ in it)")]
    NotABackup(PathBuf),
    /// The target datadir has files in it.
    #[error("datadir '{0}' is not empty: restore only into an empty or new directory")]
    NotEmpty(PathBuf),
    /// A filesystem error.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> RestoreError + '_ {
    move |source| RestoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Copies the backup in `from` into the (absent or empty) `datadir`.
pub fn restore(from: &Path, datadir: &Path) -> Result<Restored, RestoreError> {
    if !from.join(BACKUP_INFO).is_file() || !from.join("rocksdb").is_dir() {
        return Err(RestoreError::NotABackup(from.to_path_buf()));
    }
    if datadir.exists() {
        let mut entries = fs::read_dir(datadir).map_err(io_at(datadir))?;
        if entries.next().is_some() {
            return Err(RestoreError::NotEmpty(datadir.to_path_buf()));
        }
    }
    fs::create_dir_all(datadir).map_err(io_at(datadir))?;
    let mut done = Restored { files: 0, bytes: 0 };
    copy_tree(&from.join("rocksdb"), &datadir.join("rocksdb"), &mut done)?;
    copy_file(
        &from.join(BACKUP_INFO),
        &datadir.join(BACKUP_INFO),
        &mut done,
    )?;
    sync_dir(datadir)?;
    Ok(done)
}

fn copy_tree(from: &Path, to: &Path, done: &mut Restored) -> Result<(), RestoreError> {
    fs::create_dir_all(to).map_err(io_at(to))?;
    for e in fs::read_dir(from).map_err(io_at(from))? {
        let e = e.map_err(io_at(from))?;
        let src = e.path();
        let dst = to.join(e.file_name());
        if e.file_type().map_err(io_at(&src))?.is_dir() {
            copy_tree(&src, &dst, done)?;
        } else {
            copy_file(&src, &dst, done)?;
        }
    }
    sync_dir(to)
}

fn copy_file(from: &Path, to: &Path, done: &mut Restored) -> Result<(), RestoreError> {
    let n = fs::copy(from, to).map_err(io_at(from))?;
    fs::File::open(to)
        .and_then(|f| f.sync_all())
        .map_err(io_at(to))?;
    done.files += 1;
    done.bytes += n;
    Ok(())
}

fn sync_dir(d: &Path) -> Result<(), RestoreError> {
    fs::File::open(d)
        .and_then(|f| f.sync_all())
        .map_err(io_at(d))
}
