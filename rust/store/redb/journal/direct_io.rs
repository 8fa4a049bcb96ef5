//! How the journal reaches the device: synchronous writes (`O_DIRECT |
//! O_DSYNC` where the file system takes it, `O_DSYNC` alone elsewhere),
//! buffers aligned for `O_DIRECT`, and the two-field check of the file
//! made before every record.

use std::fs::{File, OpenOptions};
use std::io;
#[cfg(not(target_os = "linux"))]
use std::os::unix::fs::MetadataExt;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use super::BLOCK;

/// The inode and length of the file at `path`, and nothing more. This runs
/// before every record: std's `metadata` asks `statx` for every field
/// (timestamps, birth time included), and in an A/B on this project's
/// machine a save took 60-86 us longer with it than with this two-field
/// request, the device seeing a second synchronous write per save.
#[cfg(target_os = "linux")]
pub(super) fn inode_and_len(path: &Path) -> io::Result<(u64, u64)> {
    use rustix::fs::{AtFlags, CWD, StatxFlags, statx};
    let found = statx(
        CWD,
        path,
        AtFlags::SYMLINK_NOFOLLOW,
        StatxFlags::INO | StatxFlags::SIZE,
    )?;
    Ok((found.stx_ino, found.stx_size))
}

#[cfg(not(target_os = "linux"))]
pub(super) fn inode_and_len(path: &Path) -> io::Result<(u64, u64)> {
    let meta = std::fs::symlink_metadata(path)?;
    Ok((meta.ino(), meta.len()))
}

/// Writes `bytes` at `offset` of the journal open in `file` (`direct`: with
/// `O_DIRECT`, given up for good if this file system refuses it).
pub(super) fn write_at(
    file: &mut Option<File>,
    direct: &mut bool,
    path: &Path,
    bytes: &[u8],
    offset: usize,
) -> io::Result<()> {
    let open = file
        .as_ref()
        .ok_or_else(|| io::Error::other("the journal is not open"))?;
    match open.write_all_at(bytes, offset as u64) {
        Err(error) if *direct && error.raw_os_error() == Some(libc::EINVAL) => {
            // Accepted O_DIRECT at open but not for this write: carry on
            // with plain synchronous writes.
            let (plain, _) = open_plain_synchronous(path)?;
            plain.write_all_at(bytes, offset as u64)?;
            *file = Some(plain);
            *direct = false;
            Ok(())
        }
        other => other,
    }
}

/// Opens for writes that return once on stable storage: `O_DIRECT |
/// O_DSYNC` where the file system takes it, else `O_DSYNC` alone.
pub(super) fn open_synchronous(path: &Path) -> io::Result<(File, bool)> {
    #[cfg(target_os = "linux")]
    {
        let direct = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_DIRECT | libc::O_DSYNC | libc::O_NOFOLLOW)
            .open(path);
        match direct {
            Ok(file) => return Ok((file, true)),
            Err(error) if error.raw_os_error() == Some(libc::EINVAL) => {} // tmpfs and the like
            Err(error) => return Err(error),
        }
    }
    open_plain_synchronous(path)
}

fn open_plain_synchronous(path: &Path) -> io::Result<(File, bool)> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DSYNC | libc::O_NOFOLLOW)
        .open(path)?;
    Ok((file, false))
}

/// Reads as much of `buffer` as the file holds from `offset`.
pub(super) fn read_up_to(file: &File, buffer: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buffer.len() {
        match file.read_at(&mut buffer[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(done)
}

/// A zeroed buffer whose start is aligned to [`BLOCK`], as `O_DIRECT` wants,
/// carved out of a slightly larger `Vec` (no unsafe allocation needed).
pub(super) struct AlignedBuffer {
    bytes: Vec<u8>,
    start: usize,
    pub(super) len: usize,
}

impl AlignedBuffer {
    pub(super) fn zeroed(len: usize) -> Self {
        let bytes = vec![0u8; len + BLOCK];
        let start = bytes.as_ptr().align_offset(BLOCK);
        AlignedBuffer { bytes, start, len }
    }

    pub(super) fn bytes(&self) -> &[u8] {
        &self.bytes[self.start..self.start + self.len]
    }

    pub(super) fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.bytes[self.start..self.start + self.len]
    }
}
