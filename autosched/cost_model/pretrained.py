"""Location of the cost model shipped with the package (see scripts/pretrain_cost_model.py)."""
from __future__ import annotations

import os

PRETRAINED_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pretrained.json")
