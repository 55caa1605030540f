# SPDX-License-Identifier: GPL-2.0-only
"""The Ray engine of ``warmcore sweep`` and ``warmcore reproduce --ray``.

``warmcore`` starts this driver and writes the runs to its standard input,
one JSON object a line; each becomes a Ray task that runs the simulator
through the bindings (``warmcore.sim``, the report of ``warmcore sim
--json``). Results come back on standard output as they finish, one JSON
object a line: ``{"index", "report" | "error", "wall_s"}``. Ray retries a
task whose worker died (``max_retries``); a run that fails in the simulator
is a result with its error, not a retry.
"""

import argparse
import json
import os
import signal
import sys
import time

# A task whose worker process died is run again this many times.
MAX_RETRIES = 3


def run_one(job):
    import warmcore

    t0 = time.perf_counter()
    try:
        report = warmcore.sim(
            job["workload"],
            machine=job["machine"],
            policy=job["policy"],
            governor=job["governor"],
            seed=job["seed"],
            trace=job.get("trace"),
            max_time=job["max_sim_ns"] / 1e9,
            max_events=job["max_events"],
        )
        return {"report": report, "wall_s": time.perf_counter() - t0}
    except warmcore.SimError as e:
        return {"error": str(e), "wall_s": time.perf_counter() - t0}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--address", help="a running cluster's HOST:PORT (else a local instance)")
    ap.add_argument("--cpus", type=int, help="CPUs of the local instance")
    ap.add_argument("--wheel", help="the warmcore wheel to ship to the workers")
    a = ap.parse_args()

    # Results go to the descriptor standard output had; anything else that
    # writes there (Ray's own messages) goes to standard error.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)

    if a.address and "RAY_AUTH_MODE" not in os.environ and (
        os.environ.get("RAY_AUTH_TOKEN") or os.path.exists(os.path.expanduser("~/.ray/auth_token"))
    ):
        # A cluster started by `ray start` checks a token by default, but a
        # client joining it sends one only in token mode: send the one we have.
        os.environ["RAY_AUTH_MODE"] = "token"

    import ray

    runtime_env = {"py_modules": [a.wheel]} if a.wheel else None
    try:
        if a.address:
            ray.init(address=a.address, runtime_env=runtime_env, log_to_driver=False)
        else:
            # A new instance even when a cluster started by `ray start` runs
            # on this machine, which ray.init would join without "local".
            ray.init(address="local", num_cpus=a.cpus, include_dashboard=False, runtime_env=runtime_env,
                     log_to_driver=False)
        task = ray.remote(max_retries=MAX_RETRIES, retry_exceptions=False)(run_one)
        jobs = [json.loads(line) for line in sys.stdin if line.strip()]
        pending = {task.remote(j): j["index"] for j in jobs}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=min(len(pending), 64), timeout=0.2)
            for ref in ready:
                index = pending.pop(ref)
                try:
                    result = ray.get(ref)
                except Exception as e:  # retries exhausted: the row says why
                    msg = str(e).strip().splitlines()
                    result = {"error": f"ray: {type(e).__name__}: {msg[0] if msg else ''}", "wall_s": 0.0}
                result["index"] = index
                out.write(json.dumps(result) + "\n")
                out.flush()
    except KeyboardInterrupt:
        pass
    finally:
        # A second interrupt must not cut the shutdown short.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        ray.shutdown()


if __name__ == "__main__":
    main()
