//! Runs across MPI ranks (issue 21, `docs/distributed.md`): `mpirun -n P peridot run` on
//! `cpu-loop` equals the single-process run bit for bit for P = 1 to 4 (displacement,
//! velocity and damage of every snapshot, read from the ranks' `.vtu` pieces; `probes.csv`
//! byte for byte; the broken bonds and largest damage of `summary.json`), on a pre-cracked
//! plate pulled apart whose crack runs across the cuts between ranks (PMB), and for LPS,
//! whose dilatation is exchanged too; with the softening law, `alpha` and `after-force`, and
//! materials of different densities; ADR (bitwise too: its global sums are exact);
//! `cpu-matrix` across ranks to 1e-12 (round-off: each rank's rows in local order); a run
//! resumed across ranks from a checkpoint continues bit for bit (on `gpu-loop` too, whose
//! ADR across 2 and 3 ranks agrees bit for bit); contact and a free impactor across ranks
//! bit for bit (the impactor's probe columns byte for byte); a model that does not run
//! across ranks is refused on every rank with a message naming what runs, and no rank is
//! left waiting.
//!
//! Built with `--features mpi`; needs `mpirun` (MPICH or Open MPI) on the path.
#![cfg(feature = "mpi")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The test model: a plate of 60 x 16 nodes (1 mm), pre-cracked from its left edge to a
/// third of its length at mid-height, its top and bottom layers pulled apart at 5 m/s, so
/// the crack runs along x, through the cuts between ranks (slabs across x); snapshots every
/// 40 steps, probes of both layers every 10, the damage picture.
fn model(law: &str, steps: usize) -> String {
    let output = "vtk_every = 40\nprobes = [\"bottom\", \"top\"]\nprobe_every = 10\n\
                  image = true\ntips_every = 0\n";
    common::cracked_plate_model(law, steps, (60, 16), 5.0, output)
}

/// Run the built binary on `model_path` into `out`: alone with `ranks` = 0, else under
/// `mpirun -n ranks` (one rayon thread per rank: the CI machine has two cores), on
/// `cpu-loop` unless `more` names a backend (`auto` would take the GPU on a machine with
/// one), with `more` arguments (`--backend gpu-loop`, `--restart DIR`) and, for `gpu-loop`,
/// the neighbour list form in one process too (`PD_LATTICE=0`: the distributed run always
/// takes it; the lattice slot-table kernel agrees with it to 1e-12 only).
fn peridot_with(model_path: &Path, out: &Path, ranks: usize, more: &[&str]) -> Output {
    let exe = env!("CARGO_BIN_EXE_peridot");
    let args = ["run", model_path.to_str().unwrap(), "--quiet", "--out"];
    let mut cmd = match ranks {
        0 => Command::new(exe),
        p => {
            let mut c = Command::new("mpirun");
            c.args(["-n", &p.to_string(), exe]);
            c
        }
    };
    cmd.args(args)
        .arg(out)
        .args(more)
        .env("RAYON_NUM_THREADS", "1");
    if !more.contains(&"--backend") {
        cmd.args(["--backend", "cpu-loop"]);
    }
    if more.contains(&"gpu-loop") {
        cmd.env("PERIDOT_KERNEL_DEFINES", "PD_LATTICE=0");
    }
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot start mpirun / peridot ({e}): is MPI installed?"))
}

fn run_ok(model_path: &Path, out: &Path, ranks: usize) {
    run_ok_with(model_path, out, ranks, &[]);
}

fn run_ok_with(model_path: &Path, out: &Path, ranks: usize, more: &[&str]) {
    let o = peridot_with(model_path, out, ranks, more);
    assert!(
        o.status.success(),
        "{ranks} ranks: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Per node, keyed by its reference position's bits: displacement, velocity, damage.
type Nodes = Vec<([u64; 3], [Vec<u64>; 3])>;

/// The nodes of the `.vtu` files `files` (a snapshot or its pieces), sorted by position.
fn nodes_of(files: &[PathBuf]) -> Nodes {
    let mut nodes = Vec::new();
    for f in files {
        let points = common::vtu_array(f, "Points");
        let bits = |name: &str, per: usize| -> Vec<Vec<u64>> {
            let values = common::vtu_array(f, name);
            values
                .chunks_exact(per)
                .map(|c| c.iter().map(|x| x.to_bits()).collect())
                .collect()
        };
        let (u, v, phi) = (
            bits("displacement", 3),
            bits("velocity", 3),
            bits("damage", 1),
        );
        for (k, p) in points.chunks_exact(3).enumerate() {
            let key = [p[0].to_bits(), p[1].to_bits(), p[2].to_bits()];
            nodes.push((key, [u[k].clone(), v[k].clone(), phi[k].clone()]));
        }
    }
    nodes.sort();
    nodes
}

/// The snapshot steps of a single-process folder and, per step, its `.vtu`.
fn single_snapshots(dir: &Path) -> Vec<(String, PathBuf)> {
    common::snapshots(dir)
        .into_iter()
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), p))
        .collect()
}

/// The pieces of snapshot `stem` of a distributed run in `dir`, as its `.pvtu` lists them.
fn pieces(dir: &Path, stem: &str, ranks: usize) -> Vec<PathBuf> {
    let pvtu = std::fs::read_to_string(dir.join(format!("{stem}.pvtu")))
        .unwrap_or_else(|e| panic!("{stem}.pvtu in {}: {e}", dir.display()));
    let files: Vec<PathBuf> = pvtu
        .split("Source=\"")
        .skip(1)
        .map(|s| dir.join(&s[..s.find('"').unwrap()]))
        .collect();
    assert_eq!(files.len(), ranks, "{stem}.pvtu lists one piece per rank");
    files
}

fn summary(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The probe rows of `probes.csv` in `dir`.
fn probe_table(dir: &Path) -> Vec<Vec<f64>> {
    let text = std::fs::read_to_string(dir.join("probes.csv")).unwrap();
    (text.lines().skip(1))
        .map(|l| l.split(',').map(|x| x.trim().parse().unwrap()).collect())
        .collect()
}

/// The distributed run in `dist` equals the single-process one in `single` bit for bit
/// (`probes.csv` byte for byte, and `crack_tips.csv` and `damage.png` where the
/// single-process run wrote one).
fn assert_same(single: &Path, dist: &Path, ranks: usize) {
    assert_same_state(single, dist, ranks);
    let read = |d: &Path, f: &str| std::fs::read(d.join(f)).ok();
    for file in ["probes.csv", "crack_tips.csv", "damage.png"] {
        assert_eq!(
            read(single, file),
            read(dist, file),
            "{ranks} ranks: {file}"
        );
    }
}

/// The snapshots (from the pieces) and the summary of the distributed run in `dist` equal
/// the single-process one's in `single` bit for bit.
fn assert_same_state(single: &Path, dist: &Path, ranks: usize) {
    let snaps = single_snapshots(single);
    assert!(
        snaps.len() >= 3,
        "snapshots at steps 0, 40, ... and the end"
    );
    for (stem, file) in &snaps {
        let a = nodes_of(std::slice::from_ref(file));
        let b = nodes_of(&pieces(dist, stem, ranks));
        assert_eq!(
            a.len(),
            b.len(),
            "{ranks} ranks, {stem}: nodes in the pieces"
        );
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.0, y.0, "{ranks} ranks, {stem}: the same node positions");
            assert!(
                x.1 == y.1,
                "{ranks} ranks, {stem}: node at {:?}: displacement, velocity, damage \
                 {:?} vs {:?}",
                x.0.map(f64::from_bits),
                x.1,
                y.1
            );
        }
    }
    let (s, d) = (summary(single), summary(dist));
    for key in [
        "broken_bonds",
        "max_damage",
        "steps",
        "final_time",
        "status",
    ] {
        assert_eq!(s[key], d[key], "{ranks} ranks: summary {key}");
    }
    // rank 0's setup names its own phases, which with its loops' assembly (on a GPU: its
    // kernels, if compiled, and its upload) make up the backend's creation (the same seconds
    // split, so equal to rounding)
    let setup = &d["setup"];
    let seconds = |key: &str| {
        let x = setup[key].as_f64();
        x.unwrap_or_else(|| panic!("{ranks} ranks: setup lacks {key}: {setup}"))
    };
    // (`kernel_compilation` counts every compilation of the setup: a GPU rank resumed with
    // `--restart` built the stored problem until 2026-12-08, whose device neighbour search
    // compiled its program before the backend was made, so there it held more than the
    // backend's; a restarted run stays out of this sum until it is rerun on a GPU)
    let restarted = !d["restarted_from_step"].is_null();
    let own = match setup["assembly"].as_f64() {
        Some(assembly) => Some(assembly),
        None if restarted => None,
        None => Some(seconds("upload") + setup["kernel_compilation"].as_f64().unwrap_or(0.0)),
    };
    if let Some(own) = own {
        let parts: f64 = ["rank_cut", "rank_subdomain", "rank_part"]
            .iter()
            .map(|k| seconds(k))
            .sum::<f64>()
            + own;
        let whole = d["phase_seconds"]["assembly"].as_f64().unwrap();
        assert!(
            (parts - whole).abs() <= 1e-9 * whole.max(1.0),
            "{ranks} ranks: setup phases {parts} s against the backend's creation {whole} s"
        );
    }
    // the .pvd lists every snapshot's .pvtu
    let pvd = std::fs::read_to_string(dist.join("test.pvd")).unwrap();
    assert_eq!(
        pvd.matches(".pvtu").count(),
        snaps.len(),
        "{ranks} ranks: .pvd"
    );
}

/// Write the model and run it alone and across each count of `ranks`, comparing each.
fn check(law: &str, steps: usize, ranks: &[usize]) -> (tempfile::TempDir, PathBuf) {
    check_text(&model(law, steps), ranks)
}

/// [`check`] of the model `text`.
fn check_text(text: &str, ranks: &[usize]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("test.toml");
    std::fs::write(&path, text).unwrap();
    let single = tmp.path().join("single");
    run_ok(&path, &single, 0);
    for &p in ranks {
        let dist = tmp.path().join(format!("ranks{p}"));
        run_ok(&path, &dist, p);
        assert_same(&single, &dist, p);
    }
    (tmp, single)
}

#[test]
fn pmb_across_ranks_equals_one_process_bitwise_with_bonds_broken_across_cuts() {
    let steps = 320;
    let (_tmp, single) = check("pmb", steps, &[1, 2, 3, 4]);
    let broken = summary(&single)["broken_bonds"].as_u64().unwrap();
    assert!(broken > 0, "the bar breaks bonds in {steps} steps");
    // (the damage picture, compared byte for byte, drawn from the damage rank 0 gathers)
    assert!(single.join("damage.png").exists(), "the picture drawn");
    // some bonds broken in the run join nodes of different ranks, for every count: the
    // single-process run's final status against the cut the ranks make
    let problem = common::problem(&model("pmb", steps), &[]);
    let outcome = common::run::<f64>(problem.clone());
    let status = outcome.backend.bond_status().unwrap();
    let fam = &problem.families;
    for p in [2, 3, 4] {
        // (the cut the ranks make: every rank's owned nodes)
        let plan = peridot::distributed::RankPlan::new(&problem, p, 0).unwrap();
        let mut owner = vec![0; problem.body.len()];
        for (r, nodes) in plan.owned_of.iter().enumerate() {
            for &i in nodes {
                owner[i] = r;
            }
        }
        let across = (0..problem.body.len())
            .flat_map(|i| fam.range(i).map(move |b| (i, b)))
            .filter(|&(_, b)| status[b] == 0 && problem.initial_mu[b] == 1)
            .filter(|&(i, b)| owner[i] != owner[fam.neighbors[b] as usize])
            .count();
        assert!(
            across > 0,
            "{p} ranks: bonds broken across the cut ({broken} broken)"
        );
    }
}

/// Crack tips under `mpirun`: each rank builds the problem lean and samples the damage
/// gathered from all ranks; rank 0's `crack_tips.csv` is the single-process file byte for
/// byte (the runs are bitwise the same), on a plate of 90 x 40 nodes whose crack runs across
/// the cuts, sampled every 10 steps; the file has rows (the crack runs, 35 rows of 3 tips
/// measured in `tests/distributed.rs` on the same plate), so the comparison cannot hold
/// vacuously.
#[test]
fn crack_tips_across_ranks_are_the_one_process_file() {
    let output = "vtk_every = 200\nprobes = [\"bottom\", \"top\"]\nprobe_every = 50\n\
                  image = false\ntips_every = 10\n";
    let text = common::cracked_plate_model("pmb", 600, (90, 40), 6.0, output);
    let (_tmp, single) = check_text(&text, &[2, 3]);
    let tips = std::fs::read_to_string(single.join("crack_tips.csv")).unwrap();
    assert!(tips.lines().count() > 1, "tip rows: {tips}");
}

#[test]
fn lps_across_ranks_equals_one_process_bitwise() {
    check("lps", 160, &[2, 3]);
}

/// The material options across ranks equal the single-process run bit for bit: a softening
/// law (bilinear; the damage per bond kept by each rank for its owned nodes' bonds, the
/// snapshots' damage its `1 - d` weighted fraction), `critical_stretch_alpha` with
/// `break_timing = "after-force"` on LPS (each node's critical stretch, the ghosts' from
/// their owners in one more exchange per step), and two materials of different densities
/// (soft 8000, stiff 2000 kg/m^3, each owned node's density in the fused update).
#[test]
fn failure_options_and_densities_across_ranks_equal_one_process_bitwise() {
    let cut = "critical_stretch = 0.002\n";
    let bilinear = "damage_law = \"bilinear\"\ncritical_stretch = 0.002\nfinal_stretch = 0.006\n";
    let alpha =
        "critical_stretch = 0.002\ncritical_stretch_alpha = 0.25\nbreak_timing = \"after-force\"\n";
    let plain = model("pmb", 160);
    let end = plain.find("[discretization]").unwrap();
    let stiff = plain[..end]
        .replacen(
            "[material]\n",
            "[[material]]\nname = \"stiff\"\nregions = [\"right\"]\n",
            1,
        )
        .replace("youngs_modulus = 200e9", "youngs_modulus = 500e9")
        .replace("density = 8000", "density = 2000");
    let two = format!(
        "{}{stiff}\n[[region]]\nname = \"right\"\nshape = \"box\"\nmin = [0.03, -1]\nmax = [1, 1]\n",
        plain.replacen("[material]\n", "[[material]]\nname = \"soft\"\n", 1)
    );
    for (name, text) in [
        ("bilinear", plain.replacen(cut, bilinear, 1)),
        (
            "alpha after-force",
            model("lps", 160).replacen(cut, alpha, 1),
        ),
        ("two densities", two),
    ] {
        let (_tmp, single) = check_text(&text, &[2, 3]);
        let broken = summary(&single)["broken_bonds"].as_u64().unwrap();
        assert!(broken > 0, "{name}: the run breaks bonds");
    }
}

#[test]
fn unsupported_models_are_refused_on_every_rank_naming_what_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("plate.toml");
    std::fs::write(&path, model("pmb", 10)).unwrap();
    let o = peridot_with(&path, &tmp.path().join("out"), 2, &["--subdomains", "2"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "subdomains across ranks are refused");
    assert!(
        err.contains("--subdomains") && err.contains("ADR on cpu-loop and cpu-matrix"),
        "{err}"
    );
}

/// The tiny plate relaxed by ADR (`common::cli::TINY_ADR`: bottom held, top pulled until
/// bonds break), named as the other test models, with snapshots every 10 iterations and
/// probes of both edges every 5.
fn adr_model() -> String {
    common::cli::TINY_ADR
        .replace("name = \"tiny_adr\"\n", "")
        .replace(
            "[output]\nvtk_every = 10\nprobes = [\"top\"]\n",
            "[output]\nvtk_every = 10\nprobes = [\"top\", \"bottom\"]\nprobe_every = 5\n\
             image = false\ntips_every = 0\n",
        )
}

/// ADR across 2 and 3 ranks equals the one-process ADR bit for bit (snapshots, probes,
/// summary, its residual too): its global sums are exact until one rounding, so each rank's
/// part merged over the ranks (`MPI_Allgather`) gives the one-process sums.
#[test]
fn adr_across_ranks_equals_one_process_bitwise() {
    let (_tmp, single) = check_text(&adr_model(), &[2, 3]);
    let s = summary(&single);
    assert!(s["broken_bonds"].as_u64().unwrap() > 0, "bonds break");
    let dir = single.parent().unwrap();
    for p in [2, 3] {
        let d = summary(&dir.join(format!("ranks{p}")));
        for key in ["static_residual", "converged"] {
            assert_eq!(s[key], d[key], "{p} ranks: summary {key}");
        }
    }
}

/// `mpirun -n 2 peridot run --restart`: a run across 2 ranks checkpointing every 80 steps
/// (rank 0 writes the one-process file), its checkpoints after step 160 removed, resumed
/// from step 160 across 2 ranks, ends with the one-process run's snapshots bit for bit and
/// its `probes.csv` byte for byte.
#[test]
fn restart_across_ranks_continues_bitwise() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("test.toml");
    let text = model("pmb", 320).replace(
        "[output]\n",
        "[output]\ncheckpoint_every = 80\ncheckpoint_keep = 10\n",
    );
    std::fs::write(&path, text).unwrap();
    let (single, dist) = (tmp.path().join("single"), tmp.path().join("ranks2"));
    run_ok(&path, &single, 0);
    run_ok(&path, &dist, 2);
    let ckpts = peridot::output::checkpoint::list(&dist).unwrap();
    assert!(ckpts.iter().any(|c| c.0 == 160), "{ckpts:?}");
    for (step, file) in &ckpts {
        if *step > 160 {
            std::fs::remove_file(file).unwrap();
        }
    }
    run_ok_with(&path, &dist, 2, &["--restart", dist.to_str().unwrap()]);
    assert_eq!(summary(&dist)["restarted_from_step"], 160);
    assert_same(&single, &dist, 2);
}

/// `mpirun -n 2 peridot run --backend cpu-matrix` (each rank the operators' rows of its
/// owned nodes' bonds with ghost columns, in half storage) agrees with `cpu-matrix` in one process: the same bonds
/// broken, the largest damage and every probe value within 1e-12 (of its column's largest
/// magnitude: the rows' sums run in each rank's local order, round-off only).
#[test]
fn cpu_matrix_across_two_ranks_agrees_with_one_process() {
    matrix_across_two_ranks("cpu-matrix", "pmb");
}

/// The run of the pulled plate of `law` on the matrix backend `backend` across two ranks
/// against one process: see [`cpu_matrix_across_two_ranks_agrees_with_one_process`].
fn matrix_across_two_ranks(backend: &str, law: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("test.toml");
    std::fs::write(&path, model(law, 160)).unwrap();
    let matrix = ["--backend", backend];
    let (single, dist) = (tmp.path().join("single"), tmp.path().join("ranks2"));
    run_ok_with(&path, &single, 0, &matrix);
    run_ok_with(&path, &dist, 2, &matrix);
    let (s, d) = (summary(&single), summary(&dist));
    assert_eq!(d["backend"], format!("{backend}-mpi"));
    assert!(
        s["broken_bonds"].as_u64().unwrap() > 0,
        "{law}: bonds break"
    );
    for key in ["broken_bonds", "steps"] {
        assert_eq!(s[key], d[key], "{law}: summary {key}");
    }
    // (the damage sums a node's broken bonds' weights in its rows' order: local on a rank,
    // the half-stored rows' in one gpu-matrix process; 1 ulp apart measured on two H100s)
    let damage = |v: &serde_json::Value| v["max_damage"].as_f64().unwrap();
    let (a, b) = (damage(&s), damage(&d));
    assert!(
        (a - b).abs() <= 1e-12 * a.abs(),
        "{law}: max_damage {a} vs {b}"
    );
    assert_probes_close(&probe_table(&single), &probe_table(&dist), 1e-12);
}

/// Every value of the probe rows `b` within `tol` of its column's largest magnitude in `a`.
fn assert_probes_close(a: &[Vec<f64>], b: &[Vec<f64>], tol: f64) {
    assert_eq!(a.len(), b.len(), "probe rows");
    for c in 0..a[0].len() {
        let scale = (a.iter().map(|r| r[c].abs()))
            .fold(0.0, f64::max)
            .max(f64::MIN_POSITIVE);
        for (x, y) in a.iter().zip(b) {
            assert!(
                (x[c] - y[c]).abs() <= tol * scale,
                "probe column {c}: {} vs {}",
                x[c],
                y[c]
            );
        }
    }
}

/// Whether a CUDA device is there, else says the test is skipped.
fn have_gpu() -> bool {
    match peridot::gpu::Gpu::get() {
        Ok(_) => true,
        Err(e) => {
            eprintln!("skipped: no CUDA device ({e})");
            false
        }
    }
}

/// `mpirun -n 2 peridot run --backend gpu-loop`: both ranks on this host's GPUs (one each
/// where there are two, sharing one otherwise) end with the one-GPU run's snapshots bit for
/// bit (the neighbour-list form in both) and its broken bonds; the probe rows, summed on the
/// host from the gathered values where one GPU sums them on the device, agree to 1e-12 of
/// each column's largest magnitude (a different summation order only); and the crack tips
/// of a cracking plate are the one-GPU run's.
#[test]
fn gpu_loop_across_two_ranks_equals_one_gpu() {
    if !have_gpu() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("test.toml");
    std::fs::write(&path, model("pmb", 320)).unwrap();
    let gpu = ["--backend", "gpu-loop"];
    let (single, dist) = (tmp.path().join("single"), tmp.path().join("ranks2"));
    run_ok_with(&path, &single, 0, &gpu);
    run_ok_with(&path, &dist, 2, &gpu);
    assert_same_state(&single, &dist, 2);
    assert!(
        summary(&single)["broken_bonds"].as_u64().unwrap() > 0,
        "bonds break"
    );
    assert_eq!(summary(&dist)["backend"], "gpu-loop-mpi");
    assert_probes_close(&probe_table(&single), &probe_table(&dist), 1e-12);
    // crack tips: rank 0's file is the one-GPU file byte for byte (the same damage, which
    // one GPU thresholds on the device and the ranks on the host from the gathered field),
    // on the plate of `crack_tips_across_ranks_are_the_one_process_file`, whose file has rows
    let output = "vtk = false\nimage = false\ntips_every = 10\n";
    let text = common::cracked_plate_model("pmb", 600, (90, 40), 6.0, output);
    std::fs::write(&path, text).unwrap();
    let (single, dist) = (tmp.path().join("tips1"), tmp.path().join("tips2"));
    run_ok_with(&path, &single, 0, &gpu);
    run_ok_with(&path, &dist, 2, &gpu);
    let read = |d: &Path| std::fs::read_to_string(d.join("crack_tips.csv")).unwrap();
    assert!(
        read(&single).lines().count() > 1,
        "tip rows: {}",
        read(&single)
    );
    assert_eq!(
        read(&single),
        read(&dist),
        "gpu-loop on 2 ranks: crack_tips.csv"
    );
}

/// `mpirun -n 2 peridot run --backend gpu-matrix` (each rank's rows on its GPU, one each
/// where the host has two, its explicit loop on the device) agrees with `gpu-matrix` on one
/// GPU as `cpu-matrix` does with one process (PMB and LPS, whose dilatation is exchanged):
/// the same bonds broken, the largest damage and the probe values within 1e-12.
#[test]
fn gpu_matrix_across_two_ranks_agrees_with_one_gpu() {
    if !have_gpu() {
        return;
    }
    for law in ["pmb", "lps"] {
        matrix_across_two_ranks("gpu-matrix", law);
    }
}

/// The snapshots of two distributed runs (in `a` across `pa` ranks, in `b` across `pb`),
/// read from their pieces, equal bit for bit (displacement, velocity, damage); how many.
fn assert_same_pieces((a, pa): (&Path, usize), (b, pb): (&Path, usize)) -> usize {
    let mut stems: Vec<String> = std::fs::read_dir(a)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.strip_suffix(".pvtu").map(str::to_string)
        })
        .collect();
    stems.sort();
    for stem in &stems {
        let (x, y) = (
            nodes_of(&pieces(a, stem, pa)),
            nodes_of(&pieces(b, stem, pb)),
        );
        assert!(x == y, "{stem}: {pa} ranks against {pb} ranks differ");
    }
    stems.len()
}

/// `mpirun -n P peridot run --backend gpu-loop` with ADR and with `--restart`: ADR (the tiny
/// plate pulled until bonds break; a lean problem on every rank) across 2 and 3 ranks ends
/// with the same snapshots bit for bit and the same `static_residual`, broken bonds and
/// iterations (each iterates on the host over its devices' forces, the one-GPU list form's
/// bit for bit, with exact sums; one GPU's own ADR sums on the device in another order and
/// is not compared here); a 2-rank run checkpointing every 80 steps, resumed from step 160
/// across 2 ranks (every rank building its part from the checkpoint's bond status; another
/// count would leave the earlier snapshots in other pieces: `tests/gpu/distributed_adr.rs`
/// resumes on 3), ends with the one-GPU run's snapshots bit for bit (the list form), probe
/// rows to 1e-12 of each column's largest (one GPU sums them on the device).
#[test]
fn gpu_loop_adr_and_restart_across_ranks() {
    if !have_gpu() {
        return;
    }
    let gpu = ["--backend", "gpu-loop"];
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("test.toml");
    std::fs::write(&path, adr_model()).unwrap();
    let (two, three) = (tmp.path().join("adr2"), tmp.path().join("adr3"));
    run_ok_with(&path, &two, 2, &gpu);
    run_ok_with(&path, &three, 3, &gpu);
    let snaps = assert_same_pieces((&two, 2), (&three, 3));
    assert!(snaps >= 3, "ADR snapshots every 10 iterations: {snaps}");
    let (s2, s3) = (summary(&two), summary(&three));
    assert_eq!(s2["backend"], "gpu-loop-mpi");
    assert!(s2["broken_bonds"].as_u64().unwrap() > 0, "ADR breaks bonds");
    for key in ["static_residual", "converged", "broken_bonds", "steps"] {
        assert_eq!(
            s2[key], s3[key],
            "ADR on gpu-loop, 2 and 3 ranks: summary {key}"
        );
    }
    let path = tmp.path().join("test.toml");
    let text = model("pmb", 320).replace(
        "[output]\n",
        "[output]\ncheckpoint_every = 80\ncheckpoint_keep = 10\n",
    );
    std::fs::write(&path, text).unwrap();
    let (single, dist) = (tmp.path().join("single"), tmp.path().join("ranks"));
    run_ok_with(&path, &single, 0, &gpu);
    run_ok_with(&path, &dist, 2, &gpu);
    let ckpts = peridot::output::checkpoint::list(&dist).unwrap();
    assert!(ckpts.iter().any(|c| c.0 == 160), "{ckpts:?}");
    for (step, file) in &ckpts {
        if *step > 160 {
            std::fs::remove_file(file).unwrap();
        }
    }
    let restart = [&gpu[..], &["--restart", dist.to_str().unwrap()]].concat();
    run_ok_with(&path, &dist, 2, &restart);
    assert_eq!(summary(&dist)["restarted_from_step"], 160);
    assert_same_state(&single, &dist, 2);
    assert_probes_close(&probe_table(&single), &probe_table(&dist), 1e-12);
}

/// Contact across ranks (`distributed/contact.rs`): a free sphere (1 g, 5 m/s down) pressing
/// a steel plate 16 x 8 x 3 mm (dx 1 mm) whose cuts between ranks run under it, with node
/// contact on, under `mpirun -n 2` and `-n 3` equals the one-process run bit for bit
/// (snapshots, summary) and its `probes.csv`, which holds the sphere's position, velocity
/// and contact force, byte for byte. The sphere's last force is upward (it presses the
/// plate: the test is not vacuous).
#[test]
fn contact_across_ranks_equals_one_process_bitwise() {
    let text = format!(
        "{}[discretization]\ndimension = \"3d\"\ndx = 1e-3\nhorizon_factor = 3.015\n\
         [geometry]\nbox = [{{ min = [0, 0, 0], max = [0.016, 0.008, 0.003] }}]\n\
         [[impactor]]\nshape = \"sphere\"\ncenter = [0.008, 0.004, 0.00551]\nradius = 0.003\n\
         mass = 1e-3\nvelocity = [0, 0, -5]\n[contact]\n\
         [solver]\nkind = \"explicit\"\nsteps = 150\ndamage = false\n\
         [output]\nvtk_every = 40\nprobe_every = 10\nimage = false\ntips_every = 0\n",
        common::material("pmb", None),
    );
    let (_tmp, single) = check_text(&text, &[2, 3]);
    let probes = std::fs::read_to_string(single.join("probes.csv")).unwrap();
    let mut lines = probes.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let fz = (header.iter().position(|h| h.ends_with("_fz")))
        .unwrap_or_else(|| panic!("an impactor force column in {header:?}"));
    let last: Vec<f64> = (lines.last().unwrap().split(','))
        .map(|x| x.parse().unwrap())
        .collect();
    assert!(
        last[fz] > 0.0,
        "the sphere presses the plate: fz {}",
        last[fz]
    );
}
