"""shortcutlab: find out whether a vision model takes shortcuts, and which ones.

Areas:
    diagvib    DiagViB-6 synthetic images, studies, metrics (the core)
    train      model registry, training algorithms
    runner     resumable job execution on local and distributed backends
    stats      BiasBed's rigorous multi-run comparison
    vqa        VQA-VS shortcut-specific OOD splits and VQA accuracy
    imagenetx  ImageNet-X factor-of-variation error analysis
    report     figures and self-contained HTML reports
"""

__version__ = "0.1.0"
