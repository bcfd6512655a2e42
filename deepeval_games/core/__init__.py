"""The core layer: Algorithm 1 and the types everything else shares.

The task contract (:mod:`.task`), what only the engine reads of a game (:mod:`.binding`), the message pool,
observations and the bot base classes (:mod:`.bot`), match records, the referee (:mod:`.referee`), the registries,
the replay of a moves transcript and the conformance kit (:mod:`.testing`). Nothing here imports the tasks, the
players or the application, and nothing names a built-in task.
"""
