// SPDX-License-Identifier: GPL-2.0-only
//! The engine's event queue: a 4-ary min-heap ordered by (time, insertion
//! sequence), holding at most one entry per key.
//!
//! A key names what an event is about (a CPU's segment end, a core's DVFS
//! sample, a task's wake-up timer...). The engine only ever has one live
//! event per key: a new one makes the previous one stale (its generation no
//! longer matches). Instead of leaving stale entries in the heap until their
//! time comes, `push` replaces the key's entry where it stands, so the heap
//! holds live events only (plus those made stale without a replacement,
//! which the engine still drops by generation when they fire). The order of
//! the live events is exactly that of a plain heap on (time, sequence).
//!
//! `peek` / `finish` let the engine handle the earliest event while it is
//! still in the heap: a new event for the same key pushed meanwhile (a
//! segment end that arms the next one, a timer re-armed from its own
//! handler) updates the entry in place, costing one sift instead of a
//! removal and an insertion.
//!
//! `hold` keeps one event beside the heap: an event at the instant being
//! handled, queued after those there (a spinner released goes on at once).
//! Pushed, it would sift up to the heap's top, and sift down again there
//! when the next event of its key replaced it; held, it costs the removal
//! of its key's entry (at a leaf, as a rule). The engine takes the earlier
//! of the held event and the heap's top, so the order is the heap's.

/// What an event is about: a kind and an index (CPU, core, task or timer
/// slot, depending on the kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    pub kind: u8,
    pub index: u32,
}

/// One event as the engine queues and handles it: the time, the insertion
/// sequence that breaks ties, the key (index x KINDS + kind) and the
/// generation the engine checks.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub t: u64,
    pub seq: u64,
    slot: u32,
    pub gen: u32,
}

/// Kinds of keys the queue can hold.
pub const KINDS: u32 = 8;

impl Entry {
    pub fn new(t: u64, seq: u64, key: Key, gen: u32) -> Entry {
        debug_assert!((key.kind as u32) < KINDS && key.index < u32::MAX / KINDS);
        Entry { t, seq, slot: key.index * KINDS + key.kind as u32, gen }
    }
    #[inline]
    pub fn key(&self) -> Key {
        Key { kind: self.kind(), index: self.index() }
    }
    #[inline]
    pub fn kind(&self) -> u8 {
        (self.slot % KINDS) as u8
    }
    #[inline]
    pub fn index(&self) -> u32 {
        self.slot / KINDS
    }
}

const NONE: u32 = u32::MAX;
/// `pos` of the held entry's key.
const HELD: u32 = u32::MAX - 1;
const ARITY: usize = 4;

/// An entry's place in the order: its time, then its sequence, as one
/// number (one comparison, no branch on equal times).
#[inline]
fn order(t: u64, seq: u64) -> u128 {
    ((t as u128) << 64) | seq as u128
}

/// The heap keeps its entries' order keys apart from the rest of them
/// (slot and generation, at the same positions): the search for the
/// earliest child, most of the queue's work, reads four keys of 16 bytes,
/// one cache line or two, instead of four entries of 24.
pub struct EventQueue {
    keys: Vec<u128>,
    /// Per position: the entry's slot and generation.
    vals: Vec<(u32, u32)>,
    /// Per key (its slot): its position in the heap, HELD, or NONE.
    pos: Vec<u32>,
    held: Option<Entry>,
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl EventQueue {
    pub fn new() -> EventQueue {
        EventQueue { keys: Vec::new(), vals: Vec::new(), pos: Vec::new(), held: None }
    }

    /// The events queued, the held one included.
    pub fn len(&self) -> usize {
        self.keys.len() + self.held.is_some() as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The earliest event: the heap's top or the held one.
    #[inline]
    pub fn next(&self) -> Option<Entry> {
        let Some(h) = self.held else { return self.peek() };
        match self.keys.first() {
            Some(&k) if k < order(h.t, h.seq) => self.peek(),
            _ => Some(h),
        }
    }

    /// The heap's earliest event.
    #[inline]
    pub fn peek(&self) -> Option<Entry> {
        let k = *self.keys.first()?;
        let (slot, gen) = self.vals[0];
        Some(Entry { t: (k >> 64) as u64, seq: k as u64, slot, gen })
    }

    /// Where the entry of `slot` is (a position in the heap, HELD or NONE),
    /// `pos` grown to cover it.
    #[inline]
    fn pos_of(&mut self, slot: u32) -> u32 {
        let i = slot as usize;
        if i >= self.pos.len() {
            self.pos.resize((i + 1).next_multiple_of(KINDS as usize), NONE);
        }
        self.pos[i]
    }

    /// Add `e`, replacing the entry of the same key if there is one.
    pub fn push(&mut self, e: Entry) {
        let (k, v) = (order(e.t, e.seq), (e.slot, e.gen));
        let mut p = self.pos_of(e.slot);
        if p == HELD {
            self.held = None;
            p = NONE;
        }
        if p == NONE {
            self.keys.push(k);
            self.vals.push(v);
            self.sift_up(self.keys.len() - 1, k, v);
        } else {
            let p = p as usize;
            if k < self.keys[p] {
                self.sift_up(p, k, v);
            } else {
                self.sift_down(p, k, v);
            }
        }
    }

    /// Hold `e` beside the heap, replacing the entry of its key; into the
    /// heap if another key's event is held.
    #[inline(never)]
    pub fn hold(&mut self, e: Entry) {
        if self.held.is_some_and(|h| h.slot != e.slot) {
            return self.push(e);
        }
        let p = self.pos_of(e.slot);
        if p != NONE && p != HELD {
            self.remove_at(p as usize);
        }
        self.pos[e.slot as usize] = HELD;
        self.held = Some(e);
    }

    /// Take the held event if `next` gave it: the caller handles it.
    #[inline]
    pub fn take_held(&mut self, e: &Entry) -> bool {
        let Some(h) = self.held else { return false };
        if h.seq != e.seq || h.slot != e.slot {
            return false;
        }
        self.held = None;
        self.pos[h.slot as usize] = NONE;
        true
    }

    /// Remove the earliest event if it is still the one `peek` gave (same
    /// key and sequence): the caller handled it and nothing replaced it.
    pub fn finish(&mut self, handled: &Entry) {
        let Some(&top) = self.keys.first() else { return };
        if top as u64 == handled.seq && self.vals[0].0 == handled.slot {
            self.remove_at(0);
        }
    }

    /// Remove and return the earliest event, held or not.
    pub fn pop(&mut self) -> Option<Entry> {
        let e = self.next()?;
        if !self.take_held(&e) {
            self.remove_at(0);
        }
        Some(e)
    }

    fn remove_at(&mut self, p: usize) {
        let gone = self.keys[p];
        self.pos[self.vals[p].0 as usize] = NONE;
        let (Some(k), Some(v)) = (self.keys.pop(), self.vals.pop()) else { return };
        if p < self.keys.len() {
            if k < gone {
                self.sift_up(p, k, v);
            } else {
                self.fill_hole(p, k, v);
            }
        }
    }

    /// Move the hole at `p` down to a leaf along the earliest children, then
    /// put the entry (not earlier than what was at `p`) in and sift it up:
    /// the element that fills a hole usually belongs near the bottom.
    fn fill_hole(&mut self, mut p: usize, k: u128, v: (u32, u32)) {
        while let Some(best) = self.earliest_child(p) {
            self.place(p, self.keys[best], self.vals[best]);
            p = best;
        }
        self.sift_up(p, k, v);
    }

    /// Put the entry (not earlier than what was at `p`) at `p` and sift it
    /// down, stopping where it belongs.
    fn sift_down(&mut self, mut p: usize, k: u128, v: (u32, u32)) {
        while let Some(best) = self.earliest_child(p) {
            if self.keys[best] >= k {
                break;
            }
            self.place(p, self.keys[best], self.vals[best]);
            p = best;
        }
        self.place(p, k, v);
    }

    /// The earliest of `p`'s children, if it has any.
    #[inline]
    fn earliest_child(&self, p: usize) -> Option<usize> {
        let first = p * ARITY + 1;
        let ch = self.keys.get(first..)?;
        if let Some(ch) = ch.first_chunk::<ARITY>() {
            // A full set of children: a tournament of two pairs.
            let a = if ch[1] < ch[0] { 1 } else { 0 };
            let b = if ch[3] < ch[2] { 3 } else { 2 };
            return Some(first + if ch[b] < ch[a] { b } else { a });
        }
        let (mut best, mut bk) = (0, *ch.first()?);
        for (i, &k) in ch.iter().enumerate().skip(1) {
            if k < bk {
                (best, bk) = (i, k);
            }
        }
        Some(first + best)
    }

    #[inline]
    fn place(&mut self, p: usize, k: u128, v: (u32, u32)) {
        self.pos[v.0 as usize] = p as u32;
        self.keys[p] = k;
        self.vals[p] = v;
    }

    /// Put the entry (not later than what was at `p`) at `p` and sift it up.
    fn sift_up(&mut self, mut p: usize, k: u128, v: (u32, u32)) {
        while p > 0 {
            let parent = (p - 1) / ARITY;
            let pk = self.keys[parent];
            if k >= pk {
                break;
            }
            self.place(p, pk, self.vals[parent]);
            p = parent;
        }
        self.place(p, k, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// A small deterministic generator for the test's operations.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            self.0 >> 33
        }
    }

    fn ev(t: u64, seq: u64, kind: u8, index: u32, gen: u32) -> Entry {
        Entry::new(t, seq, Key { kind, index }, gen)
    }

    /// The queue gives the same events in the same order as a plain binary
    /// heap on (time, sequence) from which the entries a later push of the
    /// same key replaced are skipped (the engine's stale events).
    #[test]
    fn same_order_as_a_plain_heap_without_the_replaced_entries() {
        let mut rng = Lcg(7);
        let mut q = EventQueue::new();
        let mut plain: BinaryHeap<Reverse<(u64, u64, u8, u32)>> = BinaryHeap::new();
        // The live sequence number of each key, as the engine's generations.
        let mut live = std::collections::HashMap::new();
        let (mut now, mut seq) = (0u64, 0u64);
        let mut got = Vec::new();
        let mut want = Vec::new();
        for round in 0..20_000 {
            for _ in 0..rng.next() % 3 {
                seq += 1;
                let kind = (rng.next() % 3) as u8;
                let index = (rng.next() % 40) as u32;
                // Many equal times, so that the sequence breaks ties.
                let t = now + rng.next() % 50;
                q.push(ev(t, seq, kind, index, seq as u32));
                plain.push(Reverse((t, seq, kind, index)));
                live.insert((kind, index), seq);
            }
            if round % 2 == 0 {
                if let Some(e) = q.pop() {
                    assert!(e.t >= now);
                    now = e.t;
                    got.push((e.t, e.seq));
                }
                // The plain heap's next live event.
                while let Some(Reverse((t, s, k, i))) = plain.pop() {
                    if live.get(&(k, i)) == Some(&s) {
                        live.remove(&(k, i));
                        want.push((t, s));
                        break;
                    }
                }
            }
        }
        while let Some(e) = q.pop() {
            got.push((e.t, e.seq));
        }
        while let Some(Reverse((t, s, k, i))) = plain.pop() {
            if live.get(&(k, i)) == Some(&s) {
                live.remove(&(k, i));
                want.push((t, s));
            }
        }
        assert!(got.len() > 10_000);
        assert_eq!(got, want);
    }

    /// The queue against a reference kept as a B-tree map of (time,
    /// sequence) -> key and a map of key -> its (time, sequence): random
    /// pushes (replacing a key's entry), finishes and pops, with times
    /// equal (ties), near, far, and in the past of the last event taken
    /// (which the queue must still give first).
    #[test]
    fn same_order_as_a_sorted_map_with_far_and_past_times() {
        use std::collections::{BTreeMap, HashMap};
        for seed in [1, 2, 3] {
            let mut rng = Lcg(seed);
            let mut q = EventQueue::new();
            let mut by_order: BTreeMap<(u64, u64), (u8, u32, u32)> = BTreeMap::new();
            let mut by_key: HashMap<(u8, u32), (u64, u64)> = HashMap::new();
            let (mut now, mut seq, mut taken) = (0u64, 0u64, 0);
            for _ in 0..60_000 {
                let r = rng.next() % 10;
                if r < 5 {
                    seq += 1;
                    let (kind, index) = ((rng.next() % KINDS as u64) as u8, (rng.next() % 300) as u32);
                    let t = match rng.next() % 8 {
                        0 => now.saturating_sub(rng.next() % 3),
                        1 => now,
                        2 => now + (rng.next() << 8),
                        3 => now + rng.next() % 40_000_000,
                        _ => now + rng.next() % 2000,
                    };
                    let gen = rng.next() as u32;
                    // As the engine holds a segment end at the instant.
                    if t == now && rng.next() % 2 == 0 {
                        q.hold(ev(t, seq, kind, index, gen));
                    } else {
                        q.push(ev(t, seq, kind, index, gen));
                    }
                    if let Some(old) = by_key.insert((kind, index), (t, seq)) {
                        by_order.remove(&old);
                    }
                    by_order.insert((t, seq), (kind, index, gen));
                } else {
                    let want = by_order.iter().next().map(|(&(t, s), &(k, i, g))| (t, s, k, i, g));
                    let got = q.next().map(|e| (e.t, e.seq, e.kind(), e.index(), e.gen));
                    assert_eq!(got, want);
                    let Some(e) = q.next() else { continue };
                    if r < 8 {
                        if !q.take_held(&e) {
                            q.finish(&e);
                        }
                    } else {
                        assert_eq!(q.pop().map(|x| x.seq), Some(e.seq));
                    }
                    by_order.remove(&(e.t, e.seq));
                    by_key.remove(&(e.kind(), e.index()));
                    now = now.max(e.t);
                    taken += 1;
                }
                assert_eq!(q.len(), by_order.len());
            }
            while let Some(e) = q.pop() {
                let (&(t, s), _) = by_order.iter().next().unwrap();
                assert_eq!((e.t, e.seq), (t, s));
                by_order.remove(&(t, s));
            }
            assert!(by_order.is_empty() && q.is_empty());
            assert!(taken > 20_000);
        }
    }

    #[test]
    fn ties_go_by_sequence_and_a_replaced_entry_moves() {
        let mut q = EventQueue::new();
        // Three at one time, pushed out of key order; one later.
        q.push(ev(100, 1, 2, 9, 0));
        q.push(ev(100, 2, 0, 1, 0));
        q.push(ev(1 << 40, 3, 1, 1, 0));
        q.push(ev(100, 4, 0, 3, 0));
        // The first one moves past the later one; the later one moves first.
        q.push(ev((1 << 40) + 1, 5, 2, 9, 0));
        q.push(ev(50, 6, 1, 1, 0));
        let order: Vec<(u64, u64)> = std::iter::from_fn(|| q.pop()).map(|e| (e.t, e.seq)).collect();
        assert_eq!(order, [(50, 6), (100, 2), (100, 4), ((1 << 40) + 1, 5)]);
        // A handled entry replaced by a later one stays queued once.
        q.push(ev(10, 7, 0, 0, 0));
        let top = q.peek().unwrap();
        q.push(ev(1 << 42, 8, 0, 0, 1));
        q.finish(&top);
        assert_eq!(q.len(), 1);
        assert_eq!(q.pop().map(|e| (e.t, e.gen)), Some((1 << 42, 1)));
    }

    #[test]
    fn a_held_event_takes_its_place_in_the_order_and_is_replaced_like_an_entry() {
        let mut q = EventQueue::default();
        q.push(ev(10, 1, 0, 1, 0));
        q.push(ev(10, 2, 0, 2, 0));
        q.push(ev(1 << 50, 3, 0, 3, 0));
        // Handling the first, a spinner's end for ever is replaced by one
        // now: held, its entry in the heap gone.
        let first = q.next().unwrap();
        q.hold(ev(10, 4, 0, 3, 1));
        assert_eq!(q.len(), 3);
        // A second held key goes to the heap.
        q.hold(ev(10, 5, 0, 4, 0));
        q.finish(&first);
        let order: Vec<(u64, u32)> = std::iter::from_fn(|| q.pop()).map(|e| (e.seq, e.index())).collect();
        assert_eq!(order, [(2, 2), (4, 3), (5, 4)]);
        // A push of the held key replaces it, as in the heap.
        q.push(ev(20, 6, 0, 9, 0));
        q.hold(ev(20, 7, 0, 8, 0));
        q.push(ev(30, 8, 0, 8, 1));
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop().map(|e| e.seq), Some(6));
        assert_eq!(q.pop().map(|e| (e.seq, e.gen)), Some((8, 1)));
        // Taken while being handled, it is not finished again.
        q.hold(ev(40, 9, 0, 8, 2));
        let e = q.next().unwrap();
        assert!(q.take_held(&e) && !q.take_held(&e) && q.is_empty());
    }

    #[test]
    fn a_push_while_handling_replaces_the_handled_entry() {
        let mut q = EventQueue::new();
        q.push(ev(10, 1, 0, 5, 0));
        q.push(ev(20, 2, 1, 5, 0));
        let top = q.peek().unwrap();
        assert_eq!((top.t, top.key()), (10, Key { kind: 0, index: 5 }));
        // Handling it arms the next event of the same key, later than the
        // other one.
        q.push(ev(30, 3, 0, 5, 1));
        q.finish(&top);
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop().map(|e| (e.t, e.seq)), Some((20, 2)));
        assert_eq!(q.pop().map(|e| (e.t, e.seq, e.gen)), Some((30, 3, 1)));
        assert!(q.pop().is_none());
        // Not replaced: finish removes it.
        q.push(ev(40, 4, 1, 0, 0));
        q.push(ev(50, 5, 1, 1, 0));
        let top = q.peek().unwrap();
        q.finish(&top);
        assert_eq!(q.pop().map(|e| e.seq), Some(5));
        assert!(q.is_empty());
    }
}
