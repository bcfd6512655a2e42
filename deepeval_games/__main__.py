"""``python -m deepeval_games`` runs the CLI."""

import sys

from deepeval_games.app.commands.cli import main

sys.exit(main())
