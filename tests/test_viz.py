"""Plots: valid PNGs, the labels a learner needs, headless operation, lazy matplotlib, input errors."""
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from npseq import viz
from npseq.errors import InvalidTypeError
from npseq.train import History

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SRC = ["il", "fait", "froid", "<eos>"]
OUT = ["it", "is", "cold", ".", "<eos>"]


def attention(rng, rows=None, cols=None):
    rows, cols = rows or len(OUT), cols or len(SRC)
    weights = rng.random((rows, cols))
    return weights / weights.sum(axis=1, keepdims=True)


def assert_png(path):
    """A readable PNG of more than 1 kB whose pixel array has height, width and RGBA channels."""
    import matplotlib.image

    with open(path, "rb") as file:
        assert file.read(8) == PNG_SIGNATURE
    assert os.path.getsize(path) > 1024
    pixels = matplotlib.image.imread(path)
    assert pixels.ndim == 3 and pixels.shape[0] > 100 and pixels.shape[1] > 100 and pixels.shape[2] in (3, 4)
    assert pixels.std() > 0  # something was drawn
    return pixels


def texts(labels):
    return [label.get_text() for label in labels]


# ------------------------------------------------------------------ heatmaps
def test_show_heatmaps_writes_a_labelled_heatmap(tmp_path):
    weights = attention(np.random.default_rng(0))
    path, figure = viz.show_heatmaps(weights, SRC, OUT, tmp_path / "attn.png", title="Bahdanau", return_figure=True)
    assert path == str(tmp_path / "attn.png")
    assert_png(path)
    heatmap, colorbar = figure.axes
    assert texts(heatmap.get_xticklabels()) == SRC and texts(heatmap.get_yticklabels()) == OUT
    assert heatmap.get_xlabel() == "source tokens" and heatmap.get_ylabel() == "output tokens"
    assert heatmap.get_title() == "Bahdanau"
    assert all(label.get_rotation() == 60 for label in heatmap.get_xticklabels())
    assert colorbar.get_ylabel() == "attention weight"
    np.testing.assert_array_equal(heatmap.images[0].get_array(), weights)  # row t = output step t
    assert viz.show_heatmaps(weights, SRC, OUT, tmp_path / "again.png") == str(tmp_path / "again.png")


def test_a_self_attention_map_names_its_axes(tmp_path):
    """An encoder's self-attention has source positions on both axes: the labels say so, not "output tokens"."""
    weights = np.stack([attention(np.random.default_rng(4), cols=len(OUT))] * 2)
    labels = ("keys: source positions", "queries: source positions")
    _, figure = viz.show_heatmaps(weights, OUT, OUT, tmp_path / "self.png", labels=labels, return_figure=True)
    assert [(ax.get_xlabel(), ax.get_ylabel()) for ax in figure.axes[:2]] == [labels, (labels[0], "")]
    _, figure = viz.show_attention_grid([(weights[0], OUT, OUT)], tmp_path / "grid.png", labels=labels,
                                        return_figure=True)
    assert (figure.axes[0].get_xlabel(), figure.axes[0].get_ylabel()) == labels
    with pytest.raises(InvalidTypeError, match=r"labels: expected two str \(x label, y label\), got 'keys'"):
        viz.show_heatmaps(weights, OUT, OUT, tmp_path / "bad.png", labels="keys")


def test_cells_a_step_could_not_see_are_grey_apart_from_the_colour_scale(tmp_path):
    weights = attention(np.random.default_rng(2))
    weights[0, 2:] = 0.0  # e.g. outside a local window
    _, figure = viz.show_heatmaps(weights, SRC, OUT, tmp_path / "window.png", return_figure=True)
    image = figure.axes[0].images[0]
    assert np.ma.getmaskarray(image.get_array()).tolist() == (weights == 0).tolist()
    bad = image.get_cmap().get_bad()
    assert tuple(np.round(bad[:3], 3)) == (0.851, 0.851, 0.851) and bad[3] == 1.0


def test_show_heatmaps_draws_several_maps_over_the_same_tokens(tmp_path):
    rng = np.random.default_rng(1)
    weights = np.stack([attention(rng) for _ in range(3)])
    path, figure = viz.show_heatmaps(weights, SRC, OUT, tmp_path / "three.png",
                                     title=["dot", "general", "additive"], return_figure=True)
    pixels = assert_png(path)
    assert pixels.shape[1] > 2 * pixels.shape[0]  # side by side
    panels = figure.axes[:3]
    assert [ax.get_title() for ax in panels] == ["dot", "general", "additive"]
    assert len(figure.axes) == 4  # one shared colorbar
    assert {ax.images[0].get_clim() for ax in panels} == {(0.0, weights.max())}
    _, figure = viz.show_heatmaps(weights, None, None, tmp_path / "plain.png", title="layers", return_figure=True)
    assert figure.get_suptitle() == "layers"
    assert texts(figure.axes[0].get_xticklabels()) == ["0", "1", "2", "3"]


def test_show_attention_grid_panels_with_their_own_tokens(tmp_path):
    rng = np.random.default_rng(2)
    panels = [(attention(rng), SRC, OUT, "sentence 1"), (attention(rng, 2, 3), ["a", "b", "c"], ["x", "y"]),
              (attention(rng, 1, 1), ["z"], ["w"], "one step")]
    path, figure = viz.show_attention_grid(panels, tmp_path / "grid.png", ncols=2, suptitle="compare",
                                           return_figure=True)
    assert_png(path)
    grid = figure.axes[:4]
    assert texts(grid[1].get_xticklabels()) == ["a", "b", "c"] and texts(grid[1].get_yticklabels()) == ["x", "y"]
    assert [ax.get_title() for ax in grid[:3]] == ["sentence 1", "", "one step"]
    assert not grid[3].axison  # the unused fourth cell of the 2 x 2 grid is blank
    assert grid[0].get_ylabel() == "output tokens" and grid[2].get_ylabel() == "output tokens"
    assert figure.get_suptitle() == "compare"


def test_maps_in_rows_of_ncols_fit_a_max_width(tmp_path):
    """A page's column: the cells shrink, rows with columns, until the figure fits; a small map keeps its size."""
    rng = np.random.default_rng(3)
    weights = np.stack([attention(rng, rows=18, cols=18) for _ in range(4)])
    _, one_row = viz.show_heatmaps(weights, None, None, tmp_path / "row.png", return_figure=True)
    path, figure = viz.show_heatmaps(weights, None, None, tmp_path / "fit.png", title=["a", "b", "c", "d"],
                                     ncols=2, max_width=7.36, return_figure=True)
    assert one_row.get_figwidth() > 7.36
    assert assert_png(path).shape[1] == 736
    cell = (7.36 - 3.0) / (2 * 18)  # an inch of margin per panel, one for the colorbar
    assert figure.get_figheight() == pytest.approx(2 * (18 * cell + 1.0))
    a, b, c, d = figure.axes[:4]
    assert a.get_position().y0 > c.get_position().y1 and a.get_position().x1 < b.get_position().x0  # 2 x 2
    assert [ax.get_ylabel() for ax in (a, b, c, d)] == ["output tokens", "", "output tokens", ""]
    small = attention(rng)
    default = viz.show_heatmaps(small, SRC, OUT, tmp_path / "small.png", return_figure=True)[1].get_figwidth()
    _, capped = viz.show_attention_grid([(small, SRC, OUT)], tmp_path / "capped.png", max_width=7.36,
                                        return_figure=True)
    assert capped.get_figwidth() == default < 7.36


def test_heatmap_accepts_lists_and_all_zero_weights(tmp_path):
    # A decoder row with valid_len 0 is all zeros: the map must still draw.
    path, figure = viz.show_heatmaps([[0.0, 0.0], [0.0, 0.0]], ["a", "b"], ["c", "d"], tmp_path / "z.png",
                                     return_figure=True)
    assert_png(path)
    assert figure.axes[0].images[0].get_clim() == (0.0, 1.0)


@pytest.mark.parametrize("kwargs, message", [
    (dict(src_tokens=SRC[:3]), r"src_tokens: expected 4 tokens \(one per column of weights, shape \(5, 4\)\), got 3"),
    (dict(out_tokens=OUT + ["x"]), r"out_tokens: expected 5 tokens \(one per row of weights, shape \(5, 4\)\), got 6"),
    (dict(weights=np.ones(4)), r"weights: expected a 2-d \(T_out, S\) or 3-d \(P, T_out, S\) array, got shape \(4,\)"),
    (dict(weights=np.full((5, 4), np.nan)), r"weights: expected finite values"),
    (dict(weights=np.ones((5, 0))), r"weights: expected at least one output and one source step"),
    (dict(weights=np.ones((2, 5, 4)), title=["one"]), r"title: expected 2 panel titles"),
    (dict(weights=np.ones((2, 5, 4)), ncols=0), r"ncols: expected a positive int, got 0"),
    (dict(weights=np.ones((2, 5, 4)), max_width=3.0), r"max_width: expected a real number > 3 \(inches: an inch of "
                                                      r"margin for each of the 2 panels .*got 3.0"),
])
def test_show_heatmaps_bad_input_names_the_argument(tmp_path, kwargs, message):
    args = dict(weights=attention(np.random.default_rng(0)), src_tokens=SRC, out_tokens=OUT,
                path=tmp_path / "bad.png")
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        viz.show_heatmaps(**args)
    assert not (tmp_path / "bad.png").exists()


def test_show_attention_grid_bad_input_names_the_panel(tmp_path):
    good = (np.eye(2), ["a", "b"], ["c", "d"])
    with pytest.raises(ValueError, match=r"panels\[1\] out_tokens: expected 2 tokens .* got 1"):
        viz.show_attention_grid([good, (np.eye(2), ["a", "b"], ["c"])], tmp_path / "g.png")
    with pytest.raises(TypeError, match=r"panels\[0\]: expected a tuple \(weights, src_tokens, out_tokens"):
        viz.show_attention_grid([np.eye(2)], tmp_path / "g.png")
    with pytest.raises(ValueError, match="panels: expected a non-empty list"):
        viz.show_attention_grid([], tmp_path / "g.png")
    with pytest.raises(ValueError, match="ncols: expected a positive int, got 0"):
        viz.show_attention_grid([good], tmp_path / "g.png", ncols=0)
    with pytest.raises(TypeError, match="max_width: expected a real number > 2 .* got 'wide'"):
        viz.show_attention_grid([good], tmp_path / "g.png", max_width="wide")
    with pytest.raises(TypeError, match=r"src_tokens: expected a list of tokens \(str\), got str"):
        viz.show_heatmaps(np.eye(2), "ab", ["c", "d"], tmp_path / "g.png")


# ------------------------------------------------------------ training curves
def make_history(epochs=6):
    history = History()
    for epoch in range(epochs):
        history.loss.append(3.0 / (epoch + 1))
        history.token_ce.append(2.0 / (epoch + 1))
        history.d2l_metric.append(0.3 / (epoch + 1))
        history.grad_norm.append(1.0 + epoch)
        history.tokens_per_s.append(1000.0)
        history.wall_s.append(0.1)
    return history


def test_plot_history_one_subplot_per_key_from_a_history(tmp_path):
    history = make_history()
    path, figure = viz.plot_history(history, tmp_path / "h.png", keys=("loss", "perplexity", "grad_norm"),
                                    title="run 1", return_figure=True)
    assert_png(path)
    loss, ppl, norm = figure.axes
    assert [ax.get_title() for ax in figure.axes] == ["loss", "perplexity", "grad_norm"]
    assert [ax.get_ylabel() for ax in figure.axes] == ["loss", "perplexity", "gradient norm (before clipping)"]
    assert all(ax.get_xlabel() == "epoch" for ax in figure.axes)
    x, y = ppl.lines[0].get_data()
    np.testing.assert_array_equal(x, np.arange(1, 7))
    np.testing.assert_allclose(y, np.exp(history.token_ce))  # perplexity = exp(per-token cross-entropy)
    assert figure.get_suptitle() == "run 1"


def test_plot_history_shared_axes_from_a_dict_with_gaps(tmp_path):
    curves = {"loss": [2.0, 1.5, 1.0, 0.8], "bleu": [None, 0.2, None, 0.5]}
    path, figure = viz.plot_history(curves, tmp_path / "h.png", keys=["loss", "bleu"], shared=True,
                                    log_scale=True, return_figure=True)
    assert_png(path)
    (ax,) = figure.axes
    assert texts(ax.get_legend().get_texts()) == ["loss", "bleu"]
    assert ax.get_yscale() == "log"
    np.testing.assert_array_equal(ax.lines[1].get_data()[1], [np.nan, 0.2, np.nan, 0.5])
    assert viz.plot_history(make_history(1), tmp_path / "one.png") == str(tmp_path / "one.png")  # default keys


def test_plot_history_bad_input(tmp_path):
    with pytest.raises(ValueError, match=r"keys: 'bleu' is not in history \(available: \['loss'\]\)"):
        viz.plot_history({"loss": [1.0]}, tmp_path / "h.png", keys=("bleu",))
    with pytest.raises(ValueError, match=r"history\['loss'\]: expected a non-empty 1-d list"):
        viz.plot_history({"loss": []}, tmp_path / "h.png")
    with pytest.raises(ValueError, match="keys: expected a non-empty list"):
        viz.plot_history({"loss": [1.0]}, tmp_path / "h.png", keys=())
    with pytest.raises(TypeError, match="history: expected an npseq.train.History or a dict"):
        viz.plot_history([1.0, 2.0], tmp_path / "h.png")
    with pytest.raises(TypeError, match=r"history\['loss'\]: expected an array of numbers"):
        viz.plot_history({"loss": ["high", "low"]}, tmp_path / "h.png")


# ------------------------------------------------------------- gradient norms
def test_plot_grad_norms_several_curves_on_a_log_scale(tmp_path):
    steps = np.arange(20)
    norms = {"RNN": 0.7 ** steps[::-1], "LSTM": 0.97 ** steps[::-1], (1, 1): 1.2 ** steps[::-1]}
    path, figure = viz.plot_grad_norms(norms, tmp_path / "g.png", return_figure=True)
    assert_png(path)
    (ax,) = figure.axes
    assert ax.get_yscale() == "log"
    assert ax.get_xlabel() == "time step $t$" and "partial L" in ax.get_ylabel()
    assert texts(ax.get_legend().get_texts()) == ["RNN", "LSTM", "layer 1, reverse"]
    np.testing.assert_array_equal(ax.lines[0].get_data()[0], steps)


def test_plot_grad_norms_one_array_linear_scale_and_zeros(tmp_path):
    path, figure = viz.plot_grad_norms(np.array([0.0, 1e-30, 0.5, 1.0], dtype=np.float32), tmp_path / "g.png",
                                       log_scale=False, title="vanishing", return_figure=True)
    assert_png(path)
    (ax,) = figure.axes
    assert ax.get_yscale() == "linear" and ax.get_legend() is None and ax.get_title() == "vanishing"
    assert_png(viz.plot_grad_norms([0.0, 0.0, 1.0], tmp_path / "log.png"))  # zeros are left out on a log axis


def test_plot_grad_norms_from_a_recurrent_layer(tmp_path):
    from npseq.nn import GRU

    layer = GRU(3, 4, num_layers=2, rng=0, dtype="float64")
    layer.record_step_norms = True
    outputs, _ = layer(np.random.default_rng(0).standard_normal((2, 7, 3)))
    layer.backward(np.ones_like(outputs))
    path, figure = viz.plot_grad_norms(layer.step_grad_norms, tmp_path / "gru.png", return_figure=True)
    assert_png(path)
    assert texts(figure.axes[0].get_legend().get_texts()) == ["layer 0", "layer 1"]


@pytest.mark.parametrize("norms, message", [
    (np.ones((2, 3)), r"norms: expected a non-empty 1-d array \(T,\), got shape \(2, 3\)"),
    ({"a": np.ones(3), "b": np.array([1.0, -1.0])}, r"norms\['b'\]: expected finite norms >= 0"),
    ({"a": [1.0, math.inf]}, r"norms\['a'\]: expected finite norms >= 0"),
    ({}, "norms: expected a non-empty dict"),
    (np.ones(0), r"norms: expected a non-empty 1-d array"),
])
def test_plot_grad_norms_bad_input(tmp_path, norms, message):
    with pytest.raises(ValueError, match=message):
        viz.plot_grad_norms(norms, tmp_path / "g.png")


# --------------------------------------------------- headless and lazy import
def run_python(code, env):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=120)


def test_import_npseq_does_not_import_matplotlib():
    result = run_python("""
        import sys
        import npseq, npseq.viz, npseq.checkpoint
        assert "matplotlib" not in sys.modules, sorted(m for m in sys.modules if m.startswith("matplotlib"))
    """, dict(os.environ))
    assert result.returncode == 0, result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("mplbackend", [None, "TkAgg"])
def test_plots_work_without_a_display(tmp_path, mplbackend):
    env = {k: v for k, v in os.environ.items() if k not in ("MPLBACKEND", "DISPLAY", "WAYLAND_DISPLAY")}
    if mplbackend:
        env["MPLBACKEND"] = mplbackend  # a GUI backend that pyplot could not start without a display
    result = run_python(f"""
        import sys
        import numpy as np
        from npseq import viz
        out = {str(tmp_path)!r}
        viz.show_heatmaps(np.eye(3), list("abc"), list("xyz"), out + "/a.png")
        viz.plot_history({{"loss": [3.0, 2.0, 1.0]}}, out + "/h.png")
        viz.plot_grad_norms(np.linspace(1, 2, 5), out + "/g.png")
        assert "matplotlib.pyplot" not in sys.modules
    """, env)
    assert result.returncode == 0, result.stderr
    for name in ("a.png", "h.png", "g.png"):
        assert_png(tmp_path / name)


def test_without_a_path_a_figure_is_drawn_and_returned_but_not_written(tmp_path, monkeypatch):
    """For a caller that saves the figure its own way (the tutorials' save_figure): nothing is written."""
    from npseq.errors import InvalidValueError

    monkeypatch.chdir(tmp_path)
    path, figure = viz.show_heatmaps(np.eye(3), list("abc"), list("xyz"), None, return_figure=True)
    assert path is None and figure.axes and list(tmp_path.iterdir()) == []
    with pytest.raises(InvalidValueError, match=r"path: expected the PNG to write \(None only with return_figure"):
        viz.plot_history(History(loss=[1.0, 0.5]), None)
