// SPDX-License-Identifier: GPL-2.0-only
//! `warmcore view` and `warmcore plot`: the viewer is Python (Bokeh and
//! Datashader, python/warmcore); this runs it in the project's virtual
//! environment, `.venv`, which `make build` sets up.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Result};
use clap::Args;

use warmcore_args::ns as parse_ns;

/// Where the project's Python is (the viewer's, the figures of `warmcore
/// reproduce`): $WARMCORE_PYTHON; else `.venv/bin/python` in the checkout
/// that holds this binary (target/release/warmcore, `make build`), by the
/// path it was started by, then by its resolved path, or in the current
/// directory; else, installed from the wheel, the Python of the environment
/// it was installed into (beside it in its bin/), or `python3` on PATH
/// (`pip install --user`), if it has the warmcore package.
pub(crate) fn python() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("WARMCORE_PYTHON") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        bail!("WARMCORE_PYTHON={} is not a file: point it at the Python of an environment with warmcore installed, or unset it", p.display());
    }
    // The path it was started by first: when target/ is a link to a cargo
    // directory elsewhere, current_exe() is resolved into that directory.
    let invoked = std::env::args_os().next().map(PathBuf::from).filter(|p| p.components().count() > 1);
    let exes: Vec<PathBuf> = invoked.into_iter().chain(std::env::current_exe().ok()).collect();
    let mut checkout = Vec::new();
    for exe in &exes {
        for dir in exe.ancestors().skip(1).take(4) {
            checkout.push(dir.join(".venv/bin/python"));
        }
    }
    checkout.push(PathBuf::from(".venv/bin/python"));
    if let Some(p) = checkout.into_iter().find(|p| p.is_file()) {
        return Ok(p);
    }
    let mut installed: Vec<PathBuf> =
        exes.iter().filter_map(|e| e.parent()).flat_map(|d| [d.join("python3"), d.join("python")]).filter(|p| p.is_file()).collect();
    installed.push(PathBuf::from("python3"));
    installed.into_iter().find(|p| has_warmcore(p)).ok_or_else(|| {
        anyhow::anyhow!(
            "this needs warmcore's Python package, which is not installed beside this binary: `pip install 'warmcore[viewer]'` (Debian's package holds the server side only; in a checkout, `make build`)"
        )
    })
}

/// Whether `python` runs and can import warmcore (the launcher of its
/// commands, warmcore.run), without importing it.
fn has_warmcore(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import importlib.util as u, sys; sys.exit(u.find_spec('warmcore.run') is None)"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The arguments that run one of the Python package's commands (MODULE's
/// `__main__`) through its launcher, which turns a missing package of the
/// viewer's extra into one line saying which `pip install` brings it.
pub(crate) fn module_args(module: &str) -> [&str; 3] {
    ["-m", "warmcore.run", module]
}

#[derive(Args)]
pub struct ViewArgs {
    /// The .wct trace to open.
    file: PathBuf,
    /// Port of the local server (bound to 127.0.0.1 only).
    #[arg(long, default_value_t = 5006)]
    port: u16,
    /// The timeline's first colouring: a built-in view (freq, process) or a view file.
    #[arg(long, default_value = "freq")]
    view: String,
}

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct PlotArgs {
    #[command(subcommand)]
    sub: Option<PlotCmd>,
    /// The .wct trace to render.
    #[arg(required = true)]
    file: Option<PathBuf>,
    /// A built-in view (freq, process, runqueue, nest, smove) or a view file (.toml, .json).
    #[arg(long, default_value = "freq")]
    view: String,
    /// Start of the window from the trace's first event: 1.5s, 200ms, 40us, 123ns (a bare number is seconds).
    #[arg(long, value_parser = parse_ns)]
    from: Option<u64>,
    /// End of the window from the trace's first event.
    #[arg(long, value_parser = parse_ns)]
    to: Option<u64>,
    /// The picture: OUT.png (raster) or OUT.html (interactive, exact segments when few).
    #[arg(short, long, required = true)]
    output: Option<PathBuf>,
}

#[derive(clap::Subcommand)]
enum PlotCmd {
    /// Draw a sweep's results (warmcore sweep): METRIC against AXIS, a line
    /// per value of --by (or a heat map with --heat), a panel per value of
    /// the other axes that vary; the mean over seeds, with their range.
    Sweep(SweepPlotArgs),
}

#[derive(Args)]
struct SweepPlotArgs {
    /// The sweep's output directory (or its results.parquet).
    dir: PathBuf,
    /// The axis along x: a column of results.parquet (policy.delay_us, machine, ...).
    #[arg(long)]
    x: String,
    /// The metric along y (makespan_ns, metric.value, energy_j, ...).
    #[arg(long)]
    y: String,
    /// One line (or heat-map row) per value of this axis.
    #[arg(long)]
    by: Option<String>,
    /// A heat map of y over x and --by instead of lines.
    #[arg(long, requires = "by")]
    heat: bool,
    /// The picture (PNG); default DIR/Y-by-X.png.
    #[arg(short, long)]
    output: Option<PathBuf>,
}

pub(crate) fn run_python(module: &str, args: Vec<String>) -> Result<()> {
    let py = python()?;
    let mut cmd = Command::new(&py);
    cmd.args(module_args(module)).args(&args);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Replace this process: the server then gets Ctrl-C directly.
        let e = cmd.exec();
        bail!("cannot run {}: {e}: run `make build` to set up .venv", py.display());
    }
    #[allow(unreachable_code)]
    {
        let status = cmd.status()?;
        if !status.success() {
            std::process::exit(status.code().unwrap_or(1));
        }
        Ok(())
    }
}

pub(crate) fn path_arg(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

pub fn view(a: ViewArgs) -> Result<()> {
    // A file that is not a readable trace is an error here, before a server starts.
    crate::trace::open(&a.file)?;
    run_python("warmcore.view", vec!["serve".into(), path_arg(&a.file), "--port".into(), a.port.to_string(), "--view".into(), a.view])
}

pub fn plot(a: PlotArgs) -> Result<()> {
    if let Some(PlotCmd::Sweep(s)) = a.sub {
        return plot_sweep(s);
    }
    let (Some(file), Some(output)) = (a.file, a.output) else {
        bail!(warmcore_args::UsageError::new(
            "warmcore plot takes a trace and -o OUT.png, or `sweep DIR --x AXIS --y METRIC` (see `warmcore plot --help`)"
        ));
    };
    warmcore_args::window(a.from, a.to).map_err(warmcore_args::UsageError::new)?;
    crate::trace::open(&file)?;
    let mut args = vec!["plot".into(), path_arg(&file), "--view".into(), a.view, "-o".into(), path_arg(&output)];
    if let Some(f) = a.from {
        args.extend(["--from".into(), f.to_string()]);
    }
    if let Some(t) = a.to {
        args.extend(["--to".into(), t.to_string()]);
    }
    run_python("warmcore.view", args)
}

fn plot_sweep(a: SweepPlotArgs) -> Result<()> {
    let mut args = vec![path_arg(&a.dir), "--x".into(), a.x, "--y".into(), a.y];
    if let Some(b) = a.by {
        args.extend(["--by".into(), b]);
    }
    if a.heat {
        args.push("--heat".into());
    }
    if let Some(o) = a.output {
        args.extend(["-o".into(), path_arg(&o)]);
    }
    run_python("warmcore.sweep_plot", args)
}
