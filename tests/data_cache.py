"""The dataset cache of a test's own: :func:`cache_files` here, and the ``home`` fixture (in ``conftest.py``, so that
every test may ask for it), shared by the fetch tests and the stream faults."""


def cache_files(home):
    """Every file and folder under the cache, as paths relative to it."""
    return sorted(str(path.relative_to(home)) for path in home.rglob("*")) if home.exists() else []
