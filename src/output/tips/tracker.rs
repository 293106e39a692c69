//! Tips followed from sample to sample: stable ids, branching, speeds. Lengths in metres,
//! times in seconds, speeds in m/s.
//!
//! **Matching.** Each tip of a new sample takes the nearest tip of the previous sample within
//! the bound `2 delta + max_speed (t - t_prev)` (`max_speed` is an upper bound on how fast a
//! tip can run; the driver passes the dilatational wave speed). A previous tip claimed by
//! exactly one new tip lives on under its id; one claimed by two or more has branched: it
//! ends, and every child gets a new id (the sample's time is a branching time). New tips
//! matching no previous one get new ids; previous tips that no new tip claims end.
//!
//! **Bursts.** A tip that moves between two samples by more than a horizon and faster than the
//! dilatational wave speed (`burst_speed`) has not run there: no signal in the material is that fast, so the damage
//! crossed the threshold over a length at once (a crack appearing ahead of a notch, or
//! joining damage already there). The tip keeps its id, its path starts again at the new
//! position (that sample has no speed), and the summary counts the burst. Shorter moves are
//! the lattice's steps (a tip advances a spacing or two at a time), which the fit over a
//! horizon of travel smooths.
//!
//! **Speed.** Each tip keeps its path length (the sum of the distances between its
//! successive positions) against time. Its speed at a sample is the least-squares slope of
//! that path length over the latest samples that cover at least one horizon of travel, from
//! the first sample at the position it held one horizon back (all of its samples while it
//! has travelled less); none on its first sample. A tip moves in steps of about a spacing
//! (nodes cross the threshold one after another, at times in bursts) and rests between
//! them: a window that starts where the rest one horizon back starts weighs the steps with
//! the time they took. Only slopes over a full horizon of travel count for the fastest tip
//! of the run.

use super::finder::Crack;

/// One row of `crack_tips.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct TipRow {
    /// s.
    pub time: f64,
    pub id: u64,
    /// m.
    pub position: [f64; 3],
    /// m/s; `None` on the tip's first sample.
    pub speed: Option<f64>,
}

/// What the samples so far add up to (the `crack_tips` block of `summary.json`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TipStats {
    /// Samples taken.
    pub samples: usize,
    /// Tip ids given out.
    pub tips: u64,
    /// Tips of the latest sample.
    pub tips_now: usize,
    /// Longest crack of any sample, m.
    pub longest_crack: f64,
    /// Fastest speed fitted over at least a horizon of travel, m/s (0: none yet).
    pub fastest_tip: f64,
    /// Time of the first sample with a branching, s.
    pub first_branching: Option<f64>,
    /// Tip moves between two samples longer than a horizon and faster than the dilatational
    /// wave speed.
    pub bursts: usize,
}

/// A tip's history.
#[derive(Clone, Debug, PartialEq)]
pub struct Track {
    pub id: u64,
    /// m.
    pub position: [f64; 3],
    /// s, one per sample of the tip.
    pub times: Vec<f64>,
    /// Path length travelled at each of those samples, m.
    pub path: Vec<f64>,
}

impl Track {
    /// The fitted speed after the latest sample and whether its window covers a horizon.
    fn speed(&self, delta: f64) -> Option<(f64, bool)> {
        let n = self.times.len();
        if n < 2 {
            return None;
        }
        let last = self.path[n - 1];
        let back = (0..n - 1).rev().find(|&k| last - self.path[k] >= delta);
        let full = back.is_some();
        // from the first sample at the position held one horizon back
        let k0 = back.map_or(0, |k| {
            let held = self.path[k];
            self.path.iter().position(|&p| p >= held).unwrap_or(k)
        });
        Some((slope(&self.times[k0..], &self.path[k0..]), full))
    }
}

/// The least-squares slope of `y` over `x` (at least two distinct `x`).
fn slope(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
    }
    if sxx > 0.0 {
        sxy / sxx
    } else {
        0.0
    }
}

fn distance(a: &[f64; 3], b: &[f64; 3]) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
}

/// What a tracker carries from one sample to the next (a restart checkpoint holds it, so a
/// resumed run follows its tips on as the uninterrupted one does).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrackerMemory {
    /// The tips of the latest sample.
    pub live: Vec<Track>,
    /// Time of the latest sample, s.
    pub last_time: Option<f64>,
    pub stats: TipStats,
}

/// Follows the tips of successive samples.
#[derive(Clone, Debug)]
pub struct TipTracker {
    delta: f64,
    max_speed: f64,
    burst_speed: f64,
    memory: TrackerMemory,
}

impl TipTracker {
    /// A tracker for horizon `delta` (m) and tips no faster than `max_speed` (m/s).
    pub fn new(delta: f64, max_speed: f64) -> TipTracker {
        Self::resumed(delta, max_speed, TrackerMemory::default())
    }

    /// A tracker that goes on from `memory` (of a tracker with the same `delta` and
    /// `max_speed`).
    pub fn resumed(delta: f64, max_speed: f64, memory: TrackerMemory) -> TipTracker {
        TipTracker {
            delta,
            max_speed,
            burst_speed: f64::INFINITY,
            memory,
        }
    }

    /// The same tracker with moves faster than `speed` (m/s; the dilatational wave speed)
    /// taken as bursts (module doc); none without it.
    pub fn with_burst_speed(mut self, speed: f64) -> TipTracker {
        self.burst_speed = speed;
        self
    }

    /// What the tracker carries to its next sample.
    pub fn memory(&self) -> &TrackerMemory {
        &self.memory
    }

    /// The totals so far.
    pub fn stats(&self) -> &TipStats {
        &self.memory.stats
    }

    /// Take the sample of `cracks` at `time` (s, after the previous sample's); one row per
    /// tip, in the order of the cracks and their tips.
    pub fn update(&mut self, time: f64, cracks: &[Crack]) -> Vec<TipRow> {
        let tips: Vec<[f64; 3]> = cracks.iter().flat_map(|c| c.tips.iter().copied()).collect();
        let bound =
            2.0 * self.delta + self.max_speed * (time - self.memory.last_time.unwrap_or(time));
        let claims: Vec<Option<usize>> = tips
            .iter()
            .map(|p| {
                let mut best: Option<(usize, f64)> = None;
                for (k, t) in self.memory.live.iter().enumerate() {
                    let d = distance(p, &t.position);
                    if d <= bound && best.is_none_or(|(_, b)| d < b) {
                        best = Some((k, d));
                    }
                }
                best.map(|(k, _)| k)
            })
            .collect();
        let mut claimants = vec![0usize; self.memory.live.len()];
        for k in claims.iter().flatten() {
            claimants[*k] += 1;
        }
        if claimants.iter().any(|&c| c >= 2) && self.memory.stats.first_branching.is_none() {
            self.memory.stats.first_branching = Some(time);
        }
        let mut next = Vec::with_capacity(tips.len());
        let mut rows = Vec::with_capacity(tips.len());
        for (p, claim) in tips.iter().zip(&claims) {
            let mut track = match claim {
                Some(k) if claimants[*k] == 1 => {
                    let mut t = self.memory.live[*k].clone();
                    let step = distance(p, &t.position);
                    let elapsed = time - t.times.last().copied().unwrap_or(time);
                    if step > self.delta.max(self.burst_speed * elapsed) {
                        self.memory.stats.bursts += 1;
                        t.path = vec![0.0];
                        t.times = vec![time];
                    } else {
                        let travelled = t.path.last().copied().unwrap_or(0.0) + step;
                        t.path.push(travelled);
                        t.times.push(time);
                    }
                    t
                }
                _ => {
                    self.memory.stats.tips += 1;
                    Track {
                        id: self.memory.stats.tips,
                        position: *p,
                        times: vec![time],
                        path: vec![0.0],
                    }
                }
            };
            track.position = *p;
            let fit = track.speed(self.delta);
            if let Some((v, true)) = fit {
                self.memory.stats.fastest_tip = self.memory.stats.fastest_tip.max(v);
            }
            rows.push(TipRow {
                time,
                id: track.id,
                position: *p,
                speed: fit.map(|f| f.0),
            });
            next.push(track);
        }
        self.memory.live = next;
        self.memory.last_time = Some(time);
        self.memory.stats.samples += 1;
        self.memory.stats.tips_now = tips.len();
        let longest = cracks.iter().map(|c| c.length).fold(0.0, f64::max);
        self.memory.stats.longest_crack = self.memory.stats.longest_crack.max(longest);
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crack(tips: &[[f64; 2]], length: f64) -> Crack {
        Crack {
            nodes: 10,
            length,
            tips: tips.iter().map(|p| [p[0], p[1], 0.0]).collect(),
        }
    }

    // A tip running at exactly 1000 m/s in steps of 0.1 m per 1e-4 s keeps its id and has
    // the speed 1000 m/s (to rounding) from its second sample; the fixed tip has speed 0.
    #[test]
    fn steady_tip_speed() {
        let mut t = TipTracker::new(0.25, 5000.0);
        for k in 0..6 {
            let x = 0.1 * k as f64;
            let rows = t.update(1e-4 * k as f64, &[crack(&[[-1.0, 0.0], [x, 0.0]], 1.0 + x)]);
            assert_eq!(rows.len(), 2);
            assert_eq!((rows[0].id, rows[1].id), (1, 2));
            if k == 0 {
                assert_eq!((rows[0].speed, rows[1].speed), (None, None));
            } else {
                assert_eq!(rows[0].speed, Some(0.0));
                let v = rows[1].speed.unwrap();
                assert!((v - 1000.0).abs() < 1e-9, "{v}");
            }
        }
        let s = t.stats();
        assert_eq!((s.samples, s.tips, s.tips_now), (6, 2, 2));
        assert!((s.fastest_tip - 1000.0).abs() < 1e-9);
        assert!((s.longest_crack - 1.5).abs() < 1e-12);
        assert_eq!(s.first_branching, None);
    }

    // A tip at rest that jumps 1 m in 1e-4 s (1e4 m/s, above the burst speed of 5000 m/s)
    // keeps its id, has no speed at the jump and counts a burst; it then runs at 1000 m/s,
    // fitted from the jump on, and the fastest tip is that, not the jump.
    #[test]
    fn burst_restarts_the_fit() {
        let mut t = TipTracker::new(0.25, 20000.0).with_burst_speed(5000.0);
        let at = |x: f64| [crack(&[[x, 0.0]], 1.0)];
        for k in 0..3 {
            assert_eq!(
                t.update(1e-4 * k as f64, &at(0.0))[0].speed,
                Some(0.0).filter(|_| k > 0)
            );
        }
        let rows = t.update(3e-4, &at(1.0));
        assert_eq!((rows[0].id, rows[0].speed), (1, None));
        for k in 1..6 {
            let rows = t.update(3e-4 + 1e-4 * k as f64, &at(1.0 + 0.1 * k as f64));
            let v = rows[0].speed.unwrap();
            assert!((v - 1000.0).abs() < 1e-6, "{v}");
        }
        let s = t.stats();
        assert_eq!((s.bursts, s.tips), (1, 1));
        assert!((s.fastest_tip - 1000.0).abs() < 1e-6);
    }

    // A tip that splits in two: both children get new ids and the branching time is the
    // sample's; a tip far from every earlier one is new too.
    #[test]
    fn branch_gives_two_new_ids() {
        let mut t = TipTracker::new(0.1, 0.0);
        let rows = t.update(0.0, &[crack(&[[0.0, 0.0]], 1.0)]);
        assert_eq!(rows[0].id, 1);
        let rows = t.update(1.0, &[crack(&[[0.1, 0.05]], 1.0)]);
        assert_eq!(rows[0].id, 1);
        let rows = t.update(2.0, &[crack(&[[0.2, 0.1], [0.2, 0.0]], 1.0)]);
        let ids: Vec<u64> = rows.iter().map(|r| r.id).collect();
        assert_eq!(ids, vec![2, 3]);
        assert_eq!(rows[0].speed, None);
        assert_eq!(t.stats().first_branching, Some(2.0));
        let rows = t.update(3.0, &[crack(&[[0.25, 0.1], [0.25, 0.0], [5.0, 5.0]], 1.0)]);
        let ids: Vec<u64> = rows.iter().map(|r| r.id).collect();
        assert_eq!(ids, vec![2, 3, 4]);
        assert_eq!(t.stats().first_branching, Some(2.0));
    }
}
