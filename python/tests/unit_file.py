# SPDX-License-Identifier: GPL-2.0-only
"""A systemd unit and its EnvironmentFile read as systemd reads them, for
the tests of the Debian package's service (test_dist.py) and of its command
line inside the VM (vm/conftest.py): the command ExecStart runs with the
defaults file's values, and the settings a test checks."""

import pathlib
import shlex

ROOT = pathlib.Path(__file__).resolve().parents[2]
UNIT = ROOT / "packaging" / "warmcore-sched.service"
DEFAULTS = ROOT / "packaging" / "warmcore.default"


def settings(text):
    """{(section, key): value} of a unit file (the last value of a key)."""
    out, section = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        k, _, v = line.partition("=")
        out[(section, k.strip())] = v.strip()
    return out


def environment(text):
    """KEY=VALUE lines of an EnvironmentFile; quotes around a value removed."""
    env = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;" or "=" not in line:
            continue
        k, _, v = line.partition("=")
        words = shlex.split(v) if v.strip() else []
        env[k.strip()] = " ".join(words) if len(words) != 1 else words[0]
    return env


def command(unit_text, env_text):
    """ExecStart's arguments as systemd expands them: ${VAR} is one
    argument, $VAR splits at white space (an empty one is no argument)."""
    env = environment(env_text)
    argv = []
    for w in shlex.split(settings(unit_text)[("Service", "ExecStart")]):
        if w.startswith("${") and w.endswith("}"):
            argv.append(env.get(w[2:-1], ""))
        elif w.startswith("$"):
            argv.extend(env.get(w[1:], "").split())
        else:
            argv.append(w)
    return argv
