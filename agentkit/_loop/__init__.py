"""The agent's loop: `Agent`, its turns and their grammars, calls validated, run and fed back,
repeats, approvals, per-run settings, a run's state, traces and history as JSON. Imports the
outputs, the tools' schemas and the shared modules."""
