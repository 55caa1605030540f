// SPDX-License-Identifier: GPL-2.0-only
//! The papers' policies on top of the fair class: `OnCfs` and the one
//! `impl Policy` that serves every policy built on it.

use super::Cfs;
use crate::policy::{Enq, Policy, Wake};
use crate::sim::{Sim, Tid};

/// A policy on top of the fair-class model: each hook it does not write is
/// forwarded to its `Cfs`, which keeps the run queues, preemption and load
/// balancing, so the policy writes only the hooks it changes.
///
/// A hook added to `Policy` goes here too, with a forwarding default, and
/// into the blanket `impl Policy` below: that one place serves every such
/// policy. A hook without a default in `Policy` fails to compile until it
/// is; one with a default would otherwise keep that default under these
/// policies and never reach the fair class.
pub trait OnCfs {
    fn cfs(&self) -> &Cfs;
    fn cfs_mut(&mut self) -> &mut Cfs;
    fn name(&self) -> String;
    fn init(&mut self, sim: &mut Sim) {
        self.cfs_mut().init(sim)
    }
    fn init_task(&mut self, sim: &mut Sim, t: Tid, parent: Option<Tid>) {
        self.cfs_mut().init_task(sim, t, parent)
    }
    fn exit_task(&mut self, sim: &mut Sim, t: Tid) {
        self.cfs_mut().exit_task(sim, t)
    }
    fn set_nice(&mut self, sim: &mut Sim, t: Tid) {
        self.cfs_mut().set_nice(sim, t)
    }
    fn set_cpumask(&mut self, sim: &mut Sim, t: Tid) {
        self.cfs_mut().set_cpumask(sim, t)
    }
    fn select_cpu(&mut self, sim: &mut Sim, t: Tid, prev_cpu: u32, wake: Wake) -> u32 {
        self.cfs_mut().select_cpu(sim, t, prev_cpu, wake)
    }
    fn enqueue(&mut self, sim: &mut Sim, t: Tid, cpu: u32, flags: Enq) {
        self.cfs_mut().enqueue(sim, t, cpu, flags)
    }
    fn dispatch(&mut self, sim: &mut Sim, cpu: u32) -> Option<Tid> {
        self.cfs_mut().dispatch(sim, cpu)
    }
    fn running(&mut self, sim: &mut Sim, t: Tid, cpu: u32) {
        self.cfs_mut().running(sim, t, cpu)
    }
    fn stopping(&mut self, sim: &mut Sim, t: Tid, cpu: u32, runnable: bool) {
        self.cfs_mut().stopping(sim, t, cpu, runnable)
    }
    fn tick(&mut self, sim: &mut Sim, cpu: u32, t: Tid) {
        self.cfs_mut().tick(sim, cpu, t)
    }
    fn update_idle(&mut self, sim: &mut Sim, cpu: u32, idle: bool) {
        self.cfs_mut().update_idle(sim, cpu, idle)
    }
    fn timer(&mut self, sim: &mut Sim, token: u64) {
        self.cfs_mut().timer(sim, token)
    }
    fn stats(&self) -> serde_json::Value {
        self.cfs().stats()
    }
}

impl<P: OnCfs> Policy for P {
    fn name(&self) -> String {
        OnCfs::name(self)
    }
    fn init(&mut self, sim: &mut Sim) {
        OnCfs::init(self, sim)
    }
    fn init_task(&mut self, sim: &mut Sim, t: Tid, parent: Option<Tid>) {
        OnCfs::init_task(self, sim, t, parent)
    }
    fn exit_task(&mut self, sim: &mut Sim, t: Tid) {
        OnCfs::exit_task(self, sim, t)
    }
    fn set_nice(&mut self, sim: &mut Sim, t: Tid) {
        OnCfs::set_nice(self, sim, t)
    }
    fn set_cpumask(&mut self, sim: &mut Sim, t: Tid) {
        OnCfs::set_cpumask(self, sim, t)
    }
    fn select_cpu(&mut self, sim: &mut Sim, t: Tid, prev_cpu: u32, wake: Wake) -> u32 {
        OnCfs::select_cpu(self, sim, t, prev_cpu, wake)
    }
    fn enqueue(&mut self, sim: &mut Sim, t: Tid, cpu: u32, flags: Enq) {
        OnCfs::enqueue(self, sim, t, cpu, flags)
    }
    fn dispatch(&mut self, sim: &mut Sim, cpu: u32) -> Option<Tid> {
        OnCfs::dispatch(self, sim, cpu)
    }
    fn running(&mut self, sim: &mut Sim, t: Tid, cpu: u32) {
        OnCfs::running(self, sim, t, cpu)
    }
    fn stopping(&mut self, sim: &mut Sim, t: Tid, cpu: u32, runnable: bool) {
        OnCfs::stopping(self, sim, t, cpu, runnable)
    }
    fn tick(&mut self, sim: &mut Sim, cpu: u32, t: Tid) {
        OnCfs::tick(self, sim, cpu, t)
    }
    fn update_idle(&mut self, sim: &mut Sim, cpu: u32, idle: bool) {
        OnCfs::update_idle(self, sim, cpu, idle)
    }
    fn timer(&mut self, sim: &mut Sim, token: u64) {
        OnCfs::timer(self, sim, token)
    }
    fn stats(&self) -> serde_json::Value {
        OnCfs::stats(self)
    }
}

