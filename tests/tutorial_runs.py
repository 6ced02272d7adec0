"""Where each tutorial runs in the test suite: once, as a script (tests/test_tutorials.py) or as a notebook
(tests/test_notebooks.py), never both.

:data:`AS_NOTEBOOKS` run as notebooks, as a learner opens them, wherever the notebooks extra is installed (as in
CI); that run makes the script run's checks too (no error, figures written, each a readable, non-blank PNG). Without
the extra they run as scripts, like every other tutorial.
"""
import importlib.util
import pathlib
import re

TUTORIALS_DIR = pathlib.Path(__file__).resolve().parent.parent / "tutorials"
AS_NOTEBOOKS = ("02_rnn_by_hand", "06_attention")
"""The tutorials executed as notebooks, by file name without ``.py``."""
NOTEBOOK_MODULES = ("jupytext", "nbclient", "ipykernel")
"""What the notebooks extra installs for writing and executing notebooks."""
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
COLUMN_PX = 736
"""The book's text column in pixels, as tutorials/_common.py draws for it."""
RAW_TEX = re.compile(r"\$\$|:math:`|\.\. math::|\\(?:frac|begin|end|left|right|leftarrow|rightarrow|sum|prod|"
                     r"odot|mathbb|mathcal|mathrm|top|sigma|partial|text|operatorname|tanh|cdot|times|alpha|"
                     r"quad|qquad|sqrt|exp|log|ell|hat|tilde)\b")
"""What a tutorial must not print as text (a script's output, a notebook's streams): neither renders maths, so
equations reach them as Unicode text (a notebook shows them rendered, as Markdown, through equations())."""


def notebooks_installed() -> bool:
    """Whether the notebooks extra is installed, so that :data:`AS_NOTEBOOKS` run as notebooks."""
    return all(importlib.util.find_spec(module) is not None for module in NOTEBOOK_MODULES)


def as_scripts() -> list:
    """The tutorials run as scripts: all of them but those that run as notebooks here."""
    skipped = AS_NOTEBOOKS if notebooks_installed() else ()
    return [path for path in sorted(TUTORIALS_DIR.glob("[0-9][0-9]_*.py")) if path.stem not in skipped]


def check_png(path: pathlib.Path):
    """``path`` is a readable PNG of at least 100 x 100 pixels that is not blank, no wider than the book's column
    (it is never scaled down there), and says what it shows in its ``Description`` (the book's alt text)."""
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE), f"{path.name}: not a PNG file"
    from matplotlib import image
    from PIL import Image

    pixels = image.imread(str(path))
    assert pixels.ndim == 3 and pixels.shape[0] >= 100 and pixels.shape[1] >= 100, \
        f"{path.name}: unexpected image shape {pixels.shape}"
    assert float(pixels[..., :3].std()) > 0.01, f"{path.name}: the image is blank"
    assert pixels.shape[1] <= COLUMN_PX, f"{path.name}: {pixels.shape[1]} px wide, wider than the book's column"
    with Image.open(path) as png:
        description = png.text.get("Description", "")
    assert len(description.split()) >= 4, f"{path.name}: no sentence saying what it shows (Description: " \
                                            f"{description!r}); save it with _common.save_figure"
