"""Repository-wide test setup: the library's doctests write their scratch files where pytest cleans up.

Docstring examples are meant to be pasted into a Python prompt as they stand, so they create scratch
folders with ``tempfile.mkdtemp()``. Run by pytest, each such doctest now gets its own folder under
pytest's base temporary folder as ``tempfile``'s default (pytest keeps the last three runs and removes
older ones), instead of leaving folders in /tmp on every run.
"""

from __future__ import annotations

import tempfile

import pytest


@pytest.fixture(autouse=True)
def _doctest_scratch_in_pytest_tmp(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    if type(request.node).__name__ != "DoctestItem":
        yield
        return
    before = tempfile.tempdir
    tempfile.tempdir = str(tmp_path_factory.mktemp("doctest"))
    try:
        yield
    finally:
        tempfile.tempdir = before
