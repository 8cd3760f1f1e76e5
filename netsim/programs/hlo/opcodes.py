"""Every HLO opcode the import knows: an instruction with any other opcode is an error.

The list follows XLA's ``hlo_opcode.h``; opcodes without a model of their own are timed
by the bytes they touch (elementwise, data movement) or listed as not modelled.
"""

from __future__ import annotations

__all__ = ["OPCODES"]

_WORDS = """
abs add add-dependency after-all all-gather all-gather-done all-gather-start all-reduce all-reduce-done
all-reduce-start all-to-all and async-done async-start async-update atan2 batch-norm-grad
batch-norm-inference batch-norm-training bitcast bitcast-convert broadcast call call-done call-start cbrt ceil cholesky clamp
clz collective-broadcast collective-permute collective-permute-done collective-permute-start compare
complex concatenate conditional constant convert convolution copy copy-done copy-start cosine
count-leading-zeros custom-call divide domain dot dynamic-reshape dynamic-slice dynamic-update-slice erf
exponential exponential-minus-one fft floor fusion gather get-dimension-size get-tuple-element imag
infeed iota is-finite log log-plus-one logistic map maximum minimum multiply negate not opt-barrier
optimization-barrier or outfeed pad parameter partition-id popcnt power ragged-all-to-all ragged-dot
real recv recv-done reduce reduce-precision reduce-scatter reduce-window remainder replica-id reshape
reverse rng rng-bit-generator rng-get-and-update-state round-nearest-afz round-nearest-even rsqrt
scatter select select-and-scatter send send-done set-dimension-size shift-left shift-right-arithmetic
shift-right-logical sign sine slice sort sqrt stochastic-convert subtract tan tanh topk transpose
triangular-solve tuple while xor
"""

OPCODES = frozenset(_WORDS.split())
"""HLO opcodes, as the text spells them."""
