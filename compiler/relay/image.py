"""``relay.image``: image operators (TVM's names)."""
from .op.nn_more import resize2d

__all__ = ["resize2d"]
