"""Measurement: the data (``measurer``: MeasureInput, BuildResult, MeasureResult,
ProgramMeasurer, RecordToFile), worker processes (``workers``), the local builder and
runner, and their Dask counterparts (``dask``).  Re-exported here."""
from .builder import BuildEarlyStop, LocalBuilder, default_build_func
from .dask import ClusterError, DaskBuilder, DaskRunner
from .measurer import (EARLY_STOP_MARK, BuildResult, MeasureCallback, MeasureErrorNo,
                       MeasureInput, MeasureResult, ProgramBuilder, ProgramMeasurer,
                       ProgramRunner, RecordToFile, stopped_early)
from .runner import EarlyStop, LocalRunner, RunConfig

__all__ = ["BuildEarlyStop", "LocalBuilder", "default_build_func", "ClusterError",
           "DaskBuilder", "DaskRunner", "EARLY_STOP_MARK", "BuildResult", "MeasureCallback",
           "MeasureErrorNo", "MeasureInput", "MeasureResult", "ProgramBuilder",
           "ProgramMeasurer", "ProgramRunner", "RecordToFile", "stopped_early", "EarlyStop",
           "LocalRunner", "RunConfig"]
