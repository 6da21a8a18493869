"""``python -m kiln.bench``: the benchmark report (see _cli.py and README.md)."""

from kiln.bench._cli import main

raise SystemExit(main())
