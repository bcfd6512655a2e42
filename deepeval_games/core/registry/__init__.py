"""Finding what is installed: registered games, bots and scorers, and the entry points that outside packages
register through."""
