"""``python3 -m records``: the tuning-log command line (see ``records.cli``)."""
from records.cli import main

raise SystemExit(main())
