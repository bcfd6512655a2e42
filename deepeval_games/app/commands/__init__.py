"""The command line: ``main`` (:mod:`.cli`), the parser with one builder a command (:mod:`.parser`), the handlers by
theme (:mod:`.playing`, :mod:`.reading`, :mod:`.listing`) and what they build on (:mod:`.study`, :mod:`.play`,
:mod:`.data`, :mod:`.console`), and the generated reference pages (:mod:`.reference`)."""
