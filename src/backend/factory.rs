//! The one factory of backends: [`create`], the backend of a [`BackendKind`] for a problem,
//! in core or in subdomains.

use super::kind::{resolve_auto, BackendKind};
use super::partitioned::matrix::{count_for_budget, Slots};
use super::partitioned::matrix_stream::StreamedPart;
use super::partitioned::plan::plan_for_budget;
use super::partitioned::request::budget_bytes_for;
use super::partitioned::{GpuStreamed, PartitionedCpu, PartitionedMatrix, SubdomainRequest};
use super::support::{check_contact, check_material, Placement, Scheme};
use super::{Backend, CpuLoop, CpuMatrix, GpuLoop, GpuMatrix};
use crate::gpu::Gpu;
use crate::operators::Storage;
use crate::partition::{usage, ResidencyRequest};
use crate::setup::Problem;
use crate::{Real, Result};
use std::sync::Arc;

/// Create the backend `kind` for `problem`: in core, or in subdomains where `subdomains`
/// asks for them (`run --subdomains N`, `--gpu-memory-budget SIZE`). `auto` takes the
/// backend [`resolve_auto`] names (in core: the CPU loop should the GPU one fail to set
/// up); a backend this machine or build cannot run is a clear error, never a panic.
pub fn create<T: Real>(
    kind: BackendKind,
    problem: Arc<Problem>,
    subdomains: Option<&SubdomainRequest>,
) -> Result<Box<dyn Backend<T>>> {
    match subdomains {
        Some(request) => create_partitioned(kind, problem, request),
        None => create_in_core(kind, problem),
    }
}

/// The material check of `kind` (resolved; `in_core`: not in subdomains) before anything is
/// built.
fn check_kind(problem: &Problem, kind: BackendKind, in_core: bool) -> Result<()> {
    let scheme = match kind {
        BackendKind::CpuMatrix | BackendKind::GpuMatrix if in_core => Scheme::Matrix,
        BackendKind::CpuMatrix | BackendKind::GpuMatrix => Scheme::MatrixParts,
        BackendKind::CpuLoop if in_core => Scheme::CpuLoop,
        BackendKind::GpuLoop if in_core => Scheme::GpuLoop,
        BackendKind::GpuLoop => Scheme::GpuLoopParts,
        _ => Scheme::CpuLoopParts,
    };
    check_material(problem, kind.name(), scheme)?;
    let placement = match in_core {
        true => Placement::InCore,
        false => Placement::Subdomains,
    };
    check_contact(problem, kind.name(), placement)
}

fn create_in_core<T: Real>(
    kind: BackendKind,
    problem: Arc<Problem>,
) -> Result<Box<dyn Backend<T>>> {
    // (`auto` checks the backend it resolves to, below)
    if kind != BackendKind::Auto {
        check_kind(&problem, kind, true)?;
    }
    match kind {
        // (a material only cpu-loop runs takes cpu-loop, as a GPU that fails to set up)
        BackendKind::Auto => match resolve_auto(T::PRECISION).0 {
            BackendKind::GpuLoop if check_kind(&problem, BackendKind::GpuLoop, true).is_err() => {
                Ok(Box::new(CpuLoop::<T>::new(problem)))
            }
            BackendKind::GpuLoop => Ok(match GpuLoop::<T>::new(problem.clone()) {
                Ok(gpu) => Box::new(gpu),
                Err(_) => Box::new(CpuLoop::<T>::new(problem)),
            }),
            _ => Ok(Box::new(CpuLoop::<T>::new(problem))),
        },
        BackendKind::CpuLoop => Ok(Box::new(CpuLoop::<T>::new(problem))),
        // half storage: half the bond memory and about half the time of full storage, with
        // the same results to round-off (tests/agreement.rs, docs/matrix-formulation.md)
        BackendKind::CpuMatrix => Ok(Box::new(CpuMatrix::<T>::new(problem, Storage::Half)?)),
        BackendKind::GpuLoop => Ok(Box::new(GpuLoop::<T>::new(problem)?)),
        // half storage, as cpu-matrix
        BackendKind::GpuMatrix => Ok(Box::new(GpuMatrix::<T>::new(problem, Storage::Half)?)),
    }
}

/// The backend of a subdomain run of `problem` with `kind` in precision `T`.
fn create_partitioned<T: Real>(
    kind: BackendKind,
    problem: Arc<Problem>,
    request: &SubdomainRequest,
) -> Result<Box<dyn Backend<T>>> {
    let kind = match kind {
        BackendKind::Auto => resolve_auto(T::PRECISION).0,
        other => other,
    };
    check_kind(&problem, kind, false)?;
    let budget = match &request.budget {
        Some(text) => Some(budget_bytes_for::<T>(text, &problem, kind)?),
        None => None,
    };
    let count = match (request.count, budget) {
        (Some(n), _) => n,
        (None, Some(b)) if kind == BackendKind::GpuMatrix => count_for_budget::<T>(&problem, b)?,
        (None, Some(b)) => plan_for_budget::<T>(&problem, b)?,
        (None, None) => return Err(usage("--subdomains", "give a count or a budget")),
    };
    let residency = match request.streamed {
        true => ResidencyRequest::Streamed,
        false => ResidencyRequest::Auto,
    };
    match kind {
        BackendKind::GpuLoop => {
            // the driver's error (no GPU) names the backend
            Gpu::get()?;
            Ok(Box::new(GpuStreamed::<T>::new(
                problem, count, budget, residency,
            )?))
        }
        BackendKind::CpuLoop => Ok(Box::new(PartitionedCpu::<T>::new(&problem, count)?)),
        BackendKind::CpuMatrix => Ok(Box::new(PartitionedMatrix::<T>::new(&problem, count)?)),
        // under a budget (or asked to), each subdomain's blocks go to the device only while
        // it runs, two at a time
        BackendKind::GpuMatrix if budget.is_some() || request.streamed => {
            let slots = Slots::two::<T>(&*Gpu::get()?)?;
            Ok(Box::new(
                PartitionedMatrix::<T, StreamedPart<T>>::on_slots(&problem, count, &slots)?
                    .with_budget(budget),
            ))
        }
        // every subdomain's operator blocks resident on the device
        BackendKind::GpuMatrix => {
            Gpu::get()?;
            Ok(Box::new(PartitionedMatrix::<T, GpuMatrix<T>>::new(
                &problem, count,
            )?))
        }
        BackendKind::Auto => unreachable!("auto is resolved to a backend above"),
    }
}
