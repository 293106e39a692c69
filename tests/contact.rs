//! Contact and rigid impactors (`docs/contact.md`) on `cpu-loop`: momentum of body plus
//! impactor kept to round-off, energy of a slow elastic bounce, no interpenetration of two
//! bodies at the Kalthoff-Winkler speed (32 m/s) and at 100 m/s, the pair list equal to a
//! brute-force search, no contact force on a bonded pair, results independent of when the
//! list is searched and of the thread count, and the refusals of bad input.

mod common;

use peridot::backend::{self, BackendKind};
use peridot::dynamics::explicit::{Explicit, StepTimes};
use peridot::dynamics::loads::Loads;
use peridot::dynamics::State;
use peridot::neighbors::{family_radius_squared, within_radius};
use peridot::setup::Problem;
use peridot::solver::run::choose_dt;
use std::sync::Arc;

/// A free steel plate 10 x 10 x 3 mm (dx 1 mm, 300 nodes) and a sphere of radius 3 mm and
/// `mass` kg 0.01 mm above its centre's top node moving down at `speed` m/s; no damage.
fn sphere_on_plate(speed: f64, mass: f64, steps: usize) -> Problem {
    let text = format!(
        "{}[discretization]\ndimension = \"3d\"\ndx = 1e-3\nhorizon_factor = 3.015\n\
         [geometry]\nbox = [{{ min = [0, 0, 0], max = [0.01, 0.01, 0.003] }}]\n\
         [[impactor]]\nshape = \"sphere\"\ncenter = [0.005, 0.005, 0.00551]\nradius = 0.003\n\
         mass = {mass}\nvelocity = [0, 0, {}]\n\
         [solver]\nkind = \"explicit\"\nsteps = {steps}\ndamage = false\n",
        common::material("pmb", None),
        -speed
    );
    common::problem(&text, &[])
}

/// Steps for the left block of [`two_blocks`] at `speed` to close the gap, and as many
/// again in contact.
fn contact_steps(problem: &Problem, speed: f64) -> usize {
    let (dt, _, _) = choose_dt(problem).unwrap();
    (2.0 * 4.0 * problem.body.dx / speed / dt) as usize + 100
}

/// Two 2D steel blocks 8 x 6 mm (dx 0.5 mm), 4 spacings apart along x (beyond the horizon:
/// no bond between them), the left one moving right at `speed` m/s; node contact on.
fn two_blocks(speed: f64, extra: &str) -> Problem {
    let text = format!(
        "{}[discretization]\ndimension = \"plane-strain\"\nthickness = 1e-3\ndx = 0.5e-3\n\
         horizon_factor = 3.015\n[geometry]\nbox = [{{ min = [0, 0], max = [0.008, 0.006] }}, \
         {{ min = [0.0095, 0], max = [0.0175, 0.006] }}]\n\
         [[region]]\nname = \"left\"\nshape = \"box\"\nmin = [-1, -1]\nmax = [0.009, 1]\n\
         [[initial]]\nregion = \"left\"\nvelocity = [{speed}, 0]\n\
         [contact]\n{extra}\n[solver]\nkind = \"explicit\"\nsteps = 1\ndamage = false\n",
        common::material("pmb", None),
    );
    common::problem(&text, &[])
}

/// Run `problem` on cpu-loop from its initial state for `steps` steps at 0.8 of its stable
/// step, calling `each` after every step.
fn run(problem: &Problem, steps: usize, each: impl FnMut(&State<f64>)) -> State<f64> {
    let (dt, _, _) = choose_dt(problem).unwrap();
    run_at(problem, dt, steps, each)
}

/// [`run`] at the time step `dt`, s.
fn run_at(
    problem: &Problem,
    dt: f64,
    steps: usize,
    mut each: impl FnMut(&State<f64>),
) -> State<f64> {
    let p = Arc::new(problem.clone());
    let mut backend = backend::create::<f64>(BackendKind::CpuLoop, p.clone(), None).unwrap();
    let loads = Loads::new(&p, dt);
    let mut state = State::<f64>::initial(&p);
    let integrator = Explicit::of(&p, dt, 0.0, p.model.solver.damage);
    integrator
        .start(&mut state, &loads, backend.as_mut())
        .unwrap();
    let mut times = StepTimes::default();
    for _ in 0..steps {
        integrator
            .step(&mut state, &loads, backend.as_mut(), &mut times)
            .unwrap();
        each(&state);
    }
    state
}

/// Momentum of body plus free impactors, kg m/s, and the sum of the magnitudes of its terms
/// (the scale of its round-off).
fn momentum(problem: &Problem, state: &State<f64>) -> ([f64; 3], f64) {
    let (d, rho) = (problem.dim(), problem.material.density);
    let mut p = [0.0; 3];
    let mut scale = 0.0;
    for (i, vol) in problem.body.volumes.iter().enumerate() {
        for k in 0..d {
            let term = rho * vol * state.v[d * i + k];
            p[k] += term;
            scale += term.abs();
        }
    }
    let c = state.contact.as_ref().expect("contact");
    let imp = c.impactor_momentum();
    for k in 0..3 {
        p[k] += imp[k];
        scale += imp[k].abs();
    }
    (p, scale)
}

/// A sphere of about the plate's mass bounces off the free plate: the impactor's velocity
/// reverses, and the momentum of plate plus sphere stays its initial value to round-off.
/// Every contact force acts equal and opposite on a node and on the impactor (bond forces
/// pairwise likewise), so in exact arithmetic the leapfrog keeps the total exactly; in f64
/// each step adds rounding of order eps times the terms' magnitudes. Bound: 1e-13 of the
/// initial momentum, far above that round-off (about 1e-15 a step over 1500 steps, measured
/// below 1e-14) and far below any physical effect (the sphere's momentum changes by more
/// than 100% of it).
#[test]
fn a_sphere_bouncing_off_a_plate_keeps_momentum() {
    let (speed, mass) = (5.0, 1e-3);
    let problem = sphere_on_plate(speed, mass, 1);
    let p0 = mass * speed;
    let mut worst: f64 = 0.0;
    let mut touched = false;
    let state = run(&problem, 1500, |s| {
        let (p, _) = momentum(&problem, s);
        let err = (p[0].abs() + p[1].abs() + (p[2] + p0).abs()) / p0;
        worst = worst.max(err);
        touched |= s.contact.as_ref().unwrap().impactors[0].force[2] > 0.0;
    });
    let imp = &state.contact.as_ref().unwrap().impactors[0];
    assert!(touched, "the sphere touches the plate");
    assert!(
        imp.velocity[2] > 0.0 && imp.force[2] == 0.0,
        "the sphere bounces back and leaves (vz {}, fz {})",
        imp.velocity[2],
        imp.force[2]
    );
    eprintln!("momentum drift {worst:e}");
    assert!(worst < 1e-13, "momentum drifts by {worst:e} of its value");
}

/// A slow (0.5 m/s) elastic bounce: the energy of plate, sphere and contact after the
/// sphere has left is the sphere's initial kinetic energy within 0.5%: the penalty contact
/// stores and gives back its energy (measured 4.5e-4 over a contact of some 60 steps: the
/// leapfrog's error over the contact; a lossy or energy-making contact law, or an impactor
/// integrated out of step with the body, is off by far more).
#[test]
fn a_slow_elastic_bounce_keeps_its_energy() {
    let (speed, mass) = (0.5, 1e-3);
    let problem = sphere_on_plate(speed, mass, 1);
    let e0 = 0.5 * mass * speed * speed;
    let p = Arc::new(problem.clone());
    let mut b = backend::create::<f64>(BackendKind::CpuLoop, p.clone(), None).unwrap();
    let mut steps_in_contact = 0;
    let state = run(&problem, 2500, |s| {
        steps_in_contact += usize::from(s.contact.as_ref().unwrap().impactors[0].force[2] > 0.0);
    });
    eprintln!("in contact {steps_in_contact} steps");
    let c = state.contact.as_ref().unwrap();
    let imp = &c.impactors[0];
    assert!(
        imp.velocity[2] > 0.0,
        "the sphere bounced (vz {})",
        imp.velocity[2]
    );
    let (rho, vol) = (p.material.density, &p.body.volumes);
    let ke_imp = 0.5 * mass * imp.velocity.iter().map(|v| v * v).sum::<f64>();
    let e = state.kinetic_energy(|_| rho, vol, 3)
        + ke_imp
        + b.strain_energy(&state.u).unwrap()
        + c.energy(&state.u);
    let rel = (e - e0).abs() / e0;
    eprintln!("energy after the bounce: {rel:e} of the initial");
    assert!(
        rel < 5e-3,
        "energy after the bounce {e:e} J vs {e0:e} J: {rel:e}"
    );
}

/// The stable time step with contact is the bonds' bound with contact's springs added to
/// each node's row, computed here independently: on the plate (uniform volumes `V = dx^3`)
/// the bonds' bound `sqrt(2 rho / S)` gives the largest row `S`, and contact adds
/// `c_sr / delta V` per partner, `c_sr = 15 x 12 E / (pi delta^4)`, for 4 node partners
/// (3D) and the impactor: `dt = sqrt(2 rho / (S + 5 c_sr V / delta))`, equal to 1e-12
/// (round-off of the sums; measured equal to the last bit). Without `[contact]` only the impactor's one partner counts.
#[test]
fn the_stable_step_counts_the_contact_springs() {
    for (table, partners) in [("[contact]\n", 5.0), ("", 1.0)] {
        let mut p = sphere_on_plate(5.0, 1e-3, 1);
        if !table.is_empty() {
            p.model.contact = Some(toml::from_str("").unwrap());
        }
        let (rho, dx, delta): (f64, f64, f64) = (8000.0, 1e-3, p.body.delta);
        let bonds = p.bond_stable_time_step();
        let s = 2.0 * rho / (bonds * bonds);
        let c_sr = 15.0 * 12.0 * 200e9 / (std::f64::consts::PI * delta.powi(4));
        let expect = (2.0 * rho / (s + partners * c_sr / delta * dx.powi(3))).sqrt();
        let got = p.stable_time_step();
        let rel = (got - expect).abs() / expect;
        eprintln!("{partners} partners: dt {got:e} s, bonds alone {bonds:e} s, {rel:e}");
        assert!(rel < 1e-12, "{partners} partners: {got:e} vs {expect:e}");
        assert!(got < bonds);
    }
}

/// A stiff contact (`stiffness_factor` 2000) of a sphere hitting the plate at 20 m/s: at
/// 0.8 of the stable step with contact the energy of plate, sphere and contact stays its
/// initial value within 2% over 600 steps (measured 0.41%); at 0.8 of the bonds' step
/// alone (the step before contact counted) the nodes under the sphere oscillate unstably and the
/// energy grows past 10 times its value (measured 2.3e8 times).
#[test]
fn the_contact_step_keeps_a_stiff_impact_stable() {
    let (speed, mass) = (20.0, 1e-3);
    let mut problem = sphere_on_plate(speed, mass, 1);
    problem.model.contact = Some(toml::from_str("stiffness_factor = 2000").unwrap());
    let e0 = 0.5 * mass * speed * speed;
    let p = Arc::new(problem.clone());
    let energy = |dt: f64| {
        let mut b = backend::create::<f64>(BackendKind::CpuLoop, p.clone(), None).unwrap();
        let state = run_at(&problem, dt, 600, |_| {});
        let c = state.contact.as_ref().unwrap();
        let v = c.impactors[0].velocity;
        let e = state.kinetic_energy(|_| p.material.density, &p.body.volumes, 3)
            + 0.5 * mass * v.iter().map(|v| v * v).sum::<f64>()
            + b.strain_energy(&state.u).unwrap()
            + c.energy(&state.u);
        e / e0
    };
    let new = energy(0.8 * problem.stable_time_step());
    let old = energy(0.8 * problem.bond_stable_time_step());
    eprintln!("energy / initial: {new:e} (contact step), {old:e} (bonds' step)");
    assert!(
        (new - 1.0).abs() < 0.02,
        "contact step: energy {new} of its value"
    );
    assert!(!(old < 10.0), "bonds' step: energy {old} of its value");
}

/// Two blocks colliding head-on at `speed`: at every step each node of the left block stays
/// left of every node of the right one, and no two nodes of different blocks come closer
/// than 0.4 dx (the contact distance is 0.9 dx; without contact the blocks pass through each
/// other). Returns the closest approach in multiples of dx.
fn closest_approach(speed: f64) -> f64 {
    let problem = two_blocks(speed, "");
    let dx = problem.body.dx;
    let x = &problem.body.positions;
    let left: Vec<usize> = (0..x.len()).filter(|&i| x[i][0] < 0.009).collect();
    let right: Vec<usize> = (0..x.len()).filter(|&i| x[i][0] > 0.009).collect();
    let mut closest = f64::INFINITY;
    let mut crossed = false;
    run(&problem, contact_steps(&problem, speed), |s| {
        let y = |i: usize| [x[i][0] + s.u[2 * i], x[i][1] + s.u[2 * i + 1]];
        let max_left = left.iter().map(|&i| y(i)[0]).fold(f64::MIN, f64::max);
        let min_right = right.iter().map(|&i| y(i)[0]).fold(f64::MAX, f64::min);
        crossed |= max_left >= min_right;
        for &i in left.iter().filter(|&&i| x[i][0] > 0.007) {
            for &j in right.iter().filter(|&&j| x[j][0] < 0.011) {
                let (a, b) = (y(i), y(j));
                closest = closest.min(((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt());
            }
        }
    });
    assert!(
        !crossed,
        "{speed} m/s: a node of the left block passed the right one"
    );
    closest / dx
}

#[test]
fn contact_keeps_two_bodies_apart_at_impact_speeds() {
    for speed in [32.0, 100.0] {
        let c = closest_approach(speed);
        eprintln!("{speed} m/s: closest approach {c:.3} dx");
        assert!(c > 0.4 && c < 0.9, "{speed} m/s: closest approach {c} dx");
    }
}

/// The pair list of a deformed body equals the brute-force set: every pair closer than the
/// search radius in the current configuration and not bonded in the reference one; with
/// crack faces on (the default), bonded or not.
#[test]
fn the_pair_list_equals_a_brute_force_search() {
    for faces in [false, true] {
        pair_list_against_brute_force(faces);
    }
}

fn pair_list_against_brute_force(faces: bool) {
    let problem = two_blocks(10.0, &format!("skin_factor = 0.5\ncrack_faces = {faces}"));
    let (x, d) = (&problem.body.positions, 2);
    let state = State::<f64>::initial(&problem);
    let c = state.contact.as_ref().unwrap();
    let list = c.pairs.as_ref().unwrap();
    // Push the left block 3.5 dx to the right and shake every node by up to 0.3 dx.
    let dx = problem.body.dx;
    let mut rng = common::Rng(7);
    let y: Vec<[f64; 3]> = (x.iter())
        .map(|p| {
            let shift = if p[0] < 0.009 { 3.5 * dx } else { 0.0 };
            let mut q = *p;
            q[0] += shift + 0.3 * dx * (rng.unit() - 0.5);
            q[1] += 0.3 * dx * (rng.unit() - 0.5);
            q
        })
        .collect();
    let found = list.search(&y, x, d);
    let radius = (0.9 + 0.5) * dx;
    let (r2, b2) = (
        family_radius_squared(radius),
        family_radius_squared(problem.body.delta),
    );
    let mut pairs = 0;
    for i in 0..x.len() {
        let brute: Vec<u32> = (0..x.len())
            .filter(|&j| j != i && within_radius(&y[i], &y[j], d, r2))
            .filter(|&j| faces || !within_radius(&x[i], &x[j], d, b2))
            .map(|j| j as u32)
            .collect();
        assert_eq!(found.family(i), &brute[..], "node {i}");
        pairs += brute.len();
    }
    assert!(pairs > 20, "the test has contact pairs ({pairs})");
}

/// A bonded pair pushed to 0.5 dx gets no contact force (its bond resists); a pair of the
/// two blocks at the same distance gets `c_sr (d_c - r) / delta V` along the line between them.
#[test]
fn a_bonded_pair_gets_no_contact_force() {
    let problem = two_blocks(0.0, "");
    let (x, dx) = (&problem.body.positions, problem.body.dx);
    let mut state = State::<f64>::initial(&problem);
    let n = x.len();
    let find = |p: [f64; 2]| {
        (0..n)
            .find(|&i| (x[i][0] - p[0]).abs() < 1e-9 && (x[i][1] - p[1]).abs() < 1e-9)
            .expect("a lattice node there")
    };
    // Bonded: two neighbours of the left block; not bonded: facing corners of the blocks.
    let (a, b) = (find([0.00425, 0.00325]), find([0.00475, 0.00325]));
    let (l, r) = (find([0.00775, 0.00325]), find([0.00975, 0.00325]));
    let mut u = vec![0.0; 2 * n];
    u[2 * b] = -0.5 * dx;
    u[2 * r] = -(0.00975 - 0.00775) + 0.5 * dx;
    let backend = peridot::backend::CpuLoop::<f64>::new(Arc::new(problem.clone()));
    let c = state.contact.as_mut().unwrap();
    c.evaluate(&u, &backend).unwrap();
    assert_eq!(c.force[2 * a], 0.0, "bonded pair");
    assert_eq!(c.force[2 * b], 0.0, "bonded pair");
    let v = problem.body.volumes[r];
    let expect = c.stiffness() * (0.9 * dx - 0.5 * dx) / problem.body.delta * v;
    let got = -c.force[2 * l];
    assert!(
        ((got - expect) / expect).abs() < 1e-12 && c.force[2 * r] == got,
        "contact force {got:e} vs {expect:e}"
    );
}

/// A 2D steel block 8 x 6 mm (dx 0.5 mm) cut through by a pre-crack at x = 4 mm, its left
/// half moving right at `speed` m/s against the right half at rest: the crack closes under
/// compression. `extra` lines in `[contact]`.
fn cracked_block(speed: f64, extra: &str) -> Problem {
    let text = format!(
        "{}[discretization]\ndimension = \"plane-strain\"\nthickness = 1e-3\ndx = 0.5e-3\n\
         horizon_factor = 3.015\n[geometry]\nbox = [{{ min = [0, 0], max = [0.008, 0.006] }}]\n\
         [[precrack]]\nstart = [0.004, -0.001]\nend = [0.004, 0.007]\n\
         [[region]]\nname = \"left\"\nshape = \"box\"\nmin = [-1, -1]\nmax = [0.004, 1]\n\
         [[initial]]\nregion = \"left\"\nvelocity = [{speed}, 0]\n\
         [contact]\n{extra}\n[solver]\nkind = \"explicit\"\nsteps = 1\ndamage = false\n",
        common::material("pmb", None),
    );
    common::problem(&text, &[])
}

/// The smallest gap across the crack of [`cracked_block`] over a run of as many steps as
/// the left half needs to travel 2 dx: per row of nodes, the x of the right half's first node
/// less the left half's last one, in dx (negative: the faces have passed through each other).
fn closest_gap_across_the_crack(extra: &str) -> f64 {
    let problem = cracked_block(20.0, extra);
    let (x, dx) = (&problem.body.positions, problem.body.dx);
    let left: Vec<bool> = x.iter().map(|p| p[0] < 0.004).collect();
    let (dt, _, _) = choose_dt(&problem).unwrap();
    let steps = (2.0 * dx / 20.0 / dt) as usize;
    let mut worst = f64::INFINITY;
    run(&problem, steps, |s| {
        let mut last = std::collections::BTreeMap::<i64, (f64, f64)>::new();
        for (i, p) in x.iter().enumerate() {
            let (row, now) = ((p[1] / dx) as i64, p[0] + s.u[2 * i]);
            let e = last
                .entry(row)
                .or_insert((f64::NEG_INFINITY, f64::INFINITY));
            if left[i] {
                e.0 = e.0.max(now);
            } else {
                e.1 = e.1.min(now);
            }
        }
        for (l, r) in last.values() {
            worst = worst.min((r - l) / dx);
        }
    });
    worst
}

/// Crack faces: the two faces of a pre-crack through a block, pressed together at 20 m/s
/// (the left half travels 2 dx), stay apart with crack-face contact on (the default): the
/// closest gap across the crack, row by row, stays above 0.5 dx (measured 0.894 dx, just
/// inside the contact distance 0.9 dx: the stiff contact spring barely yields). With `crack_faces = false` their nodes, bonded once, get no
/// contact force and the faces pass through each other (the gap goes below -0.5 dx;
/// measured -1.0 dx) until nodes never bonded meet.
#[test]
fn crack_faces_closing_under_compression_do_not_interpenetrate() {
    let on = closest_gap_across_the_crack("");
    let off = closest_gap_across_the_crack("crack_faces = false");
    eprintln!("closest gap across the crack: {on:.3} dx (crack faces), {off:.3} dx (off)");
    assert!(on > 0.5, "crack faces: the gap falls to {on} dx");
    assert!(off < -0.5, "without crack faces the gap stays {off} dx");
}

/// The contact sums only the pairs closer than d_c, each node's in ascending order, so a run
/// whose list is searched every step or two (skin 0.02 dx) and one searched a few times (skin
/// 1 dx) end bitwise equal, as do runs on 1 and 2 threads.
#[test]
fn results_do_not_depend_on_the_search_cadence_or_threads() {
    let end = |skin: &str, threads: usize| {
        let problem = two_blocks(100.0, &format!("skin_factor = {skin}"));
        let steps = contact_steps(&problem, 100.0);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let mut touched = false;
        let state = pool.install(|| {
            run(&problem, steps, |s| {
                touched |= s.contact.as_ref().unwrap().force.iter().any(|f| *f != 0.0)
            })
        });
        assert!(touched, "the blocks touch");
        state
    };
    let a = end("0.02", 2);
    let b = end("1.0", 2);
    let c = end("1.0", 1);
    let searches = |s: &State<f64>| s.contact.as_ref().unwrap().pairs.as_ref().unwrap().searches;
    assert!(
        searches(&a) > 5 * searches(&b),
        "{} vs {} searches",
        searches(&a),
        searches(&b)
    );
    common::assert_bitwise(&a.u, &b.u, "u, skin 0.02 vs 1");
    common::assert_bitwise(&a.v, &b.v, "v, skin 0.02 vs 1");
    common::assert_bitwise(&b.u, &c.u, "u, 2 vs 1 threads");
}

fn parse_error(extra: &str, sets: &[&str]) -> String {
    let text = format!(
        "{}[discretization]\ndimension = \"3d\"\ndx = 1e-3\nhorizon_factor = 3.015\n\
         [geometry]\nbox = [{{ min = [0, 0, 0], max = [0.01, 0.01, 0.003] }}]\n{extra}\n\
         [solver]\nkind = \"explicit\"\nsteps = 1\n",
        common::material("pmb", None)
    );
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    peridot::model::parse(&text, "t.toml", &sets)
        .unwrap_err()
        .to_string()
}

#[test]
fn bad_contact_input_is_refused_naming_the_field() {
    let sphere = "[[impactor]]\nshape = \"sphere\"\ncenter = [0, 0, 0.01]\nradius = 0.003\n\
                  mass = 0.01\nvelocity = [0, 0, -1]\n";
    for (extra, sets, field, words) in [
        (
            "[contact]\ndistance_factor = 0",
            &[][..],
            "contact.distance_factor",
            "(0, 2]",
        ),
        (
            "[contact]\nstiffness_factor = -1",
            &[],
            "contact.stiffness_factor",
            "expected",
        ),
        (
            sphere,
            &["impactor.0.mass=-1"][..],
            "impactor.0.mass",
            "> 0",
        ),
        (sphere, &["impactor.0.radius=0"], "impactor.0.radius", "> 0"),
        (
            sphere,
            &["impactor.0.velocity=[0, 1]"],
            "impactor.0.velocity",
            "needs 3",
        ),
        (
            sphere,
            &["impactor.0.shape=\"punch\""],
            "impactor.0.min",
            "missing",
        ),
        (
            sphere,
            &["impactor.0.motion=\"prescribed\""],
            "impactor.0.mass",
            "prescribed",
        ),
        (sphere, &["solver.kind=\"adr\""], "impactor.0", "explicit"),
    ] {
        let e = parse_error(extra, sets);
        assert!(e.contains(field) && e.contains(words), "{field}: {e}");
    }
    let e = parse_error(
        "[[impactor]]\nshape = \"sphere\"\ncenter = [0, 0, 0.01]\nradius = 0.003\n\
         velocity = [0, 0, -1]\n",
        &[],
    );
    assert!(
        e.contains("impactor.0.mass") && e.contains("missing"),
        "{e}"
    );
}

#[test]
fn other_backends_refuse_contact_naming_those_that_run_it() {
    let p = Arc::new(sphere_on_plate(1.0, 1e-3, 1));
    for kind in [BackendKind::CpuMatrix, BackendKind::GpuMatrix] {
        let e = match backend::create::<f64>(kind, p.clone(), None) {
            Ok(_) => panic!("{kind:?} accepted an impactor"),
            Err(e) => e.to_string(),
        };
        assert!(
            e.contains("cpu-loop") && e.contains("gpu-loop") && e.contains("impactor"),
            "{e}"
        );
    }
    let request = peridot::backend::partitioned::SubdomainRequest {
        count: Some(2),
        ..Default::default()
    };
    let e = match backend::create::<f64>(BackendKind::CpuLoop, p.clone(), Some(&request)) {
        Ok(_) => panic!("subdomains accepted an impactor"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("in core") && e.contains("subdomains"), "{e}");
}

/// A run with an impactor writes `probes.csv` (without `output.probes`) with the impactor's
/// position, velocity and force columns; its last row is the run's final impactor state to
/// the digits written (shortest round-trip form: exactly).
#[test]
fn the_impactor_is_probed() {
    let problem = sphere_on_plate(5.0, 1e-3, 600);
    let dir = tempfile::tempdir().unwrap();
    let opts = common::options(
        BackendKind::CpuLoop,
        peridot::Precision::F64,
        Some(dir.path()),
    );
    let out = peridot::solver::simulate::<f64>(problem, &opts).unwrap();
    let text = std::fs::read_to_string(dir.path().join("probes.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let names = ["impactor1_z", "impactor1_vz", "impactor1_fz"];
    let cols: Vec<usize> = (names.iter())
        .map(|n| header.iter().position(|h| h == n).expect(n))
        .collect();
    assert_eq!(
        header.len(),
        2 + 9,
        "step, time and 3 x 3 impactor columns: {header:?}"
    );
    let last: Vec<f64> = (lines.last().unwrap().split(','))
        .map(|x| x.parse().unwrap())
        .collect();
    let imp = &out.state.contact.as_ref().unwrap().impactors[0];
    assert_eq!(
        [last[cols[0]], last[cols[1]], last[cols[2]]],
        [imp.position[2], imp.velocity[2], imp.force[2]]
    );
    assert!(
        imp.velocity[2] > -5.0,
        "the sphere was slowed ({})",
        imp.velocity[2]
    );
}
