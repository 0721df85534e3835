//! SGD training of the MLP and the GPT on Burn's autodiff backend, FP32, from the inputs folder the
//! harness prepared (--inputs). Every parameter is a leaf tensor; a step computes the batch's mean
//! loss, backpropagates once and takes p <- p - learning_rate * dloss/dp on the inner (non-autodiff)
//! tensors, the update Burn's own SGD optimizer makes, then marks the new values as leaves again.
//! prepare() reads the next step's batch outside the timed region, as the Python workers' does.
use burn_autodiff::Autodiff;
use burn_ndarray::NdArray;
use burn_tensor::{activation::log_softmax, Int, Tensor, TensorData};

use crate::inputs::TrainingInputs;
use crate::measure::Workload;

pub type B = Autodiff<NdArray<f32>>;
pub type Param = Tensor<B, 2>;

/// The embedding tables, looked up by row; every other matrix is a layer's weight.
const EMBEDDINGS: [&str; 2] = ["wte", "wpe"];

/// A model: its parameters' shapes as config.txt's `params` names them, the width of a sample
/// row, and the batch's mean loss over `rows` (batch x width token ids).
pub trait Model {
    const NAME: &'static str;
    fn tensors(&self) -> Vec<(String, Vec<usize>)>;
    fn sample_width(&self) -> usize;
    fn loss(&self, params: &[Param], rows: &[u8], batch: usize) -> Tensor<B, 1>;
}

/// The `params` entry of config.txt for these tensors (`name:d0xd1,...`).
pub fn format_tensors(tensors: &[(String, Vec<usize>)]) -> String {
    let one = |(name, dims): &(String, Vec<usize>)| {
        format!("{name}:{}", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x"))
    };
    tensors.iter().map(one).collect::<Vec<_>>().join(",")
}

/// Token ids as an Int tensor.
pub fn ids(values: impl Iterator<Item = u8>) -> Tensor<B, 1, Int> {
    let values: Vec<i64> = values.map(i64::from).collect();
    let n = values.len();
    Tensor::from_data(TensorData::new(values, [n]), &Default::default())
}

/// Mean over rows of softmax cross-entropy: logits (n, vocab), one target id per row.
pub fn cross_entropy(logits: Tensor<B, 2>, targets: Tensor<B, 1, Int>) -> Tensor<B, 1> {
    let n = targets.dims()[0];
    log_softmax(logits, 1).gather(1, targets.reshape([n, 1])).mean().neg()
}

/// The losses of the first steps (warm-up included) are the outputs the harness checks.
const CHECKED_STEPS: usize = 3;
const OUTPUT_NAMES: [&str; CHECKED_STEPS] = ["loss_0", "loss_1", "loss_2"];

pub struct Trainer<M: Model> {
    model: M,
    inputs: TrainingInputs,
    params: Vec<Param>,
    rows: Vec<u8>,
    losses: Vec<f64>,
    step: u64,
    prepared: bool,
}

impl<M: Model> Trainer<M> {
    /// The model and its parameters from the inputs, checked against --param, warm-up and iterations.
    pub fn open(model: impl FnOnce(&TrainingInputs) -> Result<M, String>, folder: Option<&str>,
                params: &[(&'static str, f64)], needed_steps: u64) -> Result<Self, String> {
        let folder = folder.ok_or_else(|| format!("{} needs --inputs DIR, the folder its prepare() wrote (workloads/inputs.py)", M::NAME))?;
        let mut inputs = TrainingInputs::open(folder, M::NAME)?;
        for (name, value) in params {
            if !value.is_nan() && inputs.config.integer(name).map(|n| n as f64) != Some(*value) {
                return Err(format!("--param {name} differs from the inputs' config.txt"));
            }
        }
        if needed_steps > inputs.steps {
            return Err(format!("the inputs hold {} steps, fewer than warm-up + iterations", inputs.steps));
        }
        let model = model(&inputs)?;
        let tensors = model.tensors();
        let count: usize = tensors.iter().map(|(_, dims)| dims.iter().product::<usize>()).sum();
        if inputs.config.text("params") != Some(format_tensors(&tensors).as_str()) || count != inputs.param_count {
            return Err(format!("config.txt: the parameter tensors are not the model's {}", format_tensors(&tensors)));
        }
        if inputs.width != model.sample_width() {
            return Err(format!("samples.bin: rows are not {} tokens wide", model.sample_width()));
        }
        let values = inputs.read_params()?;
        let device = Default::default();
        let mut at = 0;
        let mut leaves = Vec::new();
        for (name, dims) in &tensors {
            let n: usize = dims.iter().product();
            let stored = &values[at..at + n];
            at += n;
            let (data, shape) = match dims[..] {
                // A vector is one row, broadcast over the rows it is added to.
                [len] => (stored.to_vec(), [1, len]),
                [rows, cols] if EMBEDDINGS.contains(&name.as_str()) => (stored.to_vec(), [rows, cols]),
                // A layer's weight (out, in) is kept (in, out), as Burn's own nn::Linear keeps it:
                // the forward is then x @ w and no gradient is taken through a transposed view.
                [rows, cols] => ((0..n).map(|k| stored[(k % rows) * cols + k / rows]).collect(), [cols, rows]),
                _ => return Err(format!("config.txt: {name} is neither a vector nor a matrix")),
            };
            leaves.push(Param::from_data(TensorData::new(data, shape), &device).require_grad());
        }
        let rows = vec![0; inputs.batch * inputs.width];
        Ok(Trainer { model, inputs, params: leaves, rows, losses: Vec::new(), step: 0, prepared: false })
    }
}

impl<M: Model> Workload for Trainer<M> {
    fn precision(&self) -> &'static str {
        "fp32"
    }

    fn prepare(&mut self) {
        if let Err(e) = self.inputs.read_batch(self.step, &mut self.rows) {
            eprintln!("burn-bench: error: cannot read the batch of step {} from the inputs: {e}", self.step);
            std::process::exit(1);
        }
        self.prepared = true;
    }

    fn step(&mut self) {
        if !self.prepared {
            self.prepare();
        }
        let loss = self.model.loss(&self.params, &self.rows, self.inputs.batch);
        let grads = loss.backward();
        let rate = self.inputs.learning_rate;
        let step = |leaf: Param| {
            let grad = leaf.grad(&grads).expect("every parameter is in the loss's graph");
            Param::from_inner(leaf.inner() - grad.mul_scalar(rate)).require_grad()
        };
        self.params = std::mem::take(&mut self.params).into_iter().map(step).collect();
        if self.losses.len() < CHECKED_STEPS {
            self.losses.push(f64::from(loss.into_scalar()));
        }
        self.prepared = false;
        self.step += 1;
    }

    fn outputs(&self) -> Vec<(&'static str, f64)> {
        OUTPUT_NAMES.iter().copied().zip(self.losses.iter().copied()).collect()
    }

    fn extras(&self) -> Vec<(&'static str, u64)> {
        vec![("param_count", self.inputs.param_count as u64)]
    }
}
