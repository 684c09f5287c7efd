"""Cost models: the interface and RandomModel (``base``), XGBModel (``xgb_model``)."""
from .base import CostModel, CostModelError, FeatureVersionError, RandomModel
from .xgb_model import XGBModel, XGBParams, pack_ids, pack_sum, pack_sum_square_error

__all__ = ["CostModel", "CostModelError", "FeatureVersionError", "RandomModel", "XGBModel",
           "XGBParams", "pack_ids", "pack_sum", "pack_sum_square_error"]
