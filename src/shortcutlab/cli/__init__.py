"""The ``shortcutlab`` command-line program: one module per command group."""
