// SPDX-License-Identifier: GPL-2.0-only
//! Dispatch queues as the sched_ext core keeps them (kernel/sched/ext.c).

use super::*;

/// A dispatch queue: FIFO, or ordered by vtime (then by arrival).
#[derive(Default)]
pub(super) struct Dsq {
    pub(super) fifo: VecDeque<Tid>,
    pub(super) by_vtime: BTreeMap<(u64, u64), Tid>,
}

impl Dsq {
    pub(super) fn len(&self) -> usize {
        self.fifo.len() + self.by_vtime.len()
    }
    pub(super) fn contains(&self, t: Tid) -> bool {
        self.fifo.contains(&t) || self.by_vtime.values().any(|&u| u == t)
    }
    /// The task a consumer takes first (FIFO order, else lowest vtime).
    pub(super) fn first(&self) -> Option<Tid> {
        self.fifo.front().copied().or_else(|| self.by_vtime.values().next().copied())
    }
    /// Take `t` out; false if it is not queued here.
    pub(super) fn remove(&mut self, t: Tid) -> bool {
        if let Some(i) = self.fifo.iter().position(|&u| u == t) {
            self.fifo.remove(i);
            return true;
        }
        match self.by_vtime.iter().find(|(_, &u)| u == t).map(|(k, _)| *k) {
            Some(key) => self.by_vtime.remove(&key).is_some(),
            None => false,
        }
    }
    /// The first task in queue order that may run on `cpu`, taken out.
    pub(super) fn take_for(&mut self, cpu: u32, allowed: impl Fn(Tid, u32) -> bool) -> Option<Tid> {
        if let Some(i) = self.fifo.iter().position(|&t| allowed(t, cpu)) {
            return self.fifo.remove(i);
        }
        let key = *self.by_vtime.iter().find(|(_, &t)| allowed(t, cpu))?.0;
        self.by_vtime.remove(&key)
    }
}

/// The program's own DSQs by id. Ids below `DIRECT` (the per-CPU and
/// per-core queues of warmcore's programs, looked up at every placement and
/// tick) are indexed directly; the others are kept in a map.
#[derive(Default)]
pub(super) struct UserDsqs {
    direct: Vec<Option<Dsq>>,
    other: BTreeMap<u64, Dsq>,
}

const DIRECT: u64 = 4096;

impl UserDsqs {
    pub(super) fn get(&self, id: &u64) -> Option<&Dsq> {
        if *id < DIRECT {
            self.direct.get(*id as usize)?.as_ref()
        } else {
            self.other.get(id)
        }
    }
    pub(super) fn get_mut(&mut self, id: &u64) -> Option<&mut Dsq> {
        if *id < DIRECT {
            self.direct.get_mut(*id as usize)?.as_mut()
        } else {
            self.other.get_mut(id)
        }
    }
    pub(super) fn contains_key(&self, id: &u64) -> bool {
        self.get(id).is_some()
    }
    /// Every queue, in the order of their ids, as a map would give them.
    pub(super) fn values_mut(&mut self) -> impl Iterator<Item = &mut Dsq> {
        self.direct.iter_mut().flatten().chain(self.other.values_mut())
    }
    pub(super) fn insert(&mut self, id: u64, q: Dsq) {
        if id < DIRECT {
            if self.direct.len() <= id as usize {
                self.direct.resize_with(id as usize + 1, || None);
            }
            self.direct[id as usize] = Some(q);
        } else {
            self.other.insert(id, q);
        }
    }
}
