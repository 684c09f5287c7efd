"""Measurement: the data (``measurer``: MeasureInput, BuildResult, MeasureResult,
ProgramMeasurer, RecordToFile), worker processes (``workers``), the local builder and
runner, the RPC runner (``rpc``), and their Dask counterparts (``dask``).  Re-exported here."""
from .builder import BuildCutoff, LocalBuilder, default_build_func
from .dask import ClusterError, DaskBuilder, DaskRunner
from .measurer import (
                       CUTOFF_MARK,
                       BuildResult,
                       MeasureCallback,
                       MeasureErrorNo,
                       MeasureInput,
                       MeasureResult,
                       ProgramBuilder,
                       ProgramMeasurer,
                       ProgramRunner,
                       RecordToFile,
                       was_cut_off,
)
from .rpc import LocalRPCMeasureContext, RPCRunner
from .runner import LocalRunner, RunConfig, RunCutoff

__all__ = ["BuildCutoff", "LocalBuilder", "default_build_func", "ClusterError",
           "DaskBuilder", "DaskRunner", "CUTOFF_MARK", "BuildResult", "MeasureCallback",
           "MeasureErrorNo", "MeasureInput", "MeasureResult", "ProgramBuilder",
           "ProgramMeasurer", "ProgramRunner", "RecordToFile", "was_cut_off", "RunCutoff",
           "LocalRunner", "RunConfig", "RPCRunner", "LocalRPCMeasureContext"]
