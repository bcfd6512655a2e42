"""Code Review on MBPP: the game (:mod:`.game`), the MBPP loader, and the scorer that runs tests in the sandbox."""
