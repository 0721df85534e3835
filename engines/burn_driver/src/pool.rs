//! workloads/catalog/max_pool2d.py on Burn's ndarray backend, FP32, without autodiff: one forward
//! max_pool2d per step of the input the harness prepared (--inputs DIR/input.bin, an (N, H, W, C)
//! float32 array), permuted to NCHW without a copy, as burn-bench's max_pool2d benchmark makes its
//! input. The window comes from the workload's parameters (NaN defaults: each must be given).
use std::path::Path;

use burn_ndarray::NdArray;
use burn_tensor::{module::max_pool2d, Tensor, TensorData};

use crate::inputs::ArrayFile;
use crate::measure::Workload;

type B = NdArray<f32>;

pub const DEFAULTS: [(&str, f64); 6] = [
    ("batch", f64::NAN),
    ("channels", f64::NAN),
    ("size", f64::NAN),
    ("kernel", f64::NAN),
    ("stride", f64::NAN),
    ("padding", f64::NAN),
];
/// workloads/catalog/max_pool2d.py's WEIGHT_MODULUS.
const WEIGHT_MODULUS: usize = 97;

pub struct MaxPool2d {
    x: Tensor<B, 4>,
    kernel: usize,
    stride: usize,
    padding: usize,
    // The last step's output, kept until the next step replaces it, as the other engines keep theirs.
    out: Option<Tensor<B, 4>>,
}

impl MaxPool2d {
    pub fn open(folder: Option<&str>, params: &[(&'static str, f64)]) -> Result<MaxPool2d, String> {
        let value = |name: &str| -> Result<usize, String> {
            let v = params.iter().find(|p| p.0 == name).map_or(f64::NAN, |p| p.1);
            if v.is_finite() && v >= 0.0 && v.fract() == 0.0 {
                Ok(v as usize)
            } else {
                Err(format!("max_pool2d needs --param {name}=N"))
            }
        };
        let (n, c, side) = (value("batch")?, value("channels")?, value("size")?);
        let folder = folder.ok_or("max_pool2d needs --inputs DIR (the folder its prepare() wrote)")?;
        let path = Path::new(folder).join("input.bin");
        let mut file = ArrayFile::open(&path, 1, 4)?;
        if file.shape() != [n as u64, side as u64, side as u64, c as u64] {
            return Err(format!("{}: its shape is not the point's (N, H, W, C)", path.display()));
        }
        let mut bytes = vec![0u8; n * side * side * c * 4];
        file.read(0, &mut bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        let values: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        let nhwc = Tensor::<B, 4>::from_data(TensorData::new(values, [n, side, side, c]), &Default::default());
        Ok(MaxPool2d {
            x: nhwc.permute([0, 3, 1, 2]),
            kernel: value("kernel")?,
            stride: value("stride")?,
            padding: value("padding")?,
            out: None,
        })
    }
}

impl Workload for MaxPool2d {
    fn precision(&self) -> &'static str {
        "fp32"
    }

    fn step(&mut self) {
        let (k, s, p) = (self.kernel, self.stride, self.padding);
        self.out = Some(max_pool2d(self.x.clone(), [k, k], [s, s], [p, p], [1, 1], false));
    }

    /// Two FP64 sums of the output in NCHW order (plain, and weighted by the index mod 97), one (H, W)
    /// plane at a time: the checksum adds no output-sized copy to the peak memory.
    fn outputs(&self) -> Vec<(&'static str, f64)> {
        let Some(out) = &self.out else { return Vec::new() };
        let [n, c, h, w] = out.dims();
        let (mut total, mut weighted) = (0.0, 0.0);
        for k in 0..n * c {
            let plane = out.clone().slice([k / c..k / c + 1, k % c..k % c + 1]).into_data();
            let Ok(values) = plane.to_vec::<f32>() else { return Vec::new() };
            for (i, &v) in values.iter().enumerate() {
                total += f64::from(v);
                weighted += f64::from(v) * ((k * h * w + i) % WEIGHT_MODULUS) as f64;
            }
        }
        vec![("sum", total), ("weighted_sum", weighted)]
    }
}
