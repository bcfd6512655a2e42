"""``python -m deepeval_games`` runs the CLI."""

import sys

from deepeval_games.cli import main

sys.exit(main())
