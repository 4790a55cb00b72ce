"""The check programs that run inside the environment being checked (:mod:`.verify`): standard library only,
runnable by file path under the environment's own Python, with no vresolve installed there."""
