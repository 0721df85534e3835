//! burn-bench: the Burn framework's native driver. Runs one workload on Burn's ndarray backend under
//! its autodiff decorator (max_pool2d: the forward alone, on ndarray without it), on one thread, and
//! prints ONE JSON line on stdout, the protocol of harness/running/worker.py and burtorch-bench, so
//! the harness treats it as burn/eager/rust/cpu.
mod cli;
mod graphs;
mod inputs;
mod measure;
mod models;
mod pool;
mod process;
mod training;

use measure::Workload;
use models::{Gpt, Mlp};
use training::Trainer;

const PROGRAM: &str = "burn-bench";
const USAGE: &str = "usage: burn-bench WORKLOAD --iterations N [--warmup W] [--blocks K] [--timing paper|lean]
                  [--param NAME=VALUE ...] [--inputs DIR]
Runs WORKLOAD on Burn (burn-ndarray under burn-autodiff, one thread) and prints one JSON line
(see harness/running/worker.py). tiny and small are FP64 scalar graphs of one-element tensors;
mlp and gpt train in FP32 on the shared-inputs folder DIR that the workload's prepare() wrote;
max_pool2d pools the FP32 input in DIR, forward only, on burn-ndarray alone.
Burn has no loop of the authors' programs: --timing paper runs ours too, and the line's timed_as
says lean (workloads/timed_regions.csv).
workloads: tiny, small, mlp, gpt, max_pool2d
";

/// Burn as Cargo.toml pins it (exactly, every crate in Cargo.lock): each trial's framework_version.
fn version() -> String {
    const MANIFEST: &str = include_str!("../Cargo.toml");
    let pinned = MANIFEST.lines().find_map(|line| line.strip_prefix("burn-tensor = { version = \"="));
    let burn = pinned.and_then(|rest| rest.split('"').next()).unwrap_or("?");
    format!("burn {burn} (burn-ndarray + burn-autodiff; simd, no multi-threads)")
}

/// The workload, ready to run; Err(message, exit code) where it cannot.
fn open(options: &cli::Options) -> Result<Box<dyn Workload>, (String, i32)> {
    let usage = |e: String| (e, 2);
    let steps = options.warmup + options.iterations;
    let inputs = options.inputs.as_deref();
    let fail = |e: String| (e, 1);
    let workload: Box<dyn Workload> = match options.workload.as_str() {
        "tiny" => Box::new(graphs::ScalarGraph::new(graphs::tiny, &cli::resolve(options, &graphs::TINY_DEFAULTS).map_err(usage)?)),
        "small" => Box::new(graphs::ScalarGraph::new(graphs::small, &cli::resolve(options, &graphs::SMALL_DEFAULTS).map_err(usage)?)),
        "mlp" => {
            let params = cli::resolve(options, &models::MLP_DEFAULTS).map_err(usage)?;
            Box::new(Trainer::<Mlp>::open(Mlp::from_inputs, inputs, &params, steps).map_err(fail)?)
        }
        "gpt" => {
            let params = cli::resolve(options, &models::GPT_DEFAULTS).map_err(usage)?;
            Box::new(Trainer::<Gpt>::open(Gpt::from_inputs, inputs, &params, steps).map_err(fail)?)
        }
        "max_pool2d" => {
            let params = cli::resolve(options, &pool::DEFAULTS).map_err(usage)?;
            Box::new(pool::MaxPool2d::open(inputs, &params).map_err(fail)?)
        }
        other => return Err(usage(format!("unknown workload '{other}' (have: tiny, small, mlp, gpt, max_pool2d)"))),
    };
    Ok(workload)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match cli::parse(&args) {
        Ok(options) => options,
        Err(e) => {
            eprintln!("{PROGRAM}: error: {e} (try --help)");
            std::process::exit(2);
        }
    };
    if options.help {
        print!("{USAGE}");
        return;
    }
    if options.version {
        println!("{}", version());
        return;
    }
    let mut workload = match open(&options) {
        Ok(w) => w,
        Err((e, code)) => {
            eprintln!("{PROGRAM}: error: {e}{}", if code == 2 { " (try --help)" } else { "" });
            std::process::exit(code);
        }
    };
    let line = measure::measure_and_report(workload.as_mut(), options.warmup, options.iterations, options.blocks, &version());
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if out.write_all(line.as_bytes()).and_then(|_| out.flush()).is_err() {
        std::process::exit(1);
    }
}
