"""One torch thread: the suite runs on 2 shared cores, where OpenMP spin-waiting across threads only slows it."""

from __future__ import annotations

import torch

torch.set_num_threads(1)
