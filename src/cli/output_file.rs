//! The file `status --output` replaces whole, in every format (the node exporter's textfile
//! collector reads the Prometheus one at any moment): a temporary file beside it, written,
//! synced, then renamed over it.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use ck_cgroup::Error;
use rustix::io::Errno;

use crate::cli::mutation::{self, Control};

/// `status --output FILE`, checked before anything is read: FILE names a file (not a directory)
/// in a directory that exists. Bad input (exit 2) otherwise.
pub fn check_output(file: &Path) -> Result<(), Error> {
    let shown = file.display();
    if file.file_name().is_none() || file.as_os_str().as_encoded_bytes().ends_with(b"/") {
        return Err(Error::bad_input(format!(
            "--output {shown} names no file: give the path of a file, such as /var/lib/prometheus/node-exporter/ck-subc.prom"
        )));
    }
    let dir = parent(file);
    match fs::metadata(&dir) {
        Ok(md) if md.is_dir() => {}
        Ok(_) => {
            return Err(Error::bad_input(format!(
                "--output {shown}: {} is not a directory; name a file in an existing directory",
                dir.display()
            )));
        }
        // Not there (or a part of its path is no directory): bad input. Any other error (EACCES
        // on a parent) is the errno's, as a failed write would be.
        Err(e)
            if e.kind() != io::ErrorKind::NotFound && e.kind() != io::ErrorKind::NotADirectory =>
        {
            return Err(failed("read", &dir, &e));
        }
        Err(_) => {
            return Err(Error::bad_input(format!(
                "--output {shown}: its directory {} does not exist; create it first (mkdir -p {}) or name a file in an existing directory",
                dir.display(),
                dir.display()
            )));
        }
    }
    if fs::metadata(file).is_ok_and(|md| md.is_dir()) {
        return Err(Error::bad_input(format!(
            "--output {shown} is a directory; name a file in it, such as {}",
            file.join("ck-subc.prom").display()
        )));
    }
    Ok(())
}

fn parent(file: &Path) -> PathBuf {
    match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn failed(what: &str, path: &Path, e: &io::Error) -> Error {
    match Errno::from_io_error(e) {
        Some(errno) => Error::io(what, path, errno),
        None => Error::failed(format!("failed to {what} {}: {e}", path.display())),
    }
}

/// Replace `file` with `bytes` whole: a new file beside it (`.NAME.tmp-PID-N`, made with
/// `O_EXCL`, mode 0644 whatever the umask), written, fsynced, then renamed over `file`. A reader
/// sees the old file or the new one, never a part. On any failure the new file is removed and
/// `file` is as it was (exit 1, the errno).
pub fn replace_whole(file: &Path, bytes: &[u8]) -> Result<(), Error> {
    if mutation::active(Control::PrometheusNoRename) {
        // The mutation control: written in place, so a reader can see it empty or cut.
        let mut f = File::create(file).map_err(|e| failed("write", file, &e))?;
        return f.write_all(bytes).map_err(|e| failed("write", file, &e));
    }
    let dir = parent(file);
    let name = file
        .file_name()
        .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    // A file-size limit (`ulimit -f`) makes the write fail (EFBIG), said in one line and the
    // temporary file removed, instead of SIGXFSZ killing the helper with it left behind.
    ck_cgroup::signals::block_file_size_signal()
        .map_err(|e| Error::failed(format!("failed to block SIGXFSZ: {e}")))?;
    let (tmp, f) = new_temp(&dir, &name)?;
    let written = (|| {
        let mut f = f;
        f.set_permissions(fs::Permissions::from_mode(0o644))
            .map_err(|e| failed("set the mode of", &tmp, &e))?;
        f.write_all(bytes).map_err(|e| failed("write", &tmp, &e))?;
        f.sync_all().map_err(|e| failed("fsync", &tmp, &e))?;
        drop(f);
        fs::rename(&tmp, file).map_err(|e| {
            let msg = failed("rename", &tmp, &e);
            Error::failed(format!("{msg} (onto {})", file.display()))
        })
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
        return written;
    }
    // The rename is done; its directory entry reaches the disk with the directory's fsync.
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// A new file in `dir` for `name`'s replacement, made with `O_EXCL` (never an existing file).
fn new_temp(dir: &Path, name: &str) -> Result<(PathBuf, File), Error> {
    let pid = std::process::id();
    let mut last = None;
    for n in 0..100u32 {
        let tmp = dir.join(format!(".{name}.tmp-{pid}-{n}"));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some((tmp, e)),
            Err(e) => return Err(failed("create", &tmp, &e)),
        }
    }
    Err(match last {
        Some((tmp, e)) => failed("create", &tmp, &e),
        None => Error::failed(format!("failed to create a file in {}", dir.display())),
    })
}
