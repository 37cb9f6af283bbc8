"""``python -m shortcutlab``: the same command line as the ``shortcutlab`` script."""

from shortcutlab.cli.main import main

if __name__ == "__main__":
    main()
