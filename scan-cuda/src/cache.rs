//! The on-disk module cache: one CUBIN per key, written atomically, checked
//! on read (a corrupt or truncated entry is a miss, then overwritten); the
//! temporaries of writers killed mid-write are swept a day later.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// Bumped whenever the entry format or the meaning of a key changes.
const FORMAT: &str = "scan-cuda-cubin-v2";
const MAGIC: &[u8; 10] = b"SCANCUBIN2";

/// 128-bit FNV-1a: stable across processes, platforms and Rust releases
/// (unlike `DefaultHasher`), which a key written to disk needs.
#[derive(Clone, Debug)]
pub(crate) struct Fnv128(u128);

impl Fnv128 {
    pub(crate) fn new() -> Self {
        Fnv128(0x6c62272e07bb014262b821756295c58d)
    }
    pub(crate) fn write(&mut self, bytes: &[u8]) -> &mut Self {
        for &b in bytes {
            self.0 ^= b as u128;
            self.0 = self.0.wrapping_mul(0x0000000001000000000000000000013B);
        }
        // A separator, so that ("ab", "c") and ("a", "bc") differ.
        self.0 ^= 0xff;
        self.0 = self.0.wrapping_mul(0x0000000001000000000000000000013B);
        self
    }
    pub(crate) fn finish(&self) -> u128 {
        self.0
    }
}

/// The key of a module: everything that changes the CUBIN.
pub(crate) fn key(code: &str, options: &[&str], arch: &str, nvrtc: (i32, i32)) -> u128 {
    let mut h = Fnv128::new();
    h.write(FORMAT.as_bytes()).write(code.as_bytes());
    for o in options {
        h.write(o.as_bytes());
    }
    h.write(arch.as_bytes()).write(format!("nvrtc {}.{}", nvrtc.0, nvrtc.1).as_bytes());
    h.finish()
}

/// Where compiled modules live: `SCAN_CUDA_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/scan`, else `~/.cache/scan`; `None` when none is set
/// (then only the in-memory cache is used). Only absolute paths count (a
/// relative one would move with the current directory; the XDG rules ignore
/// a relative `XDG_CACHE_HOME` too); another `SCAN_CUDA_CACHE_DIR` is
/// reported once on stderr.
pub fn default_dir() -> Option<PathBuf> {
    let absolute = |v: &str| std::env::var_os(v).map(PathBuf::from).filter(|p| p.is_absolute());
    const DIR: crate::env::TuningVar = crate::env::TuningVar { name: "SCAN_CUDA_CACHE_DIR", takes: "an absolute path" };
    DIR.read(|v| Some(PathBuf::from(v)).filter(|p| p.is_absolute()))
        .or_else(|| absolute("XDG_CACHE_HOME").map(|d| d.join("scan")))
        .or_else(|| absolute("HOME").map(|d| d.join(".cache").join("scan")))
}

/// A folder of cached CUBINs.
#[derive(Clone, Debug)]
pub(crate) struct DiskCache {
    dir: PathBuf,
}

impl DiskCache {
    pub(crate) fn new(dir: PathBuf) -> Self {
        DiskCache { dir }
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Says on stderr, once per process, that entries cannot be written
    /// here (every start then compiles again); the scans go on.
    pub(crate) fn warn_once(&self, error: &std::io::Error) {
        static WARNED: std::sync::Once = std::sync::Once::new();
        WARNED.call_once(|| {
            eprintln!(
                "scan-cuda: cannot write compiled modules to the disk cache {}: {error}; they are compiled again on \
                 every start (set SCAN_CUDA_CACHE_DIR to a writable absolute path)",
                self.dir.display()
            )
        });
    }

    fn path(&self, key: u128) -> PathBuf {
        self.dir.join(format!("{key:032x}.cubin"))
    }

    /// The CUBIN stored under `key`, if present and intact.
    pub(crate) fn get(&self, key: u128) -> Option<Vec<u8>> {
        let bytes = fs::read(self.path(key)).ok()?;
        decode(key, &bytes)
    }

    /// Stores `cubin` under `key`: written to a temporary file in the same
    /// folder, then renamed, so that a reader never sees half an entry.
    /// Failures are returned for the caller to ignore or report: the cache
    /// only saves time. The first store of a process also removes
    /// temporaries a killed process left behind.
    pub(crate) fn put(&self, key: u128, cubin: &[u8]) -> std::io::Result<()> {
        create_private_dir(&self.dir)?;
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| self.remove_stale_temporaries(STALE_AFTER));
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let tmp = self.dir.join(format!(".{key:032x}.{}.{nanos}.tmp", std::process::id()));
        let result = fs::write(&tmp, encode(key, cubin)).and_then(|()| fs::rename(&tmp, self.path(key)));
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }

    /// Removes this folder's temporary files older than `age` (best effort;
    /// entries themselves are never removed here).
    fn remove_stale_temporaries(&self, age: std::time::Duration) {
        let Ok(entries) = fs::read_dir(&self.dir) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let temporary = name.to_str().is_some_and(|n| n.starts_with('.') && n.ends_with(".tmp"));
            let old = || {
                let modified = entry.metadata().and_then(|m| m.modified()).ok();
                modified.and_then(|t| t.elapsed().ok()).is_some_and(|elapsed| elapsed >= age)
            };
            if temporary && old() {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}

/// How old a temporary file must be before a later process removes it: a
/// writer takes milliseconds, so one this old was left by a process killed
/// between its write and its rename.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

/// The cache folder, readable and writable by its owner only where it is
/// made here (entries are code the process loads).
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

fn checksum(payload: &[u8]) -> u128 {
    Fnv128::new().write(payload).finish()
}

/// An entry: the magic, the key it was written for (an entry copied or
/// renamed to another key's name is a miss), the payload's length and
/// checksum, the payload.
fn encode(key: u128, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAGIC.len() + 40 + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&key.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&checksum(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

fn decode(key: u128, bytes: &[u8]) -> Option<Vec<u8>> {
    let rest = bytes.strip_prefix(MAGIC)?;
    let (written_for, rest) = rest.split_first_chunk::<16>()?;
    let (len, rest) = rest.split_first_chunk::<8>()?;
    let (sum, payload) = rest.split_first_chunk::<16>()?;
    let ok = u128::from_le_bytes(*written_for) == key
        && u64::from_le_bytes(*len) == payload.len() as u64
        && u128::from_le_bytes(*sum) == checksum(payload);
    ok.then(|| payload.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(label: &str) -> PathBuf {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        std::env::temp_dir().join(format!("scan-cuda-test-{label}-{}-{nanos}", std::process::id()))
    }

    #[test]
    fn an_entry_reads_back_as_written() {
        let cache = DiskCache::new(temp_dir("roundtrip"));
        cache.put(7, b"cubin bytes").unwrap();
        assert_eq!(cache.get(7).as_deref(), Some(&b"cubin bytes"[..]));
        assert_eq!(cache.get(8), None);
        let _ = fs::remove_dir_all(cache.dir());
    }

    #[test]
    fn a_corrupt_or_truncated_entry_is_a_miss() {
        let cache = DiskCache::new(temp_dir("corrupt"));
        cache.put(1, b"0123456789").unwrap();
        let path = cache.path(1);
        let mut bytes = fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        fs::write(&path, &bytes).unwrap();
        assert_eq!(cache.get(1), None, "flipped bit");
        fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        assert_eq!(cache.get(1), None, "truncated");
        fs::write(&path, b"garbage").unwrap();
        assert_eq!(cache.get(1), None, "garbage");
        let _ = fs::remove_dir_all(cache.dir());
    }

    #[test]
    fn an_entry_under_another_keys_name_is_a_miss() {
        let cache = DiskCache::new(temp_dir("renamed"));
        cache.put(1, b"cubin for key 1").unwrap();
        fs::copy(cache.path(1), cache.path(2)).unwrap();
        assert_eq!(cache.get(2), None);
        assert_eq!(cache.get(1).as_deref(), Some(&b"cubin for key 1"[..]));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(cache.dir()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        }
        let _ = fs::remove_dir_all(cache.dir());
    }

    #[test]
    fn stale_temporaries_are_removed_and_entries_kept() {
        let cache = DiskCache::new(temp_dir("stale"));
        cache.put(3, b"entry").unwrap();
        let left = cache.dir().join(".0000.1234.5678.tmp");
        let other = cache.dir().join("notes.txt");
        fs::write(&left, b"half an entry").unwrap();
        fs::write(&other, b"not ours").unwrap();
        // Younger than the age: kept (a writer may be between write and rename).
        cache.remove_stale_temporaries(std::time::Duration::from_secs(3600));
        assert!(left.exists());
        cache.remove_stale_temporaries(std::time::Duration::ZERO);
        assert!(!left.exists());
        assert!(other.exists(), "only our temporaries are removed");
        assert_eq!(cache.get(3).as_deref(), Some(&b"entry"[..]));
        let _ = fs::remove_dir_all(cache.dir());
    }

    #[test]
    fn keys_depend_on_source_options_arch_and_nvrtc_version() {
        let base = key("src", &["-a"], "sm_90", (12, 9));
        assert_ne!(base, key("src2", &["-a"], "sm_90", (12, 9)));
        assert_ne!(base, key("src", &["-b"], "sm_90", (12, 9)));
        assert_ne!(base, key("src", &["-a"], "sm_80", (12, 9)));
        assert_ne!(base, key("src", &["-a"], "sm_90", (13, 0)));
        assert_eq!(base, key("src", &["-a"], "sm_90", (12, 9)));
    }
}
