"""Operator attributes: one frozen dataclass per attribute set, TVM's field names.

Invariants: every field holds a plain Python value (ints, floats, strings, tuples of
them), so attrs are hashable, compare by value (``==``), print stably and survive a
round trip through JSON (the graph executor's attrs and the workload keys use them).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from ..expr import Attrs

__all__ = ["Attrs", "attrs_items", "Conv2DAttrs", "Conv2DTransposeAttrs",
           "Conv3DTransposeAttrs", "DenseAttrs",
           "BatchMatmulAttrs", "BiasAddAttrs", "LeakyReluAttrs", "SoftmaxAttrs",
           "MaxPool2DAttrs", "AvgPool2DAttrs", "GlobalPool2DAttrs", "AdaptivePool2DAttrs",
           "BatchNormAttrs", "LayerNormAttrs", "DropoutAttrs", "PadAttrs", "Resize2DAttrs",
           "ClipAttrs", "CastAttrs", "ReshapeAttrs", "TransposeAttrs", "SqueezeAttrs",
           "ExpandDimsAttrs", "ConcatenateAttrs", "SplitAttrs", "StridedSliceAttrs",
           "TakeAttrs", "BroadcastToAttrs", "ReduceAttrs", "ArgReduceAttrs", "InitOpAttrs",
           "GeluAttrs"]


def attrs_items(attrs) -> list:
    """``[(field, value)]`` of an attrs dataclass, in declaration order ([] for None)."""
    if attrs is None:
        return []
    return [(f.name, getattr(attrs, f.name)) for f in fields(attrs)]


def non_default_items(attrs) -> list:
    """The fields whose value differs from the default (what the printer shows)."""
    if attrs is None:
        return []
    return [(f.name, getattr(attrs, f.name)) for f in fields(attrs)
            if getattr(attrs, f.name) != f.default]


@dataclass(frozen=True)
class Conv2DAttrs(Attrs):
    strides: tuple = (1, 1)
    padding: tuple = (0, 0, 0, 0)
    dilation: tuple = (1, 1)
    groups: int = 1
    channels: int | None = None
    kernel_size: tuple | None = None
    data_layout: str = "NCHW"
    kernel_layout: str = "OIHW"
    out_layout: str = ""
    out_dtype: str = ""


@dataclass(frozen=True)
class Conv2DTransposeAttrs(Attrs):
    strides: tuple = (1, 1)
    padding: tuple = (0, 0, 0, 0)
    dilation: tuple = (1, 1)
    groups: int = 1
    channels: int | None = None
    kernel_size: tuple | None = None
    data_layout: str = "NCHW"
    kernel_layout: str = "IOHW"
    out_layout: str = ""
    output_padding: tuple = (0, 0)
    out_dtype: str = ""


@dataclass(frozen=True)
class Conv3DTransposeAttrs(Attrs):
    strides: tuple = (1, 1, 1)
    padding: tuple = (0, 0, 0, 0, 0, 0)
    dilation: tuple = (1, 1, 1)
    groups: int = 1
    channels: int | None = None
    kernel_size: tuple | None = None
    data_layout: str = "NCDHW"
    kernel_layout: str = "IODHW"
    out_layout: str = ""
    output_padding: tuple = (0, 0, 0)
    out_dtype: str = ""


@dataclass(frozen=True)
class DenseAttrs(Attrs):
    units: int | None = None
    out_dtype: str = ""


@dataclass(frozen=True)
class DensePackAttrs(Attrs):
    """``nn.contrib_dense_pack``: ``weight_layout`` "NC{nr}n" (weight (N/nr, K, nr))."""
    units: int | None = None
    out_dtype: str = ""
    weight_layout: str = "NC"


@dataclass(frozen=True)
class BatchMatmulAttrs(Attrs):
    out_dtype: str = ""
    transpose_a: bool = False
    transpose_b: bool = True


@dataclass(frozen=True)
class BiasAddAttrs(Attrs):
    axis: int = 1


@dataclass(frozen=True)
class LeakyReluAttrs(Attrs):
    alpha: float = 0.01


@dataclass(frozen=True)
class SoftmaxAttrs(Attrs):
    axis: int = -1


@dataclass(frozen=True)
class MaxPool2DAttrs(Attrs):
    pool_size: tuple = (1, 1)
    strides: tuple = (1, 1)
    dilation: tuple = (1, 1)
    padding: tuple = (0, 0, 0, 0)
    layout: str = "NCHW"
    out_layout: str = ""
    ceil_mode: bool = False


@dataclass(frozen=True)
class AvgPool2DAttrs(Attrs):
    pool_size: tuple = (1, 1)
    strides: tuple = (1, 1)
    dilation: tuple = (1, 1)
    padding: tuple = (0, 0, 0, 0)
    layout: str = "NCHW"
    out_layout: str = ""
    ceil_mode: bool = False
    count_include_pad: bool = False


@dataclass(frozen=True)
class GlobalPool2DAttrs(Attrs):
    layout: str = "NCHW"
    out_layout: str = ""


@dataclass(frozen=True)
class AdaptivePool2DAttrs(Attrs):
    output_size: tuple | None = None
    layout: str = "NCHW"
    out_layout: str = ""


@dataclass(frozen=True)
class BatchNormAttrs(Attrs):
    axis: int = 1
    epsilon: float = 1e-5
    center: bool = True
    scale: bool = True


@dataclass(frozen=True)
class LayerNormAttrs(Attrs):
    axis: int = -1
    epsilon: float = 1e-5
    center: bool = True
    scale: bool = True


@dataclass(frozen=True)
class DropoutAttrs(Attrs):
    rate: float = 0.5


@dataclass(frozen=True)
class PadAttrs(Attrs):
    pad_width: tuple = ()
    pad_mode: str = "constant"
    pad_value: float = 0.0


@dataclass(frozen=True)
class Resize2DAttrs(Attrs):
    size: tuple = ()
    roi: tuple = (0.0, 0.0, 0.0, 0.0)
    layout: str = "NCHW"
    method: str = "linear"
    coordinate_transformation_mode: str = "half_pixel"
    rounding_method: str = ""
    cubic_alpha: float = -0.5
    cubic_exclude: int = 0
    extrapolation_value: float = 0.0
    out_dtype: str = ""


@dataclass(frozen=True)
class ClipAttrs(Attrs):
    a_min: float = 0.0
    a_max: float = 0.0


@dataclass(frozen=True)
class CastAttrs(Attrs):
    dtype: str = "float32"


@dataclass(frozen=True)
class ReshapeAttrs(Attrs):
    newshape: tuple = ()


@dataclass(frozen=True)
class TransposeAttrs(Attrs):
    axes: tuple | None = None


@dataclass(frozen=True)
class SqueezeAttrs(Attrs):
    axis: tuple | None = None


@dataclass(frozen=True)
class ExpandDimsAttrs(Attrs):
    axis: int = 0
    num_newaxis: int = 1


@dataclass(frozen=True)
class ConcatenateAttrs(Attrs):
    axis: int = 0


@dataclass(frozen=True)
class SplitAttrs(Attrs):
    indices_or_sections: int | tuple = 1
    axis: int = 0


@dataclass(frozen=True)
class StridedSliceAttrs(Attrs):
    begin: tuple = ()
    end: tuple = ()
    strides: tuple | None = None
    axes: tuple | None = None
    slice_mode: str = "end"


@dataclass(frozen=True)
class TakeAttrs(Attrs):
    axis: int | None = None
    batch_dims: int = 0
    mode: str = "clip"


@dataclass(frozen=True)
class ReduceAttrs(Attrs):
    axis: tuple | None = None
    keepdims: bool = False
    exclude: bool = False


@dataclass(frozen=True)
class ArgReduceAttrs(Attrs):
    axis: tuple | None = None
    keepdims: bool = False
    exclude: bool = False
    select_last_index: bool = False


@dataclass(frozen=True)
class InitOpAttrs(Attrs):
    shape: tuple = ()
    dtype: str = "float32"
    fill_value: float = 0.0


@dataclass(frozen=True)
class SparseDenseAttrs(Attrs):
    sparse_lhs: bool = False


@dataclass(frozen=True)
class SparseConv2DAttrs(Attrs):
    layout: str = "NHWC"
    kernel_size: tuple = (1, 1)


@dataclass(frozen=True)
class GeluAttrs(Attrs):
    approximate: str = "none"


@dataclass(frozen=True)
class BroadcastToAttrs(Attrs):
    shape: tuple = ()
