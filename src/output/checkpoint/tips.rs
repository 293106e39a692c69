//! The crack-tip section of a checkpoint: `crack_tips.csv` as it stood, the step of the
//! latest sample and the tracker's memory (each live tip's id, position, sample times and
//! path lengths; the running totals), so a resumed run numbers, matches and times its tips
//! as the uninterrupted run does. Times in s, lengths in m, speeds in m/s.
//!
//! | field | bytes |
//! |---|---|
//! | present | u8 |
//! | `crack_tips.csv` so far | u64 length + bytes |
//! | step of the latest sample (present u8, then u64) | |
//! | time of the latest sample (present u8, then f64) | |
//! | samples, tip ids given, tips now | 3 x u64 |
//! | longest crack, fastest tip | 2 x f64 |
//! | first branching time (present u8, then f64) | |
//! | bursts | u64 |
//! | live tips: count; per tip id (u64), position (3 x f64), samples k (u64), k times, k path lengths (f64) | |

use super::codec::{Decoded, Decoder, Encoder};
use crate::output::tips::{TipStats, Track, TrackerMemory};
use std::io::{Result, Write};

/// The crack-tip output as it stood at a checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct TipsPlace {
    /// The bytes of `crack_tips.csv`.
    pub csv: Vec<u8>,
    /// The step of the latest sample.
    pub sampled: Option<usize>,
    pub tracker: TrackerMemory,
}

pub(super) fn encode<W: Write>(e: &mut Encoder<W>, tips: Option<&TipsPlace>) -> Result<()> {
    e.u8(u8::from(tips.is_some()))?;
    let Some(t) = tips else { return Ok(()) };
    e.blob(&t.csv)?;
    option_u64(e, t.sampled.map(|s| s as u64))?;
    let m = &t.tracker;
    option_f64(e, m.last_time)?;
    let s = &m.stats;
    e.usize(s.samples)?;
    e.u64(s.tips)?;
    e.usize(s.tips_now)?;
    e.f64(s.longest_crack)?;
    e.f64(s.fastest_tip)?;
    option_f64(e, s.first_branching)?;
    e.usize(s.bursts)?;
    e.usize(m.live.len())?;
    for track in &m.live {
        e.u64(track.id)?;
        for x in track.position {
            e.f64(x)?;
        }
        e.usize(track.times.len())?;
        for x in track.times.iter().chain(&track.path) {
            e.f64(*x)?;
        }
    }
    Ok(())
}

pub(super) fn decode(d: &mut Decoder) -> Decoded<Option<TipsPlace>> {
    if d.u8()? == 0 {
        return Ok(None);
    }
    let csv = d.blob()?.to_vec();
    let sampled = read_option(d, Decoder::usize)?;
    let last_time = read_option(d, Decoder::f64)?;
    let stats = TipStats {
        samples: d.usize()?,
        tips: d.u64()?,
        tips_now: d.usize()?,
        longest_crack: d.f64()?,
        fastest_tip: d.f64()?,
        first_branching: read_option(d, Decoder::f64)?,
        bursts: d.usize()?,
    };
    let live_count = d.usize()?;
    let mut live = Vec::new();
    for _ in 0..live_count {
        let id = d.u64()?;
        let position = [d.f64()?, d.f64()?, d.f64()?];
        let k = d.usize()?;
        if k.saturating_mul(16) > d.remaining() {
            return Err(format!(
                "crack tip {id} claims {k} samples, more than the file holds"
            ));
        }
        let times = (0..k).map(|_| d.f64()).collect::<Decoded<Vec<_>>>()?;
        let path = (0..k).map(|_| d.f64()).collect::<Decoded<Vec<_>>>()?;
        live.push(Track {
            id,
            position,
            times,
            path,
        });
    }
    Ok(Some(TipsPlace {
        csv,
        sampled,
        tracker: TrackerMemory {
            live,
            last_time,
            stats,
        },
    }))
}

fn option_u64<W: Write>(e: &mut Encoder<W>, x: Option<u64>) -> Result<()> {
    e.u8(u8::from(x.is_some()))?;
    x.map_or(Ok(()), |x| e.u64(x))
}

fn option_f64<W: Write>(e: &mut Encoder<W>, x: Option<f64>) -> Result<()> {
    e.u8(u8::from(x.is_some()))?;
    x.map_or(Ok(()), |x| e.f64(x))
}

fn read_option<'a, X>(
    d: &mut Decoder<'a>,
    read: fn(&mut Decoder<'a>) -> Decoded<X>,
) -> Decoded<Option<X>> {
    match d.u8()? {
        0 => Ok(None),
        _ => read(d).map(Some),
    }
}
