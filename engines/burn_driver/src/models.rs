//! The MLP (workloads/catalog/mlp.py) and the mini-GPT (workloads/catalog/gpt.py) written with
//! Burn's tensor operations, as its user writes a model by hand. A layer's weight is kept (in, out)
//! as Burn's nn::Linear keeps it (training.rs transposes the inputs' (out, in) once, untimed), so a
//! layer is x @ w + b. The parameters are in the inputs' order.
use burn_tensor::{activation::{relu, softmax}, Bool, Tensor};

use crate::inputs::TrainingInputs;
use crate::training::{cross_entropy, ids, Model, Param, B};

fn linear(x: Tensor<B, 2>, w: &Param, b: Option<&Param>) -> Tensor<B, 2> {
    let y = x.matmul(w.clone());
    match b {
        Some(b) => y + b.clone(),
        None => y,
    }
}

pub struct Mlp {
    context: usize,
    embedding: usize,
    vocab: usize,
    hidden: usize,
}

pub const MLP_DEFAULTS: [(&str, f64); 2] = [("hidden_dim", f64::NAN), ("batch", f64::NAN)];

impl Mlp {
    pub fn from_inputs(inputs: &TrainingInputs) -> Result<Mlp, String> {
        let c = &inputs.config;
        Ok(Mlp { context: c.size("context")?, embedding: c.size("embedding")?, vocab: c.size("vocab")?, hidden: c.size("hidden_dim")? })
    }
}

impl Model for Mlp {
    const NAME: &'static str = "mlp";

    fn tensors(&self) -> Vec<(String, Vec<usize>)> {
        let (c, e, v, h) = (self.context, self.embedding, self.vocab, self.hidden);
        [("wte", vec![v, e]), ("w1", vec![h, c * e]), ("b1", vec![h]), ("w2", vec![v, h]), ("b2", vec![v])]
            .into_iter()
            .map(|(n, d)| (n.to_string(), d))
            .collect()
    }

    /// The context's token ids, then the target's.
    fn sample_width(&self) -> usize {
        self.context + 1
    }

    fn loss(&self, p: &[Param], rows: &[u8], batch: usize) -> Tensor<B, 1> {
        let width = self.sample_width();
        let context = ids(rows.chunks_exact(width).flat_map(|r| r[..self.context].iter().copied()));
        let targets = ids(rows.chunks_exact(width).map(|r| r[self.context]));
        let emb = p[0].clone().select(0, context).reshape([batch, self.context * self.embedding]);
        let h = linear(emb, &p[1], Some(&p[2])).tanh();
        cross_entropy(linear(h, &p[3], Some(&p[4])), targets)
    }
}

pub struct Gpt {
    layers: usize,
    heads: usize,
    block: usize,
    d: usize,
    vocab: usize,
}

pub const GPT_DEFAULTS: [(&str, f64); 1] = [("batch", f64::NAN)];
const LN_EPS: f64 = 1e-5;
// Per block: ln1_g, ln1_b, wq, wk, wv, proj_w, proj_b, ln2_g, ln2_b, ff1_w, ff1_b, ff2_w, ff2_b.
const PER_BLOCK: usize = 13;

impl Gpt {
    pub fn from_inputs(inputs: &TrainingInputs) -> Result<Gpt, String> {
        let c = &inputs.config;
        let g = Gpt { layers: c.size("layers")?, heads: c.size("heads")?, block: c.size("block_size")?, d: c.size("d_model")?, vocab: c.size("vocab")? };
        if g.d % g.heads != 0 {
            return Err("config.txt: d_model is not a multiple of heads".into());
        }
        Ok(g)
    }

    /// Over each row: biased variance, eps 1e-5, gain and bias.
    fn layer_norm(x: Tensor<B, 2>, g: &Param, b: &Param) -> Tensor<B, 2> {
        let centered = x.clone() - x.mean_dim(1);
        let var = centered.clone().powi_scalar(2).mean_dim(1);
        centered / var.add_scalar(LN_EPS).sqrt() * g.clone() + b.clone()
    }

    /// Causal self-attention of each window's tokens: x is (batch * block, d).
    fn attention(&self, x: Tensor<B, 2>, p: &[Param], batch: usize) -> Tensor<B, 2> {
        let (t, hs) = (self.block, self.d / self.heads);
        let heads = |w: &Param| linear(x.clone(), w, None).reshape([batch, t, self.heads, hs]).swap_dims(1, 2);
        let (q, k, v) = (heads(&p[2]), heads(&p[3]), heads(&p[4]));
        let scores = q.matmul(k.swap_dims(2, 3)).mul_scalar((hs as f64).powf(-0.5));
        let mask = Tensor::<B, 2, Bool>::tril_mask([t, t], 0, &Default::default()).reshape([1, 1, t, t]).expand([batch, self.heads, t, t]);
        let weights = softmax(scores.mask_fill(mask, f32::NEG_INFINITY), 3);
        weights.matmul(v).swap_dims(1, 2).reshape([batch * t, self.d])
    }
}

impl Model for Gpt {
    const NAME: &'static str = "gpt";

    fn tensors(&self) -> Vec<(String, Vec<usize>)> {
        let (d, f) = (self.d, 4 * self.d);
        let mut out = vec![("wte".to_string(), vec![self.vocab, d]), ("wpe".to_string(), vec![self.block, d])];
        for l in 0..self.layers {
            let block = [("ln1_g", vec![d]), ("ln1_b", vec![d]), ("wq", vec![d, d]), ("wk", vec![d, d]), ("wv", vec![d, d]),
                         ("proj_w", vec![d, d]), ("proj_b", vec![d]), ("ln2_g", vec![d]), ("ln2_b", vec![d]),
                         ("ff1_w", vec![f, d]), ("ff1_b", vec![f]), ("ff2_w", vec![d, f]), ("ff2_b", vec![d])];
            out.extend(block.into_iter().map(|(n, dims)| (format!("h{l}.{n}"), dims)));
        }
        for (n, dims) in [("lnf_g", vec![d]), ("lnf_b", vec![d]), ("head_w", vec![self.vocab, d]), ("head_b", vec![self.vocab])] {
            out.push((n.to_string(), dims));
        }
        out
    }

    /// block_size + 1 consecutive token ids: inputs are the first block_size, targets the last.
    fn sample_width(&self) -> usize {
        self.block + 1
    }

    fn loss(&self, p: &[Param], rows: &[u8], batch: usize) -> Tensor<B, 1> {
        let (t, width) = (self.block, self.sample_width());
        let tokens = ids(rows.chunks_exact(width).flat_map(|r| r[..t].iter().copied()));
        let targets = ids(rows.chunks_exact(width).flat_map(|r| r[1..].iter().copied()));
        let positions = p[1].clone().unsqueeze::<3>().repeat_dim(0, batch).reshape([batch * t, self.d]);
        let mut x = p[0].clone().select(0, tokens) + positions;
        for l in 0..self.layers {
            let b = &p[2 + PER_BLOCK * l..2 + PER_BLOCK * (l + 1)];
            let attended = self.attention(Self::layer_norm(x.clone(), &b[0], &b[1]), b, batch);
            x = x + linear(attended, &b[5], Some(&b[6]));
            let hidden = relu(linear(Self::layer_norm(x.clone(), &b[7], &b[8]), &b[9], Some(&b[10])));
            x = x + linear(hidden, &b[11], Some(&b[12]));
        }
        let head = 2 + PER_BLOCK * self.layers;
        let normed = Self::layer_norm(x, &p[head], &p[head + 1]);
        cross_entropy(linear(normed, &p[head + 2], Some(&p[head + 3])), targets)
    }
}
