import numpy as np
import pytest
from nips25_gnnclt import CSBM


@pytest.fixture
def model() -> CSBM:
    return CSBM(pi=[0.5, 0.5], B=[[1.5, 0.5], [0.5, 1.0]], means=np.eye(2), cov=0.25 * np.eye(2))
