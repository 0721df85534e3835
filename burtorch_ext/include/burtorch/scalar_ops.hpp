// Unary and binary operators (paper Table 8) and the in-place forms of Table 9. Each computes
// its value now (eager forward) and appends one node; backward.hpp holds their derivatives. An
// operator with a constant keeps the constant as a record (records.hpp), so that nodes stay two
// indices wide.
#pragma once

#include <cmath>
#include <type_traits>

#include "burtorch/activation.hpp"
#include "burtorch/records.hpp"
#include "burtorch/value.hpp"

namespace burtorch {

namespace detail {

template <class T>
BURTORCH_INLINE Value<T> node(T data, Op op, Index a, Index b = 0) noexcept {
  return Value<T>::fromIndex(Pool<T>::local().push(data, op, a, b));
}

template <class T>
BURTORCH_INLINE Value<T> unary(Op op, T data, Value<T> x) noexcept {
  return node(data, op, x.index());
}

template <class T>
BURTORCH_INLINE Value<T> binary(Op op, T data, Value<T> x, Value<T> y) noexcept {
  return node(data, op, x.index(), y.index());
}

template <class T>
BURTORCH_INLINE Value<T> withConstant(Op op, T data, Value<T> x, T c) noexcept {
  return node(data, op, x.index(), appendRecord<T>(c));
}

}  // namespace detail

// The constant's type is not deduced, so that `x * 2` works for Value<float> and Value<double>.
template <class T>
using ScalarOf = std::type_identity_t<T>;

template <class T> BURTORCH_INLINE Value<T> relu(Value<T> x) noexcept { return detail::unary(Op::Relu, detail::activated(Activation::Relu, x.data()), x); }
template <class T> BURTORCH_INLINE Value<T> tanh(Value<T> x) noexcept { return detail::unary(Op::Tanh, detail::activated(Activation::Tanh, x.data()), x); }
template <class T> BURTORCH_INLINE Value<T> exp(Value<T> x) noexcept { return detail::unary(Op::Exp, std::exp(x.data()), x); }
template <class T> BURTORCH_INLINE Value<T> negativeLog(Value<T> x) noexcept { return detail::unary(Op::NegLog, -std::log(x.data()), x); }
template <class T> BURTORCH_INLINE Value<T> sigmoid(Value<T> x) noexcept { return detail::unary(Op::Sigmoid, detail::activated(Activation::Sigmoid, x.data()), x); }
template <class T> BURTORCH_INLINE Value<T> inv(Value<T> x) noexcept { return detail::unary(Op::Inv, T(1) / x.data(), x); }
template <class T> BURTORCH_INLINE Value<T> sqr(Value<T> x) noexcept { const T v = x.data(); return detail::unary(Op::Sqr, v * v, x); }
template <class T> BURTORCH_INLINE Value<T> pow3(Value<T> x) noexcept { const T v = x.data(); return detail::unary(Op::Pow3, v * v * v, x); }
template <class T> BURTORCH_INLINE Value<T> log(Value<T> x) noexcept { return detail::unary(Op::Log, std::log(x.data()), x); }
template <class T> BURTORCH_INLINE Value<T> sqrt(Value<T> x) noexcept { return detail::unary(Op::Sqrt, std::sqrt(x.data()), x); }
template <class T> BURTORCH_INLINE Value<T> invSqrt(Value<T> x) noexcept { return detail::unary(Op::InvSqrt, T(1) / std::sqrt(x.data()), x); }

template <class T> BURTORCH_INLINE Value<T> mulByConstant(Value<T> x, ScalarOf<T> c) noexcept { return detail::withConstant(Op::MulConst, x.data() * c, x, c); }
template <class T> BURTORCH_INLINE Value<T> addConstant(Value<T> x, ScalarOf<T> c) noexcept { return detail::withConstant(Op::AddConst, x.data() + c, x, c); }
template <class T> BURTORCH_INLINE Value<T> pow(Value<T> x, ScalarOf<T> c) noexcept { return detail::withConstant(Op::PowConst, std::pow(x.data(), c), x, c); }

template <class T> BURTORCH_INLINE Value<T> add(Value<T> x, Value<T> y) noexcept { return detail::binary(Op::Add, x.data() + y.data(), x, y); }
template <class T> BURTORCH_INLINE Value<T> sub(Value<T> x, Value<T> y) noexcept { return detail::binary(Op::Sub, x.data() - y.data(), x, y); }
template <class T> BURTORCH_INLINE Value<T> mul(Value<T> x, Value<T> y) noexcept { return detail::binary(Op::Mul, x.data() * y.data(), x, y); }
template <class T> BURTORCH_INLINE Value<T> div(Value<T> x, Value<T> y) noexcept { return detail::binary(Op::Div, x.data() / y.data(), x, y); }
template <class T> BURTORCH_INLINE Value<T> mean(Value<T> x, Value<T> y) noexcept { return detail::binary(Op::Mean, (x.data() + y.data()) / T(2), x, y); }
template <class T> BURTORCH_INLINE Value<T> addSquares(Value<T> x, Value<T> y) noexcept { const T u = x.data(), v = y.data(); return detail::binary(Op::AddSquares, u * u + v * v, x, y); }
template <class T> BURTORCH_INLINE Value<T> meanSquares(Value<T> x, Value<T> y) noexcept { const T u = x.data(), v = y.data(); return detail::binary(Op::MeanSquares, (u * u + v * v) / T(2), x, y); }
template <class T> BURTORCH_INLINE Value<T> negativeMean(Value<T> x, Value<T> y) noexcept { return detail::binary(Op::NegMean, -(x.data() + y.data()) / T(2), x, y); }

template <class T> BURTORCH_INLINE Value<T> operator+(Value<T> x, Value<T> y) noexcept { return add(x, y); }
template <class T> BURTORCH_INLINE Value<T> operator-(Value<T> x, Value<T> y) noexcept { return sub(x, y); }
template <class T> BURTORCH_INLINE Value<T> operator*(Value<T> x, Value<T> y) noexcept { return mul(x, y); }
template <class T> BURTORCH_INLINE Value<T> operator/(Value<T> x, Value<T> y) noexcept { return div(x, y); }
template <class T> BURTORCH_INLINE Value<T> operator-(Value<T> x) noexcept { return detail::unary(Op::Neg, -x.data(), x); }

// With a plain number: x + c and x * c take one node; c - x and division make c a leaf, as micrograd does.
template <class T> BURTORCH_INLINE Value<T> operator+(Value<T> x, ScalarOf<T> c) noexcept { return addConstant(x, c); }
template <class T> BURTORCH_INLINE Value<T> operator+(ScalarOf<T> c, Value<T> x) noexcept { return addConstant(x, c); }
template <class T> BURTORCH_INLINE Value<T> operator-(Value<T> x, ScalarOf<T> c) noexcept { return addConstant(x, -c); }
template <class T> BURTORCH_INLINE Value<T> operator-(ScalarOf<T> c, Value<T> x) noexcept { return sub(Value<T>(c), x); }
template <class T> BURTORCH_INLINE Value<T> operator*(Value<T> x, ScalarOf<T> c) noexcept { return mulByConstant(x, c); }
template <class T> BURTORCH_INLINE Value<T> operator*(ScalarOf<T> c, Value<T> x) noexcept { return mulByConstant(x, c); }
template <class T> BURTORCH_INLINE Value<T> operator/(Value<T> x, ScalarOf<T> c) noexcept { return div(x, Value<T>(c)); }
template <class T> BURTORCH_INLINE Value<T> operator/(ScalarOf<T> c, Value<T> x) noexcept { return div(Value<T>(c), x); }

// Table 9: x op= y makes a new node and rebinds x to it (micrograd and PyTorch semantics).
template <class T> BURTORCH_INLINE Value<T>& operator+=(Value<T>& x, Value<T> y) noexcept { return x = x + y; }
template <class T> BURTORCH_INLINE Value<T>& operator-=(Value<T>& x, Value<T> y) noexcept { return x = x - y; }
template <class T> BURTORCH_INLINE Value<T>& operator*=(Value<T>& x, Value<T> y) noexcept { return x = x * y; }
template <class T> BURTORCH_INLINE Value<T>& operator/=(Value<T>& x, Value<T> y) noexcept { return x = x / y; }
template <class T> BURTORCH_INLINE Value<T>& operator+=(Value<T>& x, ScalarOf<T> c) noexcept { return x = x + c; }
template <class T> BURTORCH_INLINE Value<T>& operator-=(Value<T>& x, ScalarOf<T> c) noexcept { return x = x - c; }
template <class T> BURTORCH_INLINE Value<T>& operator*=(Value<T>& x, ScalarOf<T> c) noexcept { return x = x * c; }
template <class T> BURTORCH_INLINE Value<T>& operator/=(Value<T>& x, ScalarOf<T> c) noexcept { return x = x / c; }

template <class T> BURTORCH_INLINE Value<T> addInplace(Value<T>& x, Value<T> y) noexcept { return x += y; }
template <class T> BURTORCH_INLINE Value<T> subInplace(Value<T>& x, Value<T> y) noexcept { return x -= y; }
template <class T> BURTORCH_INLINE Value<T> multInplace(Value<T>& x, Value<T> y) noexcept { return x *= y; }
template <class T> BURTORCH_INLINE Value<T> divInplace(Value<T>& x, Value<T> y) noexcept { return x /= y; }

// The activation as a node of its own (a Neuron's, after its inner-product node).
template <class T>
Value<T> activate(Activation activation, Value<T> x) noexcept {
  switch (activation) {
    case Activation::Relu: return relu(x);
    case Activation::Tanh: return tanh(x);
    case Activation::Sigmoid: return sigmoid(x);
    case Activation::Identity: break;
  }
  return x;
}

}  // namespace burtorch
