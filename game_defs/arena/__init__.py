"""Games from other frameworks as formal games: TextArena's environments (``textarena``; the live environment and
its probe, ``textarena_env``; the environments whose state is public, ``textarena_tables``; the jury a judge plays,
``jury``; NLTK's word lists as data files, ``word_lists``) and PettingZoo's (``pettingzoo``), with what they share
(``common``)."""
