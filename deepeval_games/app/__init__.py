"""The application layer: experiment specs, schedules, executors (asyncio, worker processes, Ray), the store, the
reports and the command line. It may import everything below it: the core, the tasks and players, the analysis."""
