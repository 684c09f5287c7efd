"""Tuning records as plain, immutable data, and their JSON form (one log line each).

The layout is TVM auto-scheduler's log format, version "v0.6" (DESIGN.md section 6):

    {"i": [[workload_key, target, [hw params], target_host, layout, [names]],
           [[], [steps...]]],
     "r": [[costs_seconds...], error_no, all_cost_seconds, timestamp],
     "v": "v0.6"}

Invariants:
- a constructed record is valid: ``__post_init__`` checks every field and raises
  ``RecordFieldError`` naming the field and its JSON path; sequences are stored as
  tuples (nested for steps), so records are hashable and truly frozen;
- ``Record.from_json(r.to_json()) == r`` for every record, and ``to_json`` reproduces a
  TVM-written v0.6 line byte for byte when its numbers print alike (same separators,
  key order and number types: an int stays an int);
- an empty ``target_host`` is ``None`` in Python and ``""`` in JSON, as TVM writes it;
- the optional search ``seed`` lives in the task's trailing name list (``i[0][5]``) as the
  string ``"autosched.seed=<int>"``: the line stays parseable by TVM, which would however
  see an unknown task-input name there; with no seed the list is exactly as TVM writes;
- older TVM task layouts (3 to 5 task fields) are read with defaults; writing always
  produces the full 6-field v0.6 layout;
- a successful measurement (``error_no == 0``) has at least one cost and every cost is
  > 0: a zero cost would make a broken record the best one;
- parsing never evaluates anything: ``json.loads`` only; NaN/Infinity, a key given twice
  in an object, integers beyond 64 bits and nesting too deep for the parser are refused
  as ``RecordSyntaxError`` or ``RecordFieldError``, never as another exception.
"""
import enum
import json
from dataclasses import dataclass

from records.errors import RecordError, RecordFieldError, RecordSyntaxError
from records.steps import step_to_list, validate_step
from records.validate import expect_int, expect_number, expect_seq, expect_str

LOG_VERSION = "v0.6"
# The cost TVM records for a failed measurement (its MAX_FLOAT), in seconds.
FAILURE_COST = 1e10
SEED_PREFIX = "autosched.seed="
# TVM's LayoutRewriteOption: 0 no rewrite, 1 insert transform stage, 2 rewrite for
# pre-transformed weights.
LAYOUT_REWRITE_OPTIONS = (0, 1, 2)


class ErrorNo(enum.IntEnum):
    """Measurement error codes, as TVM's ``auto_scheduler.measure.MeasureErrorNo``."""
    NO_ERROR = 0
    INSTANTIATION_ERROR = 1
    COMPILE_HOST = 2
    COMPILE_DEVICE = 3
    RUNTIME_DEVICE = 4
    WRONG_ANSWER = 5
    BUILD_TIMEOUT = 6
    RUN_TIMEOUT = 7
    UNKNOWN_ERROR = 8


@dataclass(frozen=True)
class MeasureInputRecord:
    """What was measured: the task (workload, target, hardware) and the state's steps."""
    workload_key: str
    target: str
    hardware_params: tuple
    target_host: "str | None" = None
    layout_rewrite_option: int = 0
    steps: tuple = ()
    task_input_names: tuple = ()
    seed: "int | None" = None

    def __post_init__(self):
        expect_str(self.workload_key, "workload_key (i[0][0])")
        expect_str(self.target, "target (i[0][1])")
        hw = expect_seq(self.hardware_params, "hardware_params (i[0][2])")
        for index, value in enumerate(hw):
            expect_int(value, f"hardware_params (i[0][2])[{index}]")
        host = self.target_host
        if host is not None:
            host = expect_str(host, "target_host (i[0][3])", allow_empty=True) or None
        expect_int(self.layout_rewrite_option, "layout_rewrite_option (i[0][4])",
                   minimum=LAYOUT_REWRITE_OPTIONS[0], maximum=LAYOUT_REWRITE_OPTIONS[-1])
        steps = expect_seq(self.steps, "steps (i[1][1])")
        steps = tuple(validate_step(s, k, "steps i[1][1]") for k, s in enumerate(steps))
        names = expect_seq(self.task_input_names, "task_input_names (i[0][5])")
        for index, name in enumerate(names):
            expect_str(name, f"task_input_names (i[0][5])[{index}]")
            if name.startswith(SEED_PREFIX):
                raise RecordFieldError(f"task_input_names (i[0][5])[{index}]", name,
                                       f"a name not starting with {SEED_PREFIX!r} "
                                       "(pass the seed as seed=...)")
        if self.seed is not None:
            expect_int(self.seed, "seed (i[0][5])")
        object.__setattr__(self, "hardware_params", hw)
        object.__setattr__(self, "target_host", host)
        object.__setattr__(self, "steps", steps)
        object.__setattr__(self, "task_input_names", names)

    def to_obj(self) -> list:
        """The JSON-ready ``"i"`` value."""
        names = list(self.task_input_names)
        if self.seed is not None:
            names.append(f"{SEED_PREFIX}{self.seed}")
        task = [self.workload_key, self.target, list(self.hardware_params),
                self.target_host or "", self.layout_rewrite_option, names]
        return [task, [[], [step_to_list(s) for s in self.steps]]]

    @classmethod
    def from_obj(cls, obj) -> "MeasureInputRecord":
        """Parse the ``"i"`` value of a log line (see the module invariants)."""
        outer = expect_seq(obj, "input (i)", min_len=2, max_len=2)
        task = expect_seq(outer[0], "task (i[0])", min_len=3, max_len=6)
        state = expect_seq(outer[1], "state (i[1])", min_len=2, max_len=2)
        # TVM never writes stages and its reader refuses any: keep logs portable.
        expect_seq(state[0], "stages (i[1][0])", max_len=0)
        host = task[3] if len(task) > 3 else ""
        expect_str(host, "target_host (i[0][3])", allow_empty=True)
        layout = task[4] if len(task) > 4 else 0
        raw_names = expect_seq(task[5], "task_input_names (i[0][5])") if len(task) > 5 else ()
        names, seed = _split_seed(raw_names)
        return cls(workload_key=task[0], target=task[1], hardware_params=task[2],
                   target_host=host, layout_rewrite_option=layout, steps=state[1],
                   task_input_names=names, seed=seed)


def _split_seed(raw_names: tuple) -> tuple:
    """Separate the ``autosched.seed=N`` entry from real task-input names."""
    names, seed = [], None
    for index, name in enumerate(raw_names):
        label = f"task_input_names (i[0][5])[{index}]"
        expect_str(name, label)
        if not name.startswith(SEED_PREFIX):
            names.append(name)
            continue
        digits = name[len(SEED_PREFIX):]
        if seed is not None:
            raise RecordFieldError(label, name, "at most one seed entry")
        try:
            seed = int(digits, 10)
        except ValueError:
            raise RecordFieldError(label, name, f"{SEED_PREFIX!r} followed by an integer") \
                from None
    return tuple(names), seed


@dataclass(frozen=True)
class MeasureResultRecord:
    """The outcome of one measurement: costs in seconds, error code, wall time, when."""
    costs: tuple
    error_no: int = 0
    all_cost: "int | float" = 0.0
    timestamp: "int | float" = 0.0

    def __post_init__(self):
        costs = expect_seq(self.costs, "costs (r[0])")
        for index, cost in enumerate(costs):
            expect_number(cost, f"costs (r[0])[{index}]", minimum=0)
        expect_int(self.error_no, "error_no (r[1])", minimum=0, maximum=len(ErrorNo) - 1)
        if self.error_no == ErrorNo.NO_ERROR:
            if not costs:
                raise RecordFieldError("costs (r[0])", list(costs),
                                       "at least one cost when error_no is 0")
            for index, cost in enumerate(costs):
                if cost == 0:    # no kernel runs in zero seconds: it would always be best
                    raise RecordFieldError(f"costs (r[0])[{index}]", cost,
                                           "a number > 0 when error_no is 0")
        expect_number(self.all_cost, "all_cost (r[2])", minimum=0)
        expect_number(self.timestamp, "timestamp (r[3])", minimum=0)
        object.__setattr__(self, "costs", costs)
        # An ErrorNo member would print as its name in repr(); keep the plain code.
        object.__setattr__(self, "error_no", int(self.error_no))

    @property
    def error(self) -> ErrorNo:
        """The error code as an ``ErrorNo`` member."""
        return ErrorNo(self.error_no)

    def to_obj(self) -> list:
        """The JSON-ready ``"r"`` value."""
        return [list(self.costs), self.error_no, self.all_cost, self.timestamp]

    @classmethod
    def from_obj(cls, obj) -> "MeasureResultRecord":
        """Parse the ``"r"`` value of a log line."""
        items = expect_seq(obj, "result (r)", min_len=4, max_len=4)
        return cls(costs=items[0], error_no=items[1], all_cost=items[2], timestamp=items[3])


@dataclass(frozen=True)
class Record:
    """One log line: a measure input, its result and the log-format version."""
    input: MeasureInputRecord
    result: MeasureResultRecord
    version: str = LOG_VERSION

    def __post_init__(self):
        if not isinstance(self.input, MeasureInputRecord):
            raise RecordFieldError("input (i)", self.input, "a MeasureInputRecord")
        if not isinstance(self.result, MeasureResultRecord):
            raise RecordFieldError("result (r)", self.result, "a MeasureResultRecord")
        expect_str(self.version, "version (v)")

    def __iter__(self):
        """``inp, res = record``, as TVM's ``load_records`` pairs."""
        return iter((self.input, self.result))

    @property
    def workload_key(self) -> str:
        return self.input.workload_key

    @property
    def target(self) -> str:
        return self.input.target

    @property
    def seed(self) -> "int | None":
        """The search seed stored with the record, or ``None``."""
        return self.input.seed

    @property
    def is_valid(self) -> bool:
        """True when the measurement succeeded (``error_no == 0``)."""
        return self.result.error_no == ErrorNo.NO_ERROR

    @property
    def mean_cost(self) -> float:
        """Mean of the costs in seconds; ``FAILURE_COST`` for a failed measurement."""
        if not self.is_valid:
            return FAILURE_COST
        costs = self.result.costs
        return float(sum(costs)) / len(costs)

    def to_obj(self) -> dict:
        """The JSON-ready object, keys in TVM's order."""
        return {"i": self.input.to_obj(), "r": self.result.to_obj(), "v": self.version}

    def to_json(self, compact: bool = False) -> str:
        """One log line without its newline (TVM's separators unless ``compact``)."""
        separators = (",", ":") if compact else (", ", ": ")
        return json.dumps(self.to_obj(), separators=separators, allow_nan=False)

    @classmethod
    def from_obj(cls, obj) -> "Record":
        """Build from a parsed JSON object; unknown or missing keys are errors, as in TVM."""
        if not isinstance(obj, dict) or set(obj) != {"i", "r", "v"}:
            shown = sorted(obj) if isinstance(obj, dict) else obj
            raise RecordFieldError("record", shown, 'a JSON object with exactly the keys '
                                   '"i", "r" and "v"')
        return cls(input=MeasureInputRecord.from_obj(obj["i"]),
                   result=MeasureResultRecord.from_obj(obj["r"]), version=obj["v"])

    @classmethod
    def from_json(cls, text: str) -> "Record":
        """Parse one log line. Raises ``RecordSyntaxError`` or ``RecordFieldError``."""
        try:
            obj = json.loads(text, parse_constant=_refuse_constant,
                             object_pairs_hook=_unique_keys)
        except json.JSONDecodeError as err:
            raise RecordSyntaxError(f"invalid JSON: {err.msg} at column {err.colno}") \
                from None
        except RecursionError:
            # json's decoder recurses once per nesting level; a v0.6 record is 5 deep.
            raise RecordSyntaxError("invalid JSON: arrays or objects nested too deeply "
                                    "for the parser, expected a record about 5 levels "
                                    "deep") from None
        except RecordError:
            raise                     # from the hooks below
        except ValueError as err:     # an integer of more than 4,300 digits
            raise RecordSyntaxError(f"invalid JSON: {str(err).split(';')[0]}, expected "
                                    "a 64-bit integer") from None
        return cls.from_obj(obj)


def _refuse_constant(name: str):
    """``json.loads`` hook: NaN and Infinity are not valid costs or timestamps."""
    raise RecordSyntaxError(f"invalid JSON: non-finite number {name} is not allowed")


def _unique_keys(pairs: list) -> dict:
    """``json.loads`` hook: a key given twice (``{"r": ..., "r": ...}``) is an error;
    plain ``json.loads`` would keep the last value silently."""
    obj: dict = {}
    for key, value in pairs:
        if key in obj:
            raise RecordSyntaxError(f"invalid JSON: key {key!r} appears more than once in "
                                    "an object, expected each key once")
        obj[key] = value
    return obj

