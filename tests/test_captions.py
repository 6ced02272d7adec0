"""The captioning task: synthetic scenes and their captions, CaptioningRNN in both conditioning modes,
overfitting one small batch first (CS231n's habit), and `npseq demo --task captions`."""

import numpy as np
import pytest

from npseq import cli
from npseq.captions_demo import build_captioner, evaluate_captions, train_captioner
from npseq.data.captions import COLOURS, IMAGE_SIZE, SHAPES, draw_shape, load_caption_data, random_scenes
from npseq.errors import InvalidValueError
from npseq.gradcheck import check_module
from npseq.gradient_checks import REGISTRY, run_checks
from npseq.models import CaptioningRNN
from npseq.viz import show_captioned_images


# ------------------------------------------------------------------ scenes
def trimmed(mask):
    rows, cols = np.nonzero(mask)
    return mask[rows.min():rows.max() + 1, cols.min():cols.max() + 1]


def read_object(region):
    """``"a <colour> <shape>"`` for a region holding exactly one shape, else ``None``."""
    lit = region.max(axis=2) > 0
    if not lit.any():
        return None
    colours = [name for name, rgb in COLOURS.items() if np.any(np.all(region[lit] == rgb, axis=1))]
    shapes = [shape for shape in SHAPES if trimmed(draw_shape(shape)).shape == trimmed(lit).shape
              and np.array_equal(trimmed(draw_shape(shape)), trimmed(lit))]
    return f"a {colours[0]} {shapes[0]}" if len(colours) == 1 and len(shapes) == 1 else None


def read_caption(image):
    """An independent reading of a scene from its pixels: each way of cutting it that leaves one shape per
    part, and for two shapes the halves' offset across the cut at most two pixels."""
    half = IMAGE_SIZE // 2
    readings = set()
    whole = read_object(image)
    if whole:
        readings.add(whole)
    for relation, first, second, axis in (("above", image[:half], image[half:], 1),
                                          ("left of", image[:, :half], image[:, half:], 0)):
        a, b = read_object(first), read_object(second)
        if a and b:
            spans = [np.nonzero((part.max(axis=2) > 0).any(axis=1 - axis))[0] for part in (first, second)]
            if abs((spans[0].min() + spans[0].max()) - (spans[1].min() + spans[1].max())) <= 6:
                readings.add(f"{a} {relation} {b}")
    return readings


def test_scenes_are_the_same_for_the_same_seed_and_differ_for_another():
    a, b, c = random_scenes(30, 7), random_scenes(30, 7), random_scenes(30, 8)
    assert [s.caption for s in a] == [s.caption for s in b]
    assert all(np.array_equal(x.image, y.image) for x, y in zip(a, b))
    assert [s.caption for s in a] != [s.caption for s in c]


def test_every_caption_is_what_the_pixels_show():
    scenes = random_scenes(300, 1)
    for scene in scenes:
        assert scene.image.shape == (IMAGE_SIZE, IMAGE_SIZE, 3)
        assert read_caption(scene.image) == {scene.caption}, (scene.caption, scene.objects)
    assert {s.relation for s in scenes} == {"", "above", "left of"}
    words = {w for s in scenes for w in s.caption.split()}
    assert set(COLOURS) | set(SHAPES) | {"a", "above", "left", "of"} == words


def test_shape_areas_and_their_pairwise_sums_differ():
    areas = [int(draw_shape(shape).sum()) for shape in SHAPES]
    sums = [a + b for i, a in enumerate(areas) for b in areas[i:]]
    assert len(set(areas)) == 3 and len(set(sums)) == len(sums)


def test_the_data_hold_out_unseen_scenes_and_shift_the_captions():
    data = load_caption_data(400, 100, batch_size=32, seed=3)
    seen = {s.image.tobytes() for s in data.train.scenes}
    assert len(data.test.scenes) == 100 and not any(s.image.tobytes() in seen for s in data.test.scenes)
    vocab = data.vocab
    assert vocab.idx_to_token[:4] == ["<unk>", "<pad>", "<bos>", "<eos>"]
    for split in (data.train, data.test):
        assert split.features.shape == (len(split.scenes), 768) and split.captions_in.dtype == np.int64
        for scene, tokens_in, tokens_out, length in zip(split.scenes, split.captions_in, split.captions_out,
                                                        split.valid_lens):
            words = scene.caption.split()
            assert length == len(words) + 1
            assert vocab.to_tokens(tokens_out[:length].tolist()) == words + ["<eos>"]
            assert vocab.to_tokens(tokens_in[:length].tolist()) == ["<bos>"] + words
            assert np.array_equal(split.features[0], split.scenes[0].image.reshape(-1))
    again = load_caption_data(400, 100, batch_size=32, seed=3)
    assert np.array_equal(again.train.features, data.train.features)
    projected = load_caption_data(50, 10, projection=24, seed=3)
    assert projected.feature_size == 24 and projected.projection.shape == (768, 24)
    np.testing.assert_allclose(projected.train.features,
                               np.stack([s.image.reshape(-1) for s in projected.train.scenes]) @ projected.projection)


# ------------------------------------------------------------------ the model
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["every_step", "first_step"])
@pytest.mark.parametrize("cell", ["rnn", "gru", "lstm"])
def test_module_gradients_in_both_modes(mode, cell):
    rng = np.random.default_rng(0)
    model = CaptioningRNN(5, 7, 4, mode=mode, cell=cell, embed_size=3, rng=1, dtype="float64")
    inputs = {"features": rng.standard_normal((3, 5)), "captions_in": rng.integers(0, 7, (3, 4)),
              "valid_lens": np.array([4, 1, 0])}
    for _ in range(2):  # two rounds: no stale cache or gradient
        report = check_module(model, inputs, h=1e-3, order=4)  # some gradients are ~1e-5: see gradient_checks
        assert report.ok, report


def test_the_registry_checks_the_captioner_in_both_modes():
    names = [name for name in REGISTRY if name.startswith("CaptioningRNN")]
    assert {name.split(" (")[1].split(",")[0] for name in names} == {"every step", "first step"}
    for name, report in run_checks(names):
        assert report.ok, (name, report)


def test_every_step_mode_is_the_conditioned_cell_and_its_dv_sums_over_the_steps():
    """The model's every-step GRU equals the functional every-step cell on the same weights."""
    from npseq import functional as F
    rng = np.random.default_rng(2)
    model = CaptioningRNN(5, 7, 4, mode="every_step", cell="gru", embed_size=3, rng=3, dtype="float64")
    features, tokens = rng.standard_normal((2, 5)), rng.integers(0, 7, (2, 4))
    lens = np.array([4, 2])
    logits = model(features, tokens, lens)
    dlogits = rng.standard_normal(logits.shape)
    dfeatures = model.backward(dlogits)
    Wx = model.rnn.Wx_l0.data
    x = model.embedding.W.data[tokens]
    h, cache = F.gru_every_step_forward(x, features, np.zeros((2, 4)), Wx[:3], model.rnn.Wh_l0.data, Wx[3:],
                                        model.rnn.bx_l0.data, model.rnn.bh_l0.data, reset_after=True,
                                        valid_lens=lens)
    np.testing.assert_allclose(logits, h @ model.dense.W.data + model.dense.b.data, rtol=1e-12, atol=1e-12)
    grads = F.gru_every_step_backward(dlogits @ model.dense.W.data.T, cache)
    np.testing.assert_allclose(dfeatures, grads.dv, rtol=1e-10, atol=1e-12)


def test_greedy_captions_agree_with_the_teacher_forced_forward():
    rng = np.random.default_rng(4)
    for mode, cell in (("every_step", "lstm"), ("first_step", "gru")):
        model = CaptioningRNN(6, 8, 5, mode=mode, cell=cell, rng=5, dtype="float64")
        features = rng.standard_normal((3, 6))
        captions = model.caption(features, bos_id=2, eos_id=3, max_len=6)
        for row, caption in zip(features, captions):
            tokens = np.array([[2] + caption])
            predicted = model(row[None], tokens).argmax(axis=2)[0].tolist()
            model.clear_caches()
            assert predicted[:len(caption)] == caption
            assert len(caption) == 6 or predicted[len(caption)] == 3


def test_errors_name_the_argument():
    with pytest.raises(InvalidValueError, match="mode: expected one of"):
        CaptioningRNN(5, 7, 4, mode="sometimes")
    model = CaptioningRNN(5, 7, 4)
    with pytest.raises(InvalidValueError, match=r"features: expected shape \(2, 5\), got \(2, 6\)"):
        model(np.ones((2, 6)), np.ones((2, 3), dtype=np.int64))
    with pytest.raises(InvalidValueError, match="captions_in"):
        model(np.ones((2, 5)), np.ones(3, dtype=np.int64))


@pytest.mark.parametrize("mode", ["every_step", "first_step"])
def test_a_small_batch_is_overfit_first(mode):
    """CS231n's habit: before training on everything, a model must drive the loss on one small batch to
    nearly zero; if it cannot, something is wrong with the model or its backward."""
    data = load_caption_data(16, 1, batch_size=16, seed=0)
    model = build_captioner(data, num_hiddens=32, embed_size=16, cell="gru", mode=mode, seed=0, dtype="float64")
    batch = [(data.train.features, data.train.captions_in, data.train.captions_out, data.train.valid_lens)]
    losses = train_captioner(model, batch, 150, lr=0.01)
    assert losses[-1] < 0.02 < losses[0], losses[::30]
    assert evaluate_captions(model, data.train, data.vocab).exact_match == 1.0


# ------------------------------------------------------------------ demo and picture
def test_the_demo_writes_its_picture_and_captions(tmp_path, capsys):
    code = cli.main(["demo", "--task", "captions", "--epochs", "1", "--num-examples", "200", "--out",
                     str(tmp_path), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0, out
    png, text = tmp_path / "captions" / "captions.png", tmp_path / "captions" / "captions.txt"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    assert str(png) in out and "BLEU" in out and "unseen scenes" in out
    lines = text.read_text().splitlines()
    assert lines[0] == "generated\treference" and len(lines) == 301


@pytest.mark.demo_full  # about half a minute: pytest -m demo_full
def test_the_full_demo_reaches_its_bleu_on_unseen_scenes(tmp_path):
    from npseq.captions_demo import run_captions_demo
    record = run_captions_demo(str(tmp_path))
    assert record.scores.bleu >= 0.9 and record.num_test == 300, record.scores.bleu


def test_show_captioned_images_checks_its_arguments(tmp_path):
    image = np.zeros((4, 4, 3))
    with pytest.raises(InvalidValueError, match="captions: expected 2 strings"):
        show_captioned_images([image, image], ["a"], tmp_path / "x.png")
    with pytest.raises(InvalidValueError, match="images"):
        show_captioned_images([np.zeros((4, 4))], ["a"], tmp_path / "x.png")
    path = show_captioned_images([image], ["a red circle"], tmp_path / "x.png", references=["a red square"])
    assert open(path, "rb").read(4) == b"\x89PNG"
