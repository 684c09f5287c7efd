"""Exception classes of the auto-scheduler layer."""


class AutoSchedError(Exception):
    """Base class of every error the auto-scheduler raises on purpose."""


class WorkloadError(AutoSchedError, KeyError):
    """An unknown or malformed workload key / workload function."""

    def __str__(self):  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class RemovedAPIError(AutoSchedError, ValueError):
    """A call to an API TVM removed (``create_task``, ``auto_schedule``); a ValueError,
    as TVM raises."""


class InvalidStepError(AutoSchedError, ValueError):
    """A transform step does not apply to the State it is applied to."""
