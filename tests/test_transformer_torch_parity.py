"""The Transformer's pairs against torch in float64, forward and backward (skipped without torch).

Weights cross over transposed: npseq maps a row as ``x @ W + b``, torch as ``x @ W.T + b``.
Rows that see no key at all are avoided: npseq gives them zeros, torch NaN.
"""
import numpy as np
import pytest

from npseq.functional.activations import gelu_backward, gelu_forward
from npseq.functional.normalization import layer_norm_backward, layer_norm_forward
from npseq.functional.transformer import (
    MULTIHEAD_PARAMS,
    attention_mask,
    feed_forward_backward,
    feed_forward_forward,
    multihead_attention_backward,
    multihead_attention_forward,
    residual_norm_backward,
    residual_norm_forward,
    scaled_dot_product_attention_backward,
    scaled_dot_product_attention_forward,
)
from npseq.gradcheck import rel_error
from npseq.samples import valid_mask

torch = pytest.importorskip("torch")
TOL = 1e-10


def tensor(array, grad=True):
    return torch.tensor(array, dtype=torch.float64, requires_grad=grad)


def close(ours, theirs, name=""):
    theirs = theirs.detach().numpy() if hasattr(theirs, "detach") else theirs
    assert rel_error(ours, theirs) < TOL, name


# ------------------------------------------------------------------ activations
def test_gelu_is_torch_tanh_gelu():
    x = np.linspace(-8, 8, 101)
    dy = np.random.default_rng(0).standard_normal(x.shape)
    out, cache = gelu_forward(x)
    t = tensor(x)
    t_out = torch.nn.functional.gelu(t, approximate="tanh")
    (t_out * torch.tensor(dy)).sum().backward()
    # In the far left tail 1 + tanh(u) cancels to a few units of roundoff in both, which round
    # apart: there the two agree to 1e-14 absolute, elsewhere to 1e-10 relative.
    np.testing.assert_allclose(out, t_out.detach().numpy(), rtol=TOL, atol=1e-14)
    np.testing.assert_allclose(gelu_backward(dy, cache), t.grad.numpy(), rtol=TOL, atol=1e-14)
    middle = np.abs(x) <= 4
    close(out[middle], t_out.detach().numpy()[middle])
    close(gelu_backward(dy, cache)[middle], t.grad.numpy()[middle])


# ------------------------------------------------------------------- layer norm
@pytest.mark.parametrize("shape", [(3, 7), (2, 4, 6)])
def test_layer_norm_matches_torch(shape):
    rng = np.random.default_rng(1)
    x, gamma, beta = 3 * rng.standard_normal(shape) + 1, rng.standard_normal(shape[-1]), rng.standard_normal(shape[-1])
    dy = rng.standard_normal(shape)
    y, cache = layer_norm_forward(x, gamma, beta, eps=1e-5)
    dx, dgamma, dbeta = layer_norm_backward(dy, cache)

    norm = torch.nn.LayerNorm(shape[-1], eps=1e-5, dtype=torch.float64)
    with torch.no_grad():
        norm.weight.copy_(torch.tensor(gamma))
        norm.bias.copy_(torch.tensor(beta))
    t = tensor(x)
    t_y = norm(t)
    (t_y * torch.tensor(dy)).sum().backward()
    close(y, t_y, "y")
    close(dx, t.grad, "dx")
    close(dgamma, norm.weight.grad, "dgamma")
    close(dbeta, norm.bias.grad, "dbeta")


# ----------------------------------------------------- scaled dot-product attention
@pytest.mark.parametrize("lens", [None, np.array([4, 2]), np.array([[1, 4, 2], [2, 3, 4]])], ids=["all", "N", "NQ"])
@pytest.mark.parametrize("causal", [False, True], ids=["", "causal"])
def test_sdpa_matches_torch(lens, causal):
    rng = np.random.default_rng(2)
    q, k, v = rng.standard_normal((2, 3, 3, 5)), rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((2, 3, 4, 2))
    dout = rng.standard_normal((2, 3, 3, 2))
    out, _, cache = scaled_dot_product_attention_forward(q, k, v, lens, causal)
    grads = scaled_dot_product_attention_backward(dout, cache)

    tq, tk, tv = tensor(q), tensor(k), tensor(v)
    mask = torch.tensor(attention_mask(3, 4, lens, causal, np)[:, None])  # True: takes part, as torch reads it
    t_out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=mask)
    (t_out * torch.tensor(dout)).sum().backward()
    close(out, t_out, "out")
    for name, ours, theirs in zip("qkv", grads, (tq, tk, tv)):
        close(ours, theirs.grad, name)


# ---------------------------------------------------------- multi-head attention
def torch_mha(params, embed, num_heads, kdim=None, vdim=None):
    """A torch.nn.MultiheadAttention holding the weights of ``params`` (transposed into torch's layout)."""
    mha = torch.nn.MultiheadAttention(embed, num_heads, kdim=kdim, vdim=vdim, batch_first=True,
                                      dtype=torch.float64)
    with torch.no_grad():
        if mha._qkv_same_embed_dim:
            mha.in_proj_weight.copy_(torch.tensor(np.concatenate([params["W_q"].T, params["W_k"].T,
                                                                  params["W_v"].T])))
        else:
            for name in "qkv":
                getattr(mha, f"{name}_proj_weight").copy_(torch.tensor(params[f"W_{name}"].T))
        mha.in_proj_bias.copy_(torch.tensor(np.concatenate([params["b_q"], params["b_k"], params["b_v"]])))
        mha.out_proj.weight.copy_(torch.tensor(params["W_o"].T))
        mha.out_proj.bias.copy_(torch.tensor(params["b_o"]))
    return mha


def torch_mha_grads(mha, embed):
    """torch's parameter gradients by npseq's names (transposed back)."""
    if mha._qkv_same_embed_dim:
        w = mha.in_proj_weight.grad.numpy()
        weights = {f"W_{name}": w[i * embed:(i + 1) * embed].T for i, name in enumerate("qkv")}
    else:
        weights = {f"W_{name}": getattr(mha, f"{name}_proj_weight").grad.numpy().T for name in "qkv"}
    b = mha.in_proj_bias.grad.numpy()
    biases = {f"b_{name}": b[i * embed:(i + 1) * embed] for i, name in enumerate("qkv")}
    return {**weights, **biases, "W_o": mha.out_proj.weight.grad.numpy().T, "b_o": mha.out_proj.bias.grad.numpy()}


@pytest.mark.parametrize("num_heads", [1, 2, 4])
@pytest.mark.parametrize("lens", [None, np.array([4, 2, 1])], ids=["all", "padded"])
@pytest.mark.parametrize("causal", [False, True], ids=["", "causal"])
@pytest.mark.parametrize("dims", [(8, 8, 8), (8, 3, 5)], ids=["same_dims", "kdim_vdim"])
def test_multihead_matches_torch(num_heads, lens, causal, dims):
    embed, kdim, vdim = dims
    rng = np.random.default_rng(3)
    n, tq, tk = 3, 4, 4
    q, k, v = (rng.standard_normal((n, tq, embed)), rng.standard_normal((n, tk, kdim)),
               rng.standard_normal((n, tk, vdim)))
    sizes = {"W_q": (embed, embed), "W_k": (kdim, embed), "W_v": (vdim, embed), "W_o": (embed, embed)}
    params = {name: 0.5 * rng.standard_normal(sizes.get(name, (embed,))) for name in MULTIHEAD_PARAMS}
    dout, dweights = rng.standard_normal((n, tq, embed)), rng.standard_normal((n, num_heads, tq, tk))

    out, weights, cache = multihead_attention_forward(q, k, v, params, num_heads, lens, causal)
    dq, dk, dv, grads = multihead_attention_backward(dout, cache, dweights)

    mha = torch_mha(params, embed, num_heads, kdim, vdim)
    tq_, tk_, tv_ = tensor(q), tensor(k), tensor(v)
    padding = None if lens is None else torch.tensor(~valid_mask(lens, tk))                    # True: ignore
    future = torch.triu(torch.ones(tq, tk, dtype=torch.bool), 1) if causal else None           # True: ignore
    t_out, t_weights = mha(tq_, tk_, tv_, key_padding_mask=padding, attn_mask=future, need_weights=True,
                           average_attn_weights=False)
    ((t_out * torch.tensor(dout)).sum() + (t_weights * torch.tensor(dweights)).sum()).backward()

    close(out, t_out, "out")
    close(weights, t_weights, "weights")
    for name, ours, theirs in (("queries", dq, tq_), ("keys", dk, tk_), ("values", dv, tv_)):
        close(ours, theirs.grad, name)
    theirs = torch_mha_grads(mha, embed)
    for name in MULTIHEAD_PARAMS:
        if name == "b_k":  # zero in exact arithmetic; both hold rounding noise
            assert np.abs(grads[name]).max() < 1e-12 and np.abs(theirs[name]).max() < 1e-12
        else:
            close(grads[name], theirs[name], name)


# ------------------------------------------------ a whole encoder layer, both orders
def _sublayers(params, ffn, activation, lens, num_heads):
    def attend(z):
        out, _, cache = multihead_attention_forward(z, z, z, params, num_heads, lens)
        return out, cache

    def attend_backward(dy, cache):
        dq, dk, dv, grads = multihead_attention_backward(dy, cache)
        return dq + dk + dv, grads

    def feed(z):
        return feed_forward_forward(z, *ffn.values(), activation=activation)

    def feed_backward(dy, cache):
        dz, *grads = feed_forward_backward(dy, cache)
        return dz, dict(zip(("W1", "b1", "W2", "b2"), grads))
    return (attend, attend_backward), (feed, feed_backward)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_matches_torch(norm_first, activation):
    """residual_norm(self-attention) then residual_norm(feed-forward) is torch's TransformerEncoderLayer."""
    rng = np.random.default_rng(4)
    n, t, embed, hidden, heads = 3, 5, 8, 16, 2
    x, lens = rng.standard_normal((n, t, embed)), np.array([5, 3, 1])
    params = {name: 0.4 * rng.standard_normal((embed, embed) if name.startswith("W") else (embed,))
              for name in MULTIHEAD_PARAMS}
    ffn = {"W1": 0.4 * rng.standard_normal((embed, hidden)), "b1": rng.standard_normal(hidden),
           "W2": 0.4 * rng.standard_normal((hidden, embed)), "b2": rng.standard_normal(embed)}
    norms = [(1 + 0.3 * rng.standard_normal(embed), 0.3 * rng.standard_normal(embed)) for _ in range(2)]
    dy = rng.standard_normal(x.shape)
    order = "pre" if norm_first else "post"

    (attend, attend_backward), (feed, feed_backward) = _sublayers(params, ffn, activation, lens, heads)
    h, cache1 = residual_norm_forward(x, attend, *norms[0], order)
    y, cache2 = residual_norm_forward(h, feed, *norms[1], order)
    dh, dgamma2, dbeta2, dffn = residual_norm_backward(dy, cache2, feed_backward)
    dx, dgamma1, dbeta1, dattn = residual_norm_backward(dh, cache1, attend_backward)

    act = torch.nn.functional.relu if activation == "relu" else (
        lambda z: torch.nn.functional.gelu(z, approximate="tanh"))
    layer = torch.nn.TransformerEncoderLayer(embed, heads, hidden, dropout=0.0, activation=act, batch_first=True,
                                             norm_first=norm_first, dtype=torch.float64)
    layer.self_attn = torch_mha(params, embed, heads)
    with torch.no_grad():
        layer.linear1.weight.copy_(torch.tensor(ffn["W1"].T))
        layer.linear1.bias.copy_(torch.tensor(ffn["b1"]))
        layer.linear2.weight.copy_(torch.tensor(ffn["W2"].T))
        layer.linear2.bias.copy_(torch.tensor(ffn["b2"]))
        for norm, (gamma, beta) in zip((layer.norm1, layer.norm2), norms):
            norm.weight.copy_(torch.tensor(gamma))
            norm.bias.copy_(torch.tensor(beta))
    tx = tensor(x)
    padding = torch.tensor(~valid_mask(lens, t))
    t_y = layer(tx, src_key_padding_mask=padding)
    (t_y * torch.tensor(dy)).sum().backward()

    close(y, t_y, "y")
    close(dx, tx.grad, "dx")
    theirs = torch_mha_grads(layer.self_attn, embed)
    for name in MULTIHEAD_PARAMS:
        if name != "b_k":
            close(dattn[name], theirs[name], name)
    for name, linear in (("1", layer.linear1), ("2", layer.linear2)):
        close(dffn[f"W{name}"], linear.weight.grad.numpy().T, f"W{name}")
        close(dffn[f"b{name}"], linear.bias.grad, f"b{name}")
    for (dgamma, dbeta), norm in (((dgamma1, dbeta1), layer.norm1), ((dgamma2, dbeta2), layer.norm2)):
        close(dgamma, norm.weight.grad, "gamma")
        close(dbeta, norm.bias.grad, "beta")


# ----------------------------------------------------------- the decoder block module
@pytest.mark.parametrize("norm", ["post", "pre"])
def test_decoder_block_module_matches_torch_decoder_layer(norm):
    """npseq.nn.TransformerDecoderBlock against torch.nn.TransformerDecoderLayer: causal self-attention,
    cross-attention to a padded memory, the ReLU feed-forward network, three layer norms."""
    from npseq.nn import TransformerDecoderBlock
    embed, heads, hidden, n, t, s = 8, 2, 12, 3, 4, 5
    rng = np.random.default_rng(7)
    block = TransformerDecoderBlock(embed, hidden, heads, norm=norm, rng=1, dtype="float64")
    for param in (block.norm1.gamma, block.norm2.gamma, block.norm3.gamma):
        param.data[...] = 1 + 0.3 * rng.standard_normal(embed)
    x, memory, lens = rng.standard_normal((n, t, embed)), rng.standard_normal((n, s, embed)), np.array([5, 3, 1])
    dy = rng.standard_normal((n, t, embed))
    y = block(x, memory, lens)
    dx, dmemory = block.backward(dy)

    def weights(attention):
        return {name: getattr(attention, name).data for name in MULTIHEAD_PARAMS}
    layer = torch.nn.TransformerDecoderLayer(embed, heads, hidden, dropout=0.0, batch_first=True,
                                             norm_first=norm == "pre", dtype=torch.float64)
    layer.self_attn = torch_mha(weights(block.self_attention), embed, heads)
    layer.multihead_attn = torch_mha(weights(block.cross_attention), embed, heads)
    with torch.no_grad():
        for ours, theirs in ((block.ffn.W1, layer.linear1.weight), (block.ffn.W2, layer.linear2.weight)):
            theirs.copy_(torch.tensor(ours.data.T))
        layer.linear1.bias.copy_(torch.tensor(block.ffn.b1.data))
        layer.linear2.bias.copy_(torch.tensor(block.ffn.b2.data))
        for ours, theirs in ((block.norm1, layer.norm1), (block.norm2, layer.norm2), (block.norm3, layer.norm3)):
            theirs.weight.copy_(torch.tensor(ours.gamma.data))
            theirs.bias.copy_(torch.tensor(ours.beta.data))
    tx, tmemory = tensor(x), tensor(memory)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(t, dtype=torch.float64)
    t_y = layer(tx, tmemory, tgt_mask=causal, memory_key_padding_mask=torch.tensor(~valid_mask(lens, s)))
    (t_y * torch.tensor(dy)).sum().backward()

    close(y, t_y, "y")
    close(dx, tx.grad, "dx")
    close(dmemory, tmemory.grad, "dmemory")
    for attention, mha in ((block.self_attention, layer.self_attn), (block.cross_attention, layer.multihead_attn)):
        theirs = torch_mha_grads(mha, embed)
        for name in MULTIHEAD_PARAMS:
            if name != "b_k":
                close(getattr(attention, name).grad, theirs[name], name)
    close(block.ffn.W1.grad, layer.linear1.weight.grad.numpy().T, "W1")
    close(block.norm3.gamma.grad, layer.norm3.weight.grad, "gamma3")
