"""Games from other frameworks as formal games: TextArena and PettingZoo environments."""
