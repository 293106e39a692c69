//! Where the subdomains of a [`super::GpuStreamed`] run on the device: the sizes of the
//! slots ([`Sizes`], [`Sizes::slot_bytes`]) and which subdomain keeps a slot of its own and
//! which are streamed through two shared ones ([`Placement`]), chosen within a device
//! memory limit.
//!
//! Units: counts of bytes, bonds and nodes; memory in bytes.

use crate::backend::partitioned::parts::Part;
use crate::gpu::layout::status_words;
use crate::partition::{Residency, ResidencyRequest};

/// Largest per-subdomain counts the slots are sized for.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Sizes {
    pub block: usize,
    /// Bytes of a softening law's damage per slot (0 for the brittle law).
    pub damage: usize,
    pub bonds: usize,
    pub local: usize,
    pub owned: usize,
}

impl Sizes {
    pub fn of(parts: &[Part]) -> Sizes {
        let mut z = Sizes::default();
        for p in parts {
            z.block = z.block.max(p.offsets.total);
            z.damage = z.damage.max(p.damage.as_ref().map_or(0, |d| d.len()));
            z.bonds = z.bonds.max(p.layout.padded_len());
            z.local = z.local.max(p.local());
            z.owned = z.owned.max(p.owned());
        }
        z
    }

    /// The largest of each count over `sizes`.
    fn of_sizes(sizes: &[Sizes]) -> Sizes {
        sizes.iter().fold(Sizes::default(), |z, s| Sizes {
            block: z.block.max(s.block),
            damage: z.damage.max(s.damage),
            bonds: z.bonds.max(s.bonds),
            local: z.local.max(s.local),
            owned: z.owned.max(s.owned),
        })
    }

    /// Device bytes of one slot for dimension `d` and precision bytes `t`.
    pub fn slot_bytes(&self, d: usize, t: usize, lps: bool) -> usize {
        let lps_bytes = if lps { 3 * self.local * t } else { 0 };
        self.block
            + self.damage
            + 4 * status_words(self.bonds)
            + d * self.local * t
            + d * self.owned * t
            + self.owned * (t + 8)
            + lps_bytes
    }
}

/// Where the subdomains run on the device: the first `resident` active subdomains keep a
/// slot of their own (static data uploaded once), the others share two streaming slots.
#[derive(Debug, Clone)]
pub(super) struct Placement {
    pub residency: Residency,
    pub resident: usize,
    /// The slot of each subdomain that has its own (`None`: streamed, or owning no node).
    pub slot_of: Vec<Option<usize>>,
    /// The streaming slots (indices after the resident ones).
    pub streaming: Vec<usize>,
    /// Sizes of every slot.
    pub slot_sizes: Vec<Sizes>,
    /// Active subdomains in pass order: streamed and resident ones alternating (a resident
    /// subdomain computes while the next streamed block copies in).
    pub order: Vec<usize>,
    /// Whether streamed subdomains outnumber the streaming slots (bond status then goes
    /// back to the host after each use).
    pub evict: bool,
}

impl Placement {
    /// The placement of `parts` within `limit` device bytes (`bytes`: of a slot of given
    /// sizes): every subdomain resident where all fit and `request` allows, else as many
    /// resident as fit beside two streaming slots (none with `ResidencyRequest::Streamed`).
    /// `Err(bytes)`: the two streaming slots alone need more than `limit`.
    pub fn new(
        parts: &[Part],
        bytes: &dyn Fn(&Sizes) -> usize,
        limit: usize,
        request: ResidencyRequest,
    ) -> std::result::Result<Placement, usize> {
        let sizes: Vec<Option<Sizes>> = parts
            .iter()
            .map(|p| (p.owned() > 0).then(|| Sizes::of(std::slice::from_ref(p))))
            .collect();
        Placement::of_sizes(&sizes, bytes, limit, request)
    }

    /// [`Placement::new`] from the sizes of each subdomain (`None`: owns no node).
    fn of_sizes(
        sizes: &[Option<Sizes>],
        bytes: &dyn Fn(&Sizes) -> usize,
        limit: usize,
        request: ResidencyRequest,
    ) -> std::result::Result<Placement, usize> {
        let active: Vec<usize> = (0..sizes.len()).filter(|&s| sizes[s].is_some()).collect();
        let own: Vec<Sizes> = sizes.iter().flatten().copied().collect();
        let need = |r: usize| -> (usize, Sizes) {
            let rest = Sizes::of_sizes(&own[r..]);
            let streamed = (active.len() - r).min(2) * bytes(&rest);
            (own[..r].iter().map(bytes).sum::<usize>() + streamed, rest)
        };
        let max_resident = match request {
            ResidencyRequest::Auto => active.len(),
            ResidencyRequest::Streamed => 0,
        };
        let resident = (0..=max_resident)
            .rev()
            .find(|&r| need(r).0 <= limit)
            .ok_or(need(0).0)?;
        let (_, rest) = need(resident);
        let streamed = &active[resident..];
        let mut slot_of = vec![None; sizes.len()];
        for (k, &s) in active[..resident].iter().enumerate() {
            slot_of[s] = Some(k);
        }
        let nstream = streamed.len().min(2);
        let mut slot_sizes = own[..resident].to_vec();
        slot_sizes.extend(std::iter::repeat_n(rest, nstream));
        let mut order = Vec::with_capacity(active.len());
        for i in 0..streamed.len().max(resident) {
            order.extend(streamed.get(i));
            order.extend(active[..resident].get(i));
        }
        let residency = match (resident, streamed.len()) {
            (_, 0) => Residency::Resident,
            (0, _) => Residency::Streamed,
            _ => Residency::Mixed,
        };
        Ok(Placement {
            residency,
            resident,
            slot_of,
            streaming: (resident..resident + nstream).collect(),
            slot_sizes,
            order,
            evict: streamed.len() > nstream,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sized(block: usize) -> Option<Sizes> {
        Some(Sizes {
            block,
            ..Sizes::default()
        })
    }

    /// Subdomains are resident where all fit, else as many as fit beside two streaming
    /// slots sized for the largest streamed one; the pass order alternates streamed and
    /// resident subdomains and skips those owning nothing; an error gives the bytes two
    /// streaming slots need.
    #[test]
    fn placement_keeps_what_fits_resident() {
        let bytes = |z: &Sizes| z.block;
        let sizes = [sized(10), sized(10), None, sized(10), sized(12), sized(10)];
        let all = Placement::of_sizes(&sizes, &bytes, 52, ResidencyRequest::Auto).unwrap();
        assert_eq!(
            (all.residency, all.resident, all.streaming.len()),
            (Residency::Resident, 5, 0)
        );
        assert_eq!(all.order, vec![0, 1, 3, 4, 5]);
        // 2 resident (20) + two slots for the largest of the rest (2 x 12) = 44 <= 45
        let mixed = Placement::of_sizes(&sizes, &bytes, 45, ResidencyRequest::Auto).unwrap();
        assert_eq!((mixed.residency, mixed.resident), (Residency::Mixed, 2));
        assert_eq!(
            mixed.slot_of,
            vec![Some(0), Some(1), None, None, None, None]
        );
        assert_eq!(mixed.streaming, vec![2, 3]);
        assert_eq!(
            mixed.slot_sizes.iter().map(bytes).collect::<Vec<_>>(),
            [10, 10, 12, 12]
        );
        assert_eq!(mixed.order, vec![3, 0, 4, 1, 5]);
        assert!(mixed.evict, "three streamed subdomains share two slots");
        let streamed = Placement::of_sizes(&sizes, &bytes, 52, ResidencyRequest::Streamed).unwrap();
        assert_eq!(
            (streamed.residency, streamed.resident),
            (Residency::Streamed, 0)
        );
        assert_eq!(
            Placement::of_sizes(&sizes, &bytes, 23, ResidencyRequest::Auto).unwrap_err(),
            24
        );
    }
}
