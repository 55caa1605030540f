# SPDX-License-Identifier: GPL-2.0-only
"""The tracer on the VM's kernel (the host's may differ), in the main boot
(guest/main.sh): a known workload, then an idle recording stopped by
SIGINT."""


def test_record_exit_status_0_on_this_kernel(main_vm):
    assert main_vm.get("REC_RC") == "0", main_vm.all("REC_ERR")


def test_record_a_complete_trace_nothing_lost(main_vm):
    st, lost = main_vm.info("REC_INFO", "status"), main_vm.info("REC_INFO", "lost events")
    assert st == "complete" and lost == "0", f"{st}, lost {lost}"


def test_record_the_50_forks_are_in_the_trace(main_vm):
    forks = main_vm.get("REC_FORKS")
    assert forks is not None and forks.isdigit() and int(forks) >= 50, forks


def test_record_trace_stats_accepts_the_recording(main_vm):
    assert main_vm.get("REC_STATS_RC") == "0"


def test_record_sigint_leaves_a_complete_trace(main_vm):
    # Interrupted, as every command says it (130, docs/conventions.md), with
    # the trace finished.
    # The SIGINT came while it recorded: its programs were attached.
    st, links = main_vm.info("REC_INT_INFO", "status"), (main_vm.get("REC_INT_ATTACHED") or "0").split()[0]
    assert main_vm.get("REC_INT_RC") == "130" and st == "complete" and links.isdigit() and int(links) > 0, \
        f"{main_vm.get('REC_INT_RC')}, {st}, SIGINT with {links} programs attached"
