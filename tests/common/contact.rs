//! Contact models and run ends shared by the contact tests across ranks
//! (`tests/distributed_contact.rs` on `cpu-loop`, `tests/gpu/distributed_contact.rs` on
//! `gpu-loop`): two blocks colliding, a sphere pressing a plate, and the end of a run as
//! every rank sees it, compared bit for bit.

use peridot::backend::BackendKind;
use peridot::dynamics::contact::ImpactorState;
use peridot::setup::Problem;
use peridot::solver::distributed::simulate_distributed;
use peridot::solver::{simulate, Outcome, Ranks};
use peridot::Precision;

/// What a run ends with: displacement, velocity, the impactors' motion, the bond status
/// and the bonds broken.
pub struct End {
    pub u: Vec<f64>,
    pub v: Vec<f64>,
    pub impactors: Vec<ImpactorState>,
    pub status: Vec<u8>,
    pub broken: usize,
}

/// The end of the run `o` (collective on a rank: every rank asks for the bond status).
pub fn end_of(o: Outcome<f64>) -> End {
    let c = o.state.contact.as_ref().expect("the run has contact");
    End {
        impactors: c.impactors.iter().map(|i| i.motion()).collect(),
        status: o.backend.bond_status().expect("bond status"),
        broken: o.summary.broken_bonds,
        u: o.state.u,
        v: o.state.v,
    }
}

/// The end of `problem` on `backend` in one process, f64.
pub fn one(problem: &Problem, backend: BackendKind) -> End {
    let opts = super::options(backend, Precision::F64, None);
    end_of(simulate::<f64>(problem.clone(), &opts).expect("run succeeds"))
}

/// The end of `problem` on `backend` across `ranks` thread ranks, f64, as every rank sees
/// it.
pub fn across(problem: &Problem, backend: BackendKind, ranks: usize) -> Vec<End> {
    peridot::distributed::run_ranks(ranks, |comm| {
        let opts = super::options(backend, Precision::F64, None);
        let ranks = Ranks { comm, stop: None };
        let o = simulate_distributed::<f64>(problem.clone(), &opts, ranks)
            .unwrap_or_else(|e| panic!("distributed run: {e}"));
        end_of(o)
    })
}

/// `end` is `one` bit for bit: displacement, velocity, the impactors' position, velocity
/// and force, the bond status and the bonds broken (`what` names the run).
pub fn assert_same(end: &End, one: &End, what: &str) {
    super::assert_bitwise(&end.u, &one.u, &format!("{what}: displacement"));
    super::assert_bitwise(&end.v, &one.v, &format!("{what}: velocity"));
    assert_eq!(end.broken, one.broken, "{what}: bonds broken");
    assert!(end.status == one.status, "{what}: bond status differs");
    assert_eq!(end.impactors.len(), one.impactors.len());
    for (a, b) in end.impactors.iter().zip(&one.impactors) {
        // (bit for bit: `==` on f64 also equates 0 and -0, so compare the bits)
        let bits =
            |s: &ImpactorState| [s.position, s.velocity, s.force].map(|v| v.map(f64::to_bits));
        assert_eq!(bits(a), bits(b), "{what}: impactor motion");
    }
}

/// Two plane-strain steel blocks 8 x 6 mm (dx 0.5 mm) 1.5 mm apart along x (beyond the
/// horizon: no bond between them), the left one moving right at 60 m/s, node contact on,
/// for `steps` steps. Two boxes: no full box lattice, so `gpu-loop` runs its neighbour list
/// in one process too.
pub fn two_blocks(steps: usize) -> Problem {
    let text = format!(
        "{}[discretization]\ndimension = \"plane-strain\"\nthickness = 1e-3\ndx = 0.5e-3\n\
         horizon_factor = 3.015\n[geometry]\nbox = [{{ min = [0, 0], max = [0.008, 0.006] }}, \
         {{ min = [0.0095, 0], max = [0.0175, 0.006] }}]\n\
         [[region]]\nname = \"left\"\nshape = \"box\"\nmin = [-1, -1]\nmax = [0.009, 1]\n\
         [[initial]]\nregion = \"left\"\nvelocity = [60, 0]\n\
         [contact]\n[solver]\nkind = \"explicit\"\nsteps = {steps}\ndamage = false\n\
         [output]\nimage = false\ntips_every = 0\n",
        super::material("pmb", None),
    );
    super::problem(&text, &[])
}

/// The x momentum of the right block of [`two_blocks`] at velocity `v` over that of the left
/// block at its initial 60 m/s: only contact can give the right block any.
pub fn struck_block_momentum(problem: &Problem, v: &[f64]) -> f64 {
    let (x, vol) = (&problem.body.positions, &problem.body.volumes);
    let rho = problem.material.density;
    let momentum = |right: bool, vx: &dyn Fn(usize) -> f64| -> f64 {
        (0..x.len())
            .filter(|&i| (x[i][0] > 0.009) == right)
            .map(|i| rho * vol[i] * vx(i))
            .sum()
    };
    momentum(true, &|i| v[2 * i]) / momentum(false, &|_| 60.0)
}

/// A free steel plate 16 x 8 x 3 mm (dx 1 mm; 5 family radii long, so up to 4 ranks cut it
/// along x) and a sphere of radius 3 mm and 1 g 0.01 mm above its top centre moving down at
/// 5 m/s, for `steps` steps; `extra` more model text (`[contact]`, a removed shape).
pub fn sphere_on_plate(steps: usize, extra: &str) -> Problem {
    let text = format!(
        "{}[discretization]\ndimension = \"3d\"\ndx = 1e-3\nhorizon_factor = 3.015\n\
         [geometry]\nbox = [{{ min = [0, 0, 0], max = [0.016, 0.008, 0.003] }}]\n\
         [[impactor]]\nshape = \"sphere\"\ncenter = [0.008, 0.004, 0.00551]\nradius = 0.003\n\
         mass = 1e-3\nvelocity = [0, 0, -5]\n{extra}\
         [solver]\nkind = \"explicit\"\nsteps = {steps}\ndamage = false\n\
         [output]\nimage = false\ntips_every = 0\n",
        super::material("pmb", None),
    );
    super::problem(&text, &[])
}

/// A pre-cracked plate pulled apart whose crack runs across the cuts between ranks
/// (`cracked_plate_model`, PMB, 120 steps) with `extra` more model text: its text without
/// contact, and the problem with crack-face contact whose distance (`distance_factor`
/// 1.0002: 1.0002 times a pair's reference length) puts the pairs across the pre-crack
/// (their bonds broken) just inside it at rest, so they repel from the start.
pub fn crack_faces(extra: &str) -> (String, Problem) {
    let text = super::cracked_plate_model("pmb", 120, (48, 12), 6.0, "image = false\n") + extra;
    let faces = super::problem(&format!("{text}[contact]\ndistance_factor = 1.0002\n"), &[]);
    (text, faces)
}

/// The largest `|a_i - b_i|`.
pub fn largest_change(a: &[f64], b: &[f64]) -> f64 {
    (a.iter().zip(b))
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// The sphere of [`sphere_on_plate`] (`what` names the run) ends pressing the plate (the
/// reaction pushes it up) and slowed by more than 1% of its 5 m/s: only the contact force
/// acts on it.
pub fn assert_sphere_pressed(end: &End, what: &str) {
    let s = &end.impactors[0];
    eprintln!("{what}: vz {:e} m/s, fz {:e} N", s.velocity[2], s.force[2]);
    assert!(s.velocity[2] > -4.95, "{what}: the sphere was not slowed");
    assert!(s.force[2] > 0.0, "{what}: the plate pushes the sphere up");
}

/// `problem` on `backend` in f32 in one process and across each of `ranks` thread ranks:
/// every rank ends with the one-process displacement and velocity bit for bit; returns the
/// one-process velocity.
pub fn assert_f32_ranks_bitwise(
    problem: &Problem,
    backend: BackendKind,
    ranks: &[usize],
) -> Vec<f32> {
    let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<u32>>();
    let opts = super::options(backend, Precision::F32, None);
    let one = simulate::<f32>(problem.clone(), &opts).expect("run succeeds");
    for &p in ranks {
        let ends = peridot::distributed::run_ranks(p, |comm| {
            let ranks = Ranks { comm, stop: None };
            let o = simulate_distributed::<f32>(problem.clone(), &opts, ranks)
                .unwrap_or_else(|e| panic!("distributed run, f32: {e}"));
            (o.state.u, o.state.v)
        });
        for (r, (u, v)) in ends.iter().enumerate() {
            let what = format!("f32, {} rank {r} of {p}", backend.name());
            assert!(bits(u) == bits(&one.state.u), "{what}: displacement");
            assert!(bits(v) == bits(&one.state.v), "{what}: velocity");
        }
    }
    one.state.v
}
