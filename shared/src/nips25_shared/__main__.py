"""``python -m nips25_shared summarize [reports_dir] [--packages ...]``: write ``reports/SUMMARY.md``."""

from nips25_shared.reports import _main

raise SystemExit(_main())
