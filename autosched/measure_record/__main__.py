"""``python3 -m autosched.measure_record --mode distill -i LOG [-o OUT]`` (TVM's)."""
from . import main

raise SystemExit(main())
