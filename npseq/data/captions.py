"""A captioning task that needs no download: small synthetic scenes that npseq draws itself.

Each scene is a ``16 x 16`` RGB image (values in ``[0, 1]``, black background) of one or two
shapes (``circle``, ``square``, ``triangle``) in one of three colours (``red``, ``green``,
``blue``), and its caption says what is where:

* one shape anywhere: ``"a green triangle"``;
* two shapes, one in the top half and one in the bottom half, in about the same columns:
  ``"a red circle above a blue square"``;
* two shapes, one in the left half and one in the right half, in about the same rows:
  ``"a red square left of a blue circle"``.

The two arrangements never overlap (a pair is either stacked or side by side, within two
pixels), so a scene has exactly one caption. The feature vector of a scene is its flattened
image (768 numbers) or, with ``projection=P``, that vector times a fixed ``(768, P)`` Gaussian
matrix scaled by :math:`1/\\sqrt{768}`, drawn from the data seed.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from .. import backend
from .._checks import as_rng, check_count
from ..errors import InvalidValueError
from .batching import BatchIterator
from .nmt import NMT_RESERVED_TOKENS, build_array_nmt
from .vocab import Vocab

__all__ = ["COLOURS", "SHAPES", "IMAGE_SIZE", "SHAPE_SIZE", "SceneObject", "Scene", "CaptionSplit", "CaptionData",
           "draw_shape", "render_scene", "scene_caption", "random_scene", "random_scenes", "load_caption_data",
           "caption_data_sizes"]

COLOURS = {"red": (1.0, 0.0, 0.0), "green": (0.0, 1.0, 0.0), "blue": (0.0, 0.0, 1.0)}
SHAPES = ("circle", "square", "triangle")
IMAGE_SIZE = 16
SHAPE_SIZE = 6
"""Each shape fills (part of) a ``SHAPE_SIZE x SHAPE_SIZE`` box; a half of the image holds one box plus two
pixels of play."""


class SceneObject(NamedTuple):
    colour: str  # a key of COLOURS
    shape: str   # one of SHAPES
    row: int     # top row of its box
    col: int     # left column of its box


class Scene(NamedTuple):
    image: Any       # (16, 16, 3) float64 in [0, 1]
    caption: str     # e.g. "a red circle above a blue square"
    objects: tuple   # one or two SceneObject
    relation: str    # "" (one shape), "above" or "left of"


def draw_shape(shape: str):
    """The ``SHAPE_SIZE x SHAPE_SIZE`` boolean mask of ``shape``: a disk, a filled square or an upright triangle.

    Their areas, 24, 36 and 18 pixels, differ, and so do the sums of any two: the amount of a colour in
    a half of the image tells its shape, which a model that reads pixels through linear maps can find
    wherever the shape sits. (A disk and a triangle of equal area were confused, in early trials.)
    """
    np = backend.numpy
    rows, cols = np.mgrid[0:SHAPE_SIZE, 0:SHAPE_SIZE]
    centre = (SHAPE_SIZE - 1) / 2
    if shape == "circle":
        return (rows - centre) ** 2 + (cols - centre) ** 2 <= 7  # a disk: three pixels off each corner
    if shape == "square":
        return np.ones((SHAPE_SIZE, SHAPE_SIZE), dtype=bool)
    if shape == "triangle":
        return np.abs(cols - 2) <= rows // 2  # apex (one pixel) on the top row, base (five) on the bottom row
    raise InvalidValueError(f"shape: expected one of {SHAPES}, got {shape!r}")


def render_scene(objects) -> Any:
    """The ``(16, 16, 3)`` image of ``objects`` (``SceneObject``s) on black."""
    np = backend.numpy
    image = np.zeros((IMAGE_SIZE, IMAGE_SIZE, 3))
    for obj in objects:
        if obj.colour not in COLOURS:
            raise InvalidValueError(f"colour: expected one of {tuple(COLOURS)}, got {obj.colour!r}")
        if not (0 <= obj.row <= IMAGE_SIZE - SHAPE_SIZE and 0 <= obj.col <= IMAGE_SIZE - SHAPE_SIZE):
            raise InvalidValueError(f"objects: expected a box inside the image (row, col in [0, "
                                    f"{IMAGE_SIZE - SHAPE_SIZE}]), got ({obj.row}, {obj.col})")
        box = image[obj.row:obj.row + SHAPE_SIZE, obj.col:obj.col + SHAPE_SIZE]
        box[draw_shape(obj.shape)] = COLOURS[obj.colour]
    return image


def scene_caption(objects, relation: str) -> str:
    """``"a <colour> <shape>"``, or two of them joined by the relation (``"above"`` or ``"left of"``)."""
    words = [f"a {obj.colour} {obj.shape}" for obj in objects]
    return f" {relation} ".join(words) if relation else words[0]


def random_scene(rng) -> Scene:
    """One scene: a third single shapes, a third stacked pairs, a third side-by-side pairs.

    A stacked pair has its first shape in rows ``0..7`` and its second in rows ``8..15``, and their
    columns differ by at most two pixels; a side-by-side pair likewise with rows and columns swapped.
    """
    rng = as_rng(rng)
    half = IMAGE_SIZE // 2
    play = half - SHAPE_SIZE  # 2: where a box may sit within its half

    def thing(row, col):
        return SceneObject(str(rng.choice(list(COLOURS))), str(rng.choice(SHAPES)), int(row), int(col))

    kind = int(rng.integers(3))
    if kind == 0:
        last = IMAGE_SIZE - SHAPE_SIZE
        objects, relation = (thing(rng.integers(last + 1), rng.integers(last + 1)),), ""
    else:
        across = int(rng.integers(play, IMAGE_SIZE - SHAPE_SIZE - play + 1))  # the shared column (or row)
        near = [int(v) for v in across + rng.integers(-1, 2, size=2)]
        first, second = (int(v) for v in rng.integers(0, play + 1, size=2))
        if kind == 1:
            objects, relation = (thing(first, near[0]), thing(half + second, near[1])), "above"
        else:
            objects, relation = (thing(near[0], first), thing(near[1], half + second)), "left of"
    return Scene(render_scene(objects), scene_caption(objects, relation), objects, relation)


def random_scenes(num: int, rng) -> list:
    """``num`` scenes from :func:`random_scene` with one generator (``rng``: Generator, seed or ``None``)."""
    rng = as_rng(rng)
    return [random_scene(rng) for _ in range(check_count("num", num, 0))]


class CaptionSplit(NamedTuple):
    scenes: list       # the Scenes
    features: Any      # (N, F) float64: flattened images, or their fixed projection
    captions_in: Any   # (N, T) int64: <bos> w_1 ... w_L, padded
    captions_out: Any  # (N, T) int64: w_1 ... w_L <eos>, padded
    valid_lens: Any    # (N,) int64: L + 1


class CaptionData(NamedTuple):
    train: CaptionSplit
    test: CaptionSplit  # only scenes whose image is in no training scene
    vocab: Vocab        # <unk> <pad> <bos> <eos>, then the caption words
    num_steps: int      # T: the longest caption plus <eos>
    feature_size: int   # F
    projection: Any     # (768, P) the fixed projection, or None for raw pixels
    train_iter: BatchIterator  # batches of (features, captions_in, captions_out, valid_lens)


CAPTION_WORDS = ("a", *COLOURS, *SHAPES, "above", "left", "of")
"""Every word a caption may hold."""
_LONGEST_CAPTION = len("a red triangle left of a blue triangle".split())
_SCENE_OBJECTS_BYTES = 1024  # a Scene's Python objects (tuple, caption, SceneObjects): ~620 bytes, measured


class CaptionDataSizes(NamedTuple):
    """What :func:`load_caption_data` keeps, from its arguments alone: ``vocab_size``, ``num_steps`` (the
    longest caption and ``<eos>``) and ``bytes`` (images, features, captions as ids, the scenes' objects)."""
    vocab_size: int
    num_steps: int
    bytes: int


def caption_data_sizes(num_train: int, num_test: int = 300) -> CaptionDataSizes:
    """The sizes of ``load_caption_data(num_train, num_test)`` (at most: its vocabulary holds the words its
    training captions use), known before any scene is drawn."""
    num_train, num_test = check_count("num_train", num_train, 1), check_count("num_test", num_test, 1)
    steps = _LONGEST_CAPTION + 1
    per_scene = 2 * IMAGE_SIZE * IMAGE_SIZE * 3 * 8 + 3 * steps * 8 + _SCENE_OBJECTS_BYTES  # image and features
    return CaptionDataSizes(len(CAPTION_WORDS) + 1 + len(NMT_RESERVED_TOKENS), steps,
                            (num_train + num_test) * per_scene)


def load_caption_data(num_train: int = 2000, num_test: int = 300, *, batch_size: int = 64, projection=None,
                      seed: int = 0) -> CaptionData:
    """Draw the captioning task: training and test scenes, their features, captions as ids, batches.

    The test scenes are drawn after the training ones from the same generator, and any whose image
    equals a training image is dropped (and replaced by a fresh draw), so every test scene is unseen.

    Args:
        num_train, num_test: numbers of scenes.
        batch_size: rows per training batch (reshuffled each epoch from ``seed``).
        projection: ``None`` (features = the 768 pixels) or ``P``, the size of a fixed random projection.
        seed: the one seed behind scenes, projection and batch order.

    Returns:
        a :class:`CaptionData`.
    """
    np = backend.numpy
    num_train = check_count("num_train", num_train, 1)
    num_test = check_count("num_test", num_test, 1)
    rng = as_rng(seed)
    train = random_scenes(num_train, rng)
    seen = {scene.image.tobytes() for scene in train}
    test = []
    for _ in range(100 * num_test):  # the scenes number in the tens of thousands: this never runs dry
        if len(test) == num_test:
            break
        scene = random_scene(rng)
        if scene.image.tobytes() not in seen:
            test.append(scene)
    pixels = IMAGE_SIZE * IMAGE_SIZE * 3
    matrix = None
    if projection is not None:
        size = check_count("projection", projection, 1)
        matrix = np.random.default_rng([seed, 1]).standard_normal((pixels, size)) / np.sqrt(pixels)
    words = [scene.caption.split() for scene in train]
    vocab = Vocab(words, reserved_tokens=NMT_RESERVED_TOKENS)
    num_steps = max(len(caption.split()) for caption in [s.caption for s in train + test]) + 1

    def split(scenes):
        features = np.stack([scene.image.reshape(-1) for scene in scenes])
        if matrix is not None:
            features = features @ matrix
        tokens = [scene.caption.split() for scene in scenes]
        captions_out, valid_lens = build_array_nmt(tokens, vocab, num_steps)
        bos = np.full((len(scenes), 1), vocab["<bos>"], dtype=np.int64)
        captions_in = np.concatenate([bos, captions_out[:, :-1]], axis=1)
        captions_in[captions_in == vocab["<eos>"]] = vocab["<pad>"]  # <eos> is a target only, never an input
        return CaptionSplit(scenes, features, captions_in, captions_out, valid_lens)

    train_split, test_split = split(train), split(test)
    batches = BatchIterator((train_split.features, train_split.captions_in, train_split.captions_out,
                             train_split.valid_lens), batch_size, seed=seed)
    return CaptionData(train_split, test_split, vocab, num_steps, train_split.features.shape[1], matrix, batches)
