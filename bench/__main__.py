"""``python -m bench``: the benchmark suite (:mod:`bench.run_all`)."""

import sys

from bench.run_all import main

sys.exit(main())
