"""Tuning records: the auto-scheduler's log format and its offline analysis.

Standard library only (a test parses the imports). The log is JSON lines, layout-
compatible with TVM auto-scheduler logs (version "v0.6"); see ``records.record``.
Readers never execute anything from a log; writers append one whole line at a time.
"""
from records.analysis import (
                              Comparison,
                              LogHistory,
                              WorkloadHistory,
                              WorkloadSummary,
                              best_records,
                              compare,
                              curve,
                              flops_of,
                              gflops,
                              iter_curve,
                              scan,
                              summarize,
)
from records.curves import Series, network_series, task_series
from records.errors import (
                              RecordError,
                              RecordFieldError,
                              RecordSyntaxError,
                              RecordWarning,
                              TruncatedLineError,
)
from records.io import (
                              MAX_LINE_BYTES,
                              RecordReader,
                              RecordWriter,
                              load_best_record,
                              load_records,
                              save_records,
)
from records.record import (
                              FAILURE_COST,
                              LOG_VERSION,
                              SEED_PREFIX,
                              ErrorNo,
                              MeasureInputRecord,
                              MeasureResultRecord,
                              Record,
)
from records.selection import best_of, target_kind, target_matches
from records.steps import STEP_CODES, STEP_FIELDS, validate_step

__all__ = [
    "Comparison", "LogHistory", "WorkloadHistory", "WorkloadSummary", "best_records",
    "compare", "curve", "flops_of", "gflops", "iter_curve", "scan", "summarize",
    "Series", "network_series", "task_series",
    "RecordError", "RecordFieldError", "RecordSyntaxError", "RecordWarning",
    "TruncatedLineError",
    "MAX_LINE_BYTES", "RecordReader", "RecordWriter", "load_best_record", "load_records",
    "save_records",
    "FAILURE_COST", "LOG_VERSION", "SEED_PREFIX", "ErrorNo", "MeasureInputRecord",
    "MeasureResultRecord", "Record",
    "best_of", "target_kind", "target_matches",
    "STEP_CODES", "STEP_FIELDS", "validate_step",
]
