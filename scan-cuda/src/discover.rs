//! Finding the CUDA libraries without environment variables.
//!
//! cudarc (dynamically loaded) opens `libcuda` and `libnvrtc` by bare names
//! (`libnvrtc.so`, `libnvrtc.so.12`, ...: `cudarc::get_lib_name_candidates`),
//! which the dynamic loader finds only on its search path. A CUDA toolkit
//! under `/usr/local/cuda-12.x` or a pip wheel's `nvidia/cuda_nvrtc/lib` is
//! usually not on it. Where cudarc cannot load a library, this looks in the
//! usual places and loads a file named like one of cudarc's candidates by its
//! full path: the loader then answers cudarc's open by name with the library
//! already loaded (matched by its soname), and the library's own `$ORIGIN`
//! run path finds its companions (libnvrtc loads libnvrtc-builtins).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where a library was looked for, and what was found there.
#[derive(Debug, Default)]
pub(crate) struct Search {
    /// The folders searched, in order.
    pub searched: Vec<PathBuf>,
    /// Files of a name cudarc loads that could not be loaded.
    pub unloadable: Vec<PathBuf>,
    /// Files of the library found under a name cudarc does not load (a
    /// CUDA major version it does not know, e.g. `libnvrtc.so.8`).
    pub other_versions: Vec<PathBuf>,
}

impl Search {
    /// A sentence for an error message: where the library was looked for.
    pub fn describe(&self, lib: &str) -> String {
        self.describe_names(lib, &candidates(lib, |n| n.starts_with(&format!("lib{lib}.so"))))
    }

    /// [`describe`](Search::describe) for a library looked for under `names`.
    pub fn describe_names(&self, lib: &str, names: &[String]) -> String {
        let mut s = format!(
            "looked for lib{lib} under the names this build loads ({}) on the loader's path and in {} folder(s): {}",
            names.join(", "),
            self.searched.len(),
            self.searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        );
        if !self.unloadable.is_empty() {
            s.push_str(&format!(
                "; could not load: {}",
                self.unloadable.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            ));
        }
        if !self.other_versions.is_empty() {
            s.push_str(&format!(
                "; found only other versions: {}",
                self.other_versions.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            ));
        }
        s.push_str(&format!(
            ". Where lib{lib} is installed elsewhere, set CUDA_HOME or CUDA_PATH to the install's folder (its \
             lib64, lib{} or targets/*/lib are searched){}, or add the folder holding lib{lib}.so.N to \
             LD_LIBRARY_PATH",
            if lib == "cuda" { ", compat" } else { "" },
            match (std::env::var_os("CUDA_HOME"), std::env::var_os("CUDA_PATH")) {
                (None, None) => String::from(": neither is set"),
                (home, path) => format!(
                    ": CUDA_HOME is {}, CUDA_PATH is {} (only absolute folders are used)",
                    shown(home.as_deref()),
                    shown(path.as_deref())
                ),
            }
        ));
        s
    }
}

/// An environment variable's value for a message.
fn shown(value: Option<&std::ffi::OsStr>) -> String {
    match value {
        None => "unset".into(),
        Some(v) => format!("{:?}", v.to_string_lossy()),
    }
}

/// cudarc's candidate names for `lib` that pass `keep`, in its order, each
/// once (its list repeats some).
fn candidates(lib: &str, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for name in cudarc::get_lib_name_candidates(lib) {
        if keep(&name) && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// Loads `lib` ("nvrtc" or "cuda") by full path from the first usual place
/// holding a file of a name cudarc loads. Returns what was searched, for an
/// error message should cudarc still not find it. Call it only when cudarc
/// did not find the library by name.
pub(crate) fn preload(lib: &str) -> Search {
    preload_from(lib, folders(lib))
}

/// [`preload`] from the folders `dirs`, in order.
fn preload_from(lib: &str, dirs: Vec<PathBuf>) -> Search {
    // Versioned names only: an unversioned `libnvrtc.so` is a link to some
    // version whose soname may not be a name cudarc asks for.
    let names = candidates(lib, |n| n.contains(".so."));
    find_in(lib, dirs, &names, Visibility::Global).1
}

/// The first file named as one of `names` in `dirs` (in order) that loads,
/// and what was searched.
fn find_in(lib: &str, dirs: Vec<PathBuf>, names: &[String], visibility: Visibility) -> (Option<Library>, Search) {
    let prefix = format!("lib{lib}.so.");
    let mut search = Search::default();
    for dir in dirs {
        if search.searched.contains(&dir) {
            continue;
        }
        search.searched.push(dir.clone());
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        for name in names {
            if files.iter().any(|f| f.file_name().is_some_and(|n| n == name.as_str())) {
                match Library::open(dir.join(name).as_os_str(), visibility) {
                    Some(found) => return (Some(found), search),
                    None => search.unloadable.push(dir.join(name)),
                }
            }
        }
        search.other_versions.extend(files.into_iter().filter(|f| {
            f.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && !names.iter().any(|c| c == n))
        }));
    }
    (None, search)
}

/// The folders to look in for `lib`, most specific first: `CUDA_HOME`,
/// `CUDA_PATH`, `/usr/local/cuda*` and `/opt/cuda` (`lib64`, `lib`,
/// `targets/*/lib`), the system's library folders (libcuda, libnccl), and the `nvidia/*/lib`
/// folders of pip wheels in the site-packages of the Python on `PATH`, of an
/// active virtualenv or conda environment, and of the usual system and user
/// installs.
fn folders(lib: &str) -> Vec<PathBuf> {
    let mut toolkits: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"].iter().filter_map(|v| env_dir(v)).collect();
    toolkits.push("/usr/local/cuda".into());
    let mut versioned = glob_dirs(Path::new("/usr/local"), |n| n.starts_with("cuda-"));
    // The newest first, by number (`cuda-12.10` after `cuda-12.9`).
    versioned.sort_by_key(|d| std::cmp::Reverse(toolkit_version(d)));
    toolkits.extend(versioned);
    toolkits.push("/opt/cuda".into());

    let mut dirs = Vec::new();
    for t in &toolkits {
        dirs.push(t.join("lib64"));
        dirs.push(t.join("lib"));
        dirs.extend(glob_dirs(&t.join("targets"), |_| true).into_iter().map(|d| d.join("lib")));
    }
    // The driver, and NCCL from distribution packages (libnccl2).
    if lib == "cuda" || lib == "nccl" {
        dirs.extend(
            ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib/wsl/lib"]
                .map(PathBuf::from),
        );
    }
    if lib == "cuda" {
        for t in &toolkits {
            dirs.push(t.join("compat"));
        }
    }
    // Pip wheels carry libnvrtc and libnccl (nvidia/nccl/lib), never the driver.
    for site in if lib == "cuda" { Vec::new() } else { site_packages() } {
        dirs.extend(glob_dirs(&site.join("nvidia"), |_| true).into_iter().map(|d| d.join("lib")));
    }
    // A relative folder would be looked up from the current directory, and
    // `dlopen` of `lib64/libnvrtc.so.13` loads whatever file is there.
    dirs.retain(|d| d.is_absolute());
    dirs
}

/// The folder an environment variable names, when it names one: set, not
/// blank, absolute (`CUDA_HOME=` or a relative value would make the folders
/// searched relative to the current directory).
fn env_dir(name: &str) -> Option<PathBuf> {
    absolute(std::env::var_os(name))
}

fn absolute(value: Option<std::ffi::OsString>) -> Option<PathBuf> {
    Some(PathBuf::from(value?)).filter(|p| p.is_absolute())
}

/// The numbers of a `cuda-12.9` folder's name (none for other names).
fn toolkit_version(dir: &Path) -> Vec<u32> {
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let version = name.strip_prefix("cuda-").unwrap_or("");
    version.split('.').map_while(|part| part.parse().ok()).collect()
}

/// Python site-packages folders: asked of `python3` on `PATH` (its
/// installation and user site), then the usual locations.
fn site_packages() -> Vec<PathBuf> {
    let mut sites = Vec::new();
    let ask = "import site, sys\nfor p in site.getsitepackages() + [site.getusersitepackages()]: print(p)";
    if let Ok(out) = Command::new("python3").args(["-c", ask]).output() {
        if out.status.success() {
            sites.extend(String::from_utf8_lossy(&out.stdout).lines().map(PathBuf::from));
        }
    }
    let mut roots: Vec<PathBuf> = ["VIRTUAL_ENV", "CONDA_PREFIX"].iter().filter_map(|v| env_dir(v)).collect();
    if let Some(home) = env_dir("HOME") {
        roots.push(home.join(".local"));
    }
    roots.extend(["/usr/local", "/usr"].map(PathBuf::from));
    for root in roots {
        for python in glob_dirs(&root.join("lib"), |n| n.starts_with("python3")) {
            sites.push(python.join("site-packages"));
            sites.push(python.join("dist-packages"));
        }
    }
    sites.push("/usr/lib/python3/dist-packages".into());
    sites
}

/// The sub-folders of `dir` whose names pass `keep`, sorted by name.
fn glob_dirs(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(&keep) && e.path().is_dir())
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// Whether a library's symbols serve later opens and lookups of other
/// libraries: the CUDA libraries must (cudarc opens them again by soname);
/// NCCL must not (it could interpose on another NCCL in the process, such as
/// torch's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Visibility {
    Global,
    Local,
}

/// A library loaded for the rest of the process (never unloaded), whose
/// functions are looked up by name: for libraries that cudarc cannot open
/// itself (libnccl: the wheels ship `libnccl.so.2`, a name cudarc does not
/// try).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Library {
    handle: *mut std::ffi::c_void,
}

// SAFETY: a dlopen handle may be used from any thread; it is never closed.
unsafe impl Send for Library {}
unsafe impl Sync for Library {}

impl Library {
    /// `lib` under the first of `names` the loader finds on its path, else
    /// the first file of one of those names in [`folders`]`(lib)`, loaded by
    /// its full path; otherwise what was searched.
    pub(crate) fn find(lib: &str, names: &[String], visibility: Visibility) -> std::result::Result<Library, Search> {
        if let Some(found) = names.iter().find_map(|n| Library::open(std::ffi::OsStr::new(n), visibility)) {
            return Ok(found);
        }
        match find_in(lib, folders(lib), names, visibility) {
            (Some(found), _) => Ok(found),
            (None, search) => Err(search),
        }
    }

    /// dlopen of `name` (a bare name searches the loader's path).
    #[cfg(target_os = "linux")]
    fn open(name: &std::ffi::OsStr, visibility: Visibility) -> Option<Library> {
        use std::ffi::{c_int, CString};
        use std::os::unix::ffi::OsStrExt;
        const RTLD_NOW: c_int = 2;
        const RTLD_GLOBAL: c_int = 0x100;
        let flags = match visibility {
            Visibility::Global => RTLD_NOW | RTLD_GLOBAL,
            Visibility::Local => RTLD_NOW,
        };
        let name = CString::new(name.as_bytes()).ok()?;
        // SAFETY: `name` is a NUL-terminated string; loading a CUDA library
        // runs its initialisers, as cudarc's own open by name would.
        let handle = unsafe { dl::dlopen(name.as_ptr(), flags) };
        (!handle.is_null()).then_some(Library { handle })
    }

    #[cfg(not(target_os = "linux"))]
    fn open(_name: &std::ffi::OsStr, _visibility: Visibility) -> Option<Library> {
        None
    }

    /// The address of the function `name`, if the library has it.
    #[cfg(target_os = "linux")]
    pub(crate) fn symbol(&self, name: &str) -> Option<*mut std::ffi::c_void> {
        let name = std::ffi::CString::new(name).ok()?;
        // SAFETY: the handle is open for the rest of the process.
        let address = unsafe { dl::dlsym(self.handle, name.as_ptr()) };
        (!address.is_null()).then_some(address)
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn symbol(&self, _name: &str) -> Option<*mut std::ffi::c_void> {
        None
    }
}

#[cfg(target_os = "linux")]
mod dl {
    use std::ffi::{c_char, c_int, c_void};
    extern "C" {
        pub(super) fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
        pub(super) fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake layout: a library of another major version is reported, a
    /// file of a name cudarc loads that is no library is passed over, and
    /// the builtins library is never taken for libnvrtc.
    #[test]
    fn other_versions_are_reported_and_broken_files_passed_over() {
        let root = std::env::temp_dir().join(format!("scan-discover-{}", std::process::id()));
        let (a, b) = (root.join("cuda-13.0/lib64"), root.join("site/nvidia/cuda_nvrtc/lib"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        let files =
            [(&a, "libnvrtc.so.8"), (&a, "libnvrtc.so.13"), (&a, "libnvrtc-builtins.so.13.0"), (&b, "libnvrtc.so.12")];
        for (dir, name) in files {
            std::fs::write(dir.join(name), b"not an ELF file").unwrap();
        }
        let search = preload_from("nvrtc", vec![a.clone(), root.join("absent"), b.clone()]);
        assert_eq!(search.searched, [a.clone(), root.join("absent"), b.clone()]);
        assert_eq!(search.unloadable, [a.join("libnvrtc.so.13"), b.join("libnvrtc.so.12")]);
        assert_eq!(search.other_versions, [a.join("libnvrtc.so.8")]);
        let text = search.describe("nvrtc");
        assert!(text.contains("could not load") && text.contains("libnvrtc.so.8"), "{text}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// `CUDA_HOME=` (or a relative value) made the folders searched
    /// relative, and `dlopen` then loaded `lib64/libnvrtc.so.13` from the
    /// current directory (a helper's review ran a planted library's
    /// constructor that way).
    #[test]
    fn only_absolute_folders_are_searched() {
        for value in ["", "relative/cuda", "lib64"] {
            assert_eq!(absolute(Some(value.into())), None, "{value:?}");
        }
        assert_eq!(absolute(Some("/opt/cuda".into())), Some(PathBuf::from("/opt/cuda")));
        assert_eq!(absolute(None), None);
        for lib in ["nvrtc", "cuda", "nccl"] {
            let dirs = folders(lib);
            assert!(!dirs.is_empty() && dirs.iter().all(|d| d.is_absolute()), "{lib}: {dirs:?}");
        }
        // Toolkits newest first by number: 12.10 before 12.9.
        let mut versioned: Vec<PathBuf> = ["cuda-12.9", "cuda-13.0", "cuda-12.10"].map(PathBuf::from).to_vec();
        versioned.sort_by_key(|d| std::cmp::Reverse(toolkit_version(d)));
        assert_eq!(versioned, ["cuda-13.0", "cuda-12.10", "cuda-12.9"].map(PathBuf::from));
    }

    #[test]
    fn a_missing_library_is_described_with_every_folder_searched() {
        let search = preload("scan_no_such_library");
        assert!(!search.searched.is_empty());
        let text = search.describe("scan_no_such_library");
        assert!(text.contains("/usr/local/cuda/lib64"), "{text}");
        assert!(text.contains("libscan_no_such_library.so"), "{text}");
        // And how to point at an install elsewhere.
        assert!(text.contains("set CUDA_HOME or CUDA_PATH") && text.contains("LD_LIBRARY_PATH"), "{text}");
    }
}
