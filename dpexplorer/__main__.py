"""`python -m dpexplorer` is the same as the `dpexplorer` command."""

from dpexplorer.cli import main

raise SystemExit(main())
