"""The `fetch` command: options, option files, help, manual, progress, write-out, inputs, layout.

Nothing is imported here: `fetch --version` stays light."""
