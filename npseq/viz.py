"""Plots for learners: attention heatmaps, training curves, gradient norms through time.

Every function draws a ``matplotlib.figure.Figure`` on the Agg canvas and writes
a PNG. ``pyplot`` is never used, so nothing depends on ``MPLBACKEND``, a display
(``DISPLAY``/``WAYLAND_DISPLAY``) or global figure state: the plots work the same
on a headless server, in tests and in notebooks. matplotlib is imported inside
the functions, so ``import npseq`` does not load it.

Each function returns the path it wrote, or ``(path, figure)`` with
``return_figure=True`` (to display the figure in a notebook, inspect its labels or save it
another way: with ``path=None`` nothing is written and the path returned is ``None``).
Arrays may be NumPy or CuPy (copied to the host) or nested lists.
"""
from __future__ import annotations

import math
import os

from . import backend
from ._checks import check_count, check_real
from .errors import InvalidTypeError, InvalidValueError

__all__ = ["show_heatmaps", "show_attention_grid", "plot_history", "plot_grad_norms", "show_captioned_images"]

UNSEEN_COLOUR = "#d9d9d9"  # attention cells a step could not see (weight exactly 0)
AXIS_LABELS = ("source tokens", "output tokens")  # an attention map's columns (keys) and rows (queries)
# Axis labels for the statistics that npseq.train.History records (others are labelled by their key).
HISTORY_LABELS = {
    "loss": "loss",
    "token_ce": "cross-entropy per token (nats)",
    "perplexity": "perplexity",
    "d2l_metric": "d2l loss (sum / tokens)",
    "grad_norm": "gradient norm (before clipping)",
    "tokens_per_s": "tokens / s",
    "wall_s": "seconds per epoch",
    "bleu": "BLEU",
}


def _new_figure(width: float, height: float):
    """A Figure attached to the Agg canvas: PNG output without pyplot or any GUI backend."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _finish(figure, path, dpi: int, return_figure: bool):
    if path is None:  # the caller saves the figure itself
        if not return_figure:
            raise InvalidValueError("path: expected the PNG to write (None only with return_figure=True), got None")
        return None, figure
    path = os.fspath(path)
    figure.savefig(path, format="png", dpi=dpi)
    return (path, figure) if return_figure else path


def _host_array(name: str, value):
    """``value`` as a float64 host array, or a ValueError/TypeError naming ``name``."""
    try:
        array = backend.to_numpy(value).astype(backend.numpy.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidTypeError(f"{name}: expected an array of numbers, got {type(value).__name__} ({exc})") from None
    return array


def _token_labels(name: str, tokens, count: int, axis: str, shape: tuple) -> list:
    """``tokens`` as ``count`` str labels (``None``: positions ``0..count-1``)."""
    if tokens is None:
        return [str(i) for i in range(count)]
    if isinstance(tokens, str) or not hasattr(tokens, "__len__"):
        raise InvalidTypeError(f"{name}: expected a list of tokens (str), got {type(tokens).__name__}")
    if len(tokens) != count:
        raise InvalidValueError(f"{name}: expected {count} tokens (one per {axis} of weights, shape {shape}), "
                                f"got {len(tokens)}")
    return [str(token) for token in tokens]


def _panel(panel, prefix: str) -> tuple:
    """One ``(weights (T_out, S), src_labels, out_labels, title)``, checked; errors name ``prefix`` + argument."""
    if not isinstance(panel, (list, tuple)) or len(panel) not in (3, 4):
        raise InvalidTypeError(f"{prefix.strip()}: expected a tuple (weights, src_tokens, out_tokens[, title]), "
                               f"got {type(panel).__name__}" + (f" of length {len(panel)}"
                                                         if isinstance(panel, (list, tuple)) else ""))
    weights, src_tokens, out_tokens = panel[:3]
    title = panel[3] if len(panel) == 4 else None
    weights = _host_array(f"{prefix}weights", weights)
    if weights.ndim != 2:
        raise InvalidValueError(f"{prefix}weights: expected a 2-d array (T_out, S), got shape {weights.shape}")
    if weights.size == 0:
        raise InvalidValueError(f"{prefix}weights: expected at least one output and one source step, "
                                f"got shape {weights.shape}")
    if not backend.numpy.isfinite(weights).all():
        raise InvalidValueError(f"{prefix}weights: expected finite values, got NaN or inf")
    src = _token_labels(f"{prefix}src_tokens", src_tokens, weights.shape[1], "column", weights.shape)
    out = _token_labels(f"{prefix}out_tokens", out_tokens, weights.shape[0], "row", weights.shape)
    return weights, src, out, None if title is None else str(title)


def show_attention_grid(panels, path, *, ncols: int | None = None, suptitle: str | None = None,
                        cmap: str = "Reds", dpi: int = 100, return_figure: bool = False, labels=AXIS_LABELS,
                        max_width: float | None = None):
    """Several attention heatmaps side by side, on one colour scale, with one colorbar.

    Panel ``p`` shows :math:`\\alpha^{(p)}_{t,s}`, the weight output step ``t`` gives
    source position ``s``, as the cell in row ``t`` (its output token labels the
    row, down the y axis) and column ``s`` (its source token labels the column,
    across the x axis). Every panel uses the scale ``[min(0, min α), max α]`` over
    all panels, so panels compare (e.g. dot vs additive attention on one sentence).

    Args:
        panels: a list of ``(weights, src_tokens, out_tokens)`` or
            ``(weights, src_tokens, out_tokens, title)``; ``weights`` ``(T_out, S)``,
            ``src_tokens`` ``S`` strings (or ``None`` for positions), ``out_tokens``
            ``T_out`` strings (or ``None``). E.g. ``SearchResult.attention`` with the
            source tokens and the output tokens plus ``"<eos>"``.
        path: the PNG to write, or ``None`` with ``return_figure=True`` (the figure alone, drawn, not saved).
        ncols: panels per row (default: all in one row, at most 4).
        suptitle: a title over the whole figure.
        labels: ``(x label, y label)``, what the columns and the rows are (default
            :data:`AXIS_LABELS`; a self-attention map's rows are source tokens too).
        max_width: the widest the figure may be, in inches (default: as wide as its
            cells of 0.4 inch need); narrower cells make it fit, e.g. a page's column.

    Returns:
        ``path`` (str), or ``(path, Figure)`` with ``return_figure=True``.
    """
    if isinstance(panels, (str, bytes)) or not isinstance(panels, (list, tuple)) or not panels:
        raise InvalidValueError(f"panels: expected a non-empty list of (weights, src_tokens, out_tokens[, title]), "
                                f"got {panels!r:.60}")
    checked = [_panel(panel, f"panels[{i}] ") for i, panel in enumerate(panels)]
    return _draw_heatmaps(checked, path, ncols, suptitle, cmap, dpi, return_figure, _axis_labels(labels), max_width)


def _axis_labels(labels) -> tuple:
    """``labels`` checked: two str, the x and the y axis's label."""
    if isinstance(labels, str) or not isinstance(labels, (list, tuple)) or len(labels) != 2 \
            or not all(isinstance(label, str) for label in labels):
        raise InvalidTypeError(f"labels: expected two str (x label, y label), got {labels!r:.80}")
    return tuple(labels)


def _draw_heatmaps(checked: list, path, ncols, suptitle, cmap, dpi, return_figure, labels: tuple, max_width):
    """Draw checked panels (see :func:`show_attention_grid`) on one colour scale and write the PNG."""
    ncols = min(len(checked), 4) if ncols is None else ncols
    check_count("ncols", ncols)
    ncols = min(ncols, len(checked))
    nrows = math.ceil(len(checked) / ncols)
    # Cells of about 0.4 inch keep tokens legible; each panel's inch of margin leaves room for its rotated labels,
    # and the figure's last inch is the colorbar's.
    cell = 0.4
    columns = max(w.shape[1] for w, *_ in checked)
    rows = max(w.shape[0] for w, *_ in checked)
    if max_width is not None:
        margins = ncols * 1.0 + 1.0
        max_width = check_real("max_width", max_width, f"> {margins:g} (inches: an inch of margin for each of the "
                               f"{ncols} panels of a row, and one for the colorbar)", lambda w: margins < w < math.inf)
        # The rows shrink with the columns, so that the cells keep their shape and the figure its proportions.
        cell = min(cell, (max_width - margins) / (ncols * columns))
    vmin = min(0.0, min(float(w.min()) for w, *_ in checked))
    vmax = max(float(w.max()) for w, *_ in checked)
    vmax = vmax if vmax > vmin else vmin + 1.0  # an all-zero map still needs a non-empty colour range
    panel_w = max(cell * columns, 1.6) + 1.0
    panel_h = max(cell * rows, 1.6) + 1.0
    width = panel_w * ncols + 1.0
    figure = _new_figure(width if max_width is None else min(width, max_width),
                         panel_h * nrows + (0.4 if suptitle else 0.0))
    axes = figure.subplots(nrows, ncols, squeeze=False)
    import matplotlib
    # Weights of exactly 0 belong to keys the attention could not see (padding, or outside a local
    # window): grey, apart from the colour scale, so the visible region shows as the coloured part.
    colours = matplotlib.colormaps[cmap].with_extremes(bad=UNSEEN_COLOUR)
    for ax, (weights, src, out, title) in zip(axes.flat, checked):
        unseen = backend.numpy.ma.masked_equal(weights, 0.0)
        image = ax.imshow(unseen, cmap=colours, vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest")
        ax.set_xticks(range(len(src)), src, rotation=60, ha="right", rotation_mode="anchor")
        ax.set_yticks(range(len(out)), out)
        ax.set_xlabel(labels[0])
        if title:
            ax.set_title(title)
    for ax in axes[:, 0]:
        ax.set_ylabel(labels[1])
    for ax in list(axes.flat)[len(checked):]:
        ax.set_axis_off()
    figure.colorbar(image, ax=axes.ravel().tolist(), label="attention weight", shrink=0.9)
    if suptitle:
        figure.suptitle(suptitle)
    return _finish(figure, path, dpi, return_figure)


def show_heatmaps(weights, src_tokens, out_tokens, path, title=None, *, cmap: str = "Reds", dpi: int = 100,
                  return_figure: bool = False, labels=AXIS_LABELS, ncols: int | None = None,
                  max_width: float | None = None):
    """Attention heatmap: source tokens across (x), output tokens down (y), with a colorbar.

    Cell ``(t, s)`` shows :math:`\\alpha_{t,s}`, the weight that output step ``t``
    gives source position ``s`` (row ``t`` of a decoder's attention weights, which
    sums to 1 over the valid ``s``). A weight of exactly 0 is drawn grey: the step
    could not see that position (padding, or outside a local attention's window).

    Args:
        weights: ``(T_out, S)``, or ``(P, T_out, S)`` for ``P`` maps over the same
            tokens (layers, heads, checkpoints), drawn side by side.
        src_tokens: ``S`` strings labelling the columns (``None``: positions).
        out_tokens: ``T_out`` strings labelling the rows (``None``: positions).
        path: the PNG to write, or ``None`` with ``return_figure=True`` (the figure alone, drawn, not saved).
        title: a str, or for ``(P, T_out, S)`` weights a list of ``P`` panel titles.
        labels: ``(x label, y label)`` (default :data:`AXIS_LABELS`); an encoder's
            self-attention reads ``("keys: source tokens", "queries: source tokens")``.
        ncols: maps per row, for ``(P, T_out, S)`` weights (default: all in one row, at most 4).
        max_width: the widest the figure may be, in inches (default: as wide as its
            cells of 0.4 inch need); narrower cells make it fit, e.g. a page's column.

    Returns:
        ``path`` (str), or ``(path, Figure)`` with ``return_figure=True``.
        Different token lists per panel: :func:`show_attention_grid`.
    """
    array = _host_array("weights", weights)
    if array.ndim == 2:
        panels, suptitle = [(array, src_tokens, out_tokens, title)], None
    elif array.ndim == 3:
        if array.shape[0] == 0:
            raise InvalidValueError(f"weights: expected at least one map, got shape {array.shape}")
        if isinstance(title, (list, tuple)):
            if len(title) != array.shape[0]:
                raise InvalidValueError(f"title: expected {array.shape[0]} panel titles (one per map of weights, "
                                        f"shape {array.shape}), got {len(title)}")
            titles, suptitle = list(title), None
        else:
            titles, suptitle = [None] * array.shape[0], title
        panels = [(array[p], src_tokens, out_tokens, titles[p]) for p in range(array.shape[0])]
    else:
        raise InvalidValueError("weights: expected a 2-d (T_out, S) or 3-d (P, T_out, S) array, got shape "
                                f"{array.shape}")
    checked = [_panel(panel, "") for panel in panels]  # shared tokens: errors name the arguments themselves
    return _draw_heatmaps(checked, path, ncols, suptitle, cmap, dpi, return_figure, _axis_labels(labels), max_width)


def _history_series(history, keys) -> dict:
    """``{key: float64 array}`` for each key; ``"perplexity"`` may be derived as ``exp(token_ce)``."""
    if hasattr(history, "to_dict"):
        history = history.to_dict()
    if not isinstance(history, dict):
        raise InvalidTypeError(f"history: expected an npseq.train.History or a dict of per-epoch lists, "
                               f"got {type(history).__name__}")
    if isinstance(keys, str):
        keys = (keys,)
    if not isinstance(keys, (list, tuple)) or not keys:
        raise InvalidValueError(f"keys: expected a non-empty list of history keys, got {keys!r}")
    series = {}
    for key in keys:
        if key in history:
            values = history[key]
        elif key == "perplexity" and "token_ce" in history:
            values = [math.exp(v) if v is not None else None for v in history["token_ce"]]
        else:
            raise InvalidValueError(f"keys: {key!r} is not in history (available: {sorted(history)}"
                             + ("; 'perplexity' is derived from 'token_ce'" if key == "perplexity" else "") + ")")
        # None marks an epoch without a value (e.g. BLEU evaluated every few epochs): a gap in the curve.
        values = [math.nan if v is None else v for v in values] if isinstance(values, (list, tuple)) else values
        array = _host_array(f"history[{key!r}]", values)
        if array.ndim != 1 or array.size == 0:
            raise InvalidValueError(f"history[{key!r}]: expected a non-empty 1-d list of per-epoch values, "
                                    f"got shape {array.shape}")
        series[key] = array
    return series


def plot_history(history, path, keys=("loss",), *, shared: bool = False, title: str | None = None,
                 log_scale: bool = False, dpi: int = 100, return_figure: bool = False):
    """Training curves: each statistic against the epoch number ``1..E``.

    ``perplexity`` may be asked for when the history has ``token_ce`` (per-token
    cross-entropy in nats): :math:`\\mathrm{PPL} = \\exp(\\mathrm{CE})`.

    Args:
        history: an ``npseq.train.History`` or a dict ``{key: per-epoch list}`` (lists
            may have different lengths ``E``; ``None`` entries leave a gap).
        path: the PNG to write, or ``None`` with ``return_figure=True`` (the figure alone, drawn, not saved).
        keys: the statistics to draw, e.g. ``("loss", "perplexity", "bleu")``.
        shared: all curves on one axis with a legend, instead of one subplot per key.
        log_scale: a logarithmic y axis.

    Returns:
        ``path`` (str), or ``(path, Figure)`` with ``return_figure=True``.
    """
    series = _history_series(history, keys)
    from matplotlib.ticker import MaxNLocator

    count = 1 if shared else len(series)
    figure = _new_figure(4.5 * count if count < 4 else 13.0, 3.4 * math.ceil(count / 3) if count > 3 else 3.4)
    axes = figure.subplots(math.ceil(count / 3), min(count, 3), squeeze=False).ravel()
    for i, (key, values) in enumerate(series.items()):
        ax = axes[0] if shared else axes[i]
        epochs = range(1, len(values) + 1)
        ax.plot(epochs, values, marker="o" if len(values) <= 30 else None, markersize=3, label=key)
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("value" if shared else HISTORY_LABELS.get(key, key))
        if not shared:
            ax.set_title(key)
        if log_scale:
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
    if shared:
        axes[0].legend()
    for ax in axes[count:]:
        ax.set_axis_off()
    if title:
        figure.suptitle(title)
    return _finish(figure, path, dpi, return_figure)


def _is_layer_key(key) -> bool:
    """Whether ``key`` is a ``(layer, direction)`` key of ``RNN.step_grad_norms``."""
    return isinstance(key, tuple) and len(key) == 2 and all(isinstance(k, int) for k in key)


def _norm_label(key) -> str:
    """``(layer, direction)`` keys read as ``"layer 0"`` / ``"layer 0, reverse"``; other keys as ``str(key)``."""
    if _is_layer_key(key):
        return f"layer {key[0]}" + (", reverse" if key[1] else "")
    return str(key)


def plot_grad_norms(norms, path, log_scale: bool = True, *, title: str | None = None, dpi: int = 100,
                    return_figure: bool = False):
    """Gradient norm at each time step: how :math:`\\partial L / \\partial h_t` vanishes or explodes through time.

    Plots :math:`\\|g_t\\|` against :math:`t`, where :math:`g_t = \\partial L / \\partial h_t`
    (the norm over the batch that a recurrent layer's ``step_grad_norms`` records, or the
    ``step_norms`` of the fast sequence functions with ``record_norms=True``). On a log scale, a geometric decay
    :math:`\\|g_t\\| \\approx c\\,\\rho^{T-1-t}` is a straight line of slope :math:`\\log \\rho`;
    zeros (underflow) cannot be drawn there and are left out.

    Args:
        norms: a 1-d array ``(T,)``, or a dict ``{label: (T_i,)}`` of several curves
            (e.g. ``{"RNN": ..., "LSTM": ...}`` or an ``RNN.step_grad_norms`` dict,
            whose ``(layer, direction)`` keys are sorted and labelled ``"layer l[, reverse]"``;
            a reverse direction's entry ``s`` is its ``s``-th processed step). Step ``t``
            is plotted at ``x = t``, the array index.
        path: the PNG to write, or ``None`` with ``return_figure=True`` (the figure alone, drawn, not saved).
        log_scale: a logarithmic y axis (default).

    Returns:
        ``path`` (str), or ``(path, Figure)`` with ``return_figure=True``.
    """
    if isinstance(norms, dict):
        if not norms:
            raise InvalidValueError("norms: expected a non-empty dict of label -> 1-d array, got {}")
        keys = list(norms)
        if all(_is_layer_key(key) for key in keys):
            keys.sort()  # backward fills step_grad_norms from the top layer down; plot bottom-up
        curves = {_norm_label(key): (f"norms[{key!r}]", norms[key]) for key in keys}
    else:
        curves = {"": ("norms", norms)}
    from matplotlib.ticker import MaxNLocator

    figure = _new_figure(6.0, 3.8)
    ax = figure.subplots()
    for label, (name, value) in curves.items():
        array = _host_array(name, value)
        if array.ndim != 1 or array.size == 0:
            raise InvalidValueError(f"{name}: expected a non-empty 1-d array (T,), got shape {array.shape}")
        if (array < 0).any() or not backend.numpy.isfinite(array).all():
            raise InvalidValueError(f"{name}: expected finite norms >= 0, got a negative, NaN or inf value")
        steps = range(array.size)
        ax.plot(steps, array, marker="o" if array.size <= 50 else None, markersize=3, label=label or None)
    ax.set_xlabel("time step $t$")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(r"$\|\partial L / \partial h_t\|$")
    if log_scale:
        ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    if len(curves) > 1 or next(iter(curves)):
        ax.legend()
    ax.set_title(title or "gradient norm through time")
    return _finish(figure, path, dpi, return_figure)


def show_captioned_images(images, captions, path, *, references=None, ncols: int = 4, dpi: int = 100,
                          return_figure: bool = False):
    """Images with their generated captions under them (and the reference, in grey, where it differs).

    Args:
        images: ``K`` RGB images ``(height, width, 3)`` with values in ``[0, 1]`` (a list or a
            ``(K, height, width, 3)`` array).
        captions: ``K`` strings, e.g. what a captioning model generated.
        path: the PNG to write, or ``None`` with ``return_figure=True`` (the figure alone, drawn, not saved).
        references: ``None`` or ``K`` reference strings; a caption that differs from its reference
            is drawn in red with the reference below it.
        ncols: images per row.

    Returns:
        ``path`` (str), or ``(path, Figure)`` with ``return_figure=True``.
    """
    arrays = [_host_array(f"images[{i}]", image) for i, image in enumerate(images)]
    if not arrays or any(a.ndim != 3 or a.shape[2] != 3 for a in arrays):
        raise InvalidValueError(f"images: expected a non-empty list of (height, width, 3) arrays, "
                                f"got shapes {[tuple(a.shape) for a in arrays]}")
    captions = list(captions)
    if len(captions) != len(arrays):
        raise InvalidValueError(f"captions: expected {len(arrays)} strings (one per image), got {len(captions)}")
    if references is not None and len(references) != len(arrays):
        raise InvalidValueError(f"references: expected {len(arrays)} strings (one per image), "
                                f"got {len(references)}")
    ncols = min(check_count("ncols", ncols), len(arrays))
    nrows = math.ceil(len(arrays) / ncols)
    figure = _new_figure(2.6 * ncols, 3.0 * nrows)
    axes = figure.subplots(nrows, ncols, squeeze=False)
    for i, (ax, image, caption) in enumerate(zip(axes.flat, arrays, captions)):
        ax.imshow(image.clip(0, 1), interpolation="nearest")
        ax.set_xticks([])
        ax.set_yticks([])
        wrong = references is not None and references[i] != caption
        label = caption.replace(" above ", "\nabove ").replace(" left of ", "\nleft of ")
        if wrong:
            label += "\n(" + references[i] + ")"
        ax.set_xlabel(label, color="tab:red" if wrong else "black")
    for ax in list(axes.flat)[len(arrays):]:
        ax.set_axis_off()
    return _finish(figure, path, dpi, return_figure)
