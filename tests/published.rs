//! Reduced-size checks of the published facts that `scripts/validate_published.sh` measures at
//! the published scale (`docs/validation-published.md`): the pre-cracked plate branches at
//! 50 m/s where it runs straight at 20 m/s (`tests/crack_tips.rs` holds the 20 m/s run at the
//! same settings), and the Kalthoff-Winkler cracks leave the notch tips at the mode-II kink
//! angle. Each runs in seconds on 2 cores in release.

mod common;

use std::collections::BTreeMap;

const KALTHOFF_2D: &str = include_str!("../models/kalthoff_winkler_2d.toml");

/// The rows of a `crack_tips.csv` in 2D, checked for form: the header, five fields, times
/// that never decrease, ids from 1, an empty speed on each tip's first row; and the number of
/// later rows with an empty speed (bursts, `docs/crack-tips.md` rule 9: the tip moved more
/// than a horizon, `delta` m, since its previous row).
fn tip_rows(text: &str, delta: f64) -> (Vec<(f64, u64, f64, f64)>, u64) {
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("time,tip_id,x,y,speed"));
    let mut seen: BTreeMap<u64, (usize, f64, f64)> = BTreeMap::new();
    let mut last = 0.0;
    let mut rows = Vec::new();
    let mut bursts = 0;
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), 5, "{line}");
        let time: f64 = f[0].parse().unwrap();
        let id: u64 = f[1].parse().unwrap();
        assert!(time >= last && id >= 1, "{line}");
        last = time;
        let (x, y): (f64, f64) = (f[2].parse().unwrap(), f[3].parse().unwrap());
        let (count, px, py) = seen.entry(id).or_insert((0, x, y));
        if *count == 0 {
            assert!(f[4].is_empty(), "a first row has no speed: {line}");
        } else if f[4].is_empty() {
            assert!(
                (x - *px).hypot(y - *py) > delta,
                "an empty speed only at a burst: {line}"
            );
            bursts += 1;
        } else {
            assert!(f[4].parse::<f64>().unwrap() >= 0.0, "{line}");
        }
        (*count, *px, *py) = (*count + 1, x, y);
        rows.push((time, id, x, y));
    }
    (rows, bursts)
}

// Seed 000, problem 3 at 50 m/s: "the crack pattern changes from self-similar to bifurcated".
// At dx = 0.5 mm (10,000 nodes) with the critical stretch scaled to 0.03162, as the 20 m/s
// run of `tests/crack_tips.rs` (the same fracture energy as the model's default dx), that run
// stays straight and this one branches: the summary has a first branching time within the
// run (16.7 us). The first sample (t = 0) holds the pre-crack's two tips, one at each end
// of the 10 mm cut, about two spacings inside it (`docs/crack-tips.md`: 3.5 to 5 mm from the
// middle, within 3 spacings of its line). The children
// of a branching tip carry new ids, so a branched run gives out more ids than the two tips
// of the pre-crack. (The fastest fitted tip speed is not checked here: where cracks fork and
// nucleate near the loaded layers, a tip id can pass from one crack to a nearby one.)
#[test]
fn precracked_plate_branches_at_50_ms() {
    let out = tempfile::tempdir().unwrap();
    common::cli::run_quiet(
        "models/precracked_plate_2d_50ms.toml",
        out.path(),
        &[
            "discretization.dx=0.5e-3",
            "material.critical_stretch=0.03162",
        ],
    );
    let text = std::fs::read_to_string(out.path().join("crack_tips.csv")).unwrap();
    let (rows, bursts) = tip_rows(&text, 3.015 * 0.5e-3);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("summary.json")).unwrap())
            .unwrap();
    let tips = &summary["crack_tips"];
    assert_eq!(tips["bursts"].as_u64(), Some(bursts), "{tips}");
    let branching = tips["first_branching_time"]
        .as_f64()
        .unwrap_or_else(|| panic!("no branching at 50 m/s: {tips}"));
    let start: Vec<_> = rows.iter().filter(|r| r.0 == 0.0).collect();
    println!("tips at t = 0: {start:?}; first branching {branching:e} s; {tips}");
    assert_eq!(start.len(), 2, "{start:?}");
    for r in &start {
        assert!(
            (3.5e-3..=5e-3).contains(&r.2.abs()) && r.3.abs() <= 1.5e-3,
            "{r:?}"
        );
    }
    assert!(
        start[0].2 * start[1].2 < 0.0,
        "one tip at each end: {start:?}"
    );
    assert!(branching > 0.0 && branching < 16.8e-6, "{tips}");
    assert!(tips["tips"].as_u64().unwrap() > 2, "{tips}");
}

/// Angle, degrees, between the downward notch axis and the principal direction about the
/// notch tip `tip` of the crack nodes (`damage >= threshold`) between `lo` and `hi` from it,
/// below the tip; with how many nodes.
fn crack_angle(
    points: &[[f64; 3]],
    damage: &[f64],
    tip: [f64; 2],
    lo: f64,
    hi: f64,
) -> (f64, usize) {
    let (mut sxx, mut sxy, mut syy, mut n) = (0.0, 0.0, 0.0, 0);
    for (p, &d) in points.iter().zip(damage) {
        let (dx, dy) = (p[0] - tip[0], p[1] - tip[1]);
        let r = dx.hypot(dy);
        if d >= 0.38 && dy < 0.0 && (lo..=hi).contains(&r) {
            sxx += dx * dx;
            sxy += dx * dy;
            syy += dy * dy;
            n += 1;
        }
    }
    let theta = 0.5 * (2.0 * sxy).atan2(sxx - syy);
    // the angle of the direction (cos theta, sin theta) to the axis (0, -1)
    (theta.sin().abs().min(1.0).acos().to_degrees(), n)
}

// Seed 001's Kalthoff-Winkler plate (`models/kalthoff_winkler_2d.toml`) at its default
// dx = 0.1 mm (20,000 nodes, 1000 steps of 10 ns): the coarsest that keeps the crack (at
// 0.2 mm no bond breaks at the model's critical stretch, and with it scaled to keep the
// fracture energy the plate breaks between the notches instead). Both cracks leave their
// notch tips outward (away from the impacted middle) at the mode-II kink angle: the maximum
// tangential stress criterion gives 70.5 degrees from the notch axis for a pure mode II
// load, the seed about 70 (110 to the notches), the experiment about 70. Measured as the
// principal direction of the crack nodes 2 horizons to 4 mm from each tip: 63.3 degrees
// at this dx (the crack bends from steeper near the tip to about 70 farther on, as the
// experiment's does); asserted within 10 degrees of 70.5, the band that tells a mode-II
// kink from a mode-I crack along the notch (0) or one across the plate (90). The two
// cracks are mirror images (the problem is symmetric and the run deterministic): within 0.5
// degrees of each other.
#[test]
fn kalthoff_winkler_2d_cracks_kink_at_the_mode_ii_angle() {
    let problem = common::problem(KALTHOFF_2D, &[]);
    let out = common::run::<f64>(problem.clone());
    let mut damage = vec![0.0; problem.body.len()];
    out.backend.damage(&mut damage).unwrap();
    let delta = problem.body.delta;
    let mut angles = Vec::new();
    for (tip, outward) in [([0.0075, 0.005], -1.0), ([0.0125, 0.005], 1.0)] {
        let (angle, n) = crack_angle(&problem.body.positions, &damage, tip, 2.0 * delta, 0.004);
        println!("notch tip {tip:?}: {angle:.2} deg from {n} crack nodes");
        assert!(n >= 20, "{n} crack nodes below the tip at {tip:?}");
        assert!((angle - 70.5).abs() < 10.0, "{angle} deg at {tip:?}");
        // outward: the crack nodes lie on the side away from the middle
        let side: f64 = problem
            .body
            .positions
            .iter()
            .zip(&damage)
            .filter(|(p, &d)| d >= 0.38 && p[1] < tip[1] - 2.0 * delta)
            .filter(|(p, _)| (p[0] - tip[0]).hypot(p[1] - tip[1]) < 0.004)
            .map(|(p, _)| p[0] - tip[0])
            .sum();
        assert!(side * outward > 0.0, "the crack at {tip:?} runs inward");
        angles.push(angle);
    }
    assert!((angles[0] - angles[1]).abs() < 0.5, "{angles:?}");
}
