//! Subdomain execution on the GPU (`peridot::backend::partitioned::stream`) against the in-core
//! `gpu-loop` backend: each owned node runs the in-core kernel's arithmetic over its family
//! in the global order, so forces, bonds broken, bond status, damage and dilatation are the
//! same BITWISE in f64 (the strain energy, summed per subdomain, to 1e-12), for 1, 2, 4, 8
//! and 16 subdomains, resident and streamed through two slots, PMB (nonlinear and
//! linearized) and LPS, 2D and 3D, pre-cracked and at damaging displacements; 40 damaging
//! explicit steps (host loop on both) end bitwise equal; a run under a memory budget keeps
//! its device allocations within the budget and reports its traffic; several materials (the
//! slots' nodes carrying their material indices, one pair table for every slot) bitwise as
//! in core, and with different densities a fused damaging run bitwise as the host loop; the
//! softening damage laws (a damage value per slot beside the status bits) and breaking with
//! each node's history (`alpha`, `after-force`) bitwise as in core.
//!
//! Without a CUDA device each test prints `skipped: no CUDA device` and passes.

use super::have_gpu;
use crate::common;
use peridot::backend::partitioned::{GpuStreamed, SubdomainRequest};
use peridot::backend::{BackendKind, GpuLoop};
use peridot::dynamics::Forces;
use peridot::partition::{Residency, ResidencyRequest};
use peridot::solver::{simulate, RunOptions};
use peridot::Precision;
use std::sync::Arc;

/// A damaging explicit run of `problem` on `core` (in-core `gpu-loop`) against the same run
/// on `GpuStreamed` with each of `counts` subdomains streamed through two slots, taken in
/// uneven chunks (`common::assert_chunked_run_equals`: bitwise). `label` names the case.
/// Returns `core` and the last streamed backend for further checks.
fn streamed_runs_equal_in_core(
    problem: &peridot::setup::Problem,
    mut core: GpuLoop<f64>,
    counts: &[usize],
    label: &str,
) -> (GpuLoop<f64>, Option<GpuStreamed<f64>>) {
    let shared = Arc::new(problem.clone());
    let reference = common::explicit_run(problem, &mut core);
    assert!(reference.1 > 0, "{label}: the run breaks bonds");
    let mut last = None;
    for &count in counts {
        let mut part =
            GpuStreamed::<f64>::new(shared.clone(), count, None, ResidencyRequest::Streamed)
                .unwrap();
        let case = format!("{label}, {count} subdomains");
        common::assert_chunked_run_equals(problem, &mut part, &reference, &case);
        last = Some(part);
    }
    (core, last)
}

/// A run of `problem` on `backend` in f64 under `--gpu-memory-budget budget`.
fn budget_run(
    problem: &peridot::setup::Problem,
    backend: BackendKind,
    budget: &str,
) -> peridot::solver::Outcome<f64> {
    let opts = RunOptions {
        cancel: None,
        process_start: None,
        subdomains: Some(SubdomainRequest {
            budget: Some(budget.into()),
            ..Default::default()
        }),
        backend,
        precision: Precision::F64,
        out_dir: None,
        quiet: true,
    };
    simulate::<f64>(problem.clone(), &opts).unwrap()
}

#[test]
fn subdomains_on_the_gpu_equal_in_core_gpu_loop_bitwise() {
    if !have_gpu() {
        return;
    }
    for (law, dim) in common::PARTITION_CASES {
        let problem = common::partition_bar(law, dim, 1);
        let shared = Arc::new(problem.clone());
        for count in [1, 2, 4, 8, 16] {
            for request in [ResidencyRequest::Auto, ResidencyRequest::Streamed] {
                let mut core = GpuLoop::<f64>::new(shared.clone()).unwrap();
                let mut part =
                    GpuStreamed::<f64>::new(shared.clone(), count, None, request).unwrap();
                let expected = match request {
                    ResidencyRequest::Streamed => Residency::Streamed,
                    ResidencyRequest::Auto => Residency::Resident,
                };
                assert_eq!(part.residency(), expected);
                let case = format!("{law} {dim}, {count} subdomains, {request:?}");
                common::check_partitioned(&problem, &mut core, &mut part, common::BITWISE, &case);
            }
        }
    }
}

/// A lean problem (no bond on the host; each subdomain searched on its own: what
/// `run --backend gpu-loop` in subdomains builds) runs bitwise as the in-core backend on the
/// stored problem: forces, status, damage after breaking, and 40 damaging explicit steps.
#[test]
fn lean_subdomains_on_the_gpu_equal_in_core_gpu_loop_bitwise() {
    if !have_gpu() {
        return;
    }
    for (law, dim) in [("pmb", "plane-stress"), ("lps", "3d"), ("pmb", "3d")] {
        let stored = common::partition_bar(law, dim, 40);
        let shared = Arc::new(stored.clone());
        let lean = Arc::new(common::partition_bar_lean(law, dim, 40));
        for count in [1, 3, 8] {
            let mut core = GpuLoop::<f64>::new(shared.clone()).unwrap();
            let mut part =
                GpuStreamed::<f64>::new(lean.clone(), count, None, ResidencyRequest::Streamed)
                    .unwrap();
            let case = format!("lean {law} {dim}, {count} subdomains");
            common::check_partitioned(&stored, &mut core, &mut part, common::BITWISE, &case);
        }
        let mut core = GpuLoop::<f64>::new(shared.clone()).unwrap();
        let (s_core, b_core) = common::explicit_run(&stored, &mut core);
        let mut part =
            GpuStreamed::<f64>::new(lean.clone(), 5, None, ResidencyRequest::Auto).unwrap();
        let (s_part, b_part) = common::explicit_run(&stored, &mut part);
        let case = format!("lean {law} {dim}, 40 steps");
        assert!(b_core > 0, "{case}: the run breaks bonds");
        assert_eq!(b_part, b_core, "{case}: bonds broken");
        common::assert_bitwise(&s_part.u, &s_core.u, &format!("{case}: displacement"));
    }
}

/// Under a budget that holds some subdomains but not all, those keep their own slot and
/// the others stream through two (`Residency::Mixed`): the device allocations stay within
/// the budget, and forces, status and 40 damaging explicit steps equal the in-core run
/// bitwise.
#[test]
fn mixed_residency_stays_in_budget_and_equals_in_core_bitwise() {
    if !have_gpu() {
        return;
    }
    for (law, dim) in [("pmb", "3d"), ("lps", "plane-strain")] {
        let stored = common::partition_bar(law, dim, 40);
        let shared = Arc::new(stored.clone());
        let count = 8;
        let all = GpuStreamed::<f64>::new(shared.clone(), count, None, ResidencyRequest::Auto)
            .unwrap()
            .report()
            .allocated_bytes;
        let budget = (0.7 * all as f64) as u64;
        let mut core = GpuLoop::<f64>::new(shared.clone()).unwrap();
        let mut part =
            GpuStreamed::<f64>::new(shared.clone(), count, Some(budget), ResidencyRequest::Auto)
                .unwrap();
        let r = part.report();
        let case = format!("{law} {dim}, budget {budget} of {all}");
        assert_eq!(r.residency, Residency::Mixed, "{case}");
        assert!(
            r.resident_subdomains > 0 && r.resident_subdomains < count,
            "{case}"
        );
        assert!(
            r.allocated_bytes <= budget,
            "{case}: {} allocated",
            r.allocated_bytes
        );
        common::check_partitioned(&stored, &mut core, &mut part, common::BITWISE, &case);
        let mut core = GpuLoop::<f64>::new(shared.clone()).unwrap();
        let (s_core, b_core) = common::explicit_run(&stored, &mut core);
        let mut part =
            GpuStreamed::<f64>::new(shared.clone(), count, Some(budget), ResidencyRequest::Auto)
                .unwrap();
        let (s_part, b_part) = common::explicit_run(&stored, &mut part);
        assert!(b_core > 0, "{case}: the run breaks bonds");
        assert_eq!(b_part, b_core, "{case}: bonds broken");

        assert_eq!(
            part.bond_status().unwrap(),
            core.bond_status().unwrap(),
            "{case}"
        );
        common::assert_bitwise(&s_part.u, &s_core.u, &format!("{case}: displacement"));
    }
}

#[test]
fn subdomain_explicit_runs_on_the_gpu_end_bitwise_equal() {
    if !have_gpu() {
        return;
    }
    for (law, dim) in [("pmb", "plane-stress"), ("lps", "3d"), ("pmb-linear", "3d")] {
        let problem = common::partition_bar(law, dim, 40);
        let shared = Arc::new(problem.clone());
        let mut core = GpuLoop::<f64>::new(shared.clone()).unwrap();
        let (s_core, b_core) = common::explicit_run(&problem, &mut core);
        assert!(b_core > 0, "{law} {dim}: the run breaks bonds");
        for count in [2, 5, 16] {
            let mut part =
                GpuStreamed::<f64>::new(shared.clone(), count, None, ResidencyRequest::Streamed)
                    .unwrap();
            let (s_part, b_part) = common::explicit_run(&problem, &mut part);
            let case = format!("{law} {dim}, {count} subdomains");

            assert_eq!(b_part, b_core, "{case}: bonds broken");
            assert_eq!(
                part.bond_status().unwrap(),
                core.bond_status().unwrap(),
                "{case}"
            );
            common::assert_bitwise(&s_part.u, &s_core.u, &format!("{case}: displacement"));
            common::assert_bitwise(&s_part.v, &s_core.v, &format!("{case}: velocity"));
        }
    }
}

/// `run --gpu-memory-budget 40%`: the device allocations stay within the budget, the
/// subdomains stream, the traffic is reported, and the run breaks the bonds the emulation
/// of the same partition on the CPU breaks (same partition, same kernels up to fused
/// multiply-adds: the counts agree to a few bonds at most).
#[test]
fn a_budget_run_stays_within_its_budget_and_reports_its_traffic() {
    if !have_gpu() {
        return;
    }
    let problem = common::partition_bar("pmb", "3d", 30);
    let gpu = budget_run(&problem, BackendKind::GpuLoop, "40%");
    let cpu = budget_run(&problem, BackendKind::CpuLoop, "40%");
    let r = gpu.summary.subdomains.clone().expect("a subdomain report");
    let budget = (0.4 * r.in_core_bytes as f64).ceil() as u64;
    assert!(r.count > 1 && r.residency != Residency::Resident, "{r:?}");
    assert!(r.resident_subdomains < r.count, "{r:?}");
    assert!(
        r.allocated_bytes <= budget,
        "{} > {budget}",
        r.allocated_bytes
    );
    assert_eq!(gpu.summary.peak_gpu_bytes, Some(r.allocated_bytes));
    assert!(r.bytes_in_per_evaluation > 0.0 && r.compute_seconds_per_evaluation > 0.0);
    let (b_gpu, b_cpu) = (gpu.summary.broken_bonds, cpu.summary.broken_bonds);
    assert!(b_gpu > problem.precracked_bonds(), "the run breaks bonds");
    assert!(
        b_gpu.abs_diff(b_cpu) * 100 <= b_cpu,
        "{b_gpu} vs {b_cpu} bonds broken"
    );
}

/// The explicit step fused into the scatter of the streamed forces (`advance_explicit`) ends
/// bitwise where `Explicit::step` with the in-core `gpu-loop` force calls ends, over calls
/// of uneven length, with every kind of condition and bonds breaking. (In core on the
/// neighbour list: the subdomains read positions per bond as it does; the bar is a full box
/// lattice, whose in-core slot table rounds each bond vector once and agrees to round-off,
/// `lattice_slot_table_agrees_with_the_neighbour_list`.)
#[test]
fn fused_explicit_steps_on_the_gpu_equal_the_host_loop_bitwise() {
    if !have_gpu() {
        return;
    }
    let problem = common::conditions_bar();
    let core = GpuLoop::<f64>::with_neighbour_list(Arc::new(problem.clone())).unwrap();
    streamed_runs_equal_in_core(&problem, core, &[3, 7], "conditions bar");
}

/// In f32 the subdomains read the same f32 node records as in core (relative to the body's
/// centre, one centre for every subdomain): forces and bond status equal in-core `gpu-loop`
/// bitwise too.
#[test]
fn f32_subdomains_equal_in_core_gpu_loop_bitwise() {
    if !have_gpu() {
        return;
    }
    for (law, dim) in [("pmb", "3d"), ("pmb", "plane-stress"), ("lps", "3d")] {
        let problem = common::partition_bar(law, dim, 1);
        let shared = Arc::new(problem.clone());
        let n = problem.body.len() * problem.dim();
        let u: Vec<f32> = common::random_vector(n, 1)
            .iter()
            .map(|x| (4e-6 * x) as f32)
            .collect();
        let mut core = GpuLoop::<f32>::new(shared.clone()).unwrap();
        let (mut f_core, mut f_part) = (vec![0f32; n], vec![1f32; n]);
        let broken = core.break_bonds_and_force(&u, &mut f_core).unwrap();
        assert!(broken > 0, "{law} {dim}: the field breaks bonds");
        for count in [2, 5] {
            let mut part =
                GpuStreamed::<f32>::new(shared.clone(), count, None, ResidencyRequest::Streamed)
                    .unwrap();
            let case = format!("{law} {dim} f32, {count} subdomains");
            assert_eq!(
                part.break_bonds_and_force(&u, &mut f_part).unwrap(),
                broken,
                "{case}"
            );
            let same = f_part
                .iter()
                .zip(&f_core)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{case}: forces differ");
            assert_eq!(
                part.bond_status().unwrap(),
                core.bond_status().unwrap(),
                "{case}: bond status"
            );
        }
    }
}

/// The matrix scheme's subdomains with their operator blocks on the GPU (`gpu-matrix` per
/// subdomain) against the in-core `gpu-matrix` in full storage: the checks of the CPU
/// emulation (`common::check_partitioned` to round-off), for 1, 2, 4, 8 and 16 subdomains.
#[test]
fn matrix_subdomains_on_the_gpu_equal_in_core_gpu_matrix() {
    use peridot::backend::partitioned::PartitionedMatrix;
    use peridot::backend::GpuMatrix;
    use peridot::operators::Storage;
    if !have_gpu() {
        return;
    }
    for (law, dim) in common::PARTITION_CASES {
        let problem = common::partition_bar(law, dim, 1);
        for count in [1, 2, 4, 8, 16] {
            let case = format!("{law} {dim}, {count} subdomains, gpu-matrix");
            let mut core = GpuMatrix::<f64>::new(Arc::new(problem.clone()), Storage::Full).unwrap();
            let mut part = PartitionedMatrix::<f64, GpuMatrix<f64>>::new(&problem, count).unwrap();
            common::check_partitioned(&problem, &mut core, &mut part, common::ROUND_OFF, &case);
        }
    }
}

/// Adaptive dynamic relaxation in subdomains on the GPU (the iteration on the host, the
/// forces of the streamed subdomains) reaches the in-core CPU equilibrium: both converge, in
/// a similar number of iterations (within 30 %: ADR's path is sensitive to the last bits of
/// its damping coefficient, and the device forces differ from the CPU's at 1e-12), to the
/// same displacement within what the tolerance allows (1e-5 relative at 1e-9).
#[test]
fn adr_in_subdomains_on_the_gpu_reaches_the_cpu_equilibrium() {
    if !have_gpu() {
        return;
    }
    let text = common::lps_bar(0.012, "steps = 20000\ntolerance = 1e-9");
    let problem = common::problem(&text, &[]);
    let run = |backend, subdomains| {
        let opts = RunOptions {
            cancel: None,
            process_start: None,
            subdomains,
            backend,
            precision: Precision::F64,
            out_dir: None,
            quiet: true,
        };
        simulate::<f64>(problem.clone(), &opts).unwrap()
    };
    let cpu = run(BackendKind::CpuLoop, None);
    let request = SubdomainRequest {
        count: Some(3),
        streamed: true,
        ..Default::default()
    };
    let gpu = run(BackendKind::GpuLoop, Some(request));
    assert!(gpu.summary.subdomains.is_some(), "the run is in subdomains");
    assert_eq!(cpu.summary.converged, Some(true), "CPU converged");
    assert_eq!(
        gpu.summary.converged,
        Some(true),
        "GPU subdomains converged"
    );
    let (ig, ic) = (gpu.state.step as f64, cpu.state.step as f64);
    assert!((0.7..1.3).contains(&(ig / ic)), "iterations {ig} vs {ic}");
    let e = common::rel_f64(&gpu.state.u, &cpu.state.u);
    assert!(e < 1e-5, "displacement differs by {e:e}");
}

/// The matrix scheme streamed (each subdomain's image copied into one of two persistent
/// slots whenever it runs, the next one copying on the other slot's stream while the current
/// one computes) equals the in-core `gpu-matrix` as the resident parts do: same bonds broken
/// and status exactly, forces 1e-12 (`common::check_partitioned` to round-off), 1 to 16
/// subdomains; its report counts every image copied in per evaluation where more than two
/// subdomains share the slots, and less where each keeps its slot; and a run under half the
/// in-core footprint keeps its slots within it and breaks the bonds the CPU emulation breaks
/// (within 1 %).
#[test]
fn streamed_matrix_subdomains_equal_in_core_gpu_matrix() {
    use peridot::backend::partitioned::matrix::Slots;
    use peridot::backend::partitioned::matrix_stream::StreamedPart;
    use peridot::backend::partitioned::PartitionedMatrix;
    use peridot::backend::GpuMatrix;
    use peridot::gpu::Gpu;
    use peridot::operators::Storage;
    if !have_gpu() {
        return;
    }
    let slots = Slots::two::<f64>(&Gpu::get().unwrap()).unwrap();
    for (law, dim) in common::PARTITION_CASES {
        let problem = common::partition_bar(law, dim, 1);
        for count in [1, 2, 5, 16] {
            let case = format!("{law} {dim}, {count} streamed subdomains, gpu-matrix");
            let mut core = GpuMatrix::<f64>::new(Arc::new(problem.clone()), Storage::Full).unwrap();
            let mut part =
                PartitionedMatrix::<f64, StreamedPart<f64>>::on_slots(&problem, count, &slots)
                    .unwrap();
            common::check_partitioned(&problem, &mut core, &mut part, common::ROUND_OFF, &case);
            let report = part.stream_report().expect("a streamed run reports");
            let images = part.bytes_per_step() as f64;
            let moved = report.bytes_in_per_evaluation;
            match count > 2 {
                true => assert!(moved > images, "{case}: {moved} bytes in, images {images}"),
                false => assert!(moved < images, "{case}: {moved} bytes in, images {images}"),
            }
            assert!(report.compute_seconds_per_evaluation > 0.0, "{case}");
            assert!(
                report.allocated_bytes as usize == part.memory_bytes(),
                "{case}"
            );
        }
    }
    let problem = common::partition_bar("pmb", "3d", 30);
    let gpu = budget_run(&problem, BackendKind::GpuMatrix, "50%");
    let budget = GpuMatrix::<f64>::memory_estimate(&problem, Storage::Half, 8) / 2;
    let peak = gpu
        .summary
        .peak_gpu_bytes
        .expect("a GPU run reports its memory") as usize;
    assert!(peak <= budget, "{peak} > {budget} bytes");
    let cpu = budget_run(&problem, BackendKind::CpuMatrix, "50%");
    let (b_gpu, b_cpu) = (gpu.summary.broken_bonds, cpu.summary.broken_bonds);
    assert!(b_gpu > problem.precracked_bonds(), "the run breaks bonds");
    assert!(
        b_gpu.abs_diff(b_cpu) * 100 <= b_cpu,
        "{b_gpu} vs {b_cpu} bonds broken"
    );
}

/// Several materials on the GPU's subdomains: each slot's static block carries its nodes'
/// material indices and every slot reads one pair table, so each owned node runs the in-core
/// kernel (`pmb_force_materials`, the LPS kernels with the pair's critical stretch and each
/// node's `K_d`) over its family in the global order: forces, bonds broken, status, damage
/// and dilatation BITWISE the in-core `gpu-loop` (energy to 1e-12), resident and streamed;
/// and two materials of different densities (8000, 2000 kg/m^3) in a damaging fused run
/// (each node's inverse density in the host update) end bitwise where `Explicit::step` with
/// the in-core forces ends. (In core on the neighbour list, whose walk the subdomains do.)
#[test]
fn several_materials_on_gpu_subdomains_equal_in_core_gpu_loop_bitwise() {
    if !have_gpu() {
        return;
    }
    for (law, dim) in [("pmb", "plane-stress"), ("pmb-linear", "3d"), ("lps", "3d")] {
        let problem = common::problem(&common::two_materials(law, dim, true, "", ""), &[]);
        assert!(problem.materials.is_some(), "two materials");
        let shared = Arc::new(problem.clone());
        for count in [1, 2, 3] {
            for request in [ResidencyRequest::Auto, ResidencyRequest::Streamed] {
                let mut core = GpuLoop::<f64>::with_neighbour_list(shared.clone()).unwrap();
                let mut part =
                    GpuStreamed::<f64>::new(shared.clone(), count, None, request).unwrap();
                let case = format!("two materials {law} {dim}, {count} subdomains, {request:?}");
                common::check_partitioned(&problem, &mut core, &mut part, common::BITWISE, &case);
            }
        }
    }
    for (law, dim) in [("pmb", "plane-stress"), ("lps", "3d")] {
        let problem = common::two_densities(law, dim, 40);
        let core = GpuLoop::<f64>::with_neighbour_list(Arc::new(problem.clone())).unwrap();
        let label = format!("two densities {law} {dim}");
        streamed_runs_equal_in_core(&problem, core, &[2, 3], &label);
    }
}

/// Several materials on `gpu-matrix` in subdomains, resident (each subdomain its own
/// `gpu-matrix` with its nodes' material indices) and streamed through two slots (each
/// image's indices loaded with it into the slot's index buffer, sized for the largest):
/// the checks of the CPU emulation against the in-core `gpu-matrix` in full storage to
/// round-off (`common::ROUND_OFF`: forces 1e-12, the local operators sum a row's entries in
/// another order), the same bonds broken; PMB and LPS, whose bond rows read each row's pair
/// critical stretch and each node's `K_d` from the pair table.
#[test]
fn several_materials_on_gpu_matrix_subdomains_equal_in_core_gpu_matrix() {
    use peridot::backend::partitioned::matrix::Slots;
    use peridot::backend::partitioned::matrix_stream::StreamedPart;
    use peridot::backend::partitioned::PartitionedMatrix;
    use peridot::backend::GpuMatrix;
    use peridot::gpu::Gpu;
    use peridot::operators::Storage;
    if !have_gpu() {
        return;
    }
    let slots = Slots::two::<f64>(&Gpu::get().unwrap()).unwrap();
    for (law, dim) in [("pmb", "plane-stress"), ("pmb-linear", "3d"), ("lps", "3d")] {
        let problem = common::problem(&common::two_materials(law, dim, true, "", ""), &[]);
        assert!(problem.materials.is_some(), "two materials");
        for count in [1, 2, 3] {
            let core = || GpuMatrix::<f64>::new(Arc::new(problem.clone()), Storage::Full).unwrap();
            let case = format!("two materials {law} {dim}, {count} subdomains, gpu-matrix");
            let mut part = PartitionedMatrix::<f64, GpuMatrix<f64>>::new(&problem, count).unwrap();
            common::check_partitioned(&problem, &mut core(), &mut part, common::ROUND_OFF, &case);
            let mut part =
                PartitionedMatrix::<f64, StreamedPart<f64>>::on_slots(&problem, count, &slots)
                    .unwrap();
            let case = format!("{case}, streamed");
            common::check_partitioned(&problem, &mut core(), &mut part, common::ROUND_OFF, &case);
        }
    }
}

/// The softening damage laws on the GPU's subdomains: each subdomain's damage per slot of its
/// sliced order travels with its status bits (uploaded with the static block, back to the
/// host where the slot is given up), the damage update is a pass of its own (`soften_bonds`)
/// before or after the force pass (`pmb_force_softening`) as `break_timing` says, as in core:
/// forces, bonds broken, status, damage (per node and per bond) BITWISE the in-core
/// `gpu-loop`, resident and streamed; and a 40-step damaging fused run ends bitwise where
/// `Explicit::step` with the in-core forces ends, with the same damage per bond.
#[test]
fn softening_on_gpu_subdomains_equals_in_core_gpu_loop_bitwise() {
    if !have_gpu() {
        return;
    }
    let bilinear = "damage_law = \"bilinear\"\ncritical_stretch = 0.002\nfinal_stretch = 0.006\n";
    let trilinear = "damage_law = \"trilinear\"\ncritical_stretch = 0.002\nkink_stretch = 0.003\n\
                     kink_force_ratio = 0.25\nfinal_stretch = 0.006\n";
    let after = format!("{bilinear}break_timing = \"after-force\"\n");
    for (keys, law, dim) in [
        (bilinear, "pmb", "plane-stress"),
        (trilinear, "pmb-linear", "3d"),
        (after.as_str(), "pmb", "3d"),
    ] {
        let problem = common::partition_bar_with(law, dim, keys, 1);
        assert!(problem.material.softening.is_some(), "a softening law");
        let shared = Arc::new(problem.clone());
        for count in [1, 3, 8] {
            for request in [ResidencyRequest::Auto, ResidencyRequest::Streamed] {
                let mut core = GpuLoop::<f64>::new(shared.clone()).unwrap();
                let mut part =
                    GpuStreamed::<f64>::new(shared.clone(), count, None, request).unwrap();
                let case = format!("softening {law} {dim}, {count} subdomains, {request:?}");
                common::check_partitioned(&problem, &mut core, &mut part, common::BITWISE, &case);
                let (a, b) = (part.bond_damage().unwrap(), core.bond_damage().unwrap());
                assert!(a.is_some() && a == b, "{case}: damage per bond");
            }
        }
        let problem = common::partition_bar_with(law, dim, keys, 40);
        let core = GpuLoop::<f64>::new(Arc::new(problem.clone())).unwrap();
        let label = format!("softening {law} {dim}");
        let (core, part) = streamed_runs_equal_in_core(&problem, core, &[5], &label);
        let part = part.expect("one streamed run");
        assert_eq!(
            part.bond_damage().unwrap(),
            core.bond_damage().unwrap(),
            "{label}: damage per bond"
        );
    }
}

/// Breaking with each node's history on the GPU's subdomains (`critical_stretch_alpha`,
/// `break_timing = "after-force"`): each node's critical stretch from the previous evaluation
/// kept global on the host, the local nodes' copied into the slot for `history_breaks`, the
/// owned nodes' next copied out (at the first evaluation from a `node_critical_stretch` pass),
/// so each owned node runs the in-core kernels' arithmetic over its family: forces, bonds
/// broken, status, damage BITWISE the in-core `gpu-loop`, resident and streamed, the critical
/// stretches per node too; and a 40-step damaging fused run ends bitwise as `Explicit::step`
/// with the in-core forces, PMB and LPS.
#[test]
fn history_breaking_on_gpu_subdomains_equals_in_core_gpu_loop_bitwise() {
    if !have_gpu() {
        return;
    }
    let alpha = "critical_stretch = 0.002\ncritical_stretch_alpha = 0.25\n";
    let after = "critical_stretch = 0.002\nbreak_timing = \"after-force\"\n";
    let both = format!("{alpha}break_timing = \"after-force\"\n");
    for (keys, law, dim) in [
        (alpha, "pmb", "plane-stress"),
        (after, "lps", "3d"),
        (both.as_str(), "pmb-linear", "3d"),
    ] {
        let problem = common::partition_bar_with(law, dim, keys, 1);
        assert!(problem.material.history_breaking(), "history");
        let shared = Arc::new(problem.clone());
        for count in [1, 3, 8] {
            for request in [ResidencyRequest::Auto, ResidencyRequest::Streamed] {
                let mut core = GpuLoop::<f64>::new(shared.clone()).unwrap();
                let mut part =
                    GpuStreamed::<f64>::new(shared.clone(), count, None, request).unwrap();
                let case = format!("history {law} {dim}, {count} subdomains, {request:?}");
                common::check_partitioned(&problem, &mut core, &mut part, common::BITWISE, &case);
                let (a, b) = (
                    part.failure_history().unwrap(),
                    core.failure_history().unwrap(),
                );
                assert!(!a.node_s0.is_empty(), "{case}: critical stretches kept");
                common::assert_bitwise(&a.node_s0, &b.node_s0, &format!("{case}: s0 per node"));
            }
        }
        let problem = common::partition_bar_with(law, dim, keys, 40);
        let core = GpuLoop::<f64>::new(Arc::new(problem.clone())).unwrap();
        let label = format!("history {law} {dim}");
        streamed_runs_equal_in_core(&problem, core, &[5], &label);
    }
}
