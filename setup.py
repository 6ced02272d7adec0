"""The build step that puts the tutorials into npseq's wheel; the metadata lives in setup.cfg.

Why a build step: the tutorials (``tutorials/NN_*.py`` and their helper ``_common.py``) live at the
repository's top, where the README links them, the tests run them and a learner runs them as scripts,
but ``npseq tutorials --notebooks DIR`` must find them in an installed package too. setup.cfg can only
ship files that lie inside a package's own folder, and a copy (or a link) of them under ``npseq/`` in the
source tree would be a second source of truth. So ``build_py`` copies them into the *built* package as
``npseq/_tutorials/``, never into the source tree; an editable install skips the copy, and
:func:`npseq.tutorials.tutorials_dir` then reads the repository's ``tutorials/`` directly. MANIFEST.in
puts ``tutorials/`` into the sdist, so a wheel built from the sdist gets the same copy.
"""
import glob
import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
TUTORIALS = os.path.join(HERE, "tutorials")
PACKAGED = os.path.join("npseq", "_tutorials")  # in the built package; npseq.tutorials.PACKAGED names it too


def tutorial_files() -> list:
    """The files the wheel ships: the tutorial scripts and their helper, sorted."""
    scripts = sorted(glob.glob(os.path.join(TUTORIALS, "[0-9][0-9]_*.py")))
    helper = os.path.join(TUTORIALS, "_common.py")
    if not scripts or not os.path.isfile(helper):
        raise SystemExit(f"setup.py: no tutorials at {TUTORIALS} (tutorials/NN_*.py and tutorials/_common.py); "
                         "build from the repository or from an sdist made with its MANIFEST.in")
    return scripts + [helper]


class build_py_with_tutorials(build_py):
    """``build_py`` that also copies the tutorials into ``npseq/_tutorials`` of the build folder."""

    def _copies(self) -> list:
        if getattr(self, "editable_mode", False):
            return []  # an editable install reads the repository's tutorials/ itself
        target = os.path.join(self.build_lib, PACKAGED)
        return [(source, os.path.join(target, os.path.basename(source))) for source in tutorial_files()]

    def run(self):
        super().run()
        for source, target in self._copies():
            self.mkpath(os.path.dirname(target))
            self.copy_file(source, target, preserve_mode=False)

    def get_outputs(self, include_bytecode=1):
        # What install and bdist_wheel record; the copies are .py files, compiled on install like the rest.
        return super().get_outputs(include_bytecode) + [target for _, target in self._copies()]


setup(cmdclass={"build_py": build_py_with_tutorials})
