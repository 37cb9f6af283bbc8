"""shortcutlab: find out whether a vision model takes shortcuts, and which ones.

Layers, top-down (a module imports only from its own layer's package or from layers below;
see docs/architecture.md):
    cli, demo                          the command line and the demo
    diagvib, biasbed, vqa, imagenetx   one area per method, each with its metrics and report
    train, runner, stats               shared engines: training, resumable jobs, statistics
    utils, errors                      helpers: HTML/figures, atomic I/O, JSON, RNG, devices
"""

__version__ = "0.1.0"
