"""``ofijax._jaxcache.kept_array``: NumPy results kept in ofijax's cache folder, read back bit for
bit, recomputed when the cache is off or the file is damaged."""

from __future__ import annotations

import math

import numpy as np

from ofijax import _jaxcache


def _counted(value):
    calls = []

    def compute():
        calls.append(1)
        return value.copy()

    return compute, calls


def test_kept_array_computes_once_and_reads_back_bit_for_bit(monkeypatch, tmp_path):
    monkeypatch.setattr(_jaxcache, "_ENABLED_DIR", str(tmp_path))
    monkeypatch.delenv("OFIJAX_AOT", raising=False)
    value = np.random.default_rng(0).normal(size=(5, 3))
    compute, calls = _counted(value)
    first = _jaxcache.kept_array("test.kept", (1, "a"), compute)
    second = _jaxcache.kept_array("test.kept", (1, "a"), compute)
    assert len(calls) == 1 and first.tobytes() == second.tobytes() == value.tobytes()
    assert second.dtype == value.dtype and second.shape == value.shape
    _jaxcache.kept_array("test.kept", (2, "a"), compute)  # other parts: another file
    assert len(calls) == 2
    files = sorted((tmp_path / "ofijax-aot").glob("*.npy"))
    assert len(files) == 2
    files[0].write_bytes(b"not an npy file")  # damaged: recomputed, not raised
    for parts in ((1, "a"), (2, "a")):
        assert _jaxcache.kept_array("test.kept", parts, compute).tobytes() == value.tobytes()
    assert len(calls) == 3


def test_kept_array_off_with_the_cache_or_kept_executables(monkeypatch, tmp_path):
    compute, calls = _counted(np.arange(4.0))
    monkeypatch.setattr(_jaxcache, "_ENABLED_DIR", None)
    _jaxcache.kept_array("test.off", (), compute)
    _jaxcache.kept_array("test.off", (), compute)
    monkeypatch.setattr(_jaxcache, "_ENABLED_DIR", str(tmp_path))
    monkeypatch.setenv("OFIJAX_AOT", "0")
    _jaxcache.kept_array("test.off", (), compute)
    assert len(calls) == 3 and not (tmp_path / "ofijax-aot").exists()


def test_reduced_projection_kept_equals_computed(monkeypatch, tmp_path):
    from ofijax.scan import _basis

    monkeypatch.setattr(_jaxcache, "_ENABLED_DIR", str(tmp_path))
    monkeypatch.delenv("OFIJAX_AOT", raising=False)
    _basis.reduced_projection.cache_clear()
    kept = _basis.reduced_projection(0.0, math.log(1e6), 68)  # computed (SVD) and written
    _basis.reduced_projection.cache_clear()
    read = _basis.reduced_projection(0.0, math.log(1e6), 68)  # read back from the file
    _basis.reduced_projection.cache_clear()
    assert len(list((tmp_path / "ofijax-aot").glob("*.npy"))) == 1
    assert kept.shape[1] < 68 and kept.tobytes() == read.tobytes()
