//! NCCL, loaded at run time: the few calls a sharded scan makes (an
//! all-gather of one item per rank, and setting up communicators), as thin
//! safe wrappers.
//!
//! The types are cudarc's (`cudarc::nccl::sys`). The functions are looked up
//! here rather than through cudarc's loader, which opens libnccl only by the
//! names `libnccl.so`, `libnccl.so.13`, `libnccl.so.12` ... and panics when
//! none loads, whereas NCCL ships as `libnccl.so.2` (the `nvidia-nccl-cu12`
//! and `-cu13` wheels, and distribution packages). This looks for
//! `libnccl.so.2` and cudarc's names on the loader's path, then in the
//! folders the CUDA libraries are searched in (the wheels' `nvidia/nccl/lib`
//! included, see `discover.rs`), and reports a missing library as
//! [`Error::NcclUnavailable`], never a panic.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::{Arc, OnceLock};

use cudarc::driver::{CudaContext, CudaStream};
use cudarc::nccl::sys::{ncclComm_t, ncclDataType_t, ncclUniqueId};
use scan_core::{Error, Result};

use crate::discover::{Library, Visibility};

type Status = c_int;

/// `ncclInvalidUsage`.
const INVALID_USAGE: Status = 5;

type GetVersion = unsafe extern "C" fn(*mut c_int) -> Status;
type GetUniqueId = unsafe extern "C" fn(*mut ncclUniqueId) -> Status;
type CommInitRank = unsafe extern "C" fn(*mut ncclComm_t, c_int, ncclUniqueId, c_int) -> Status;
type CommInitAll = unsafe extern "C" fn(*mut ncclComm_t, c_int, *const c_int) -> Status;
type CommDestroy = unsafe extern "C" fn(ncclComm_t) -> Status;
type CommAbort = unsafe extern "C" fn(ncclComm_t) -> Status;
type AllGather =
    unsafe extern "C" fn(*const c_void, *mut c_void, usize, ncclDataType_t, ncclComm_t, *mut c_void) -> Status;
type Group = unsafe extern "C" fn() -> Status;
type ErrorString = unsafe extern "C" fn(Status) -> *const c_char;

/// The NCCL functions a sharded scan calls, with their C signatures.
struct Api {
    get_version: GetVersion,
    get_unique_id: GetUniqueId,
    comm_init_rank: CommInitRank,
    comm_init_all: CommInitAll,
    comm_destroy: CommDestroy,
    comm_abort: CommAbort,
    all_gather: AllGather,
    group_start: Group,
    group_end: Group,
    error_string: ErrorString,
}

/// NCCL's names a library may be found under: the soname first.
fn names() -> Vec<String> {
    let mut names = vec!["libnccl.so.2".to_string()];
    for name in cudarc::get_lib_name_candidates("nccl") {
        if name.starts_with("libnccl.so") && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

fn load() -> std::result::Result<Api, String> {
    let lib = Library::find("nccl", &names(), Visibility::Local).map_err(|search| {
        format!(
            "{}; install NCCL (`pip install nvidia-nccl-cu12` or `-cu13`, or the libnccl2 package)",
            search.describe_names("nccl", &names())
        )
    })?;
    macro_rules! function {
        ($name:literal, $ty:ty) => {{
            let address = lib.symbol($name).ok_or_else(|| format!("the NCCL library found has no `{}`", $name))?;
            // SAFETY: `address` is the library's function of that name, whose
            // C signature is the field's type (nccl.h, stable since NCCL 2.0).
            unsafe { std::mem::transmute::<*mut c_void, $ty>(address) }
        }};
    }
    // Only NCCL 2's ABI is known: check before trusting the other signatures.
    let get_version: GetVersion = function!("ncclGetVersion", GetVersion);
    let mut code: c_int = 0;
    // SAFETY: ncclGetVersion(int*) in every NCCL; writes one int.
    if unsafe { get_version(&mut code) } != 0 || decode_version(code).0 != 2 {
        return Err(format!("the NCCL library found reports version code {code}; scan needs NCCL 2"));
    }
    Ok(Api {
        get_version,
        get_unique_id: function!("ncclGetUniqueId", GetUniqueId),
        comm_init_rank: function!("ncclCommInitRank", CommInitRank),
        comm_init_all: function!("ncclCommInitAll", CommInitAll),
        comm_destroy: function!("ncclCommDestroy", CommDestroy),
        comm_abort: function!("ncclCommAbort", CommAbort),
        all_gather: function!("ncclAllGather", AllGather),
        group_start: function!("ncclGroupStart", Group),
        group_end: function!("ncclGroupEnd", Group),
        error_string: function!("ncclGetErrorString", ErrorString),
    })
}

fn api() -> Result<&'static Api> {
    static API: OnceLock<std::result::Result<Api, String>> = OnceLock::new();
    API.get_or_init(load).as_ref().map_err(|reason| Error::NcclUnavailable { reason: reason.clone() })
}

/// `status` as a `Result`, NCCL's own message on failure.
fn check(api: &Api, status: Status, during: &str) -> Result<()> {
    if status == 0 {
        return Ok(());
    }
    // SAFETY: ncclGetErrorString returns a static NUL-terminated string.
    let text = unsafe { (api.error_string)(status) };
    let message = if text.is_null() {
        format!("NCCL status {status}")
    } else {
        // SAFETY: non-null, NUL-terminated, static (above).
        format!("{} (status {status})", unsafe { CStr::from_ptr(text) }.to_string_lossy())
    };
    Err(Error::Nccl { during: during.into(), message })
}

/// The version of the NCCL library found, as (major, minor, patch), or
/// [`Error::NcclUnavailable`] saying where it was looked for.
///
/// ```no_run
/// match scan_cuda::nccl_version() {
///     Ok((major, minor, patch)) => println!("NCCL {major}.{minor}.{patch}"),
///     Err(e) => println!("{e}"),
/// }
/// ```
pub fn nccl_version() -> Result<(u32, u32, u32)> {
    let api = api()?;
    let mut code: c_int = 0;
    // SAFETY: writes one int.
    check(api, unsafe { (api.get_version)(&mut code) }, "ncclGetVersion")?;
    Ok(decode_version(code))
}

/// (major, minor, patch) of an `ncclGetVersion` code: major * 10000 + minor
/// * 100 + patch since NCCL 2.9, major * 1000 + minor * 100 + patch before.
fn decode_version(code: c_int) -> (u32, u32, u32) {
    let code = code.max(0) as u32;
    if code >= 10000 {
        (code / 10000, code / 100 % 100, code % 100)
    } else {
        (code / 1000, code / 100 % 10, code % 100)
    }
}

/// An NCCL unique id: made once (by rank 0, [`NcclId::new`]) and handed to
/// every rank of a group of processes, which then join with
/// [`NcclRank::join`](crate::NcclRank::join). It travels as 256 hex digits
/// ([`Display`](std::fmt::Display) and [`FromStr`](std::str::FromStr)), in a
/// file or an environment variable.
///
/// ```no_run
/// # fn main() -> scan_core::Result<()> {
/// let id = scan_cuda::NcclId::new()?;
/// let text = id.to_string();
/// let same: scan_cuda::NcclId = text.parse()?;
/// assert_eq!(id, same);
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct NcclId([u8; 128]);

impl NcclId {
    /// A new id (`ncclGetUniqueId`; on the machine of rank 0, which NCCL
    /// contacts first).
    pub fn new() -> Result<NcclId> {
        let api = api()?;
        let mut raw = ncclUniqueId { internal: [0; 128] };
        // SAFETY: writes the 128-byte id.
        check(api, unsafe { (api.get_unique_id)(&mut raw) }, "ncclGetUniqueId")?;
        Ok(NcclId(raw.internal.map(|c| c as u8)))
    }

    /// The id's 128 bytes, to pass through a channel of your own (an MPI or
    /// torch.distributed broadcast).
    pub fn as_bytes(&self) -> &[u8; 128] {
        &self.0
    }

    /// The id from its 128 bytes ([`as_bytes`](NcclId::as_bytes) on rank 0).
    pub fn from_bytes(bytes: [u8; 128]) -> NcclId {
        NcclId(bytes)
    }

    fn raw(&self) -> ncclUniqueId {
        ncclUniqueId { internal: self.0.map(|b| b as c_char) }
    }
}

impl std::fmt::Debug for NcclId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NcclId({}...)", &self.to_string()[..16])
    }
}

impl std::fmt::Display for NcclId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl std::str::FromStr for NcclId {
    type Err = Error;
    fn from_str(text: &str) -> Result<NcclId> {
        let text = text.trim();
        let bad = || Error::Other(format!("an NCCL id is 256 hex digits; got {} characters", text.len()));
        if text.len() != 256 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        let mut id = [0u8; 128];
        for (i, byte) in id.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        Ok(NcclId(id))
    }
}

/// One rank's NCCL communicator, destroyed on drop. Used by one thread at a
/// time (its owners hold it behind `&mut` or a mutex).
pub(crate) struct Comm {
    raw: ncclComm_t,
    stream: Arc<CudaStream>,
}

// SAFETY: an NCCL communicator may be used from any thread, one at a time;
// every use goes through `&mut Comm` or a lock around it.
unsafe impl Send for Comm {}

impl Drop for Comm {
    fn drop(&mut self) {
        if let Ok(api) = api() {
            // SAFETY: the communicator was made by ncclCommInit* and is
            // destroyed once; a failure leaves nothing to clean up here.
            let _ = unsafe { (api.comm_destroy)(self.raw) };
        }
    }
}

impl Comm {
    /// Rank `rank` of `world`, on `stream`'s device, joining the group of
    /// `id` (blocks until every rank has joined).
    pub(crate) fn join(stream: &Arc<CudaStream>, rank: usize, world: usize, id: &NcclId) -> Result<Comm> {
        let api = api()?;
        let (rank_c, world_c) = (to_int(rank, "rank")?, to_int(world, "world size")?);
        bind(stream.context())?;
        let mut raw: ncclComm_t = std::ptr::null_mut();
        // SAFETY: writes one communicator; NCCL takes the device current to
        // this thread, which `bind` made `stream`'s.
        let status = unsafe { (api.comm_init_rank)(&mut raw, world_c, id.raw(), rank_c) };
        check(api, status, "ncclCommInitRank").map_err(|e| match (status, e) {
            (INVALID_USAGE, Error::Nccl { during, message }) => Error::Nccl {
                during,
                message: format!("{message}; NCCL refuses two ranks of one group on one GPU, among other misuses"),
            },
            (_, e) => e,
        })?;
        Ok(Comm { raw, stream: stream.clone() })
    }

    /// One communicator per stream, rank r on `streams[r]`'s device, all in
    /// this process (`ncclCommInitAll`; the devices must differ).
    pub(crate) fn init_all(streams: &[Arc<CudaStream>]) -> Result<Vec<Comm>> {
        let api = api()?;
        let ordinals = streams.iter().map(|s| to_int(s.context().ordinal(), "device")).collect::<Result<Vec<_>>>()?;
        let mut raw: Vec<ncclComm_t> = vec![std::ptr::null_mut(); streams.len()];
        let count = to_int(streams.len(), "world size")?;
        // SAFETY: `raw` holds one communicator per device listed.
        check(api, unsafe { (api.comm_init_all)(raw.as_mut_ptr(), count, ordinals.as_ptr()) }, "ncclCommInitAll")?;
        Ok(raw.into_iter().zip(streams).map(|(raw, stream)| Comm { raw, stream: stream.clone() }).collect())
    }

    /// Aborts the communicator (`ncclCommAbort`): operations queued and not
    /// finished are abandoned, so streams waiting on them are released.
    pub(crate) fn abort(self) {
        if let Ok(api) = api() {
            // SAFETY: made by ncclCommInit*, aborted once; `forget` keeps
            // Drop from destroying it again.
            let _ = unsafe { (api.comm_abort)(self.raw) };
        }
        std::mem::forget(self);
    }

    /// Queues on this rank's stream the all-gather of `bytes` bytes per
    /// rank, in place: rank r's bytes are at `buffer + r * bytes`, and every
    /// rank's arrive at theirs.
    ///
    /// # Safety
    /// `buffer` is device memory of this rank's device holding `world *
    /// bytes` bytes, live until the stream has run the gather.
    pub(crate) unsafe fn all_gather_in_place(&mut self, buffer: u64, bytes: usize, rank: usize) -> Result<()> {
        let api = api()?;
        let send = (buffer + (rank * bytes) as u64) as *const c_void;
        let stream = self.stream.cu_stream() as *mut c_void;
        // SAFETY: the caller's contract; NCCL reads `bytes` at `send` and
        // writes world * bytes at `buffer`, in stream order.
        let status = unsafe {
            (api.all_gather)(send, buffer as *mut c_void, bytes, ncclDataType_t::ncclUint8, self.raw, stream)
        };
        check(api, status, "ncclAllGather")
    }
}

/// Runs `calls` (collectives of several communicators driven from this
/// thread) between `ncclGroupStart` and `ncclGroupEnd`, as NCCL requires.
pub(crate) fn group(calls: impl FnOnce() -> Result<()>) -> Result<()> {
    let api = api()?;
    // SAFETY: no arguments; paired with the end below on every path.
    check(api, unsafe { (api.group_start)() }, "ncclGroupStart")?;
    let queued = calls();
    // SAFETY: as above.
    let ended = check(api, unsafe { (api.group_end)() }, "ncclGroupEnd");
    queued.and(ended)
}

fn to_int(value: usize, what: &str) -> Result<c_int> {
    c_int::try_from(value).map_err(|_| Error::TooLarge { what: format!("NCCL {what} {value}") })
}

fn bind(ctx: &Arc<CudaContext>) -> Result<()> {
    ctx.bind_to_thread().map_err(|e| crate::buffer::driver_error("binding the context for NCCL", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_travels_as_256_hex_digits() {
        let id = NcclId(std::array::from_fn(|i| (i * 37) as u8));
        let text = id.to_string();
        assert_eq!(text.len(), 256);
        assert_eq!(text.parse::<NcclId>().unwrap(), id);
        assert_eq!(format!("  {text}\n").parse::<NcclId>().unwrap(), id, "surrounding whitespace");
        assert!(text[..255].parse::<NcclId>().is_err());
        assert!(format!("{}zz", &text[..254]).parse::<NcclId>().is_err());
        assert!("é".repeat(128).parse::<NcclId>().is_err());
        assert!(format!("+f{}", &text[2..]).parse::<NcclId>().is_err(), "a sign is no hex digit");
        assert_eq!(NcclId::from_bytes(*id.as_bytes()), id);
    }

    #[test]
    fn versions_decode_in_both_encodings() {
        assert_eq!(decode_version(22803), (2, 28, 3));
        assert_eq!(decode_version(2708), (2, 7, 8));
    }

    /// Never a panic: NCCL's version, or an error that says where it was
    /// looked for (this machine may or may not have NCCL).
    #[test]
    fn a_missing_nccl_is_an_error_naming_where_it_was_looked_for() {
        match nccl_version() {
            Ok((major, _, _)) => assert!(major >= 2, "NCCL {major}"),
            Err(Error::NcclUnavailable { reason }) => {
                assert!(reason.contains("libnccl.so.2") && reason.contains("folder"), "{reason}");
                assert!(NcclId::new().is_err());
            }
            Err(other) => panic!("{other}"),
        }
    }
}
