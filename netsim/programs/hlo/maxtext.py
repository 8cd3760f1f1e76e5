"""MaxText's decoder of autumn 2023 in plain JAX: the models behind its v5e-256 MFU table.

MaxText (AI-Hypercomputer/maxtext, formerly google/maxtext) published, at commit
``9bc243c95`` (2023-10-27, README "TPU v5e"), the MFU of one v5e-256 slice training 16B,
32B, 64B and 128B decoders: 61.10, 66.86, 59.90 and 56.06 %. The runs are
``MaxText/configs/largest_job/{16b,32b,64b,128b}.sh`` of that commit: ``base.yml`` scaled by
``global_parameter_scale``, bf16 activations, float32 parameters and AdamW state,
``remat_policy=full``, ``scan_layers=True``, sequence 2048, FSDP over every chip (the 128B
run: FSDP 16 x tensor 16). This module writes the same model without Flax or MaxText:

- ``pyconfig.get_individual_scales``: the scale turns into embed, heads, MLP and layers;
- ``layers.DecoderLayer``: a *parallel* block (attention and MLP read the same
  pre-normalised input and are added to the residual), T5 relative-position biases (32
  buckets), RMS ("T5") layer norms, query and key norms, a ReLU MLP with one input matrix;
- ``layers.Decoder``: embeddings shared with the logits (``logits_via_embedding``), one
  ``jax.checkpoint`` per layer (``full`` remat), ``jax.lax.scan`` over the layers;
- ``optimizers``: AdamW (b1 0.9, b2 0.95, eps 1e-8, weight decay 0.1) after clipping the
  gradients' global norm to 1.0;
- ``train.calculate_training_tflops`` of that commit: the model FLOPs per device per step,
  ``6 * params * seq * batch + 12 * heads * layers * head_dim * seq^2 * batch`` (attention
  counted non-causal, as it was then).

Attention is written as plain dots (MaxText ran a Pallas flash kernel, whose work XLA cannot
see); its FLOPs are the same dots. It needs only JAX (``scripts/make_step_modules.py``
compiles it with libtpu for a v5e 16x16 slice, ahead of time, without a TPU).

Examples
--------
>>> m = MODELS["16b"]
>>> (m.emb, m.heads, m.mlp, m.layers, m.head_dim)
(5120, 32, 32768, 32, 256)
>>> round(m.params() / 1e9, 2)
16.27
>>> round(m.model_tflops_per_device(), 1)
1279.0
>>> round(m.step_time_s(), 2)  # seconds per step at the published 61.10 % MFU
10.63
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["HELD_OUT", "MODELS", "MaxTextConfig", "individual_scales"]

BASE = {"emb": 2560, "heads": 8, "mlp": 8192, "layers": 16, "head_dim": 256, "vocab": 32768, "seq": 2048}
"""MaxText ``base.yml`` at 9bc243c95: base_emb_dim, base_num_heads, base_mlp_dim, base_num_decoder_layers, head_dim, vocab_size, max_target_length."""


def individual_scales(scale: int) -> tuple[int, int, int, int]:
    """MaxText's ``pyconfig.get_individual_scales``: (embed, heads, mlp, layers) log2 scales.

    Examples
    --------
    >>> individual_scales(16), individual_scales(128)
    ((1, 2, 2, 1), (2, 3, 3, 2))
    """
    log2 = int(math.log2(scale))
    if 2**log2 != scale:
        raise ValueError(f"global_parameter_scale must be a power of 2, got {scale}")
    base, rem = divmod(log2, 3)
    heads = base + int(rem > 0)
    return base + int(rem > 1), heads, heads, base


@dataclass(frozen=True)
class MaxTextConfig:
    """One row of MaxText's v5e table: the model, the batch and the parallelism it ran with."""

    name: str
    emb: int
    heads: int
    mlp: int
    layers: int
    per_device_batch: int
    fsdp: int
    tensor: int
    published_mfu: float
    """MFU MaxText published for one v5e-256 slice (a fraction)."""
    published_tflops: float
    """TFLOP/s per chip MaxText published beside it."""
    generation: str = "v5e"
    topology: str = "v5e:16x16"
    """libtpu's name of the slice the row ran on."""
    peak_flops: float = 197e12
    """The chip's peak bf16 FLOP/s that MaxText's MFU divides by."""
    rope: bool = False
    """The December 2023 layer (``76bd53b0f``): rotary positions and a value norm instead of T5 relative biases."""
    remat: str = "full"
    """MaxText's ``remat_policy``: ``full`` (one ``jax.checkpoint`` per layer) or ``minimal`` (saves dots without batch dimensions)."""
    causal_flops: bool = False
    """Whether the MFU formula counts attention causal (halved), as MaxText's did from December 2023."""

    @classmethod
    def scaled(cls, name: str, scale: int, per_device_batch: int, fsdp: int, tensor: int, mfu: float, tflops: float) -> MaxTextConfig:
        """A row that sets ``global_parameter_scale`` (the v5e configs)."""
        e, h, f, n = individual_scales(scale)
        return cls(name, BASE["emb"] * 2**e, BASE["heads"] * 2**h, BASE["mlp"] * 2**f, BASE["layers"] * 2**n, per_device_batch, fsdp, tensor, mfu, tflops)

    @property
    def head_dim(self) -> int:
        return BASE["head_dim"]

    @property
    def vocab(self) -> int:
        return BASE["vocab"]

    @property
    def seq(self) -> int:
        return BASE["seq"]

    @property
    def devices(self) -> int:
        return self.fsdp * self.tensor

    def layer_shapes(self) -> dict[str, tuple[int, ...]]:
        """One layer's parameters (without the layer axis)."""
        e, h, d, f = self.emb, self.heads, self.head_dim, self.mlp
        shapes = {"norm": (e,), "query": (e, h, d), "key": (e, h, d), "value": (e, h, d), "out": (h, d, e), "query_norm": (d,), "key_norm": (d,)}
        shapes.update({"value_norm": (d,)} if self.rope else {"relpos": (h, 32)})
        return {**shapes, "wi": (e, f), "wo": (f, e)}

    def params(self) -> int:
        """Parameters, as MaxText counts them (every leaf of the parameter tree)."""
        per_layer = sum(math.prod(s) for s in self.layer_shapes().values())
        return self.layers * per_layer + self.vocab * self.emb + self.emb

    def model_tflops_per_device(self) -> float:
        """MaxText's ``calculate_training_tflops`` at 9bc243c95 (TFLOPs per device per step); from 76bd53b0f attention is halved (causal)."""
        weights = 6 * self.params() * self.seq * self.per_device_batch
        attention = 12 * self.heads * self.layers * self.head_dim * self.seq**2 * self.per_device_batch
        return (weights + attention / (2 if self.causal_flops else 1)) / 1e12

    def step_time_s(self) -> float:
        """The step time MaxText's published MFU implies."""
        return self.model_tflops_per_device() * 1e12 / (self.published_mfu * self.peak_flops)


MODELS = {
    "16b": MaxTextConfig.scaled("16b", 16, 6, 256, 1, 0.6110, 120),
    "32b": MaxTextConfig.scaled("32b", 32, 4, 256, 1, 0.6686, 132),
    "64b": MaxTextConfig.scaled("64b", 64, 2, 256, 1, 0.5990, 118),
    "128b": MaxTextConfig.scaled("128b", 128, 1, 16, 16, 0.5606, 110),
}
"""MaxText's v5e-256 rows (README at 9bc243c95; configs ``MaxText/configs/largest_job/*.sh``): the derivation set."""


def _v5p(name: str, scale: int, per_device_batch: int, mfu: float, tflops: float) -> MaxTextConfig:
    """A row of MaxText's v5p table (``MaxText/configs/v5p/README.md`` at 76bd53b0f, 2023-12-15)."""
    e, h, f, n = individual_scales(scale)
    size = (BASE["emb"] * 2**e, BASE["heads"] * 2**h, BASE["mlp"] * 2**f, BASE["layers"] * 2**n)
    return MaxTextConfig(name, *size, per_device_batch, 16, 4, mfu, tflops, "v5p", "v5p:4x4x4", 459e12, rope=True, remat="minimal", causal_flops=True)


HELD_OUT = {
    "22b_v4": MaxTextConfig("22b_v4", 6144, 24, 24576, 48, 16, 64, 1, 0.567, 156, "v4", "v4:4x4x4", 275e12),
    "52b_v4": MaxTextConfig("52b_v4", 12288, 32, 49152, 32, 10, 192, 1, 0.560, 154, "v4", "v4:4x4x12", 275e12),
    "32b_v5p": _v5p("32b_v5p", 32, 8, 0.7147, 328),
    "64b_v5p": _v5p("64b_v5p", 64, 4, 0.7031, 323),
}
"""Rows of other generations, never derived from.

- README at 9bc243c95, "TPU v4": MaxText's 22B on one v4-128 (64 chips;
  ``MaxText/configs/1xv4-128.sh``: ici_fsdp_parallelism=64, per_device_batch_size=16,
  base_emb_dim=6144, base_num_heads=24, base_mlp_dim=24576, base_num_decoder_layers=48) and
  its 52B on one v4-384 (192 chips; ``MaxText/configs/1xv4-384.sh``: ici_fsdp_parallelism=192,
  per_device_batch_size=10, base_emb_dim=12288, base_num_heads=32, base_mlp_dim=49152,
  base_num_decoder_layers=32).
- ``MaxText/configs/v5p/README.md`` at 76bd53b0f (2023-12-15): the 32B and 64B on one
  v5p-128 (64 chips, 4x4x4; ``v5p/32b.sh``, ``v5p/64b.sh``: global_parameter_scale 32 and 64,
  per_device_batch_size 8 and 4, ici_fsdp_parallelism=-1 (16), ici_tensor_parallelism=4,
  remat_policy=minimal), 71.47 % and 70.31 % MFU of v5p's 459 TFLOP/s. That commit's layer
  has rotary positions and query, key and value norms (``layers/attentions.py``), and its
  MFU formula halves attention (``maxtext_utils.calculate_training_tflops``).
"""


def build_step(config: MaxTextConfig, mesh):  # pragma: no cover - needs JAX; run by scripts/make_step_modules.py
    """The training step as a jitted function and its abstract arguments (``jax.ShapeDtypeStruct``)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    c = config
    b = jnp.bfloat16
    rules = {"embed": "fsdp", "heads": "tensor", "mlp": "tensor", "vocab": "tensor", "layers": None, None: None}
    axes = {
        "norm": ("embed",),
        "query": ("embed", "heads", None),
        "key": ("embed", "heads", None),
        "value": ("embed", "heads", None),
        "out": ("heads", None, "embed"),
        "query_norm": (None,),
        "key_norm": (None,),
        "value_norm": (None,),
        "relpos": ("heads", None),
        "wi": ("embed", "mlp"),
        "wo": ("mlp", "embed"),
    }

    def spec(names: tuple) -> P:
        return P(*(rules[n] for n in names))

    layer_specs = {k: P(None, *spec(v)) for k, v in axes.items()}
    param_specs = {"embedding": P("tensor", "fsdp"), "final_norm": P("fsdp"), "layers": layer_specs}

    def abstract(shape, s):
        return jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NamedSharding(mesh, s))

    params = {
        "embedding": abstract((c.vocab, c.emb), param_specs["embedding"]),
        "final_norm": abstract((c.emb,), param_specs["final_norm"]),
        "layers": {k: abstract((c.layers, *v), layer_specs[k]) for k, v in c.layer_shapes().items()},
    }
    batch = c.per_device_batch * c.devices
    tokens = jax.ShapeDtypeStruct((batch, c.seq), jnp.int32, sharding=NamedSharding(mesh, P(("data", "fsdp", "tensor"), None)))
    act = NamedSharding(mesh, P(("data", "fsdp"), None, "tensor"))

    def rms(x, scale):
        x32 = x.astype(jnp.float32)
        y = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + 1e-6)
        return y.astype(jnp.bfloat16) * scale.astype(jnp.bfloat16)

    def relpos_bucket(n_q: int, num_buckets: int = 32, max_distance: int = 128):
        q = jnp.arange(n_q)[:, None]
        k = jnp.arange(n_q)[None, :]
        n = jnp.maximum(q - k, 0)  # unidirectional
        max_exact = num_buckets // 2
        large = max_exact + (jnp.log(jnp.maximum(n, 1) / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)).astype(jnp.int32)
        return jnp.where(n < max_exact, n, jnp.minimum(large, num_buckets - 1))

    def rotary(x):  # MaxText's LLaMARotaryEmbedding: timescales 1 .. 10^4 over half the head
        half = c.head_dim // 2
        timescale = 1e4 ** (2 * jnp.arange(half, dtype=jnp.float32) / c.head_dim)
        angle = (jnp.arange(c.seq, dtype=jnp.float32)[:, None] / timescale)[None, :, None, :]
        x1, x2 = jnp.split(x.astype(jnp.float32), 2, axis=-1)
        return jnp.concatenate([x1 * jnp.cos(angle) - x2 * jnp.sin(angle), x2 * jnp.cos(angle) + x1 * jnp.sin(angle)], axis=-1).astype(b)

    def layer(x, p):
        lnx = rms(x, p["norm"])
        q = jnp.einsum("bse,ehd->bshd", lnx, p["query"].astype(b))
        k = jnp.einsum("bse,ehd->bshd", lnx, p["key"].astype(b))
        v = jnp.einsum("bse,ehd->bshd", lnx, p["value"].astype(b))
        if c.rope:
            q, k, v = rms(rotary(q), p["query_norm"]), rms(rotary(k), p["key_norm"]), rms(v, p["value_norm"])
        else:
            q, k = rms(q, p["query_norm"]) / jnp.sqrt(jnp.asarray(c.head_dim, b)), rms(k, p["key_norm"])
        logits = jnp.einsum("bqhd,bkhd->bhqk", q, k)
        if not c.rope:
            one_hot = jax.nn.one_hot(relpos_bucket(c.seq), 32, dtype=b)
            logits = logits + jnp.einsum("hn,qkn->hqk", p["relpos"].astype(b), one_hot)
        causal = jnp.tril(jnp.ones((c.seq, c.seq), bool))
        logits = jnp.where(causal, logits, jnp.asarray(-1e10, b))
        weights = jax.nn.softmax(logits.astype(jnp.float32)).astype(b)
        attended = jnp.einsum("bhqk,bkhd->bqhd", weights, v)
        attention = jnp.einsum("bshd,hde->bse", attended, p["out"].astype(b))
        hidden = jax.nn.relu(jnp.einsum("bse,ef->bsf", lnx, p["wi"].astype(b)))
        mlp = jnp.einsum("bsf,fe->bse", hidden, p["wo"].astype(b))
        out = jax.lax.with_sharding_constraint(x + attention + mlp, act)
        return out, None

    def loss_fn(params, tokens):
        emb = params["embedding"].astype(jnp.bfloat16)
        x = jax.lax.with_sharding_constraint(emb[tokens], act)
        policy = jax.checkpoint_policies.checkpoint_dots_with_no_batch_dims if c.remat == "minimal" else None
        x, _ = jax.lax.scan(jax.checkpoint(layer, policy=policy), x, params["layers"])
        x = rms(x, params["final_norm"])
        logits = jnp.einsum("bse,ve->bsv", x, emb) / jnp.sqrt(jnp.asarray(c.emb, jnp.bfloat16))
        targets = jnp.roll(tokens, -1, axis=1)
        logp = jax.nn.log_softmax(logits.astype(jnp.float32))
        return -jnp.mean(jnp.take_along_axis(logp, targets[..., None], axis=-1))

    def step(params, mu, nu, tokens, count):
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens)
        leaves = jax.tree_util.tree_leaves(grads)
        norm = jnp.sqrt(sum(jnp.sum(g * g) for g in leaves))
        clip = jnp.minimum(1.0, 1.0 / (norm + 1e-6))
        grads = jax.tree_util.tree_map(lambda g: g * clip, grads)
        b1, b2, eps, lr, wd = 0.9, 0.95, 1e-8, 3e-5, 0.1
        t = count + 1
        mu = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, mu, grads)
        nu = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, nu, grads)
        scale_m, scale_v = 1 / (1 - b1**t), 1 / (1 - b2**t)
        params = jax.tree_util.tree_map(lambda p, m, v: p - lr * (m * scale_m / (jnp.sqrt(v * scale_v) + eps) + wd * p), params, mu, nu)
        return params, mu, nu, loss, t

    shardings = jax.tree_util.tree_map(lambda a: a.sharding, params)
    count = jax.ShapeDtypeStruct((), jnp.int32, sharding=NamedSharding(mesh, P()))
    jitted = jax.jit(step, donate_argnums=(0, 1, 2), out_shardings=(shardings, shardings, shardings, NamedSharding(mesh, P()), count.sharding))
    return jitted, (params, params, params, tokens, count)
