"""Cost-model features: per-store rows of a State's loop nests, computed without lowering.

``access`` analyses a DAG's buffer accesses, ``body`` a stage's computation, ``nest``
the loops around each store, ``extract`` the feature rows.  Re-exported here.
"""
from .extract import (
                      BUFFER_FIELDS,
                      FEATURE_NAMES,
                      FEATURE_VERSION,
                      N_BUFFERS,
                      FeatureConfig,
                      FeatureError,
                      FeatureExtractor,
                      featurize,
                      featurize_raw,
                      rows_for,
                      state_jobs,
)

__all__ = ["BUFFER_FIELDS", "FEATURE_NAMES", "FEATURE_VERSION", "N_BUFFERS", "FeatureConfig",
           "FeatureError", "FeatureExtractor", "featurize", "featurize_raw", "rows_for",
           "state_jobs"]
