# SPDX-License-Identifier: GPL-2.0-only
"""Nest's warm cores through PM QoS, and CPU hotplug, in the main boot
(guest/main.sh)."""


def test_pmqos_no_cpu_held_before_the_runs(main_vm):
    before = main_vm.get("QOS_BEFORE")
    assert before is not None and "n/a" not in before, before


def test_pmqos_every_value_restored_after_nest_exits(main_vm):
    assert main_vm.get("QOS_AFTER_EXIT") == main_vm.get("QOS_BEFORE"), \
        f"{main_vm.get('QOS_AFTER_EXIT')} after, {main_vm.get('QOS_BEFORE')} before"


def test_pmqos_nest_holds_primary_cpus_in_polling(main_vm):
    # Polled for the whole stress (guest/main.sh): the nest changes under
    # it, and one read may fall where it holds none.
    assert "n/a" in (main_vm.get("QOS_HELD") or ""), \
        f"never held during the stress ({main_vm.get('QOS_POLL')}; loader: {main_vm.all('QOSK_ERR')}, " \
        f"statistics {main_vm.all('QOSK_STATS')})"


def test_pmqos_kill_9_leaves_them_held(main_vm):
    assert "n/a" in (main_vm.get("QOS_AFTER_KILL") or ""), main_vm.get("QOS_AFTER_KILL")


def test_pmqos_the_next_start_restores_them_and_says_so(main_vm):
    restore = [l for l in main_vm.all("RESTORE_ERR") if "restored the PM QoS" in l]
    assert main_vm.get("RESTORE_RC") == "0" and restore and main_vm.get("QOS_RESTORED") == main_vm.get("QOS_BEFORE"), \
        f"{main_vm.get('QOS_RESTORED')}, {restore}"


def test_hotplug_the_scheduler_restarts_after_a_cpu_goes_offline_and_back_never_ejected(main_vm):
    hp = main_vm.all("HOTPLUG_ERR")
    assert main_vm.get("HOTPLUG_STATE") == "enabled" and main_vm.get("HOTPLUG_RC") == "0" \
        and sum("starting it again" in l for l in hp) >= 1 and not any("eject" in l for l in hp), \
        f"{main_vm.get('HOTPLUG_STATE')}, status {main_vm.get('HOTPLUG_RC')}: {hp} " \
        f"(offline: {main_vm.get('HOTPLUG_OFF')}; back: {main_vm.get('HOTPLUG_ON')})"
