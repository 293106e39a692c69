//! Snapshots written while the time loop goes on: the run hands each snapshot's fields
//! (already in `f64`, owned) to a writer thread that encodes the `.vtu` and updates the
//! `.pvd` (a rank of a distributed run: its piece, from its own nodes' fields). The queue
//! holds one snapshot, so at most two are in memory beside the state (one
//! being written, one waiting) and a slow disk delays the loop by at most one snapshot.
//!
//! A write error stops the thread; the run sees it at the next snapshot, at
//! [`SnapshotThread::entries`] or at [`SnapshotThread::finish`], which wait for every
//! snapshot queued before them to be on disk.

use super::outputs::{self, OwnedSnapshot, PieceGeometry, Snapshot};
use crate::output::VtkSeries;
use crate::setup::Problem;
use crate::{Error, Result};
use std::path::PathBuf;
use std::sync::mpsc::{channel, sync_channel, Sender, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// `(step, time, file name)` of a snapshot in the series (`VtkSeries::entries`).
pub(crate) type Entry = (usize, f64, String);

/// What the run asks of the writer thread, in order.
enum Message {
    /// Write this snapshot.
    Write(Box<OwnedSnapshot>),
    /// Reply with the series' entries once every earlier snapshot is written.
    Entries(Sender<Vec<Entry>>),
}

/// A VTK series written by a thread of its own.
pub(crate) struct SnapshotThread {
    /// The series' `.pvd`, which errors of the thread itself name.
    pvd: PathBuf,
    sender: Option<SyncSender<Message>>,
    /// The thread; it returns the seconds it spent writing.
    handle: Option<JoinHandle<Result<f64>>>,
}

impl SnapshotThread {
    /// Start the thread that writes `series` for `problem`'s body (in pieces: this rank's).
    pub(crate) fn start(mut series: VtkSeries, problem: Arc<Problem>) -> Result<Self> {
        let pvd = series.pvd_path();
        let piece = (series.pieces()).map(|p| PieceGeometry::of(&problem, &p.nodes));
        let (sender, receiver) = sync_channel::<Message>(1);
        let handle = std::thread::Builder::new()
            .name("peridot-snapshots".into())
            .spawn(move || {
                let mut busy = 0.0;
                for message in receiver {
                    let s = match message {
                        Message::Write(s) => s,
                        Message::Entries(reply) => {
                            let _ = reply.send(series.entries().to_vec());
                            continue;
                        }
                    };
                    let snapshot = Snapshot {
                        step: s.step,
                        time: s.time,
                        displacement: &s.displacement,
                        velocity: &s.velocity,
                        damage: &s.fields.damage,
                        damage_bond_count: Some(&s.fields.damage_bond_count),
                        dilatation: s.fields.dilatation.as_deref(),
                        extra: &s.fields.extra,
                    };
                    let t0 = std::time::Instant::now();
                    outputs::write_snapshot(&mut series, &problem, piece.as_ref(), &snapshot)?;
                    busy += t0.elapsed().as_secs_f64();
                }
                Ok(busy)
            })
            .map_err(|e| Error::io(&pvd, e))?;
        Ok(SnapshotThread {
            pvd,
            sender: Some(sender),
            handle: Some(handle),
        })
    }

    /// Queue `snapshot`; waits while one is already waiting. A write error of an earlier
    /// snapshot is returned here.
    pub(crate) fn send(&mut self, snapshot: OwnedSnapshot) -> Result<()> {
        self.post(Message::Write(Box::new(snapshot)))
    }

    /// The series' entries once every snapshot queued so far is on disk (what a checkpoint
    /// may list).
    pub(crate) fn entries(&mut self) -> Result<Vec<Entry>> {
        let (reply, answer) = channel();
        self.post(Message::Entries(reply))?;
        match answer.recv() {
            Ok(entries) => Ok(entries),
            Err(_) => {
                self.finish()?;
                Err(self.failure("the snapshot writer stopped"))
            }
        }
    }

    /// Hand `message` to the thread; an error if it has stopped (its own error first).
    fn post(&mut self, message: Message) -> Result<()> {
        let sent = match &self.sender {
            Some(sender) => sender.send(message).is_ok(),
            None => false,
        };
        if sent {
            Ok(())
        } else {
            // The thread stopped: its result says why.
            self.finish()?;
            Err(self.failure("the snapshot writer stopped"))
        }
    }

    /// Wait until every queued snapshot is written; returns the first write error, else
    /// the seconds the thread spent writing (0 once finished).
    pub(crate) fn finish(&mut self) -> Result<f64> {
        self.sender = None;
        match self.handle.take() {
            Some(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(self.failure("the snapshot writer panicked"))),
            None => Ok(0.0),
        }
    }

    /// An error of the writer thread itself, naming the series.
    fn failure(&self, what: &str) -> Error {
        Error::io(&self.pvd, std::io::Error::other(what.to_string()))
    }
}

impl Drop for SnapshotThread {
    fn drop(&mut self) {
        // A run that ends by an error still leaves every queued snapshot on disk.
        let _ = self.finish();
    }
}
