// The Python Value type, written against the CPython API rather than bound through pybind11:
// `a + b` on a pybind11 class goes through its generic dispatcher (~300 ns a call), while a
// number-protocol slot costs a few tens of ns, and a Python graph is mostly such calls. A
// pybind11 type caster lets every other binding take and return Values as usual.
#pragma once

#include <pybind11/pybind11.h>

#include "burtorch/burtorch.hpp"

namespace burtorch::python {

template <class T>
struct PyValue {
  PyObject_HEAD
  Index index;
};

template <class T>
inline PyTypeObject* valueType = nullptr;

template <class T>
PyObject* wrap(Value<T> v) noexcept {
  PyValue<T>* obj = PyObject_New(PyValue<T>, valueType<T>);
  if (obj) obj->index = v.index();
  return reinterpret_cast<PyObject*>(obj);
}

template <class T>
bool isValue(PyObject* o) noexcept {
  return Py_TYPE(o) == valueType<T>;
}

template <class T>
Value<T> handleOf(PyObject* o) noexcept {
  return Value<T>::fromIndex(reinterpret_cast<PyValue<T>*>(o)->index);
}

inline PyObject* rewoundError() noexcept {
  PyErr_SetString(PyExc_IndexError, "this Value's node no longer exists (the pool was rewound below it)");
  return nullptr;
}

// What an operand of an arithmetic slot is.
enum class Operand { Node, Number, Foreign, Rewound, Error };

template <class T>
Operand classify(PyObject* o, Value<T>& node, T& number) noexcept {
  if (isValue<T>(o)) {
    node = handleOf<T>(o);
    return node.valid() ? Operand::Node : Operand::Rewound;
  }
  if (PyFloat_Check(o)) {
    number = static_cast<T>(PyFloat_AS_DOUBLE(o));
    return Operand::Number;
  }
  if (PyLong_Check(o)) {
    const double d = PyLong_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) return Operand::Error;
    number = static_cast<T>(d);
    return Operand::Number;
  }
  return Operand::Foreign;
}

// x op y where either side may be a plain number; anything else is left to the other operand.
template <class T, class NodeNode, class NodeNumber, class NumberNode>
PyObject* arithmetic(PyObject* x, PyObject* y, NodeNode nn, NodeNumber nc, NumberNode cn) noexcept {
  Value<T> vx, vy;
  T cx = 0, cy = 0;
  const Operand kx = classify(x, vx, cx), ky = classify(y, vy, cy);
  if (kx == Operand::Error || ky == Operand::Error) return nullptr;
  if (kx == Operand::Rewound || ky == Operand::Rewound) return rewoundError();
  if (kx == Operand::Node && ky == Operand::Node) return wrap(nn(vx, vy));
  if (kx == Operand::Node && ky == Operand::Number) return wrap(nc(vx, cy));
  if (kx == Operand::Number && ky == Operand::Node) return wrap(cn(cx, vy));
  Py_RETURN_NOTIMPLEMENTED;
}

template <class T>
Value<T> power(Value<T> x, T exponent) noexcept {
  if (exponent == T(2)) return sqr(x);
  if (exponent == T(3)) return pow3(x);
  if (exponent == T(-1)) return inv(x);
  if (exponent == T(0.5)) return burtorch::sqrt(x);
  if (exponent == T(-0.5)) return invSqrt(x);
  return burtorch::pow(x, exponent);
}

template <class T>
struct ValueSlots {
  using V = Value<T>;

  static PyObject* add(PyObject* x, PyObject* y) {
    return arithmetic<T>(x, y, [](V a, V b) { return a + b; }, [](V a, T c) { return a + c; }, [](T c, V b) { return c + b; });
  }
  static PyObject* subtract(PyObject* x, PyObject* y) {
    return arithmetic<T>(x, y, [](V a, V b) { return a - b; }, [](V a, T c) { return a - c; }, [](T c, V b) { return c - b; });
  }
  static PyObject* multiply(PyObject* x, PyObject* y) {
    return arithmetic<T>(x, y, [](V a, V b) { return a * b; }, [](V a, T c) { return a * c; }, [](T c, V b) { return c * b; });
  }
  static PyObject* divide(PyObject* x, PyObject* y) {
    return arithmetic<T>(x, y, [](V a, V b) { return a / b; }, [](V a, T c) { return a / c; }, [](T c, V b) { return c / b; });
  }
  // x ** c for a number c only, as micrograd.
  static PyObject* power(PyObject* x, PyObject* y, PyObject* modulo) {
    V node;
    T exponent = 0;
    if (modulo != Py_None || !isValue<T>(x) || classify(y, node, exponent) != Operand::Number) {
      if (PyErr_Occurred()) return nullptr;
      Py_RETURN_NOTIMPLEMENTED;
    }
    const V base = handleOf<T>(x);
    if (!base.valid()) return rewoundError();
    return wrap(python::power(base, exponent));
  }

  template <V (*F)(V)>
  static PyObject* unary(PyObject* self) {
    const V x = handleOf<T>(self);
    if (!x.valid()) return rewoundError();
    return wrap(F(x));
  }
  template <V (*F)(V)>
  static PyObject* method(PyObject* self, PyObject*) {
    return unary<F>(self);
  }
  static V neg(V x) { return -x; }
  static V reluOf(V x) { return relu(x); }
  static V tanhOf(V x) { return burtorch::tanh(x); }
  static V expOf(V x) { return burtorch::exp(x); }
  static V logOf(V x) { return burtorch::log(x); }
  static V sigmoidOf(V x) { return sigmoid(x); }
  static V sqrtOf(V x) { return burtorch::sqrt(x); }

  static PyObject* backwardOf(PyObject* self, PyObject*) {
    const V x = handleOf<T>(self);
    if (!x.valid()) return rewoundError();
    backward(x);
    Py_RETURN_NONE;
  }

  static PyObject* toFloat(PyObject* self) {
    const V x = handleOf<T>(self);
    if (!x.valid()) return rewoundError();
    return PyFloat_FromDouble(x.data());
  }

  static PyObject* create(PyTypeObject*, PyObject* args, PyObject* kwargs) {
    static const char* names[] = {"data", nullptr};
    double data = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "d:Value", const_cast<char**>(names), &data)) return nullptr;
    return wrap(V(static_cast<T>(data)));
  }

  static void dealloc(PyObject* self) {
    PyTypeObject* type = Py_TYPE(self);
    PyObject_Free(self);
    Py_DECREF(type);  // instances of heap types own a reference to their type
  }

  static PyObject* repr(PyObject* self) {
    const V x = handleOf<T>(self);
    if (!x.valid()) return PyUnicode_FromString("Value(<rewound>)");
    char* data = PyOS_double_to_string(x.data(), 'r', 0, Py_DTSF_ADD_DOT_0, nullptr);
    char* grad = PyOS_double_to_string(x.grad(), 'r', 0, Py_DTSF_ADD_DOT_0, nullptr);
    PyObject* text = (data && grad) ? PyUnicode_FromFormat("Value(data=%s, grad=%s)", data, grad) : nullptr;
    PyMem_Free(data);
    PyMem_Free(grad);
    return text;
  }

  template <bool Grad>
  static PyObject* get(PyObject* self, void*) {
    const V x = handleOf<T>(self);
    if (!x.valid()) return rewoundError();
    return PyFloat_FromDouble(Grad ? x.grad() : x.data());
  }
  template <bool Grad>
  static int set(PyObject* self, PyObject* value, void*) {
    const V x = handleOf<T>(self);
    if (!x.valid()) return rewoundError(), -1;
    if (!value) {
      PyErr_SetString(PyExc_TypeError, "cannot delete this attribute");
      return -1;
    }
    const double d = PyFloat_AsDouble(value);
    if (d == -1.0 && PyErr_Occurred()) return -1;
    if (Grad) x.setGrad(static_cast<T>(d));
    else x.setData(static_cast<T>(d));
    return 0;
  }
  static PyObject* index(PyObject* self, void*) { return PyLong_FromUnsignedLong(handleOf<T>(self).index()); }
  static PyObject* op(PyObject* self, void*) {
    const V x = handleOf<T>(self);
    if (!x.valid()) return rewoundError();
    return PyUnicode_FromString(opName(x.op()));
  }
};

// Creates the type; `name` is its qualified name, e.g. "burtorch.fp64.Value".
template <class T>
PyTypeObject* makeValueType(const char* name) {
  using S = ValueSlots<T>;
  static PyMethodDef methods[] = {
      {"backward", S::backwardOf, METH_NOARGS, "Adds d(self)/d(node) to .grad of every node it reaches."},
      {"relu", S::template method<&S::reluOf>, METH_NOARGS, nullptr},
      {"tanh", S::template method<&S::tanhOf>, METH_NOARGS, nullptr},
      {"exp", S::template method<&S::expOf>, METH_NOARGS, nullptr},
      {"log", S::template method<&S::logOf>, METH_NOARGS, nullptr},
      {"sigmoid", S::template method<&S::sigmoidOf>, METH_NOARGS, nullptr},
      {"sqrt", S::template method<&S::sqrtOf>, METH_NOARGS, nullptr},
      {nullptr, nullptr, 0, nullptr},
  };
  static PyGetSetDef attributes[] = {
      {"data", S::template get<false>, S::template set<false>, "The node's value.", nullptr},
      {"grad", S::template get<true>, S::template set<true>, "The node's gradient.", nullptr},
      {"index", S::index, nullptr, "The node's index in the pool.", nullptr},
      {"op", S::op, nullptr, "The operator that made the node.", nullptr},
      {nullptr, nullptr, nullptr, nullptr, nullptr},
  };
  static PyType_Slot slots[] = {
      {Py_tp_doc, const_cast<char*>("A scalar node: .data, .grad, arithmetic with Values and numbers, .backward().")},
      {Py_tp_new, reinterpret_cast<void*>(S::create)},
      {Py_tp_dealloc, reinterpret_cast<void*>(S::dealloc)},
      {Py_tp_repr, reinterpret_cast<void*>(S::repr)},
      {Py_tp_methods, methods},
      {Py_tp_getset, attributes},
      {Py_nb_add, reinterpret_cast<void*>(S::add)},
      {Py_nb_subtract, reinterpret_cast<void*>(S::subtract)},
      {Py_nb_multiply, reinterpret_cast<void*>(S::multiply)},
      {Py_nb_true_divide, reinterpret_cast<void*>(S::divide)},
      {Py_nb_power, reinterpret_cast<void*>(S::power)},
      {Py_nb_negative, reinterpret_cast<void*>(S::template unary<&S::neg>)},
      {Py_nb_float, reinterpret_cast<void*>(S::toFloat)},
      {0, nullptr},
  };
  static PyType_Spec spec = {name, sizeof(PyValue<T>), 0, Py_TPFLAGS_DEFAULT, slots};
  valueType<T> = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));
  return valueType<T>;
}

}  // namespace burtorch::python

namespace pybind11::detail {

// Values cross every pybind11 binding (lists of them too) as the native type above.
template <class T>
struct type_caster<burtorch::Value<T>> {
  PYBIND11_TYPE_CASTER(burtorch::Value<T>, const_name("Value"));

  bool load(handle src, bool) {
    if (!burtorch::python::isValue<T>(src.ptr())) return false;
    value = burtorch::python::handleOf<T>(src.ptr());
    return true;
  }

  static handle cast(burtorch::Value<T> v, return_value_policy, handle) {
    PyObject* obj = burtorch::python::wrap(v);
    if (!obj) throw error_already_set();
    return obj;
  }
};

}  // namespace pybind11::detail
