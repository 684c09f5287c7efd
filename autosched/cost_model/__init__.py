"""Cost models: the interface and RandomModel (``base``), XGBModel (``xgb_model``), its
training loop (``boosting``) and the location of its shipped prior (``pretrained``)."""
from .base import CostModel, CostModelError, FeatureVersionError, RandomModel
from .boosting import pack_ids, pack_sum, pack_sum_square_error
from .pretrained import PRETRAINED_PATH
from .xgb_model import PRIOR_BUILTIN, XGBModel, XGBParams

__all__ = ["CostModel", "CostModelError", "FeatureVersionError", "RandomModel", "XGBModel",
           "PRETRAINED_PATH", "PRIOR_BUILTIN",
           "XGBParams", "pack_ids", "pack_sum", "pack_sum_square_error"]
