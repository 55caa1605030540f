# SPDX-License-Identifier: GPL-2.0-only
"""The scx project's schedulers (peers/Cargo.toml), their released loaders
run unmodified with their default options in one boot (guest/peers.sh),
each under the same mixed stress with pinned and cpuset tasks as warmcore
sched's policies in test_policies.py, but without the nice-19 pair: with
it, the watchdog ejected all three in every boot for the niced task's
stall ("runnable task stall", 5.4-7.1 s), where warmcore's policies ran
the same stress (docs/peers-in-the-vm.md).

A peer that does not load on the VM's kernel fails here with what its
loader and the kernel said. An ejection (the watchdog, the peer's own
scx_bpf_error) shows as the scheduler no longer enabled after the stress,
a second enable, or a kernel line other than "unregistered from user
space"; if one appears, check the host's load first (QEMU starved by a
busy host runs the guest too slowly for the watchdog)."""

import pytest

from .conftest import PEERS, check_stress, report


@pytest.fixture(params=PEERS)
def peer(request):
    return request.param


def ops_prefix(peer):
    """What /sys/kernel/sched_ext/root/ops starts with: the scheduler's
    sched_ext_ops name, the crate's name without scx_ (the loaders append
    their version and build)."""
    return peer.removeprefix("scx_") + "_"


def said(vm, peer):
    """What the loader and the kernel said, for a failure's message: the
    loader's errors and its last lines (after an ejection the loader prints
    the kernel's debug dump, then "Error: EXIT: ..."), the kernel's lines."""
    out = vm.all("OUT", peer)
    errs = [l for l in out if "error" in l.lower() or "EXIT" in l]
    return "\n".join(["loader:", *errs, *[l for l in out[-5:] if l not in errs], "kernel:", *vm.all("KMSG", peer)])


def test_the_peers_guest_script_ran_to_the_end(peers_vm):
    assert "DONE" in peers_vm.lines, f"the guest stopped early (status {peers_vm.rc}): see {peers_vm}"


def test_loads_and_attaches_as_itself(peers_vm, peer):
    st = peers_vm.get("STATE", peer) or ""
    report(f"{peer}: attached in {peers_vm.get('LOAD_S', peer)} s as {st.removeprefix('enabled ')!r}")
    assert st.startswith(f"enabled {ops_prefix(peer)}"), \
        f"{peer} did not load on the VM's kernel (sched_ext {st!r}):\n{said(peers_vm, peer)}"


def test_still_enabled_as_itself_after_the_stress(peers_vm, peer):
    assert peers_vm.get("STATE_AFTER", peer) == peers_vm.get("STATE", peer), \
        f"{peer}: before the stress {peers_vm.get('STATE', peer)!r}, after {peers_vm.get('STATE_AFTER', peer)!r}:\n" \
        + said(peers_vm, peer)


def test_enabled_once(peers_vm, peer):
    # A loader that restarts its scheduler after an ejection enables it again.
    assert peers_vm.get("ENABLES", peer) == "1", f"{peer}: enabled {peers_vm.get('ENABLES', peer)} times:\n" \
        + said(peers_vm, peer)


def test_the_stress_and_the_pinned_and_cpuset_tasks_beside_it_finished(peers_vm, peer):
    check_stress(peers_vm, peer)


def test_detached_on_sigint_with_status_0(peers_vm, peer):
    assert peers_vm.get("SCHED_RC", peer) == "0", f"{peer}: status {peers_vm.get('SCHED_RC', peer)}:\n" \
        + said(peers_vm, peer)
    assert peers_vm.get("STATE_END", peer) == "disabled", f"{peer}: {peers_vm.get('STATE_END', peer)!r}"


def test_the_kernel_disabled_it_only_on_request(peers_vm, peer):
    kmsg = peers_vm.all("KMSG", peer)
    disabled = [l for l in kmsg if "disabled" in l]
    others = [l for l in kmsg if "stall" in l or "watchdog" in l or "error" in l.lower()]
    assert disabled and all("unregistered from user space" in l for l in disabled) and not others, \
        f"{peer}: the kernel's lines: {kmsg}"
