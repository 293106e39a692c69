//! [`Comm`] over MPI (rsmpi, feature `mpi`): `MPI_COMM_WORLD`, non-blocking `MPI_Isend` /
//! `MPI_Irecv` for the ghost exchange, `MPI_Allreduce`, `MPI_Allgatherv`, `MPI_Gatherv`,
//! `MPI_Abort`. MPI is
//! initialized with the funneled threading level: only the thread that created the
//! communicator calls MPI (the run's main thread; the snapshot writer and the rayon workers
//! never do). Dropping the last handle finalizes MPI.
//!
//! Units: bytes.

use super::{Comm, DeviceBuffer};
use crate::{Error, Result};
use mpi::collective::SystemOperation;
use mpi::datatype::PartitionMut;
use mpi::environment::{Threading, Universe};
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::Count;

/// MPI's world communicator and the environment it lives in.
pub struct MpiComm {
    world: SimpleCommunicator,
    /// The library takes device buffers (CUDA-aware, as it reports): the GPU ranks' halos
    /// go from device memory to device memory, with no page-locked host copy.
    device_buffers: bool,
    /// Finalizes MPI when dropped (after `world`).
    _universe: Universe,
}

impl std::fmt::Debug for MpiComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MpiComm(rank {} of {})", self.rank(), self.size())
    }
}

// SAFETY: the handles are plain integers of the MPI library; the callers keep every MPI call
// on the thread that initialized MPI (funneled), as the module documentation says.
unsafe impl Send for MpiComm {}
unsafe impl Sync for MpiComm {}

impl MpiComm {
    /// Initialize MPI (once per process); an error where it is initialized already or the
    /// library refuses.
    pub fn init() -> Result<MpiComm> {
        let (universe, _level) =
            mpi::initialize_with_threading(Threading::Funneled).ok_or_else(|| Error::Usage {
                option: "mpi".into(),
                message: "MPI could not be initialized (already initialized?)".into(),
            })?;
        Ok(MpiComm {
            world: universe.world(),
            device_buffers: device_buffers_wanted() && cuda_aware_library(),
            _universe: universe,
        })
    }

    /// This process's rank among the ranks of its host (MPI's shared-memory split of the
    /// world, `MPI_Comm_split_type` with `MPI_COMM_TYPE_SHARED`; collective): what picks
    /// its GPU (`gpu::select_device`).
    pub fn local_rank(&self) -> usize {
        self.world.split_shared(0).rank() as usize
    }

    /// The number of ranks on this process's host (the same split; collective): what shares
    /// its memory (`backend::estimate::RankShape::on_host`).
    pub fn local_size(&self) -> usize {
        self.world.split_shared(0).size() as usize
    }

    /// The MPI library's version string.
    pub fn library_version() -> String {
        mpi::environment::library_version().unwrap_or_default()
    }
}

/// Whether the MPI library takes CUDA device buffers, as it reports after `MPI_Init`:
/// `MPIX_Query_cuda_support()`, which MPICH (4.0 on) and Open MPI (its `mpi-ext.h`) export
/// and return 1 from where built with CUDA and enabled; looked up by name in the process, so
/// a library without it (or one not built with CUDA) says no, and the halos stage through
/// page-locked host buffers.
pub fn cuda_aware_library() -> bool {
    // SAFETY: `dlsym` with the default handle and a NUL-terminated name; where the symbol
    // exists it is the MPI extension `int MPIX_Query_cuda_support(void)`, callable after
    // MPI_Init (this runs from `MpiComm::init`, after it).
    unsafe {
        let f = libc::dlsym(libc::RTLD_DEFAULT, c"MPIX_Query_cuda_support".as_ptr());
        if f.is_null() {
            return false;
        }
        let query: extern "C" fn() -> std::os::raw::c_int = std::mem::transmute(f);
        query() == 1
    }
}

/// `PERIDOT_MPI_DEVICE_BUFFERS=0` keeps the halos on page-locked host buffers even where the
/// library takes device buffers (to compare the two, or around a library's fault).
fn device_buffers_wanted() -> bool {
    std::env::var("PERIDOT_MPI_DEVICE_BUFFERS").map_or(true, |v| v.trim() != "0")
}

/// An MPI call's return code as a result naming the call.
fn checked(code: std::os::raw::c_int, call: &str) -> Result<()> {
    match code == mpi::ffi::MPI_SUCCESS as std::os::raw::c_int {
        true => Ok(()),
        false => Err(Error::Backend {
            backend: "mpi".into(),
            message: format!("{call} returned error code {code}"),
        }),
    }
}

/// `all` split into `counts[r]` bytes for rank `r`, in rank order, as MPI's counts and
/// offsets (each of them and the whole fitting MPI's count).
fn partition<'a>(
    all: &'a mut [u8],
    counts: &[usize],
) -> Result<PartitionMut<'a, [u8], Vec<Count>, Vec<Count>>> {
    count(all.len())?;
    let mut displs = Vec::with_capacity(counts.len());
    let mut at = 0usize;
    for &c in counts {
        displs.push(count(at)?);
        at += c;
    }
    let counts: Vec<Count> = counts.iter().map(|&c| count(c)).collect::<Result<_>>()?;
    Ok(PartitionMut::new(all, counts, displs))
}

impl MpiComm {
    /// One all-gather of `mine` (`counts[r]` bytes from rank `r`) into `all`, whose length,
    /// the counts and their offsets fit MPI's count.
    fn gather_round(&self, mine: &[u8], counts: &[usize], all: &mut [u8]) -> Result<()> {
        let mut part = partition(all, counts)?;
        self.world.all_gather_varcount_into(mine, &mut part);
        Ok(())
    }

    /// One gather of `mine` (`counts[r]` bytes from rank `r`) to rank `root`, into `all`
    /// there (`None` on the other ranks); the lengths fit MPI's count.
    fn gather_round_to(
        &self,
        root: usize,
        mine: &[u8],
        counts: &[usize],
        all: Option<&mut [u8]>,
    ) -> Result<()> {
        let root = self.world.process_at_rank(root as i32);
        let Some(all) = all else {
            count(mine.len())?;
            root.gather_varcount_into(mine);
            return Ok(());
        };
        let mut part = partition(all, counts)?;
        root.gather_varcount_into_root(mine, &mut part);
        Ok(())
    }
}

/// A length as MPI's count, or an error naming it.
fn count(bytes: usize) -> Result<Count> {
    Count::try_from(bytes).map_err(|_| Error::Usage {
        option: "mpi".into(),
        message: format!("a message of {bytes} bytes exceeds MPI's count (2^31 - 1 bytes)"),
    })
}

impl Comm for MpiComm {
    fn rank(&self) -> usize {
        self.world.rank() as usize
    }

    fn size(&self) -> usize {
        self.world.size() as usize
    }

    fn exchange(
        &self,
        send: &[(usize, &[u8])],
        recv: &mut [(usize, &mut [u8])],
        work: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        for (_, b) in send {
            count(b.len())?;
        }
        mpi::request::scope(|scope| {
            let mut requests = Vec::with_capacity(send.len() + recv.len());
            for (peer, buf) in recv.iter_mut() {
                let p = self.world.process_at_rank(*peer as i32);
                requests.push(p.immediate_receive_into(scope, &mut **buf));
            }
            let mut sends = Vec::with_capacity(send.len());
            for (peer, buf) in send {
                let p = self.world.process_at_rank(*peer as i32);
                sends.push(p.immediate_send(scope, *buf));
            }
            let done = work();
            for r in requests {
                r.wait();
            }
            for r in sends {
                r.wait();
            }
            done
        })
    }

    fn device_buffers(&self) -> bool {
        self.device_buffers
    }

    /// `MPI_Irecv` and `MPI_Isend` of the device addresses themselves (the library is
    /// CUDA-aware: `cuda_aware_library`), tag 0 as [`Comm::exchange`]'s, then `MPI_Waitall`.
    fn exchange_device(&self, send: &[DeviceBuffer], recv: &[DeviceBuffer]) -> Result<()> {
        use mpi::ffi;
        use mpi::raw::AsRaw;
        use std::os::raw::{c_int, c_void};
        // (every length checked before any message is posted: none is left pending)
        for &(_, _, bytes) in send.iter().chain(recv) {
            count(bytes)?;
        }
        let world = self.world.as_raw();
        // SAFETY: the handles are the library's own statics, read after MPI_Init.
        let (byte, null) = unsafe { (ffi::RSMPI_UINT8_T, ffi::RSMPI_REQUEST_NULL) };
        let mut requests = vec![null; send.len() + recv.len()];
        let (receives, sends) = requests.split_at_mut(recv.len());
        for (&(peer, addr, bytes), request) in recv.iter().zip(receives) {
            // SAFETY: `addr` is a device buffer of `bytes` bytes the caller keeps untouched
            // until this returns (after MPI_Waitall); the library takes device memory.
            let code = unsafe {
                let buf = addr as *mut c_void;
                ffi::MPI_Irecv(buf, count(bytes)?, byte, peer as c_int, 0, world, request)
            };
            checked(code, "MPI_Irecv")?;
        }
        for (&(peer, addr, bytes), request) in send.iter().zip(sends) {
            // SAFETY: as above; the caller has waited for the device's writes to it.
            let code = unsafe {
                let buf = addr as *const c_void;
                ffi::MPI_Isend(buf, count(bytes)?, byte, peer as c_int, 0, world, request)
            };
            checked(code, "MPI_Isend")?;
        }
        let n = requests.len() as c_int;
        // SAFETY: `requests` holds `n` requests posted above (or null ones).
        let code =
            unsafe { ffi::MPI_Waitall(n, requests.as_mut_ptr(), ffi::RSMPI_STATUSES_IGNORE) };
        checked(code, "MPI_Waitall")
    }

    fn sum_u64(&self, x: u64) -> u64 {
        let mut out = 0u64;
        self.world
            .all_reduce_into(&x, &mut out, SystemOperation::sum());
        out
    }

    fn sum_f64(&self, x: f64) -> f64 {
        // (gathered and added in rank order, so every rank gets the same bits whatever the
        // library's reduction tree)
        let mut all = vec![0.0f64; self.size()];
        self.world.all_gather_into(&x, &mut all[..]);
        all.iter().sum()
    }

    fn max_f64(&self, x: f64) -> f64 {
        let mut out = 0.0f64;
        self.world
            .all_reduce_into(&x, &mut out, SystemOperation::max());
        out
    }

    /// In one collective where the whole fits MPI's count, else in rounds
    /// ([`super::gather_in_rounds`]): a gather of every bond's status of a large model
    /// exceeds one count.
    fn all_gather(&self, mine: &[u8], counts: &[usize]) -> Result<Vec<u8>> {
        super::gather_in_rounds(
            mine,
            counts,
            Count::MAX as usize,
            &mut |mine, counts, all| self.gather_round(mine, counts, all),
        )
    }

    /// As [`Comm::all_gather`], in rounds beyond MPI's count; only `root` allocates the
    /// whole.
    fn gather_to(&self, root: usize, mine: &[u8], counts: &[usize]) -> Result<Option<Vec<u8>>> {
        let receives = self.rank() == root;
        super::gather_in_rounds_to(
            receives,
            mine,
            counts,
            Count::MAX as usize,
            &mut |mine, counts, all| self.gather_round_to(root, mine, counts, all),
        )
    }

    fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }
}
