"""Transformer encoder stacks, built op by op from their dimensions.

A post-LayerNorm encoder layer (Vaswani et al. 2017; BERT, Devlin et al. 2019):

``q_proj, k_proj, v_proj -> scores -> softmax -> context -> out_proj -> add1 -> ln1
-> ffn1 -> gelu -> ffn2 -> add2 -> ln2``

Parameters per layer: ``4d^2 + 4d`` (Q, K, V, output projections with biases)
+ ``2 d d_ff + d_ff + d`` (FFN) + ``4d`` (two LayerNorms). Embeddings and the pooler
are not part of the encoder stack; the stack's input (the embedding output, ``S x d``)
enters through one zero-FLOP ``input`` op so the three projections and the first
residual add can share it through edges.
"""

from __future__ import annotations

from simulator.errors import ModelError
from simulator.graph.layers import GraphBuilder
from simulator.graph.model import ModelGraph


def encoder_layer_params(d_model: int, d_ff: int) -> int:
    """Learned parameters of one encoder layer (hand formula, see the module docstring).

    Parameters
    ----------
    d_model : int
        Hidden size ``d``.
    d_ff : int
        Feed-forward inner size.

    Returns
    -------
    int
        ``4d^2 + 4d + 2 d d_ff + d_ff + d + 4d``.
    """
    d = d_model
    return 4 * d * d + 4 * d + 2 * d * d_ff + d_ff + d + 4 * d


def transformer_encoder(
    *,
    layers: int = 4,
    d_model: int = 256,
    heads: int = 4,
    d_ff: int = 1024,
    seq_len: int = 128,
    dtype: str = "fp32",
) -> ModelGraph:
    """A stack of post-LN transformer encoder layers over a ``(seq_len, d_model)`` input.

    Parameters
    ----------
    layers : int
        Number of encoder layers (>= 1).
    d_model : int
        Hidden size; must be divisible by ``heads``.
    heads : int
        Attention heads.
    d_ff : int
        Feed-forward inner size.
    seq_len : int
        Tokens per request.
    dtype : str
        Element type.

    Returns
    -------
    ModelGraph
        Ops ``input`` then ``layer{i}.q_proj ... layer{i}.ln2`` for ``i = 0..layers-1``
        (0-based like Hugging Face's ``encoder.layer.{i}``).
    """
    return _encoder_stack("transformer_encoder", layers, d_model, heads, d_ff, seq_len, dtype)


def _encoder_stack(
    name: str, layers: int, d_model: int, heads: int, d_ff: int, seq_len: int, dtype: str
) -> ModelGraph:
    for label, value in (
        ("layers", layers),
        ("d_model", d_model),
        ("heads", heads),
        ("d_ff", d_ff),
        ("seq_len", seq_len),
    ):
        if value < 1:
            raise ModelError(f"option {label} must be >= 1, got {value}", name)
    if d_model % heads:
        raise ModelError(f"option d_model ({d_model}) must be divisible by heads ({heads})", name)
    b = GraphBuilder(dtype, model=name)
    x = b.input((seq_len, d_model), name="input")
    for i in range(layers):
        p = f"layer{i}."
        attn = b.multi_head_attention(x, heads, prefix=p)
        x = b.layernorm(b.add(x, attn, name=f"{p}add1"), name=f"{p}ln1")
        h = b.gelu(b.fc(x, d_ff, name=f"{p}ffn1"), name=f"{p}gelu")
        h = b.fc(h, d_model, name=f"{p}ffn2")
        x = b.layernorm(b.add(x, h, name=f"{p}add2"), name=f"{p}ln2")
    return b.build(name)


def bert_base_encoder(*, seq_len: int = 128, dtype: str = "fp32") -> ModelGraph:
    """The BERT-base encoder stack: 12 layers, d = 768, 12 heads, d_ff = 3072.

    Parameters
    ----------
    seq_len : int
        Tokens per request (BERT pre-training used 128 for 90 % of steps).
    dtype : str
        Element type.

    Returns
    -------
    ModelGraph
        85,054,464 parameters: Hugging Face ``bert-base-uncased`` (109,482,240) minus
        its embeddings (23,837,184) and pooler (590,592).
    """
    return _encoder_stack("bert_base_encoder", 12, 768, 12, 3072, seq_len, dtype)
