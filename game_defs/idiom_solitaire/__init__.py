"""Chinese Idiom Solitaire: the game (:mod:`.game`), its dictionary and versions, start idioms, Chinese text
normalisation."""
