// The node kinds: the operators of the paper's Table 8, plus unary minus, two operators with a
// constant (x + c, x^c), log-sum-exp (which softmax and cross-entropy need) and the outputs of
// the fused layers and blocks. A node holds its op and two words, a and b: operand indices, or
// offsets into the pool's link array where its operand list or record is.
#pragma once

#include <cstdint>

namespace burtorch {

// Two bytes, not one: a store of a one-byte type may alias anything as far as the compiler knows,
// so a byte-wide op code would make it reload every value after each node it creates.
enum class Op : std::uint16_t {
  Leaf,
  // unary: operand a
  Relu, Tanh, Exp, NegLog, Sigmoid, Inv, Sqr, Pow3, Log, Sqrt, InvSqrt, Neg,
  // unary with a constant: operand a, the constant (a record, records.hpp) at link b
  MulConst, AddConst, PowConst,
  // binary: operands a, b
  Add, Sub, Mul, Div, Mean, AddSquares, MeanSquares, NegMean,
  // n-ary over a recorded list: list at link a, b operands
  ReduceSum, ReduceSub, ReduceMul, ReduceMean, ReduceSumOfSquares, ReduceMeanSquares,
  ReduceNegMean, LogSumExp,
  // x . w (+ bias): x list at link a, an InnerProductRecord at link b (inner_product.hpp)
  InnerProduct, InnerProductWithBias,
  // The fused layers' outputs: consecutive nodes that share one record.
  // row j of a layer for one token: its input list at link a, a LinearRecord at link b (linear.hpp)
  LinearRow,
  // output j of a layer norm: x list at link a, a LayerNormRecord at link b (layer_norm.hpp)
  LayerNormRow,
  // output j of one attention head for one query: an AttentionRecord at link a (attention.hpp)
  AttentionRow,
  // output k of a block of sums x[k] + y[k]: an AddBlockRecord at link a (add_block.hpp)
  AddBlock,
  // loss s of a block of cross-entropies: a CrossEntropyRecord at link a (loss.hpp)
  CrossEntropyBlock,
};

constexpr const char* opName(Op op) noexcept {
  switch (op) {
    case Op::Leaf: return "leaf";
    case Op::Relu: return "relu";
    case Op::Tanh: return "tanh";
    case Op::Exp: return "exp";
    case Op::NegLog: return "negativeLog";
    case Op::Sigmoid: return "sigmoid";
    case Op::Inv: return "inv";
    case Op::Sqr: return "sqr";
    case Op::Pow3: return "pow3";
    case Op::Log: return "log";
    case Op::Sqrt: return "sqrt";
    case Op::InvSqrt: return "invSqrt";
    case Op::Neg: return "neg";
    case Op::MulConst: return "mulByConstant";
    case Op::AddConst: return "addConstant";
    case Op::PowConst: return "powConstant";
    case Op::Add: return "add";
    case Op::Sub: return "sub";
    case Op::Mul: return "mul";
    case Op::Div: return "div";
    case Op::Mean: return "mean";
    case Op::AddSquares: return "addSquares";
    case Op::MeanSquares: return "meanSquares";
    case Op::NegMean: return "negativeMean";
    case Op::ReduceSum: return "reduceSum";
    case Op::ReduceSub: return "reduceSub";
    case Op::ReduceMul: return "reduceMul";
    case Op::ReduceMean: return "reduceMean";
    case Op::ReduceSumOfSquares: return "reduceSumOfSquares";
    case Op::ReduceMeanSquares: return "reduceMeanSquares";
    case Op::ReduceNegMean: return "reduceNegativeMean";
    case Op::LogSumExp: return "logSumExp";
    case Op::InnerProduct: return "innerProduct";
    case Op::InnerProductWithBias: return "innerProductWithBias";
    case Op::LinearRow: return "linearRow";
    case Op::LayerNormRow: return "layerNormRow";
    case Op::AttentionRow: return "attentionRow";
    case Op::AddBlock: return "addBlock";
    case Op::CrossEntropyBlock: return "crossEntropyBlock";
  }
  return "?";
}

}  // namespace burtorch
