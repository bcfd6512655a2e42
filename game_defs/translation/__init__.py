"""Machine Translation on IWSLT 2017: the game (:mod:`.game`), the IWSLT loader, and the metric scorer."""
