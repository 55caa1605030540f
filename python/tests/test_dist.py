# SPDX-License-Identifier: GPL-2.0-only
"""What `make dist` builds into out/dist, installed as people install it:
the wheels into a fresh virtual environment outside the checkout (the
command, `import warmcore`, the viewer's extra and what says it is missing,
`warmcore view` drawn by headless Chromium), and the Debian package (its
contents, lintian, its unit verified by systemd-analyze in a temporary root,
its man pages and bash completion). The service's command line inside the
VM is checked by the VM suite (vm/test_service.py)."""

import os
import pathlib
import re
import shutil
import subprocess
import tomllib
import venv

import pytest

from conftest import ROOT
import unit_file

DIST = ROOT / "out" / "dist"
VERSION = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]["version"]


def built(pattern):
    found = sorted(DIST.glob(pattern))
    if len(found) != 1:
        pytest.fail(f"{len(found)} files {pattern} in {DIST}, not one: run make dist", pytrace=False)
    return found[0]


def run(*args, ok=True, **kw):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kw)
    if ok:
        assert r.returncode == 0, f"{' '.join(map(str, args))}: status {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return r


def tool(name, package):
    path = shutil.which(name)
    if not path:
        pytest.fail(f"no {name}: install {package} (scripts/setup.sh)", pytrace=False)
    return path


def test_the_wheels_pin_the_workspace_version():
    """The command's wheel depends on the Python package of its own version."""
    project = tomllib.loads((ROOT / "python" / "bin" / "pyproject.toml").read_text())["project"]
    pins = project["dependencies"] + sum(project["optional-dependencies"].values(), [])
    assert pins and all(p.endswith(f"=={VERSION}") for p in pins), pins
    assert built("warmcore-*.whl").name.startswith(f"warmcore-{VERSION}-")
    assert built("warmcore_python-*.whl").name.startswith(f"warmcore_python-{VERSION}-")


# The Debian package.

@pytest.fixture(scope="module")
def deb():
    return built("warmcore_*.deb")


@pytest.fixture(scope="module")
def root(deb, tmp_path_factory):
    """The package unpacked into a temporary root, as dpkg installs it."""
    r = tmp_path_factory.mktemp("root")
    run("dpkg-deb", "-x", deb, r)
    return r


def test_the_debian_package_holds_what_it_declares(deb, root, tmp_path):
    listing = run("dpkg-deb", "-c", deb).stdout
    files = {l.split()[-1].lstrip(".") for l in listing.splitlines() if not l.startswith("d")}
    man = {f"/usr/share/man/man1/warmcore-{c}.1.gz" for c in ("sched", "sim", "trace-stats", "vm", "record")}
    wanted = {"/usr/bin/warmcore", "/lib/systemd/system/warmcore-sched.service", "/etc/default/warmcore",
              "/usr/share/bash-completion/completions/warmcore", "/usr/share/zsh/vendor-completions/_warmcore",
              "/usr/share/fish/vendor_completions.d/warmcore.fish", "/usr/share/doc/warmcore/copyright",
              "/usr/share/doc/warmcore/changelog.gz", "/usr/share/man/man1/warmcore.1.gz", *man}
    assert wanted <= files, sorted(wanted - files)
    assert all(f.startswith(("/usr/", "/lib/systemd/system/", "/etc/default/")) for f in files), sorted(files)
    # The unit and the defaults are the project's files as they are.
    assert (root / "lib/systemd/system/warmcore-sched.service").read_bytes() == unit_file.UNIT.read_bytes()
    assert (root / "etc/default/warmcore").read_bytes() == unit_file.DEFAULTS.read_bytes()
    assert run("dpkg-deb", "-I", deb, "conffiles").stdout.split() == ["/etc/default/warmcore"]
    control = run("dpkg-deb", "-f", deb, "Package", "Version", "Depends", "Description").stdout
    assert f"Version: {VERSION}" in control and re.search(r"Depends: .*libc6 \(>= ", control), control
    # The server side: view and plot come from the wheel, which it says.
    assert "pip install 'warmcore[viewer]'" in control
    # The installed binary runs and names its version.
    assert run(root / "usr/bin/warmcore", "--version").stdout.startswith(f"warmcore {VERSION} (")
    run(root / "usr/bin/warmcore", "trace", "synth", "-o", tmp_path / "x.wct", "--events", "1000", "--cpus", "2")
    r = run(root / "usr/bin/warmcore", "view", "x.wct", ok=False, env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path)
    assert r.returncode != 0 and "pip install 'warmcore[viewer]'" in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_lintian_finds_no_error(deb, tmp_path):
    # lintian's scratch files (mldbm-elf-*) stay behind in its TMPDIR.
    env = dict(os.environ, TMPDIR=str(tmp_path))
    r = run(tool("lintian", "lintian"), "--fail-on", "error", deb, ok=False, env=env)
    errors = [l for l in r.stdout.splitlines() if l.startswith("E:")]
    assert r.returncode == 0 and not errors, r.stdout + r.stderr
    if r.stdout.strip():
        print(f"lintian, not errors:\n{r.stdout}")


def test_the_unit_verifies_in_the_installed_root(root, tmp_path):
    """systemd-analyze verify in the root the package was unpacked into,
    beside systemd's own units (the targets the unit is ordered after),
    with its man pages (the unit's Documentation=)."""
    system = tool("systemd-analyze", "systemd") and pathlib.Path("/lib/systemd/system")
    shutil.copytree(root, tmp_path / "root", symlinks=True)
    units = tmp_path / "root/lib/systemd/system"
    for u in system.glob("*.target"):
        if not (units / u.name).exists():
            shutil.copy(u, units, follow_symlinks=False)
    r = run("systemd-analyze", "verify", f"--root={tmp_path / 'root'}", "warmcore-sched.service", ok=False,
            env={"MANPATH": str(root / "usr/share/man"), "PATH": os.environ["PATH"]})
    # Only what concerns the unit: verify also reads the units it names.
    assert r.returncode == 0 and "warmcore-sched" not in r.stderr, r.stderr


def test_a_bad_option_in_the_defaults_fails_once_with_its_error(root, tmp_path):
    """The unit restarts a scheduler that failed, but not for a usage error
    (status 2), and at most StartLimitBurst times a minute: the command the
    unit runs with a misspelt option in the defaults file exits 2 with the
    option's error in one line."""
    unit = (root / "lib/systemd/system/warmcore-sched.service").read_text()
    s = unit_file.settings(unit)
    assert s[("Service", "Restart")] == "on-failure"
    assert s[("Service", "RestartPreventExitStatus")] == "2"
    assert int(s[("Unit", "StartLimitBurst")]) <= 10 and int(s[("Unit", "StartLimitIntervalSec")]) >= 10
    assert s[("Service", "EnvironmentFile")] == "/etc/default/warmcore"
    defaults = (root / "etc/default/warmcore").read_text()
    argv = unit_file.command(unit, defaults)
    assert argv == ["/usr/bin/warmcore", "sched", "--policy", "nest"], argv
    bad = defaults.replace("WARMCORE_FLAGS=", 'WARMCORE_FLAGS="--nest-warm threads --slice-uss 5000"')
    argv = unit_file.command(unit, bad)
    assert argv[-3:] == ["threads", "--slice-uss", "5000"], argv
    r = run(root / argv[0].lstrip("/"), *argv[1:], ok=False, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "--slice-uss" in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_man_and_bash_completion_of_the_package(root):
    r = run(tool("man", "man-db"), "warmcore-sched", env={"MANPATH": str(root / "usr/share/man"), "MANPAGER": "cat",
                                                          "MANWIDTH": "100", "PATH": os.environ["PATH"]})
    assert "SYNOPSIS" in r.stdout and "--policy" in r.stdout, r.stdout[:2000]
    script = root / "usr/share/bash-completion/completions/warmcore"
    line = "warmcore sim --pol"
    r = run("bash", "-c", f'source "{script}"; COMP_WORDS=({line}); COMP_CWORD=2; COMP_LINE="{line}"; '
                          'COMP_POINT=${#COMP_LINE}; _warmcore warmcore --pol sim; printf "%s\\n" "${COMPREPLY[@]}"')
    assert r.stdout.split() == ["--policy"], r.stdout


# The wheels, in a fresh environment outside the checkout.

@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """A virtual environment in a temporary directory with the command's
    wheel (and through it the Python package), without the viewer's extra;
    the wheels copied beside it, PATH without the checkout."""
    home = tmp_path_factory.mktemp("fresh")
    wheels = home / "wheels"
    wheels.mkdir()
    # By file, so that pip takes these and not a package of the same name
    # from the registry; their dependencies come from the registry.
    command, package = (shutil.copy(built(w), wheels) for w in ("warmcore-*.whl", "warmcore_python-*.whl"))
    venv.create(home / "env", with_pip=True)
    env = {"PATH": f"{home / 'env' / 'bin'}:/usr/bin:/bin", "HOME": os.environ.get("HOME", str(home)),
           "LANG": "C.UTF-8"}
    # --no-compile: Python compiles what it imports when it imports it; pip's
    # own pass over every module of the viewer's dependencies took most of
    # the install's time.
    pip = [home / "env" / "bin" / "pip", "install", "-q", "--disable-pip-version-check", "--no-compile",
           "--find-links", wheels]
    run(*pip, command, package, env=env, cwd=home)

    class Fresh:
        pass

    f = Fresh()
    f.home, f.env, f.pip, f.wheels = home, env, pip, (command, package)
    f.run = lambda *a, ok=True: run(*a, ok=ok, env=env, cwd=home)
    return f


def test_the_wheel_gives_the_command_and_the_python_api(fresh):
    warmcore = shutil.which("warmcore", path=fresh.env["PATH"])
    assert warmcore == str(fresh.home / "env" / "bin" / "warmcore")
    assert fresh.run("warmcore", "--version").stdout.startswith(f"warmcore {VERSION} (")
    report = fresh.run("warmcore", "sim", "--workload", "hackbench:groups=1", "--json").stdout
    assert '"makespan_ns"' in report
    fresh.run("warmcore", "trace", "synth", "-o", "t.wct", "--events", "20000", "--cpus", "4")
    assert "busy time" in fresh.run("warmcore", "trace", "stats", "t.wct").stdout
    fresh.run("warmcore", "trace", "export", "t.wct", "--perfetto", "t.pftrace")
    assert (fresh.home / "t.pftrace").stat().st_size > 0
    r = fresh.run("python", "-c", "import warmcore; t = warmcore.open('t.wct'); print(warmcore.__file__, len(t.read()))")
    where, n = r.stdout.split()
    assert where.startswith(str(fresh.home / "env")) and int(n) > 0, r.stdout
    # The man pages and completions, in the environment's share/.
    assert (fresh.home / "env/share/man/man1/warmcore-sched.1").is_file()
    assert (fresh.home / "env/share/bash-completion/completions/warmcore").is_file()


def test_without_the_viewers_extra_view_says_which_pip_install_brings_it(fresh):
    for cmd in (["view", "t.wct"], ["plot", "t.wct", "-o", "t.png"]):
        if not (fresh.home / "t.wct").exists():
            fresh.run("warmcore", "trace", "synth", "-o", "t.wct", "--events", "20000", "--cpus", "4")
        r = fresh.run("warmcore", *cmd, ok=False)
        assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
        assert "pip install 'warmcore[viewer]'" in r.stderr, r.stderr


def test_with_the_viewers_extra_plot_and_view_draw(fresh, needs_browser):
    from warmcore import browser

    command, package = fresh.wheels
    fresh.run(*fresh.pip, f"{command}[viewer]", package)
    t = fresh.home / "v.wct"
    fresh.run("warmcore", "trace", "synth", "-o", t, "--events", "200000", "--cpus", "4")
    fresh.run("warmcore", "plot", t, "-o", "v.png")
    assert (fresh.home / "v.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The server of the fresh environment's command, drawn by Chromium.
    with browser.view_server(fresh.home / "env" / "bin" / "warmcore", t, env=fresh.env) as url, \
            browser.chromium() as d:
        d.get(url)
        browser.wait_text(d, lambda s: "raster:" in s and "rendered in" in s)
