"""TIR passes: one pure ``PrimFunc -> PrimFunc`` function per module, plus the pipeline."""
from .flatten import flatten_buffers
from .local_layout import permute_local_layout
from .pipeline import default_pipeline, run_pipeline
from .remove_noop import remove_noop
from .simplify import simplify
from .unroll import unroll_loops
from .vectorize import vectorize_loops

__all__ = ["simplify", "permute_local_layout", "flatten_buffers", "vectorize_loops",
           "unroll_loops", "remove_noop", "default_pipeline", "run_pipeline"]
