//! The shared-inputs folder of an MLP or GPT run, as workloads/inputs.py writes it and
//! burtorch-bench reads it (burtorch_ext/src/driver/inputs.hpp): config.txt (key=value lines),
//! params.bin (float32 initial parameters), samples.bin (uint8 token rows) and batches.bin (int32
//! sample rows of every step), each .bin a 48-byte header and a little-endian payload. Everything
//! is checked when the folder is opened, before any timing; after that a step's batch is read
//! straight from the files, so that memory does not grow with the batch or the number of steps.
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

pub struct Config(Vec<(String, String)>);

impl Config {
    pub fn parse(text: &str) -> Config {
        Config(
            text.lines()
                .filter_map(|line| line.split_once('='))
                .map(|(k, v)| (k.to_string(), v.trim_end_matches('\r').to_string()))
                .collect(),
        )
    }
    /// The value of the key's last line, as Python's reader keeps it.
    pub fn text(&self, key: &str) -> Option<&str> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
    pub fn integer(&self, key: &str) -> Option<i64> {
        self.text(key)?.parse().ok()
    }
    pub fn number(&self, key: &str) -> Option<f64> {
        self.text(key)?.parse().ok()
    }
    /// A size the model needs: a positive integer.
    pub fn size(&self, key: &str) -> Result<usize, String> {
        match self.integer(key) {
            Some(n) if n >= 1 => Ok(n as usize),
            _ => Err(format!("config.txt: '{key}' must be a positive integer")),
        }
    }
}

const HEADER: u64 = 48;

/// One .bin array, open for reading elements at any position (the training inputs and pool.rs's input).
pub(crate) struct ArrayFile {
    file: File,
    shape: [u64; 4],
    element: u64,
}

impl ArrayFile {
    /// Opens `path` and checks its header (magic, dtype code, dimensions) and its size against it.
    pub(crate) fn open(path: &Path, dtype: u32, ndim: u32) -> Result<ArrayFile, String> {
        let shown = path.display();
        let mut file = File::open(path).map_err(|e| format!("cannot open {shown}: {e}"))?;
        let mut header = [0u8; HEADER as usize];
        file.read_exact(&mut header).map_err(|_| format!("{shown}: shorter than the 48-byte header"))?;
        let word = |at: usize| u32::from_le_bytes(header[at..at + 4].try_into().unwrap());
        if &header[..8] != b"BBARRAY1" || word(8) != dtype || word(12) != ndim {
            return Err(format!("{shown}: not the expected array (magic BBARRAY1, dtype {dtype}, {ndim} dimensions)"));
        }
        let mut shape = [0u64; 4];
        for (k, dim) in shape.iter_mut().enumerate() {
            *dim = u64::from_le_bytes(header[16 + 8 * k..24 + 8 * k].try_into().unwrap());
        }
        let element = if dtype == 3 { 1 } else { 4 };
        let expected = HEADER + shape.iter().product::<u64>() * element;
        let size = file.seek(SeekFrom::End(0)).map_err(|e| format!("{shown}: {e}"))?;
        if size != expected {
            return Err(format!("{shown}: its size does not match its header ({expected} bytes)"));
        }
        Ok(ArrayFile { file, shape, element })
    }

    pub(crate) fn shape(&self) -> [u64; 4] {
        self.shape
    }

    fn elements(&self) -> u64 {
        self.shape.iter().product()
    }

    /// `out.len() / element size` elements from element `first` of the flat payload.
    pub(crate) fn read(&mut self, first: u64, out: &mut [u8]) -> std::io::Result<()> {
        self.file.seek(SeekFrom::Start(HEADER + first * self.element))?;
        self.file.read_exact(out)
    }
}

/// A training run's inputs: its config, its initial parameters, and its batches step by step.
pub struct TrainingInputs {
    pub config: Config,
    pub steps: u64,
    pub batch: usize,
    pub param_count: usize,
    pub learning_rate: f64,
    pub width: usize,
    params: ArrayFile,
    samples: ArrayFile,
    batches: ArrayFile,
}

impl TrainingInputs {
    /// Opens `folder` and checks that it holds `workload`'s inputs, consistent throughout: the
    /// arrays' sizes, every batch's sample rows, every token id below `vocab`.
    pub fn open(folder: &str, workload: &str) -> Result<TrainingInputs, String> {
        let base = Path::new(folder);
        let text = std::fs::read_to_string(base.join("config.txt")).map_err(|_| {
            format!("cannot open {} (not a shared-inputs folder: prepare it with the workload's prepare())", base.join("config.txt").display())
        })?;
        let config = Config::parse(&text);
        if config.integer("format") != Some(1) {
            return Err("config.txt: inputs format is not 1".into());
        }
        if config.text("workload") != Some(workload) {
            return Err(format!("config.txt: these inputs are for '{}', not '{workload}'", config.text("workload").unwrap_or("?")));
        }
        let positive = |key: &str| config.integer(key).filter(|n| *n >= 1);
        let (Some(steps), Some(batch), Some(count), Some(vocab), Some(rate)) =
            (positive("steps"), positive("batch"), positive("param_count"), positive("vocab"), config.number("learning_rate"))
        else {
            return Err("config.txt: steps, batch, param_count, vocab and learning_rate must be given and positive".into());
        };
        let params = ArrayFile::open(&base.join("params.bin"), 1, 1)?;
        let mut samples = ArrayFile::open(&base.join("samples.bin"), 3, 2)?;
        let mut batches = ArrayFile::open(&base.join("batches.bin"), 2, 2)?;
        if params.shape[0] != count as u64 {
            return Err("params.bin does not hold param_count values".into());
        }
        if batches.shape[0] != steps as u64 || batches.shape[1] != batch as u64 {
            return Err("batches.bin is not steps x batch".into());
        }
        // Streamed through a small buffer, so that checking costs no memory.
        let mut chunk = [0u8; 4096];
        let total = samples.elements();
        for at in (0..total).step_by(chunk.len()) {
            let n = chunk.len().min((total - at) as usize);
            samples.read(at, &mut chunk[..n]).map_err(|_| "samples.bin: read failed")?;
            if chunk[..n].iter().any(|&id| id as i64 >= vocab) {
                return Err("samples.bin: a token id is not below vocab".into());
            }
        }
        let (total, rows) = (batches.elements(), samples.shape[0]);
        for at in (0..total).step_by(1024) {
            let n = 1024.min((total - at) as usize);
            batches.read(at, &mut chunk[..4 * n]).map_err(|_| "batches.bin: read failed")?;
            let bad = chunk[..4 * n].chunks_exact(4).map(|b| i32::from_le_bytes(b.try_into().unwrap()));
            if bad.into_iter().any(|row| row < 0 || row as u64 >= rows) {
                return Err("batches.bin: a sample row is outside samples.bin".into());
            }
        }
        Ok(TrainingInputs {
            steps: steps as u64,
            batch: batch as usize,
            param_count: count as usize,
            learning_rate: rate,
            width: samples.shape[1] as usize,
            config,
            params,
            samples,
            batches,
        })
    }

    /// The initial parameters, all of them.
    pub fn read_params(&mut self) -> Result<Vec<f32>, String> {
        let mut bytes = vec![0u8; 4 * self.param_count];
        self.params.read(0, &mut bytes).map_err(|_| "params.bin: read failed")?;
        Ok(bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect())
    }

    /// The rows of step `step`'s batch, one after another, into `rows` (batch x width token ids).
    pub fn read_batch(&mut self, step: u64, rows: &mut [u8]) -> std::io::Result<()> {
        let mut ids = vec![0u8; 4 * self.batch];
        self.batches.read(step * self.batch as u64, &mut ids)?;
        for (s, id) in ids.chunks_exact(4).enumerate() {
            let row = u32::from_le_bytes(id.try_into().unwrap()) as u64;
            self.samples.read(row * self.width as u64, &mut rows[s * self.width..(s + 1) * self.width])?;
        }
        Ok(())
    }
}
