# SPDX-License-Identifier: GPL-2.0-only
"""The Debian package's service on a kernel with sched_ext (guest/topo.sh):
the command its unit starts, with the defaults file's options, loads the
scheduler, and the signal that stops the unit detaches it and puts back the
CPUs' PM QoS values it changed. systemd itself does not run in the VM: the
host checks the unit (test_dist.py), the guest runs what it would."""

import shlex

import unit_file


def test_service_runs_the_units_command_with_the_defaults(topo_vm):
    argv = unit_file.command(unit_file.UNIT.read_text(), unit_file.DEFAULTS.read_text())
    ran = topo_vm.get("SERVICE_CMD")
    assert ran is not None and shlex.split(ran) == argv, f"{ran} (see {topo_vm})"
    kill = unit_file.settings(unit_file.UNIT.read_text())[("Service", "KillSignal")]
    assert topo_vm.get("SERVICE_SIGNAL") == kill.removeprefix("SIG"), topo_vm.get("SERVICE_SIGNAL")
    state = topo_vm.get("SERVICE_STATE") or ""
    assert state.startswith("enabled"), f"{state}: {topo_vm.all('SERVICE_ERR')}"


def test_service_stopped_by_its_signal_restores_pm_qos(topo_vm):
    before, held, after = (topo_vm.get(t) for t in ("SERVICE_QOS_BEFORE", "SERVICE_QOS_HELD", "SERVICE_QOS_AFTER"))
    # Nest (the defaults' policy) held CPUs of its nest in polling...
    assert held and "n/a" in held, f"no CPU's PM QoS was changed while it ran: {held!r} (see {topo_vm})"
    # ...and stopping the unit's way put every value back, exiting 0.
    assert topo_vm.get("SERVICE_RC") == "0", f"{topo_vm.get('SERVICE_RC')}: {topo_vm.all('SERVICE_ERR')}"
    assert topo_vm.get("SERVICE_STATE_END") == "disabled"
    assert before and after == before, f"before {before!r}, after {after!r}"
