//! The measured part of a run, as burtorch-bench's measured_run.hpp: warm-up, the timed loop in
//! blocks (the clock read once per block; prepare() before each block, untimed), CPU clocks and CPU
//! time around it, then ONE JSON line with the outputs, the timing, the counters and the peaks.
use std::fmt::Write as _;
use std::time::Instant;

use crate::process;

pub trait Workload {
    fn precision(&self) -> &'static str;
    /// Untimed work before each timed block (reading the next step's batch).
    fn prepare(&mut self) {}
    fn step(&mut self);
    /// Read after the loop; checked by the harness against the workload's reference.
    fn outputs(&self) -> Vec<(&'static str, f64)>;
    /// Its own result fields.
    fn extras(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// Sizes of the blocks a loop of `iterations` steps is cut into, as harness/measure/timer.py cuts it.
pub fn block_sizes(iterations: u64, blocks: u64) -> Vec<u64> {
    let blocks = blocks.clamp(1, iterations);
    (0..blocks).map(|k| iterations / blocks + u64::from(k < iterations % blocks)).collect()
}

/// mean, sample standard deviation, min and median, as harness/analysis/stats.py summarizes.
pub fn summarize(samples: &[f64]) -> [f64; 4] {
    let n = samples.len() as f64;
    let mean = samples.iter().sum::<f64>() / n;
    let squares: f64 = samples.iter().map(|x| (x - mean) * (x - mean)).sum();
    let std = if samples.len() > 1 { (squares / (n - 1.0)).sqrt() } else { 0.0 };
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    let median = if sorted.len() % 2 == 1 { sorted[mid] } else { (sorted[mid - 1] + sorted[mid]) / 2.0 };
    [mean, std, sorted[0], median]
}

/// A one-line JSON object; non-finite numbers become null (JSON has none).
pub struct JsonLine(String);

impl Default for JsonLine {
    fn default() -> Self {
        JsonLine("{".into())
    }
}

impl JsonLine {
    fn key(&mut self, name: &str) -> &mut Self {
        if !self.0.ends_with('{') {
            self.0.push(',');
        }
        self.quoted(name);
        self.0.push(':');
        self
    }
    fn quoted(&mut self, text: &str) {
        self.0.push('"');
        for c in text.chars() {
            match c {
                '"' | '\\' => {
                    self.0.push('\\');
                    self.0.push(c);
                }
                c if (c as u32) < 0x20 => write!(self.0, "\\u{:04x}", c as u32).unwrap(),
                c => self.0.push(c),
            }
        }
        self.0.push('"');
    }
    fn number(&mut self, x: f64) {
        if x.is_finite() {
            // Rust's shortest round-trip form: read back as the same double.
            write!(self.0, "{x:?}").unwrap();
        } else {
            self.0.push_str("null");
        }
    }
    pub fn text(&mut self, name: &str, value: Option<&str>) -> &mut Self {
        self.key(name);
        match value {
            Some(text) => self.quoted(text),
            None => self.0.push_str("null"),
        }
        self
    }
    pub fn float(&mut self, name: &str, value: Option<f64>) -> &mut Self {
        self.key(name);
        match value {
            Some(x) => self.number(x),
            None => self.0.push_str("null"),
        }
        self
    }
    pub fn int(&mut self, name: &str, value: Option<u64>) -> &mut Self {
        self.key(name);
        match value {
            Some(n) => write!(self.0, "{n}").unwrap(),
            None => self.0.push_str("null"),
        }
        self
    }
    pub fn floats(&mut self, name: &str, values: &[f64]) -> &mut Self {
        self.key(name);
        self.0.push('[');
        for (k, x) in values.iter().enumerate() {
            if k > 0 {
                self.0.push(',');
            }
            self.number(*x);
        }
        self.0.push(']');
        self
    }
    pub fn begin(&mut self, name: &str) -> &mut Self {
        self.key(name);
        self.0.push('{');
        self
    }
    pub fn end(&mut self) -> &mut Self {
        self.0.push('}');
        self
    }
    pub fn finish(&self) -> String {
        format!("{}}}\n", self.0)
    }
}

pub fn measure_and_report(step: &mut dyn Workload, warmup: u64, iterations: u64, blocks: u64, version: &str) -> String {
    for _ in 0..warmup {
        step.prepare();
        step.step();
    }
    let mut clocks = process::CycleCounter::start();
    let cpu_before = process::cpu_time_s();
    let mut samples = Vec::new();
    let mut total = 0.0;
    for size in block_sizes(iterations, blocks) {
        step.prepare();
        let start = Instant::now();
        for _ in 0..size {
            step.step();
        }
        let elapsed = start.elapsed().as_secs_f64();
        total += elapsed;
        samples.push(elapsed / size as f64);
    }
    let counted = clocks.stop();
    let cpu_after = process::cpu_time_s();
    let [mean, std, min, median] = summarize(&samples);

    let mut json = JsonLine::default();
    json.text("status", Some("ok")).begin("outputs");
    for (name, value) in step.outputs() {
        json.float(name, Some(value));
    }
    json.end()
        .text("precision", Some(step.precision()))
        .int("iterations", Some(iterations))
        .int("warmup", Some(warmup))
        .float("loop_time_s", Some(total))
        .begin("per_iter_s")
        .float("mean", Some(mean))
        .float("std", Some(std))
        .float("min", Some(min))
        .float("median", Some(median))
        .int("n", Some(samples.len() as u64))
        .end()
        .floats("samples_s", &samples)
        .text("timed_as", Some("lean"))
        .text("framework_version", Some(version))
        .int("cpu_clocks", counted.cycles)
        .int("instructions", counted.instructions)
        .text("cpu_clocks_source", Some(counted.source.as_str()));
    for (name, value) in step.extras() {
        json.int(name, Some(value));
    }
    json.float("loop_cpu_time_s", cpu_before.zip(cpu_after).map(|(a, b)| b - a))
        .float("cpu_time_s", process::cpu_time_s());
    // Read last, just before exit, so the peaks cover the whole run.
    let peak = process::peak_memory();
    json.int("peak_resident_bytes", peak.resident)
        .int("peak_virtual_bytes", peak.virtual_)
        .int("peak_private_bytes", None)
        .text("peak_resident_source", Some(peak.resident_source.as_str()))
        .text("peak_virtual_source", Some(peak.virtual_source.as_str()))
        .text("peak_private_source", Some(process::PRIVATE_SOURCE));
    json.finish()
}
