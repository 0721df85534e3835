//! The tiny and small graphs (workloads/graphs.py) on Burn's autodiff backend, FP64. Each node is a
//! one-element tensor: Burn has no scalar type, so this is what its user writes. The leaves a and b
//! are made once, as the Python engines' inputs are (ours, --timing lean); each step builds the graph
//! from them and backpropagates. Burn returns a backward pass's gradients in a record of their own
//! rather than accumulating them into the leaves, so there is nothing to zero.
use burn_autodiff::Autodiff;
use burn_ndarray::NdArray;
use burn_tensor::{activation::relu, backend::AutodiffBackend, Tensor};

use crate::measure::Workload;

type B = Autodiff<NdArray<f64>>;
type Node = Tensor<B, 1>;

pub const TINY_DEFAULTS: [(&str, f64); 2] = [("a", -41.0), ("b", 2.0)];
pub const SMALL_DEFAULTS: [(&str, f64); 2] = [("a", -4.0), ("b", 2.0)];

pub fn tiny(a: &Node, b: &Node) -> Node {
    let c = a.clone() + b.clone();
    let d = a.clone() * b.clone() + b.clone().powi_scalar(3);
    let e = c - d;
    e.powi_scalar(2).div_scalar(2.0)
}

pub fn small(a: &Node, b: &Node) -> Node {
    let mut c = a.clone() + b.clone();
    let mut d = a.clone() * b.clone() + b.clone().powi_scalar(3);
    c = c.clone() + c.add_scalar(1.0);
    c = c.clone() + (c.add_scalar(1.0) + a.clone().neg());
    d = d.clone() + (d.mul_scalar(2.0) + relu(b.clone() + a.clone()));
    d = d.clone() + (d.mul_scalar(3.0) + relu(b.clone() - a.clone()));
    let e = c - d;
    let f = e.powi_scalar(2);
    f.clone().div_scalar(2.0) + f.recip().mul_scalar(10.0)
}

pub struct ScalarGraph {
    build: fn(&Node, &Node) -> Node,
    a: Node,
    b: Node,
    // The last step's root and gradients, kept as a Python engine keeps its last graph: dropping
    // them is part of the next step, and the outputs are read from them after the loop.
    last: Option<(Node, <B as AutodiffBackend>::Gradients)>,
}

impl ScalarGraph {
    pub fn new(build: fn(&Node, &Node) -> Node, params: &[(&'static str, f64)]) -> Self {
        let device = Default::default();
        let leaf = |x: f64| Node::from_floats([x], &device).require_grad();
        ScalarGraph { build, a: leaf(params[0].1), b: leaf(params[1].1), last: None }
    }
}

impl Workload for ScalarGraph {
    fn precision(&self) -> &'static str {
        "fp64"
    }

    fn step(&mut self) {
        let g = (self.build)(&self.a, &self.b);
        let grads = g.backward();
        self.last = Some((g, grads));
    }

    fn outputs(&self) -> Vec<(&'static str, f64)> {
        let Some((g, grads)) = &self.last else { return Vec::new() };
        let read = |t: Option<Tensor<NdArray<f64>, 1>>| t.map_or(f64::NAN, |t| t.into_scalar());
        vec![("g", g.clone().into_scalar()), ("dg_da", read(self.a.grad(grads))), ("dg_db", read(self.b.grad(grads)))]
    }
}
