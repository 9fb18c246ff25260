"""Shared fixtures: the oracle table (fp8lab name -> ml_dtypes dtype) and seeded generators."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

#: every format ml_dtypes has, by fp8lab's registered name (float16 is numpy's own)
ML_DTYPES = {
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "float8_e4m3": ml_dtypes.float8_e4m3,
    "float8_e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz,
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "float8_e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "float8_e3m4": ml_dtypes.float8_e3m4,
    "float8_e8m0fnu": ml_dtypes.float8_e8m0fnu,
    "float6_e2m3fn": ml_dtypes.float6_e2m3fn,
    "float6_e3m2fn": ml_dtypes.float6_e3m2fn,
    "float4_e2m1fn": ml_dtypes.float4_e2m1fn,
}


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261129)
