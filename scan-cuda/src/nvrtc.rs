//! NVRTC: CUDA C++ source to a CUBIN for one architecture. Needs only
//! libnvrtc, not a GPU, so every instantiation can be checked anywhere.

use std::ffi::{c_char, CString};
use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use cudarc::nvrtc::{result, sys};
use scan_core::{Error, Result};

/// Options every module is compiled with, besides the architecture.
///
/// `--fmad=false`: the CPU never fuses `a * b + c`, so neither does the GPU;
/// results then differ from the CPU only by the order of combination.
const OPTIONS: &[&str] = &["-std=c++17", "--fmad=false"];

/// [`OPTIONS`], plus `-lineinfo` when the environment variable
/// `SCAN_CUDA_LINEINFO` is set (to 1): compute-sanitizer and Nsight Compute
/// then name the source line of each report, at no cost to the kernels.
pub(crate) fn options() -> Vec<&'static str> {
    let mut options = OPTIONS.to_vec();
    if std::env::var_os("SCAN_CUDA_LINEINFO").is_some_and(|v| v == "1") {
        options.push("-lineinfo");
    }
    options
}

/// Whether libnvrtc can be loaded (cudarc's loader panics when it cannot).
pub fn is_available() -> bool {
    // SAFETY: only tries to dlopen the library by its candidate names.
    catch_unwind(|| unsafe { sys::is_culib_present() }).unwrap_or(false)
}

fn unavailable() -> Error {
    let reason = match installed_nvrtc(Path::new("/usr/local")) {
        Some(found) => {
            let dir = found.parent().map_or_else(|| ".".into(), |d| d.display().to_string());
            format!(
                "libnvrtc was not found under the names this build of cudarc loads (libnvrtc.so, libnvrtc.so.12 \
                 and older), but {found} exists (another CUDA major version). Link it as libnvrtc.so in a folder \
                 on LD_LIBRARY_PATH, with its own folder there too (it loads libnvrtc-builtins from it): \
                 `mkdir -p /tmp/scan-nvrtc && ln -sf {found} /tmp/scan-nvrtc/libnvrtc.so && \
                 export LD_LIBRARY_PATH=/tmp/scan-nvrtc:{dir}:$LD_LIBRARY_PATH`, or in a checkout of scan, \
                 `source scan-cuda/gpu-env.sh`",
                found = found.display()
            )
        }
        None => "libnvrtc (the CUDA runtime compiler) was not found; install the CUDA toolkit, or \
                 `pip install nvidia-cuda-nvrtc-cu12` and put its `nvidia/cuda_nvrtc/lib` folder on LD_LIBRARY_PATH"
            .into(),
    };
    Error::CudaUnavailable { reason }
}

/// A libnvrtc installed by a CUDA toolkit under `prefix` (usually
/// `/usr/local`): `cuda*/{lib64, targets/*/lib}/libnvrtc.so.*`, that the
/// loader did not find (typically CUDA 13's `libnvrtc.so.13`).
fn installed_nvrtc(prefix: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    let toolkits = fs::read_dir(prefix).ok()?.flatten().map(|e| e.path());
    for toolkit in toolkits.filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("cuda"))) {
        let mut dirs = vec![toolkit.join("lib64")];
        if let Ok(targets) = fs::read_dir(toolkit.join("targets")) {
            dirs.extend(targets.flatten().map(|t| t.path().join("lib")));
        }
        for dir in dirs {
            let Ok(entries) = fs::read_dir(&dir) else { continue };
            found.extend(
                entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("libnvrtc.so."))),
            );
        }
    }
    // The shortest name is the one a link should point at (libnvrtc.so.13
    // rather than libnvrtc.so.13.0.48); sorted first for a stable answer.
    found.sort();
    found.into_iter().min_by_key(|p| p.as_os_str().len())
}

/// NVRTC's version as (major, minor).
pub fn version() -> Result<(i32, i32)> {
    if !is_available() {
        return Err(unavailable());
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both pointers are valid for writes; the loader was checked above
    // and a missing symbol panics, which catch_unwind turns into an error.
    let status = catch_unwind(AssertUnwindSafe(|| unsafe { sys::nvrtcVersion(&mut major, &mut minor) }))
        .map_err(|_| unavailable())?;
    status.result().map_err(|e| Error::CudaUnavailable { reason: format!("nvrtcVersion failed: {e}") })?;
    Ok((major, minor))
}

/// Compiles `code` for `arch` (e.g. `"sm_90"`) to a CUBIN.
///
/// `op` names the operator in the error; a compile failure carries NVRTC's log
/// and the whole source.
pub fn compile_cubin(code: &str, op: &str, arch: &str) -> Result<Vec<u8>> {
    if !is_available() {
        return Err(unavailable());
    }
    catch_unwind(AssertUnwindSafe(|| compile_unguarded(code, op, arch))).map_err(|_| unavailable())?
}

/// Owns an NVRTC program: destroyed on every path out.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by create_program and destroyed only here.
        let _ = unsafe { result::destroy_program(self.0) };
    }
}

fn compile_unguarded(code: &str, op: &str, arch: &str) -> Result<Vec<u8>> {
    let nvrtc_err =
        |during: &str, e: result::NvrtcError| Error::Driver { during: during.into(), message: e.to_string() };
    let src = CString::new(code).map_err(|_| Error::Compile {
        op: op.into(),
        log: "the generated source contains a NUL byte".into(),
        code: code.into(),
    })?;
    let name = CString::new(format!("scan_{op}.cu")).unwrap_or_default();
    let prog = Program(result::create_program(&src, Some(&name)).map_err(|e| nvrtc_err("nvrtcCreateProgram", e))?);
    let mut options: Vec<String> = options().iter().map(|s| s.to_string()).collect();
    options.push(format!("--gpu-architecture={arch}"));
    // SAFETY: prog is live (owned by `prog`).
    let compiled = unsafe { result::compile_program(prog.0, &options) };
    if compiled.is_err() {
        // SAFETY: prog is live.
        let log = unsafe { result::get_program_log(prog.0) }.map(|l| c_text(&l)).unwrap_or_default();
        return Err(Error::Compile { op: op.into(), log, code: code.into() });
    }
    let mut size = 0usize;
    // SAFETY: prog is live and compiled; `size` is valid for writes.
    unsafe { sys::nvrtcGetCUBINSize(prog.0, &mut size) }.result().map_err(|e| nvrtc_err("nvrtcGetCUBINSize", e))?;
    let mut cubin = vec![0u8; size];
    // SAFETY: `cubin` holds the `size` bytes NVRTC asked for.
    unsafe { sys::nvrtcGetCUBIN(prog.0, cubin.as_mut_ptr() as *mut c_char) }
        .result()
        .map_err(|e| nvrtc_err("nvrtcGetCUBIN", e))?;
    Ok(cubin)
}

fn c_text(bytes: &[c_char]) -> String {
    let bytes: Vec<u8> = bytes.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake CUDA 13 layout: the shortest versioned name is the one named,
    /// the builtins library never is, and an empty prefix finds nothing.
    #[test]
    fn a_toolkit_libnvrtc_is_found_by_its_shortest_versioned_name() {
        let root = std::env::temp_dir().join(format!("scan-nvrtc-find-{}", std::process::id()));
        let lib = root.join("cuda-13.0").join("targets").join("x86_64-linux").join("lib");
        fs::create_dir_all(&lib).unwrap();
        fs::create_dir_all(root.join("cuda-13.0").join("lib64")).unwrap();
        assert_eq!(installed_nvrtc(&root), None);
        for name in ["libnvrtc-builtins.so.13.0", "libnvrtc.so.13.0.48", "libnvrtc.so.13"] {
            fs::write(lib.join(name), b"").unwrap();
        }
        assert_eq!(installed_nvrtc(&root), Some(lib.join("libnvrtc.so.13")));
        fs::remove_dir_all(&root).unwrap();
    }
}
