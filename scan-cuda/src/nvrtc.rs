//! NVRTC: CUDA C++ source to a CUBIN for one architecture. Needs only
//! libnvrtc, not a GPU, so every instantiation can be checked anywhere.

use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use cudarc::nvrtc::{result, sys};
use scan_core::{Error, Result};

use crate::discover;

/// Options every module is compiled with, besides the architecture.
///
/// `--fmad=false`: the CPU never fuses `a * b + c`, so neither does the GPU;
/// results then differ from the CPU only by the order of combination.
const OPTIONS: &[&str] = &["-std=c++17", "--fmad=false"];

/// [`OPTIONS`], plus `-lineinfo` when the environment variable
/// `SCAN_CUDA_LINEINFO` is set (to 1): compute-sanitizer and Nsight Compute
/// then name the source line of each report, at no cost to the kernels.
pub(crate) fn options() -> Vec<&'static str> {
    const LINEINFO: crate::env::TuningVar = crate::env::TuningVar { name: "SCAN_CUDA_LINEINFO", takes: "`1` or `0`" };
    let mut options = OPTIONS.to_vec();
    if LINEINFO.read(|v| match v.trim() {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    }) == Some(true)
    {
        options.push("-lineinfo");
    }
    options
}

/// Whether libnvrtc can be loaded (cudarc's loader panics when it cannot).
/// The first call also looks beyond the loader's path (see the crate docs).
pub fn is_available() -> bool {
    load().is_ok()
}

/// `Err`: where libnvrtc was looked for. Searched once per process.
fn load() -> &'static std::result::Result<(), String> {
    static LOADED: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    LOADED.get_or_init(|| {
        // SAFETY: only tries to dlopen the library by its candidate names.
        let by_name = || catch_unwind(|| unsafe { sys::is_culib_present() }).unwrap_or(false);
        if by_name() {
            return Ok(());
        }
        let search = discover::preload("nvrtc");
        if by_name() {
            Ok(())
        } else {
            Err(search.describe("nvrtc"))
        }
    })
}

fn unavailable() -> Error {
    let reason = match load() {
        Err(searched) => format!(
            "libnvrtc (the CUDA runtime compiler) was not found: {searched}. Install the CUDA toolkit, or \
             `pip install nvidia-cuda-nvrtc-cu12`"
        ),
        Ok(()) => "libnvrtc was loaded but lacks a function this build calls (too old a CUDA?)".into(),
    };
    Error::CudaUnavailable { reason }
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
    catch_unwind(AssertUnwindSafe(|| compile_unguarded(code, op, arch, &[])))
        .map_err(|_| unavailable())?
        .map(|(c, _)| c)
}

/// Compiles `code` for `arch` as [`compile_cubin`] does and returns ptxas'
/// report of each kernel (`ptxas info : Used N registers, ... bytes stack
/// frame, ... bytes spill stores ...`): register budgets checked without a
/// GPU.
pub fn ptxas_report(code: &str, op: &str, arch: &str) -> Result<String> {
    if !is_available() {
        return Err(unavailable());
    }
    catch_unwind(AssertUnwindSafe(|| compile_unguarded(code, op, arch, &["--ptxas-options=-v"])))
        .map_err(|_| unavailable())?
        .map(|(_, log)| log)
}

/// Whether ptxas' report (see [`ptxas_report`]) gives any kernel a stack
/// frame or spills: the local memory the driver reports at load
/// (`Module::spills`), seen without a GPU.
pub(crate) fn reports_local_memory(report: &str) -> bool {
    report.lines().filter(|l| l.contains("bytes stack frame")).any(|l| {
        l.split(',').any(|part| {
            let words: Vec<&str> = part.split_whitespace().collect();
            words
                .iter()
                .position(|&w| w == "bytes")
                .and_then(|at| words.get(at.checked_sub(1)?)?.parse::<u64>().ok())
                .is_some_and(|n| n > 0)
        })
    })
}

/// Owns an NVRTC program: destroyed on every path out.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by create_program and destroyed only here.
        let _ = unsafe { result::destroy_program(self.0) };
    }
}

/// The CUBIN and NVRTC's log.
fn compile_unguarded(code: &str, op: &str, arch: &str, extra: &[&str]) -> Result<(Vec<u8>, String)> {
    // An architecture like "sm_90" (a NUL in it would panic in the options'
    // conversion, reported as a missing NVRTC function).
    crate::cuda::capability_of(arch)?;
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
    options.extend(extra.iter().map(|s| s.to_string()));
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
    // SAFETY: prog is live.
    let log = unsafe { result::get_program_log(prog.0) }.map(|l| c_text(&l)).unwrap_or_default();
    Ok((cubin, log))
}

fn c_text(bytes: &[c_char]) -> String {
    let bytes: Vec<u8> = bytes.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).trim_end().to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn local_memory_is_read_from_ptxas_lines() {
        let clean = "ptxas info    : Function properties for k\nptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads";
        let spilled = "ptxas         .     48 bytes stack frame, 62 bytes spill stores, 76 bytes spill loads";
        assert!(!super::reports_local_memory(clean));
        assert!(super::reports_local_memory(&format!("{clean}\n{spilled}")));
    }
}
