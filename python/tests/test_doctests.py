"""The examples in the docstrings run (and stay true)."""

import doctest

import pytest

import msgpack_arrow
import msgpack_arrow._write


# each module's own functions (doctest skips what a module imports): the readers, the writers
@pytest.mark.parametrize("module", [msgpack_arrow, msgpack_arrow._write], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 4
    assert result.failed == 0


def test_polars_version_check():
    """The base package has no upper Polars bound (only the expression plugin has a range)."""
    import warnings

    from msgpack_arrow import _check_polars_version

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for v in ["2.0.0", "2.1.7", "2.2.0", "3.0.0"]:
            assert _check_polars_version(v)
    for v in ["1.44.2", "0.20.31"]:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert not _check_polars_version(v)
        assert "needs polars >=2.0" in str(w[0].message)
