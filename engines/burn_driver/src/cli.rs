//! The command line, as burtorch-bench's (burtorch_ext/src/driver/cli.hpp) and the Python worker's:
//!   burn-bench WORKLOAD --iterations N [--warmup W] [--blocks K] [--timing paper|lean]
//!              [--param NAME=VALUE ...] [--inputs DIR]

#[derive(Debug, Default)]
pub struct Options {
    pub workload: String,
    pub iterations: u64,
    pub warmup: u64,
    pub blocks: u64,
    pub params: Vec<(String, f64)>,
    pub inputs: Option<String>,
    pub help: bool,
    pub version: bool,
}

fn count(name: &str, value: &str) -> Result<u64, String> {
    value.parse::<u64>().map_err(|_| format!("{name}: not a whole number: '{value}'"))
}

/// The options, or the error to print.
pub fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options { blocks: 100, ..Default::default() };
    let mut iterations = None;
    let mut k = 0;
    while k < args.len() {
        let arg = args[k].as_str();
        k += 1;
        if arg == "-h" || arg == "--help" {
            options.help = true;
            return Ok(options);
        }
        if arg == "--version" {
            options.version = true;
            return Ok(options);
        }
        if !arg.starts_with("--") {
            if !options.workload.is_empty() {
                return Err(format!("unexpected argument '{arg}'"));
            }
            options.workload = arg.to_string();
            continue;
        }
        // --name value or --name=value (the value of --param itself holds an '=')
        let (name, value) = match arg.split_once('=') {
            Some((name, value)) => (name, value.to_string()),
            None => {
                let value = args.get(k).ok_or_else(|| format!("{arg} needs a value"))?.clone();
                k += 1;
                (arg, value)
            }
        };
        match name {
            "--iterations" => iterations = Some(count(name, &value)?),
            "--warmup" => options.warmup = count(name, &value)?,
            "--blocks" => options.blocks = count(name, &value)?,
            // Burn has no loop of the authors' programs: every workload runs ours (timed_as: lean).
            "--timing" if value == "paper" || value == "lean" => {}
            "--timing" => return Err(format!("--timing wants paper or lean, got '{value}'")),
            "--inputs" if value.is_empty() => return Err("--inputs needs a folder".into()),
            "--inputs" => options.inputs = Some(value),
            "--param" => {
                let (key, text) = value
                    .split_once('=')
                    .filter(|(key, _)| !key.is_empty())
                    .ok_or_else(|| format!("--param wants NAME=VALUE, got '{value}'"))?;
                let number = text
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| format!("--param {key}: not a finite number: '{text}'"))?;
                options.params.push((key.to_string(), number));
            }
            _ => return Err(format!("unknown option '{name}'")),
        }
    }
    if options.workload.is_empty() {
        return Err("no workload given".into());
    }
    options.iterations = match iterations {
        Some(n) if n >= 1 => n,
        _ => return Err("--iterations N (N >= 1) is required".into()),
    };
    if options.blocks < 1 {
        return Err("--blocks must be at least 1".into());
    }
    Ok(options)
}

/// The workload's parameters: its defaults (NaN: as the inputs say), overridden by --param.
pub fn resolve(options: &Options, defaults: &[(&'static str, f64)]) -> Result<Vec<(&'static str, f64)>, String> {
    let mut params = defaults.to_vec();
    for (name, value) in &options.params {
        match params.iter_mut().find(|param| param.0 == name.as_str()) {
            Some(param) => param.1 = *value,
            None => {
                let names: Vec<&str> = defaults.iter().map(|(n, _)| *n).collect();
                return Err(format!("workload {} has no parameter '{name}' (has: {})", options.workload, names.join(" ")));
            }
        }
    }
    Ok(params)
}
