"""The examples in the docstrings run (and stay true)."""

import doctest

import msgpack_arrow


def test_docstring_examples():
    result = doctest.testmod(msgpack_arrow, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 4
    assert result.failed == 0


def test_polars_version_check():
    import warnings

    from msgpack_arrow import _check_polars_version

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _check_polars_version("2.0.0")
        assert _check_polars_version("2.1.7")
    for v in ["1.44.2", "2.2.0", "3.0.0"]:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert not _check_polars_version(v)
        assert "tested with polars >=2.0,<2.2" in str(w[0].message)
